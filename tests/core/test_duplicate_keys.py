"""A repeated object key: the preview keeps the first value, ``json.loads`` the last, so a
call (or a structured output) that repeats a key is refused wherever it is finalised: the
parser's ``reject_duplicates`` reports the key when it has been read, the assembler rejects
the call in every wire format and any split, the executor runs nothing, and structured
output raises ``OutputValidationError``."""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import toolwire
from adapter_support import GeneralPathAssembler
from output_support import chat_payloads, pieces_at
from toolwire import (
    JSONDuplicateKeyError,
    OutputValidationError,
    PartialJSONParser,
    StreamAssembler,
    ToolCallArguments,
    ToolCallRejected,
)
from toolwire.testing import EncodeOptions, encoder_for, serialise
from toolwire.testing._scenario import make_response

RAW = '{"path": "drafts/old.txt", "path": "reports/final.txt"}'
SECOND = RAW.rindex('"path"')  # where the repeated key's opening quote is
# formats whose wire carries the arguments as text (Gemini and Ollama send decoded objects)
TEXT_FORMATS = ("openai-chat", "openai-responses", "anthropic", "bedrock-converse", "cohere")


def _feed(parser: PartialJSONParser, pieces: list[str]) -> int:
    """Feed ``pieces``; return how many were taken (a raising piece raises)."""
    for piece in pieces:
        parser.feed(piece)
    return len(pieces)


# --------------------------------------------------------------------------- the parser


def test_the_repeated_key_is_reported_once_it_has_been_read() -> None:
    """Fed one character at a time, the error comes with the repeated key's closing quote
    (not before), names the key and its path, and points at its opening quote."""
    parser = PartialJSONParser(reject_duplicates=True)
    closing = SECOND + len('"path"') - 1
    for ch in RAW[:closing]:
        parser.feed(ch)
    assert parser.snapshot() == {"path": "drafts/old.txt"}
    with pytest.raises(JSONDuplicateKeyError) as info:
        parser.feed(RAW[closing])
    exc = info.value
    assert (exc.offset, exc.path, exc.key) == (SECOND, ("path",), "path")
    assert "'path'" in exc.msg and "/path" in exc.msg
    assert isinstance(exc, toolwire.JSONSyntaxError) and isinstance(exc, ValueError)
    with pytest.raises(JSONDuplicateKeyError) as again:  # the parser refuses more input
        parser.feed("}")
    assert (again.value.offset, again.value.path) == (SECOND, ("path",))
    with pytest.raises(JSONDuplicateKeyError):
        parser.close()


def test_the_default_parser_still_follows_json_loads() -> None:
    """Without ``reject_duplicates`` the preview keeps the first value and ``close()`` is
    ``json.loads``' result; with it, the same text raises (and ``events=False`` agrees)."""
    parser = PartialJSONParser(reject_duplicates=False)
    parser.feed(RAW)
    assert parser.snapshot() == {"path": "drafts/old.txt"}
    assert parser.close() == json.loads(RAW) == {"path": "reports/final.txt"}
    for events in (True, False):
        with pytest.raises(JSONDuplicateKeyError):
            PartialJSONParser(events=events, reject_duplicates=True).feed(RAW)
    with pytest.raises(TypeError):
        PartialJSONParser(reject_duplicates=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "path"),
    [
        ('{"a": {"b": [{"c": 1, "d": 2, "c": 3}]}}', ("a", "b", 0, "c")),
        ('[0, {"x": [1, {"k": null, "k": null}]}]', (1, "x", 1, "k")),
        ('{"a": 1, "\\u0061": 2}', ("a",)),  # escapes decode to the same key
        ('{"\\u00e9": 1, "é": 2}', ("é",)),
        ('{"a/~b": {"\\"": 1, "\\"": 2}}', ("a/~b", '"')),
        ('{"": [], "": {}}', ("",)),
        ('{"x": 1, "y": {"x": 2}, "y": 3}', ("y",)),
    ],
)
def test_repeated_keys_at_any_depth_and_in_any_spelling(text: str, path: tuple[Any, ...]) -> None:
    """A key repeated in nested objects, or spelled with escapes that decode to the same
    string, is reported with its path, whatever the split (whole, per character)."""
    for step in (len(text), 1, 3):
        parser = PartialJSONParser(reject_duplicates=True)
        with pytest.raises(JSONDuplicateKeyError) as info:
            _feed(parser, [text[i : i + step] for i in range(0, len(text), step)])
        assert info.value.path == path
        assert text[info.value.offset] == '"'


@pytest.mark.parametrize(
    "text",
    [
        '[{"a": 1}, {"a": 2}]',
        '{"x": {"a": 1}, "y": {"a": 1}, "a": 0}',
        '{"a": {"a": {"a": 1}}}',
        '{"a": 1, "A": 2, "a ": 3, "\\u0062": 4}',
        '{"k": [{"k": 1}, {"k": 2}], "j": {"k": 3}}',
    ],
)
def test_the_same_key_in_sibling_or_nested_objects_is_not_repeated(text: str) -> None:
    """Keys are compared within one object only: siblings and nested objects may use the
    same key, and the value equals ``json.loads``, whatever the split."""
    for step in (len(text), 1, 2):
        parser = PartialJSONParser(reject_duplicates=True)
        assert _feed(parser, [text[i : i + step] for i in range(0, len(text), step)])
        assert parser.close() == json.loads(text)


_keys = st.sampled_from(["a", "é", "path", "日本", 'a"b', "x\\y", "\u2028", "🎉"])
_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
_WRAPPERS = [("", "", ()), ('{"outer": [', "]}", ("outer", 0)), ("[1, ", "]", (1,))]


@st.composite
def _objects(draw: st.DrawFn) -> tuple[str, tuple[Any, ...] | None, int]:
    """An object text (inside a wrapper) whose members are drawn from few keys, each key
    spelled with or without escapes; the first repeated key's path and offset (or
    ``None`` and -1 when no key repeats)."""
    head, tail, where = draw(st.sampled_from(_WRAPPERS))
    pairs = draw(st.lists(st.tuples(_keys, _values, st.booleans()), max_size=5))
    text = head + "{"
    seen: set[str] = set()
    first: tuple[tuple[Any, ...], int] | None = None
    for i, (key, value, ascii_only) in enumerate(pairs):
        text += ", " if i else ""
        if key in seen and first is None:
            first = ((*where, key), len(text))
        seen.add(key)
        text += json.dumps(key, ensure_ascii=ascii_only) + ": " + json.dumps(value)
    text += "}" + tail
    return (text, *first) if first is not None else (text, None, -1)


@given(_objects(), st.data())
@settings(max_examples=150)
def test_the_first_repeated_key_is_found_at_any_split(
    drawn: tuple[str, tuple[Any, ...] | None, int], data: st.DataObject
) -> None:
    """At Hypothesis-chosen splits, the first repeated key is reported with the same path
    and offset as fed whole; a text without one gives ``json.loads``' value."""
    text, path, offset = drawn
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12))
    for pieces in ([text], list(text), pieces_at(text, cuts)):
        parser = PartialJSONParser(reject_duplicates=True)
        if path is None:
            _feed(parser, pieces)
            assert parser.close() == json.loads(text)
            continue
        with pytest.raises(JSONDuplicateKeyError) as info:
            _feed(parser, pieces)
        assert (info.value.path, info.value.offset) == (path, offset)


# ------------------------------------------------------------------------ the assembler


def _body(fmt: str, raw: str = RAW) -> bytes:
    """The streamed body of a response with one ``delete_file`` call whose argument text
    is ``raw``, in ``fmt`` (the simulator's encoder)."""
    encoder = encoder_for(fmt)
    rng = random.Random(3)
    response = encoder.ids(make_response(tool_calls=[("delete_file", raw)]), rng=rng)
    frames = encoder.stream(response, rng=rng, options=EncodeOptions(include_usage=True))
    return b"".join(serialise(frames, encoder.framing))


def _run(asm: StreamAssembler, pieces: list[bytes]) -> tuple[list[Any], toolwire.Response]:
    events: list[Any] = []
    for piece in pieces:
        events += asm.feed_bytes(piece)
    return events, asm.close()


def _check_rejected(events: list[Any], response: toolwire.Response) -> None:
    """One rejected call that names the repeated key; no preview ever showed its value."""
    assert response.tool_calls == []
    [rejected] = response.rejected
    assert (rejected.duplicate_key, rejected.offset, rejected.raw_arguments) == (
        ("path",),
        SECOND,
        RAW,
    )
    assert "'path'" in rejected.reason
    [event] = [e for e in events if isinstance(e, ToolCallRejected)]
    assert (event.duplicate_key, event.offset) == (("path",), SECOND)
    previews = [e.preview for e in events if isinstance(e, ToolCallArguments)]
    assert previews and all("reports" not in json.dumps(p) for p in previews)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_a_repeated_key_rejects_the_call_whole_and_byte_by_byte(fmt: str) -> None:
    """In every format that streams argument text, the body fed whole and one byte at a
    time (fast and general path) gives a rejected call that names the key."""
    body = _body(fmt)
    for make in (StreamAssembler, GeneralPathAssembler):
        _check_rejected(*_run(make(), [body]))
        _check_rejected(*_run(make(), [body[i : i + 1] for i in range(len(body))]))


@given(st.sampled_from(TEXT_FORMATS), st.data())
@settings(max_examples=40)
def test_a_repeated_key_rejects_the_call_at_any_split(fmt: str, data: st.DataObject) -> None:
    """The body split at Hypothesis-chosen offsets gives the same rejection."""
    body = _body(fmt)
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(body) - 1), max_size=20))))
    bounds = [0, *cuts, len(body)]
    _check_rejected(*_run(StreamAssembler(), [body[i:j] for i, j in itertools.pairwise(bounds)]))


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _fragment(args: str, **head: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"index": 0, "function": {"arguments": args}}
    if head:
        entry["id"] = head["id"]
        entry["function"]["name"] = head["name"]
    return _chat_chunk({"tool_calls": [entry]})


def test_openai_chat_fragments_split_inside_the_repeated_key() -> None:
    """OpenAI chat payloads whose fragments cut the repeated key in two: the call is
    rejected by the fragment that finishes the key, and a later valid call is kept."""
    for make in (StreamAssembler, GeneralPathAssembler):
        asm = make()
        asm.feed(_fragment(RAW[: SECOND + 3], id="c1", name="delete_file"))
        events = asm.feed(_fragment(RAW[SECOND + 3 :]))
        assert [type(e) for e in events] == [ToolCallRejected]
        asm.feed(
            _chat_chunk(
                {
                    "tool_calls": [
                        {
                            "index": 1,
                            "id": "c2",
                            "function": {"name": "delete_file", "arguments": '{"path": "x"}'},
                        }
                    ]
                }
            )
        )
        asm.feed(_chat_chunk({}, finish="tool_calls"))
        response = asm.close()
        assert [c.arguments for c in response.tool_calls] == [{"path": "x"}]
        assert response.rejected[0].duplicate_key == ("path",)


def test_whole_arguments_in_one_event_are_checked_too() -> None:
    """Arguments that arrive whole (an Ollama call given as text, a Responses item whose
    ``done`` event restates arguments no delta carried) are rejected the same way."""
    ollama = StreamAssembler(format="ollama")
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"function": {"name": "delete_file", "arguments": RAW}}],
    }
    ollama.feed({"model": "m", "message": message, "done": False})
    ollama.feed(
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
        }
    )
    assert ollama.close().rejected[0].duplicate_key == ("path",)

    responses = StreamAssembler(format="openai-responses")
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "delete_file",
        "arguments": "",
    }
    responses.feed({"type": "response.created", "response": {"id": "resp_1", "model": "m"}})
    responses.feed({"type": "response.output_item.added", "output_index": 0, "item": item})
    done = responses.feed(
        {"type": "response.output_item.done", "output_index": 0, "item": {**item, "arguments": RAW}}
    )
    assert [e.duplicate_key for e in done if isinstance(e, ToolCallRejected)] == [("path",)]
    responses.feed(
        {
            "type": "response.completed",
            "response": {"id": "resp_1", "model": "m", "status": "completed", "output": []},
        }
    )
    assert responses.close().rejected[0].offset == SECOND


# ------------------------------------------------------------------------- the executor


def _tools(runs: Counter[str]) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        runs[path] += 1
        return "deleted"

    return tools


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_the_executor_runs_nothing_and_tells_the_model_the_key(fmt: str) -> None:
    """The rejected call is not run (nor, by default, any other call of the response);
    its tool result names the repeated key and where it is."""
    runs: Counter[str] = Counter()
    tools = _tools(runs)
    encoder = encoder_for(fmt)
    rng = random.Random(4)
    scenario = make_response(
        tool_calls=[("delete_file", RAW), ("delete_file", '{"path": "a.txt"}')]
    )
    frames = encoder.stream(encoder.ids(scenario, rng=rng), rng=rng, options=EncodeOptions())
    asm = StreamAssembler()
    asm.feed_bytes(b"".join(serialise(frames, encoder.framing)))
    response = asm.close()
    outcomes = toolwire.Executor(tools, scope="dup").run(response)
    assert [o.status for o in outcomes] == ["rejected", "skipped"]
    assert runs == Counter()
    assert outcomes[0].error is not None
    assert '"path"' in outcomes[0].error and "/path" in outcomes[0].error
    assert "not valid JSON" not in outcomes[0].error
    messages = json.dumps(toolwire.tool_results(outcomes, fmt))
    assert 'the key \\"path\\" more than once' in messages


def test_an_unknown_tool_with_a_repeated_key_says_both() -> None:
    """A rejected call naming an unknown tool is told that, and which key it repeated."""
    call = toolwire.RejectedCall(
        id="c", name="nope", raw_arguments=RAW, reason="r", index=0, duplicate_key=("path",)
    )
    verdict = _tools(Counter()).check(call)
    assert isinstance(verdict, toolwire.InvalidCall)
    assert 'There is no tool named "nope"' in verdict.reason
    assert 'give the key "path" more than once' in verdict.reason


# -------------------------------------------------------------------- structured output


class Target(BaseModel):
    path: str
    notes: dict[str, int] = {}


@given(
    st.sampled_from(
        ['{"path": "a", "path": "b"}', '{"path": "a", "notes": {"x": 1, "\\u0078": 2}}']
    ),
    st.data(),
)
@settings(max_examples=30)
def test_structured_output_with_a_repeated_key_is_invalid(text: str, data: st.DataObject) -> None:
    """The text channel parsed as JSON raises ``OutputValidationError`` naming the key, at
    ``close()`` or, with ``early_abort``, from the ``feed`` that read the key, at any split."""
    path = ("path",) if text.count('"path"') == 2 else ("notes", "x")
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=8))
    for pieces in ([text], list(text), pieces_at(text, cuts)):
        asm = StreamAssembler(output=Target)
        for payload in chat_payloads(pieces):
            asm.feed(payload)
        with pytest.raises(OutputValidationError) as info:
            asm.close()
        assert info.value.path == path and repr(path[-1]) in str(info.value)

        early = StreamAssembler(output=Target, early_abort=True)
        with pytest.raises(OutputValidationError):
            for payload in chat_payloads(pieces):
                early.feed(payload)


def test_a_forced_output_tool_with_a_repeated_key_is_invalid() -> None:
    """A forced tool's arguments that repeat a key raise ``OutputValidationError``."""
    asm = StreamAssembler(output=Target, output_tool="answer")
    asm.feed(_fragment('{"path": "a", ', id="c1", name="answer"))
    asm.feed(_fragment('"path": "b"}'))
    asm.feed(_chat_chunk({}, finish="tool_calls"))
    with pytest.raises(OutputValidationError) as info:
        asm.close()
    assert info.value.path == ("path",) and "'path'" in str(info.value)
