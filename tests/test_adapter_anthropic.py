"""The Anthropic Messages adapter: quirks, structural errors, mutated payloads, corpus.

The first section also holds the helpers that the other ``test_adapter_*`` modules import
(reading corpus payloads, mutating valid payloads, checking delta types, a minimal
accumulator), so that every adapter is held to the same properties.
"""

from __future__ import annotations

import copy
import importlib
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_expected
from toolwire import StreamFormatError
from toolwire._adapters import create_adapter
from toolwire._adapters.anthropic import AnthropicAdapter
from toolwire._deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)

# ------------------------------------------------------------------ shared helpers


def read_payloads(path: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    """``(payload, sse event name)`` for each event of a recorded SSE or JSON Lines file."""
    text = path.read_text("utf-8")
    if path.suffix != ".sse":
        for line in text.splitlines():
            if line.strip():
                yield json.loads(line), None
        return
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data and data != ["[DONE]"]:
            yield json.loads("\n".join(data)), event


def translate_all(adapter: Any, payloads: Sequence[Any]) -> list[Delta]:
    """Every delta ``adapter`` makes of ``payloads`` (dicts, or ``(dict, event)`` pairs)."""
    out: list[Delta] = []
    for item in payloads:
        payload, event = item if isinstance(item, tuple) else (item, None)
        out.extend(adapter.translate(payload, event))
    return out


_SWAPS: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], [1], {}, {"a": 1}]


def _positions(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _positions(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _positions(item, (*path, index))


@st.composite
def mutated(draw: st.DrawFn, payload: dict[str, Any]) -> Any:
    """``payload`` with one node dropped, set to null or replaced by another JSON type."""
    positions = list(_positions(payload))
    path = draw(st.sampled_from(positions))
    result = copy.deepcopy(payload)
    if not path:
        return draw(st.sampled_from(_SWAPS))
    parent = result
    for key in path[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["drop", "swap"]))
    if action == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(st.sampled_from(_SWAPS))
    return result


def mutated_streams(stream: Sequence[dict[str, Any]]) -> st.SearchStrategy[list[Any]]:
    """``stream`` with one to three of its payloads mutated."""

    @st.composite
    def build(draw: st.DrawFn) -> list[Any]:
        out: list[Any] = list(stream)
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(out) - 1))
            out[at] = draw(mutated(stream[at]))
        return out

    return build()


def check_deltas(deltas: Sequence[Delta]) -> None:
    """Every delta is well typed: what an adapter emits never needs checking downstream."""
    for delta in deltas:
        if isinstance(delta, CallDelta):
            assert isinstance(delta.arguments, str)
            assert delta.id is None or (isinstance(delta.id, str) and delta.id)
            assert delta.name is None or isinstance(delta.name, str)
            assert delta.index is None or (type(delta.index) is int and delta.index >= 0)
            assert delta.start in (True, False, None) and delta.end in (True, False)
        elif isinstance(delta, (TextPart, ReasoningPart)):
            assert isinstance(delta.text, str) and delta.text
        elif isinstance(delta, UsageDelta):
            for name in ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens"):
                count = getattr(delta, name)
                assert count is None or (type(count) is int and count >= 0)
        elif isinstance(delta, FinishDelta):
            assert delta.raw is None or isinstance(delta.raw, str)
        elif isinstance(delta, ErrorDelta):
            assert isinstance(delta.message, str) and delta.message
        else:
            assert isinstance(delta, MetaDelta)


def assert_only_format_errors(make: Callable[[], Any], stream: Sequence[Any]) -> None:
    """Feeding ``stream`` raises nothing but ``StreamFormatError`` carrying the payload."""
    adapter = make()
    for payload in stream:
        try:
            deltas = adapter.translate(payload)
        except StreamFormatError as exc:
            assert exc.payload is payload
            assert str(exc)
            return
        check_deltas(deltas)


def accumulate(deltas: Sequence[Delta]) -> dict[str, Any]:
    """A deliberately simple reading of an adapter's deltas, independent of the assembler.

    A ``start=True`` piece opens a call; any other piece continues the open call with the
    same id, else the same index, else the latest one.
    """
    calls: list[dict[str, Any]] = []
    text, reasoning, finish, errors = [], [], [], []
    meta: dict[str, Any] = {}
    for delta in deltas:
        if isinstance(delta, CallDelta):
            if delta.start:
                calls.append(
                    {
                        "id": delta.id,
                        "index": delta.index,
                        "name": delta.name,
                        "raw": "",
                        "ended": False,
                        "metadata": {},
                    }
                )
                call = calls[-1]
            else:
                open_calls = [c for c in calls if not c["ended"]]
                by_id = [c for c in open_calls if delta.id and c["id"] == delta.id]
                by_index = [c for c in open_calls if c["index"] == delta.index]
                call = (by_id or by_index or open_calls)[-1]
            call["raw"] += delta.arguments
            call["ended"] = call["ended"] or delta.end
            call["metadata"].update(delta.metadata or {})
        elif isinstance(delta, TextPart):
            text.append(delta.text)
        elif isinstance(delta, ReasoningPart):
            reasoning.append(delta.text)
        elif isinstance(delta, FinishDelta):
            finish.append(delta)
        elif isinstance(delta, ErrorDelta):
            errors.append(delta)
        elif isinstance(delta, MetaDelta):
            meta.update({k: v for k, v in (("id", delta.response_id), ("model", delta.model)) if v})
    return {
        "calls": calls,
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "finish": finish,
        "errors": errors,
        "meta": meta,
    }


def corpus_files(prefix: str) -> list[str]:
    """Names of the corpus streams whose file name starts with ``prefix``.

    Without the corpus this is one placeholder, so that the test still runs and its
    ``corpus_dir`` fixture skips it (or fails it under ``CI=true``).
    """
    names = sorted(name for name in load_expected() if name.startswith(prefix))
    return names or [f"{prefix}<corpus absent>"]


def assert_matches_expected(result: dict[str, Any], expected: dict[str, Any]) -> None:
    """The accumulated deltas agree with ``expected.json``'s entry for the stream."""
    assert result["text"] == expected["text"]
    assert len(result["calls"]) == len(expected["tool_calls"])
    for call, want in zip(result["calls"], expected["tool_calls"], strict=True):
        assert call["name"] == want["name"]
        assert call["id"] == want["id"]
        if want.get("arguments_valid_json"):
            assert call["ended"]
            assert json.loads(call["raw"] or "{}") == want["arguments"]
        if isinstance(want.get("arguments_raw"), str):
            assert call["raw"] == want["arguments_raw"]
    assert [f.raw for f in result["finish"]] == [expected["finish_reason"]]
    if expected.get("reasoning_chars"):
        assert len(result["reasoning"]) == expected["reasoning_chars"]
    if expected.get("response_id"):
        assert result["meta"].get("id") == expected["response_id"]
    if expected.get("model"):
        assert result["meta"].get("model") == expected["model"]


# ------------------------------------------------------------------ payload builders


def message_start(**usage: int) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "usage": usage or {"input_tokens": 10, "output_tokens": 1},
        },
    }


def block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def text_start(index: int) -> dict[str, Any]:
    return block_start(index, {"type": "text", "text": ""})


def tool_start(index: int, call_id: str = "toolu_1", name: str = "f", **block: Any) -> dict:
    return block_start(
        index, {"type": "tool_use", "id": call_id, "name": name, "input": {}, **block}
    )


def block_delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def text_delta(index: int, text: str) -> dict[str, Any]:
    return block_delta(index, {"type": "text_delta", "text": text})


def json_delta(index: int, fragment: str) -> dict[str, Any]:
    return block_delta(index, {"type": "input_json_delta", "partial_json": fragment})


def block_stop(index: int) -> dict[str, Any]:
    return {"type": "content_block_stop", "index": index}


def message_delta(reason: str | None, **usage: int) -> dict[str, Any]:
    return {
        "type": "message_delta",
        "delta": {"stop_reason": reason, "stop_sequence": None},
        "usage": usage or {"output_tokens": 20},
    }


STOP = {"type": "message_stop"}

VALID_STREAM: list[dict[str, Any]] = [
    message_start(input_tokens=12, output_tokens=1, cache_read_input_tokens=3),
    block_start(0, {"type": "thinking", "thinking": ""}),
    block_delta(0, {"type": "thinking_delta", "thinking": "hmm"}),
    block_delta(0, {"type": "signature_delta", "signature": "c2ln"}),
    block_stop(0),
    text_start(1),
    text_delta(1, "Let me look."),
    {"type": "ping"},
    block_stop(1),
    tool_start(2, "toolu_a", "get_weather"),
    json_delta(2, ""),
    json_delta(2, '{"city": "Par'),
    json_delta(2, 'is"}'),
    block_stop(2),
    message_delta("tool_use", output_tokens=40),
    STOP,
]


def run(payloads: Sequence[Any]) -> list[Delta]:
    deltas = translate_all(AnthropicAdapter(), payloads)
    check_deltas(deltas)
    return deltas


def calls_of(deltas: Sequence[Delta]) -> list[CallDelta]:
    return [d for d in deltas if isinstance(d, CallDelta)]


# ------------------------------------------------------------------------ quirks


def test_message_start_reports_identity_and_input_usage() -> None:
    """message_start gives the message id and model, and the input tokens already spent."""
    deltas = run([message_start(input_tokens=7, output_tokens=1, cache_read_input_tokens=2)])
    assert deltas[0] == MetaDelta(response_id="msg_1", model="claude-test")
    usage = deltas[1]
    assert isinstance(usage, UsageDelta)
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (7, 1, 2)


def test_message_delta_usage_is_the_running_output_total() -> None:
    """message_delta usage reports output tokens (a running total), without finishing."""
    deltas = run([message_delta("end_turn", output_tokens=33)])
    assert deltas == [UsageDelta(output_tokens=33, raw={"output_tokens": 33})]


def test_text_blocks_become_text_parts() -> None:
    """text_delta pieces become TextPart in order; empty pieces are dropped."""
    deltas = run([text_start(0), text_delta(0, "Hel"), text_delta(0, ""), text_delta(0, "lo")])
    assert deltas == [TextPart(text="Hel"), TextPart(text="lo")]


def test_tool_use_block_opens_streams_and_ends_one_call() -> None:
    """A tool_use block opens a call with id, name and index, streams fragments, then ends."""
    deltas = run(
        [
            tool_start(3, "toolu_x", "search"),
            json_delta(3, ""),
            json_delta(3, '{"q":1}'),
            block_stop(3),
        ]
    )
    assert deltas == [
        CallDelta(id="toolu_x", index=3, name="search", start=True),
        CallDelta(id="toolu_x", index=3, arguments='{"q":1}', start=False),
        CallDelta(id="toolu_x", index=3, start=False, end=True),
    ]


def test_empty_start_input_is_never_argument_text() -> None:
    """The placeholder ``input: {}`` is not emitted, with or without the empty fragment."""
    for middle in ([json_delta(1, "")], []):
        calls = calls_of(run([tool_start(1), *middle, block_stop(1)]))
        assert "".join(c.arguments for c in calls) == ""
        assert calls[-1].end


def test_nonempty_start_input_without_fragments_is_a_whole_call() -> None:
    """A non-empty ``input`` and no input_json_delta at all: the input is the arguments."""
    start = tool_start(0, input={"path": "é.txt", "n": 2})
    calls = calls_of(run([start, block_stop(0)]))
    assert calls[-1] == CallDelta(
        id="toolu_1", index=0, arguments='{"path":"é.txt","n":2}', start=False, end=True
    )


def test_nonempty_start_input_is_ignored_when_fragments_follow() -> None:
    """When fragments arrive they are the arguments; the start input is never added."""
    start = tool_start(0, input={"stale": True})
    calls = calls_of(run([start, json_delta(0, '{"a":1}'), block_stop(0)]))
    assert "".join(c.arguments for c in calls) == '{"a":1}'


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("pause_turn", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("refusal", "content_filter"),
        ("something_new", "other"),
        (None, "other"),
    ],
)
def test_message_stop_finishes_with_the_remembered_stop_reason(reason: Any, kind: str) -> None:
    """A normal end finishes at message_stop; a failed one already at its message_delta."""
    adapter = AnthropicAdapter()
    during = [d for d in adapter.translate(message_delta(reason)) if isinstance(d, FinishDelta)]
    at_stop = adapter.translate(STOP)
    if kind in ("stop", "tool_calls") or reason is None:
        assert during == []
        assert at_stop == [FinishDelta(raw=reason, kind=kind)]
    else:
        assert during == [FinishDelta(raw=reason, kind=kind)]
        assert at_stop == []


def test_thinking_is_reasoning_and_signatures_are_dropped() -> None:
    """thinking_delta becomes ReasoningPart; signature_delta carries nothing readable."""
    deltas = run(VALID_STREAM[1:5])
    assert deltas == [ReasoningPart(text="hmm")]


def test_redacted_thinking_produces_nothing() -> None:
    """An encrypted redacted_thinking block is tracked but yields no delta."""
    deltas = run([block_start(0, {"type": "redacted_thinking", "data": "enc"}), block_stop(0)])
    assert deltas == []


def test_server_tool_blocks_are_not_client_calls() -> None:
    """server_tool_use and its result block are executed by Anthropic: no CallDelta."""
    deltas = run(
        [
            block_start(0, {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}),
            json_delta(0, '{"query": "x"}'),
            block_stop(0),
            block_start(1, {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1"}),
            block_stop(1),
            text_start(2),
            text_delta(2, "Found it."),
            block_stop(2),
        ]
    )
    assert deltas == [TextPart(text="Found it.")]


def test_error_event_becomes_an_error_delta() -> None:
    """An ``error`` event becomes ErrorDelta with the type, message and error object."""
    error = {"type": "overloaded_error", "message": "Overloaded"}
    deltas = run([{"type": "error", "error": error}])
    assert deltas == [ErrorDelta(message="overloaded_error: Overloaded", error=error)]


def test_ping_and_unknown_events_are_ignored() -> None:
    """ping and event types this adapter does not know give no deltas."""
    assert run([{"type": "ping"}, {"type": "message_flux", "x": 1}]) == []
    unknown_delta = [text_start(0), block_delta(0, {"type": "citations_delta", "citation": {}})]
    assert run(unknown_delta) == []


def test_sse_event_name_stands_in_for_a_missing_type() -> None:
    """A payload without ``type`` is read as the SSE event it came with."""
    deltas = run(
        [({"index": 0, "content_block": {"type": "text", "text": "hi"}}, "content_block_start")]
    )
    assert deltas == [TextPart(text="hi")]


def test_whole_valid_stream_reads_as_one_turn() -> None:
    """The hand-written stream gives reasoning, text, one finished call and a tool finish."""
    result = accumulate(run(VALID_STREAM))
    assert result["reasoning"] == "hmm" and result["text"] == "Let me look."
    assert [(c["id"], c["name"], c["raw"], c["ended"]) for c in result["calls"]] == [
        ("toolu_a", "get_weather", '{"city": "Paris"}', True)
    ]
    assert result["finish"] == [FinishDelta(raw="tool_use", kind="tool_calls")]


# ------------------------------------------------------------------------ structure


BROKEN: list[tuple[str, list[Any]]] = [
    ("not an object", [["message_start"]]),
    ("no type", [{"index": 0}]),
    ("type not a string", [{"type": 5}]),
    ("message not an object", [{"type": "message_start", "message": "msg"}]),
    ("usage count is a boolean", [message_start(input_tokens=True)]),
    ("negative usage count", [message_start(input_tokens=-3)]),
    ("delta for a block that never started", [json_delta(4, "{}")]),
    ("delta after the block stopped", [text_start(0), block_stop(0), text_delta(0, "x")]),
    ("stop for a block that never started", [block_stop(2)]),
    ("block started twice", [text_start(0), text_start(0)]),
    ("index is a string", [block_start("0", {"type": "text"})]),
    ("content_block missing", [{"type": "content_block_start", "index": 0}]),
    ("tool_use without a name", [block_start(0, {"type": "tool_use", "id": "t", "input": {}})]),
    ("tool_use input not an object", [tool_start(0, input="{}")]),
    ("input_json_delta in a text block", [text_start(0), json_delta(0, "{}")]),
    ("text_delta in a tool block", [tool_start(0), text_delta(0, "x")]),
    ("partial_json not a string", [tool_start(0), json_delta(0, 5)]),
    ("delta without type", [text_start(0), block_delta(0, {"text": "x"})]),
    ("second message_stop", [STOP, STOP]),
    ("stop_reason not a string", [message_delta(7)]),
]


@pytest.mark.parametrize(("case", "stream"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_payloads_raise_a_typed_format_error(case: str, stream: list[Any]) -> None:
    """A payload that breaks the format raises StreamFormatError carrying that payload."""
    adapter = AnthropicAdapter()
    for payload in stream[:-1]:
        adapter.translate(payload)
    with pytest.raises(StreamFormatError) as info:
        adapter.translate(stream[-1])
    assert info.value.payload is stream[-1]


@given(mutated_streams(VALID_STREAM))
def test_mutated_payloads_raise_only_format_errors(stream: list[Any]) -> None:
    """Dropped keys, swapped types and nulls give StreamFormatError or well-typed deltas."""
    assert_only_format_errors(AnthropicAdapter, stream)


@given(st.text(max_size=60), st.lists(st.integers(0, 60), max_size=8))
def test_argument_fragments_concatenate_to_the_sent_text(text: str, cuts: list[int]) -> None:
    """However the argument text is split into input_json_delta pieces, it arrives whole."""
    bounds = sorted({0, len(text), *(c for c in cuts if c <= len(text))})
    pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    deltas = run([tool_start(0), *(json_delta(0, p) for p in pieces), block_stop(0)])
    assert "".join(c.arguments for c in calls_of(deltas)) == text


# ------------------------------------------------------------------------ registry


@pytest.mark.parametrize(
    ("fmt", "module", "name"),
    [
        ("anthropic", "anthropic", "AnthropicAdapter"),
        ("gemini", "gemini", "GeminiAdapter"),
        ("bedrock-converse", "bedrock", "BedrockConverseAdapter"),
        ("ollama", "ollama", "OllamaAdapter"),
        ("cohere", "cohere", "CohereAdapter"),
    ],
)
def test_registry_builds_each_adapter_for_its_format(fmt: str, module: str, name: str) -> None:
    """The registry's lazy import finds each adapter class, whose ``format`` is its name."""
    adapter = create_adapter(fmt)
    cls = getattr(importlib.import_module(f"toolwire._adapters.{module}"), name)
    assert type(adapter) is cls and adapter.format == fmt == cls.format
    assert adapter.translate({"type": "an-event-from-next-year"}) == []


# ------------------------------------------------------------------------ corpus


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_files("anthropic__"))
def test_corpus_stream_translates_to_its_expected_result(corpus_dir: Path, name: str) -> None:
    """Each recorded Anthropic stream yields its expected text, calls and stop reason."""
    deltas = run(list(read_payloads(corpus_dir / "streams" / name)))
    assert_matches_expected(accumulate(deltas), load_expected()[name])
