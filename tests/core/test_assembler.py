"""The assembler's own rules, independent of any one provider: payload kinds, the call
state table, ids, usage, limits, strict close, failure stickiness and format detection."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from adapter_support import GeneralPathAssembler
from toolwire import (
    ProviderError,
    StreamAssembler,
    ToolCallArguments,
    ToolCallStarted,
    UsageReported,
)
from toolwire._core.calls import _TRANSITIONS, CallEvent, CallState, _Call
from toolwire._core.response import ContentPart
from toolwire._providers import FORMATS


def chunk(
    delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any
) -> dict[str, Any]:
    """One OpenAI chat chunk."""
    body: dict[str, Any] = {"id": "chatcmpl-9", "model": "m", "object": "chat.completion.chunk"}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    body.update(top)
    return body


def call(index: int, id: str | None, name: str | None, args: str) -> dict[str, Any]:
    """A delta with one tool-call entry."""
    entry: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id is not None:
        entry["id"] = id
    if name is not None:
        entry["function"]["name"] = name
    return {"tool_calls": [entry]}


# ------------------------------------------------------------------- payload kinds


def test_sdk_objects_are_dumped_to_the_wire_shape() -> None:
    """openai SDK chunk objects give the same events and response as the wire dicts."""
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk

    wire = [
        chunk(call(0, "c1", "f", '{"a"')),
        chunk(call(0, None, None, ": 1}")),
        chunk(finish="tool_calls"),
        {
            "id": "chatcmpl-9",
            "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        },
    ]
    objects = [construct_type(type_=ChatCompletionChunk, value=w) for w in wire]
    a, b = StreamAssembler(), StreamAssembler()
    ev_a = [e for w in wire for e in a.feed(w)]
    ev_b = [e for o in objects for e in b.feed(o)]
    assert ev_a == ev_b
    assert a.close() == b.close()


def test_anthropic_sdk_event_objects_dump_to_wire_shape() -> None:
    """anthropic SDK event objects dump (exclude_unset) to exactly the wire dicts."""
    from anthropic._models import construct_type
    from anthropic.types import RawMessageStreamEvent

    wire = {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "input_json_delta", "partial_json": '{"a'},
    }
    obj = construct_type(type_=RawMessageStreamEvent, value=wire)
    assert obj.model_dump(mode="json", exclude_unset=True, by_alias=True) == wire


def test_json_text_and_done() -> None:
    """JSON text payloads and ``[DONE]`` are accepted."""
    asm = StreamAssembler()
    asm.feed(json.dumps(chunk({"content": "a"})))
    asm.feed(chunk({"content": "b"}))
    asm.feed(chunk(finish="stop"))
    assert asm.feed("[DONE]") == []
    assert asm.close().text == "ab"


@pytest.mark.parametrize("bad", [[1, 2], 3, None, "not json", '"a string"', b"data: x"])
def test_non_object_payloads_are_format_errors(bad: Any) -> None:
    """Payloads that are not JSON objects raise StreamFormatError, and it sticks."""
    asm = StreamAssembler()
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(bad)
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(chunk(finish="stop"))
    with pytest.raises(toolwire.StreamFormatError):
        asm.close()


def test_feed_bytes_rejects_str() -> None:
    """feed_bytes() wants bytes; a str is a typed error."""
    with pytest.raises(toolwire.StreamFormatError):
        StreamAssembler().feed_bytes("data: {}")  # type: ignore[arg-type]


def test_feed_after_close_raises() -> None:
    """Once closed, the assembler refuses more input; close() again returns the same."""
    asm = StreamAssembler()
    asm.feed(chunk(finish="stop"))
    response = asm.close()
    assert asm.close() is response
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(chunk({"content": "late"}))
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed_bytes(b"data: {}\n\n")
    assert asm.close() is response


def test_unknown_format_name() -> None:
    """An unknown format name raises UnknownFormat (a ValueError)."""
    with pytest.raises(toolwire.UnknownFormat):
        StreamAssembler(format="openai-chatt")


# ---------------------------------------------------------------- state table


def test_transition_table_rejects_missing_pairs() -> None:
    """Every (state, event) pair missing from the table raises StreamFormatError."""
    for state in CallState:
        for event in CallEvent:
            c = _Call(0, None)
            c.state = state
            if (state, event) in _TRANSITIONS:
                c.move(event, None)
                assert c.state is _TRANSITIONS[(state, event)]
            else:
                with pytest.raises(toolwire.StreamFormatError):
                    c.move(event, None)


def test_rejected_call_keeps_later_fragments_as_raw_text() -> None:
    """After a syntax error the call's later fragments are kept raw; the stream goes on."""
    asm = StreamAssembler()
    asm.feed(chunk(call(0, "c1", "f", '{"a": tru')))
    events = asm.feed(chunk(call(0, None, None, 'x, "b": 2}')))
    assert [type(e).__name__ for e in events] == ["ToolCallRejected"]
    assert events[0].offset == 9  # type: ignore[union-attr]
    assert asm.feed(chunk(call(0, None, None, " more"))) == []
    asm.feed(chunk(call(1, "c2", "g", "{}")))
    asm.feed(chunk(finish="tool_calls"))
    response = asm.close()
    assert [c.name for c in response.tool_calls] == ["g"]
    assert response.rejected[0].raw_arguments == '{"a": trux, "b": 2} more'
    assert response.rejected[0].offset == 9


def test_empty_name_at_the_end_is_a_rejection() -> None:
    """A call whose name never arrived is rejected at close, not executed."""
    asm = StreamAssembler()
    events = asm.feed(chunk(call(0, "c1", None, '{"a": 1}')))
    assert events == []  # buffered until a name arrives
    asm.feed(chunk(finish="tool_calls"))
    response = asm.close()
    assert response.tool_calls == []
    assert response.rejected[0].reason == "the tool name is empty"


def test_empty_arguments_become_an_empty_object() -> None:
    """No argument text at all gives ``arguments={}`` and ``raw_arguments=""``."""
    asm = StreamAssembler()
    asm.feed(chunk(call(0, "c1", "now", "")))
    asm.feed(chunk(finish="tool_calls"))
    (tc,) = asm.close().tool_calls
    assert (tc.arguments, tc.raw_arguments) == ({}, "")


def test_whitespace_only_arguments_are_truncation() -> None:
    """Argument text that began but holds no value is unterminated, not ``{}``."""
    asm = StreamAssembler()
    asm.feed(chunk(call(0, "c1", "f", "  ")))
    asm.feed(chunk(finish="tool_calls"))
    with pytest.raises(toolwire.TokenLimitExceeded):
        asm.close()


def test_arguments_events_carry_json_events_and_a_live_preview() -> None:
    """ToolCallArguments has the fragment, its JSON events and the call's preview."""
    asm = StreamAssembler()
    (started, first) = asm.feed(chunk(call(0, "c1", "write", '{"path": "a.py", "body": "de')))
    assert isinstance(started, ToolCallStarted) and isinstance(first, ToolCallArguments)
    assert first.preview == {"path": "a.py", "body": "de"}
    assert any(
        isinstance(j, toolwire.ValueCompleted) and j.value == "a.py" for j in first.json_events
    )
    (second,) = asm.feed(chunk(call(0, None, None, 'f"}')))
    assert second.preview == {"path": "a.py", "body": "def"}


def test_fragment_after_finish_is_a_format_error() -> None:
    """A tool-call fragment after the terminal event breaks the stream."""
    asm = StreamAssembler()
    asm.feed(chunk(finish="stop"))
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(chunk(call(0, "c1", "f", "{}")))


def test_repeated_finish_is_ignored_and_finished_emitted_once() -> None:
    """A second terminal delta changes nothing."""
    asm = StreamAssembler()
    first = asm.feed(chunk(finish="stop"))
    second = asm.feed(chunk(finish="length"))
    assert [type(e).__name__ for e in first] == ["Finished"] and second == []
    assert asm.close().raw_finish_reason == "stop"


def test_no_finish_is_aborted_with_partial() -> None:
    """A stream without its terminal event raises StreamAborted carrying what arrived."""
    asm = StreamAssembler()
    asm.feed(chunk({"content": "hi"}))
    asm.feed(chunk(call(0, "c1", "f", '{"a": 1}')))
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    partial = info.value.partial
    assert partial is not None
    assert partial.text == "hi"
    assert [(c.id, c.name, c.raw_arguments, c.ended) for c in partial.calls] == [
        ("c1", "f", '{"a": 1}', False)
    ]
    assert partial.response_id == "chatcmpl-9"


# --------------------------------------------------------------------- ids, usage


def test_synthesised_ids_are_deterministic_and_distinct() -> None:
    """Calls without ids get the same ``call_...`` ids on every run, distinct per call."""

    def ids() -> list[str]:
        asm = StreamAssembler()
        asm.feed(chunk(call(0, None, "f", "{}")))
        asm.feed(chunk(call(1, None, "f", "{}")))
        asm.feed(chunk(finish="tool_calls"))
        return [c.id for c in asm.close().tool_calls]

    first = ids()
    assert first == ids()
    assert len(set(first)) == 2 and all(i.startswith("call_") for i in first)
    other = StreamAssembler()
    other.feed(chunk(call(0, None, "f", "{}"), id="chatcmpl-other"))
    other.feed(chunk(finish="tool_calls"))
    assert other.close().tool_calls[0].id != first[0]


def test_usage_merges_field_by_field_and_survives_an_abort() -> None:
    """Usage reports merge field by field, are emitted, and stay in Partial on abort."""
    asm = StreamAssembler(format="anthropic")
    asm.feed(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "model": "claude",
                "usage": {"input_tokens": 10, "output_tokens": 1},
            },
        }
    )
    events = asm.feed(
        {"type": "message_delta", "delta": {"stop_reason": None}, "usage": {"output_tokens": 7}}
    )
    reported = [e for e in events if isinstance(e, UsageReported)]
    assert reported and reported[-1].usage.input_tokens == 10
    assert reported[-1].usage.output_tokens == 7
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    assert info.value.partial is not None and info.value.partial.usage is not None
    assert info.value.partial.usage.input_tokens == 10


# --------------------------------------------------------------------------- limits


def test_too_many_calls() -> None:
    """More calls than ``max_tool_calls`` raises StreamLimitExceeded with the partial."""
    asm = StreamAssembler(max_tool_calls=2)
    asm.feed(chunk(call(0, "a", "f", "{}")))
    asm.feed(chunk(call(1, "b", "f", "{}")))
    with pytest.raises(toolwire.StreamLimitExceeded) as info:
        asm.feed(chunk(call(2, "c", "f", "{}")))
    assert info.value.limit == "max_tool_calls" and info.value.value == 2
    assert info.value.partial is not None and len(info.value.partial.calls) == 2
    with pytest.raises(toolwire.StreamLimitExceeded):
        asm.close()


def test_too_long_arguments_and_text() -> None:
    """Argument and text limits raise StreamLimitExceeded naming the limit."""
    asm = StreamAssembler(max_argument_chars=10)
    asm.feed(chunk(call(0, "a", "f", '{"a": ')))
    with pytest.raises(toolwire.StreamLimitExceeded) as info:
        asm.feed(chunk(call(0, None, None, '"12345"}')))
    assert info.value.limit == "max_argument_chars"
    asm = StreamAssembler(max_text_chars=4)
    asm.feed(chunk({"content": "abc"}))
    with pytest.raises(toolwire.StreamLimitExceeded) as info:
        asm.feed(chunk({"reasoning_content": "de"}))
    assert info.value.limit == "max_text_chars"


# ---------------------------------------------------------------- format detection


def _first_payload(path: Path) -> Any:
    text = path.read_text("utf-8")
    if path.suffix == ".json":
        return json.loads(text)[0]["__data__"]
    for line in text.splitlines():
        if line.startswith("data:"):
            return json.loads(line[5:])
        if line.startswith("{"):
            return json.loads(line)
    raise AssertionError(path)


def detect_format(payload: Any, event: str | None = None) -> str:
    """The name of the provider that detection picks for ``payload``."""
    return FORMATS.detect(payload, event).name


def test_detect_format_on_every_corpus_stream(corpus_dir: Path) -> None:
    """detect_format names the right format from the first payload of every recording."""
    expected = json.loads((corpus_dir / "expected.json").read_text("utf-8"))
    names = {"anthropic-messages": "anthropic", "cohere-v2": "cohere"}
    for name, entry in expected.items():
        if name.endswith(".eventstream"):
            continue
        payload = _first_payload(corpus_dir / "streams" / name)
        want = names.get(entry["api_format"], entry["api_format"])
        assert detect_format(payload) == want, name


def test_detect_format_hand_written_shapes() -> None:
    """Shapes without corpus recordings (Ollama native, errors) are detected too."""
    assert (
        detect_format(
            {
                "model": "llama3",
                "created_at": "x",
                "message": {"role": "assistant", "content": ""},
                "done": False,
            }
        )
        == "ollama"
    )
    assert detect_format({"type": "error", "error": {"type": "overloaded_error"}}) == "anthropic"
    assert detect_format({"type": "error", "code": "x", "message": "m"}) == "openai-responses"
    assert detect_format({"error": {"message": "m"}}) == "openai-chat"
    assert detect_format({"metadata": {"usage": {}}}) == "bedrock-converse"
    assert detect_format({"promptFeedback": {"blockReason": "SAFETY"}}) == "gemini"
    with pytest.raises(toolwire.StreamFormatError):
        detect_format({"hello": 1})
    with pytest.raises(toolwire.StreamFormatError):
        detect_format([1])


def test_every_registered_adapter_loads() -> None:
    """Each of the seven formats has a provider whose adapter says that format."""
    assert len(FORMATS.names()) == 7
    for fmt in FORMATS.names():
        assert FORMATS.provider(fmt).adapter(0).format == fmt


# ------------------------------------------------------------- split independence


@settings(max_examples=40, deadline=None)
@given(
    pieces=st.lists(
        st.text(alphabet='{}[]",:ab1 \\n', min_size=1, max_size=6), min_size=1, max_size=12
    ),
    finish=st.sampled_from(["tool_calls", "stop", "length", None]),
)
def test_outcome_is_all_or_nothing(pieces: list[str], finish: str | None) -> None:
    """close() returns a call only if its JSON is complete and valid under an OK finish."""
    asm = StreamAssembler()
    asm.feed(chunk(call(0, "c1", "f", "")))
    for piece in pieces:
        asm.feed(chunk(call(0, None, None, piece)))
    if finish:
        asm.feed(chunk(finish=finish))
    raw = "".join(pieces)
    try:
        response = asm.close()
    except toolwire.StreamError as exc:
        assert exc.partial is not None and exc.partial.calls[0].raw_arguments == raw
        return
    assert finish in ("tool_calls", "stop")
    if response.tool_calls:
        assert response.tool_calls[0].arguments == json.loads(raw)
    else:
        with pytest.raises(ValueError):
            json.loads(raw)


_chunks = st.lists(
    st.one_of(
        st.builds(
            lambda i, a: chunk(call(i, None, None, a)),
            st.integers(0, 2),
            st.text('{}[]"a:1,', max_size=4),
        ),
        st.builds(
            lambda i, n: chunk(call(i, f"id{i}{n}", n, "")),
            st.integers(0, 2),
            st.sampled_from(["f", "g"]),
        ),
        st.builds(lambda t: chunk({"content": t}), st.text(max_size=3)),
        st.just(chunk(finish="tool_calls")),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None)
@given(chunks=_chunks)
def test_fast_path_gives_the_same_events_as_the_general_path(chunks: list[dict[str, Any]]) -> None:
    """The fragment fast path changes nothing observable: same events, same outcome."""

    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks)

    def run(fast: bool, as_bytes: bool) -> tuple[list[Any], Any]:
        asm = (StreamAssembler if fast else GeneralPathAssembler)(format="openai-chat")
        events: list[Any] = []
        try:
            if as_bytes:
                events.extend(
                    (type(e).__name__, getattr(e, "delta", None)) for e in asm.feed_bytes(body)
                )
            else:
                for c in chunks:
                    events.extend(
                        (type(e).__name__, getattr(e, "delta", None)) for e in asm.feed(c)
                    )
            return events, asm.close()
        except toolwire.StreamError as exc:
            return events, (type(exc), str(exc))

    assert run(True, False) == run(False, False)
    assert run(True, True) == run(False, True)


@pytest.mark.parametrize("reason", ["something_new", "abort", "FINISH_REASON_UNSPECIFIED"])
def test_unrecognised_finish_reason_fails_closed(reason: str) -> None:
    """A finish reason no adapter knows to be normal raises ProviderError; no call runs."""
    asm = StreamAssembler(format="openai-chat")
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}}
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    asm.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    with pytest.raises(ProviderError, match="not know to be a normal end") as info:
        asm.close()
    assert info.value.partial is not None
    assert [c.raw_arguments for c in info.value.partial.calls] == ['{"a": 1}']
    assert info.value.partial.raw_finish_reason == reason


@pytest.mark.parametrize("reason", ["eos_token", "stop_sequence", "end_turn"])
def test_compatible_servers_normal_finish_synonyms_finalise(reason: str) -> None:
    """OpenAI-compatible servers' synonyms of a normal end finalise the response."""
    asm = StreamAssembler(format="openai-chat")
    call = {"index": 0, "id": "c1", "function": {"name": "f", "arguments": '{"a": 1}'}}
    asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    asm.feed({"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
    response = asm.close()
    assert response.finish_reason == "tool_calls"
    assert response.raw_finish_reason == reason
    assert [c.arguments for c in response.tool_calls] == [{"a": 1}]


def test_partial_shows_what_arrived_at_any_time() -> None:
    """``partial()`` reports text, calls with raw arguments and usage before the finish."""
    asm = StreamAssembler(format="anthropic")
    asm.feed(
        {
            "type": "message_start",
            "message": {"id": "m1", "model": "c", "usage": {"input_tokens": 7}},
        }
    )
    asm.feed(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        }
    )
    asm.feed(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"a": 1'},
        }
    )
    seen = asm.partial()
    assert [(c.id, c.name, c.raw_arguments, c.ended) for c in seen.calls] == [
        ("t1", "f", '{"a": 1', False)
    ]
    assert seen.usage is not None and seen.usage.input_tokens == 7
    assert seen.response_id == "m1"


def test_choice_selects_a_gemini_candidate() -> None:
    """``choice`` picks the Gemini candidate to assemble, as it picks an OpenAI choice."""

    def candidate(index: int, text: str) -> dict[str, Any]:
        content = {"role": "model", "parts": [{"text": text}]}
        return {"index": index, "content": content, "finishReason": "STOP"}

    chunk = {"candidates": [candidate(0, "first"), candidate(1, "second")], "responseId": "r"}
    for choice, text in ((0, "first"), (1, "second")):
        asm = StreamAssembler(format="gemini", choice=choice)
        asm.feed(chunk)
        assert asm.close().text == text


@pytest.mark.parametrize(
    "cls",
    [
        toolwire.Response,
        toolwire.ToolCall,
        toolwire.RejectedCall,
        toolwire.Partial,
        toolwire.PartialCall,
        toolwire.Usage,
        ContentPart,
    ],
)
def test_help_documents_every_field(cls: type) -> None:
    """Each result class names every one of its fields in its docstring (what help() shows)."""
    doc = cls.__doc__ or ""
    for field in dataclasses.fields(cls):
        assert f"``{field.name}``" in doc, f"{cls.__name__}.{field.name} is undocumented"
