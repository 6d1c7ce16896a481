"""The Anthropic Messages adapter: quirks, structural errors, mutated payloads, corpus.

The helpers shared by every ``test_adapter_*`` module live in ``adapter_support.py``.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter_support import (
    accumulate,
    assemble_bytes,
    assemble_every_way,
    assert_matches_expected,
    assert_only_format_errors,
    check_deltas,
    corpus_files,
    mutated_streams,
    read_payloads,
    sse_body,
    translate_all,
    without_parts,
)
from conftest import load_expected
from drivers_support import splits
from toolwire import Response, StreamFormatError, ToolCallRejected
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    PartDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from toolwire._providers import FORMATS
from toolwire._providers.anthropic import AnthropicAdapter

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
    """The adapter's deltas for ``payloads``, part boundaries left out."""
    return without_parts(run_with_parts(payloads))


def run_with_parts(payloads: Sequence[Any]) -> list[Delta]:
    """Every delta the adapter makes of ``payloads``, checked."""
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


# The usage of a response that wrote to both cache lifetimes and ran web searches, shaped
# like the Messages API reference (usage.cache_creation, usage.server_tool_use).
CACHED_SEARCH_START = {
    "input_tokens": 50,
    "cache_creation_input_tokens": 3000,
    "cache_read_input_tokens": 0,
    "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    "output_tokens": 1,
}
CACHED_SEARCH_END = {
    "input_tokens": 50,
    "cache_creation_input_tokens": 3000,
    "cache_read_input_tokens": 0,
    "output_tokens": 120,
    "server_tool_use": {"web_search_requests": 2},
}


def test_cache_writes_by_lifetime_and_web_searches_are_reported() -> None:
    """usage.cache_creation gives the 1-hour writes, usage.server_tool_use the searches."""
    deltas = run(
        [
            {
                **message_start(),
                "message": {**message_start()["message"], "usage": CACHED_SEARCH_START},
            },
            {**message_delta("end_turn"), "usage": CACHED_SEARCH_END},
        ]
    )
    start, end = [d for d in deltas if isinstance(d, UsageDelta)]
    assert (start.cache_write_tokens, start.cache_write_1h_tokens) == (3000, 2000)
    assert start.web_search_requests is None
    assert (end.web_search_requests, end.output_tokens) == (2, 120)


def test_cache_creation_alone_gives_the_cache_writes() -> None:
    """Without cache_creation_input_tokens the writes are the sum of both lifetimes."""
    usage = {"input_tokens": 5, "cache_creation": {"ephemeral_5m_input_tokens": 7,
                                                   "ephemeral_1h_input_tokens": 4}}  # fmt: skip
    (delta,) = [d for d in run([{"type": "message_delta", "delta": {}, "usage": usage}])]
    assert isinstance(delta, UsageDelta)
    assert (delta.cache_write_tokens, delta.cache_write_1h_tokens) == (11, 4)


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
    """A non-empty ``input`` and no input_json_delta at all: the stop states it whole."""
    start = tool_start(0, input={"path": "é.txt", "n": 2})
    calls = calls_of(run([start, block_stop(0)]))
    assert calls[-1] == CallDelta(
        id="toolu_1", index=0, final_arguments='{"path":"é.txt","n":2}', start=False, end=True
    )


def test_nonempty_start_input_is_restated_at_the_stop_after_fragments() -> None:
    """Fragments stream as they come, and the stop still restates the start input, for
    the assembler to check them against."""
    start = tool_start(0, input={"stale": True})
    calls = calls_of(run([start, json_delta(0, ""), json_delta(0, '{"a":1}'), block_stop(0)]))
    assert [c.arguments for c in calls] == ["", '{"a":1}', ""]
    assert calls[-1].final_arguments == '{"stale":true}' and calls[-1].end


# ------------------------------------------- start input through the assembler

WIPE = {"device": "/dev/sdz-scratch"}

_SDK_EVENTS = {
    "message_start": "RawMessageStartEvent",
    "content_block_start": "RawContentBlockStartEvent",
    "content_block_delta": "RawContentBlockDeltaEvent",
    "content_block_stop": "RawContentBlockStopEvent",
    "message_delta": "RawMessageDeltaEvent",
    "message_stop": "RawMessageStopEvent",
}


def wipe_stream(start_input: dict[str, Any], *fragments: str) -> list[dict[str, Any]]:
    """One ``wipe_disk`` call whose start carries ``start_input``, then ``fragments``."""
    return [
        message_start(),
        tool_start(0, "toolu_w", "wipe_disk", input=start_input),
        *(json_delta(0, f) for f in fragments),
        block_stop(0),
        message_delta("tool_use"),
        STOP,
    ]


def sdk_events(payloads: Sequence[dict[str, Any]]) -> list[Any]:
    """The ``anthropic`` SDK's event objects for ``payloads``."""
    types = importlib.import_module("anthropic.types")
    return [getattr(types, _SDK_EVENTS[p["type"]]).model_validate(p) for p in payloads]


def assemble(payloads: list[dict[str, Any]]) -> tuple[Response, list[Any]]:
    """The response of ``payloads``, the same as dicts, SDK objects and SSE bytes (whole
    and byte by byte), on the fast and the general path."""
    return assemble_every_way(payloads, sdk_events(payloads))


def test_start_input_survives_the_empty_first_fragment() -> None:
    """The start input is the call when only the empty first fragment follows."""
    response, _ = assemble(wipe_stream(WIPE, ""))
    (call,) = response.tool_calls
    assert (call.name, call.arguments) == ("wipe_disk", WIPE)
    assert response.rejected == []


def test_fragments_that_say_what_the_start_input_says_are_accepted() -> None:
    """Fragments whose JSON value equals the start input's (spacing, member order and
    1 vs 1.0 aside), or that are a prefix of its text, are accepted as the call."""
    cases: list[tuple[dict[str, Any], list[str]]] = [
        (WIPE, ['{"device":"/dev/sdz']),  # a prefix of the start input: completed by it
        (WIPE, ["", '{"device":"/dev/sdz-scratch"}']),  # repeated, compact
        (WIPE, ["", '{"device": "/dev/', 'sdz-scratch"}']),  # repeated, spaced, in pieces
        ({"a": 1, "b": [True, None]}, ['{"b": [true, null], ', '"a": 1.0}']),  # order, 1.0
    ]
    for start_input, fragments in cases:
        response, events = assemble(wipe_stream(start_input, *fragments))
        assert [c.arguments for c in response.tool_calls] == [start_input], fragments
        assert response.rejected == [] and not any(isinstance(e, ToolCallRejected) for e in events)


@pytest.mark.parametrize(
    ("start_input", "fragments"),
    [
        (WIPE, ["", '{"device": "/dev/sda"}']),  # another value
        (WIPE, ['{"device": "/dev/sdz-scratch", "force": true}']),  # one member more
        (WIPE, ["{}"]),  # nothing at all
        ({"n": 1}, ['{"n": true}']),  # a boolean is never a number
        (WIPE, ['{"device": "/dev/sd']),  # unfinished, and not the start input's text
    ],
)
def test_fragments_that_contradict_the_start_input_reject_the_call(
    start_input: dict[str, Any], fragments: list[str]
) -> None:
    """A start input contradicted by the fragments rejects the call: data, not an error."""
    response, events = assemble(wipe_stream(start_input, *fragments))
    assert response.tool_calls == []
    (rejected,) = response.rejected
    assert rejected.name == "wipe_disk" and rejected.raw_arguments == "".join(fragments)
    assert "start input" in rejected.reason and "contradict" in rejected.reason
    assert [e.reason for e in events if isinstance(e, ToolCallRejected)] == [rejected.reason]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 2000), max_size=12), st.booleans())
def test_start_input_streams_read_the_same_at_any_split(cuts: list[int], agree: bool) -> None:
    """An SSE body with a start input reads the same wherever it is cut: the start input
    is the call, or the contradicting fragments reject it."""
    fragment = '{"device": "/dev/sdz-scratch"}' if agree else '{"device": "/dev/sda"}'
    response, _ = assemble_bytes(splits(sse_body(wipe_stream(WIPE, "", fragment)), cuts))
    if agree:
        assert [c.arguments for c in response.tool_calls] == [WIPE]
    else:
        assert response.tool_calls == [] and len(response.rejected) == 1


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
        assert at_stop == [FinishDelta(raw=reason, kind=kind, paused=reason == "pause_turn")]
    else:
        assert during == [FinishDelta(raw=reason, kind=kind)]
        assert at_stop == []


def test_thinking_is_reasoning_and_its_signature_is_kept_on_its_part() -> None:
    """A thinking block opens a reasoning part; signature_delta is that part's signature."""
    deltas = run_with_parts(VALID_STREAM[1:5])
    assert deltas == [
        PartDelta(kind="reasoning", start=True),
        ReasoningPart(text="hmm"),
        PartDelta(kind="reasoning", data={"signature": "c2ln"}),
    ]


def test_redacted_thinking_is_kept_as_an_item() -> None:
    """An encrypted redacted_thinking block yields no text, only an item to send back."""
    block = {"type": "redacted_thinking", "data": "enc"}
    deltas = run_with_parts([block_start(0, block), block_stop(0)])
    assert deltas == [PartDelta(kind="item", data=block)]


def test_each_text_block_opens_its_own_part() -> None:
    """Text blocks start parts, so two text blocks stay two blocks in the assistant turn."""
    deltas = run_with_parts([text_start(0), text_delta(0, "a"), block_stop(0), text_start(1)])
    assert deltas == [
        PartDelta(kind="text", start=True),
        TextPart(text="a"),
        PartDelta(kind="text", start=True),
    ]


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
        ("bedrock-converse", "bedrock_converse", "BedrockConverseAdapter"),
        ("ollama", "ollama", "OllamaAdapter"),
        ("cohere", "cohere", "CohereAdapter"),
    ],
)
def test_registry_builds_each_adapter_for_its_format(fmt: str, module: str, name: str) -> None:
    """The registry finds each provider's adapter class, whose ``format`` is its name."""
    adapter = FORMATS.provider(fmt).adapter(0)
    cls = getattr(importlib.import_module(f"toolwire._providers.{module}"), name)
    assert type(adapter) is cls and adapter.format == fmt == cls.format
    assert adapter.translate({"type": "an-event-from-next-year"}) == []


# ------------------------------------------------------------------------ corpus


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_files("anthropic__"))
def test_corpus_stream_translates_to_its_expected_result(corpus_dir: Path, name: str) -> None:
    """Each recorded Anthropic stream yields its expected text, calls and stop reason."""
    deltas = run(list(read_payloads(corpus_dir / "streams" / name)))
    assert_matches_expected(accumulate(deltas), load_expected()[name])
