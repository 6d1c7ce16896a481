"""The Cohere v2 chat stream adapter: tool plans, calls by index, finish, errors, corpus."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from adapter_support import (
    accumulate,
    assert_matches_expected,
    assert_only_format_errors,
    check_deltas,
    corpus_files,
    mutated_streams,
    read_payloads,
    translate_all,
    without_parts,
)
from conftest import load_expected
from toolwire import StreamFormatError
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from toolwire._providers.cohere import CohereAdapter


def message(kind: str, index: int | None = None, **content: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": kind, "delta": {"message": content}}
    if index is not None:
        out["index"] = index
    return out


def call_start(index: int, call_id: str, name: str, arguments: str = "") -> dict[str, Any]:
    function = {"name": name, "arguments": arguments}
    return message(
        "tool-call-start",
        index,
        tool_calls={"id": call_id, "type": "function", "function": function},
    )


def call_delta(index: int, fragment: Any) -> dict[str, Any]:
    return message("tool-call-delta", index, tool_calls={"function": {"arguments": fragment}})


def call_end(index: int) -> dict[str, Any]:
    return {"type": "tool-call-end", "index": index}


def message_end(reason: str, **delta: Any) -> dict[str, Any]:
    return {"type": "message-end", "delta": {"finish_reason": reason, **delta}}


START = {"id": "resp-1", "type": "message-start", "delta": {"message": {"role": "assistant"}}}

VALID_STREAM: list[dict[str, Any]] = [
    START,
    message("tool-plan-delta", tool_plan="I will look"),
    message("tool-plan-delta", tool_plan=" it up."),
    call_start(0, "weather_1", "weather"),
    call_delta(0, '{"city":'),
    call_delta(0, ' "Oslo"}'),
    call_end(0),
    call_start(1, "time_2", "time", '{"tz": "CET"}'),
    call_end(1),
    message_end(
        "TOOL_CALL",
        usage={
            "billed_units": {"input_tokens": 10, "output_tokens": 5},
            "tokens": {"input_tokens": 900, "output_tokens": 40},
            "cached_tokens": 300,
        },
    ),
]


def run(payloads: list[Any]) -> list[Delta]:
    """The adapter's deltas for ``payloads``, part boundaries left out."""
    return without_parts(run_with_parts(payloads))


def run_with_parts(payloads: Sequence[Any]) -> list[Delta]:
    """Every delta the adapter makes of ``payloads``, checked."""
    deltas = translate_all(CohereAdapter(), payloads)
    check_deltas(deltas)
    return deltas


def test_message_start_reports_the_response_id() -> None:
    """message-start gives a MetaDelta with the response id."""
    assert run([START]) == [MetaDelta(response_id="resp-1")]


def test_tool_plan_is_reasoning_not_text() -> None:
    """tool-plan-delta pieces are the model's plan: reasoning, never visible text."""
    result = accumulate(run(VALID_STREAM))
    assert result["reasoning"] == "I will look it up." and result["text"] == ""


def test_tool_calls_start_stream_and_end_by_index() -> None:
    """tool-call-start opens a call by index, deltas continue it, tool-call-end ends it."""
    calls = [d for d in run(VALID_STREAM) if isinstance(d, CallDelta)]
    assert calls == [
        CallDelta(id="weather_1", index=0, name="weather", start=True),
        CallDelta(id="weather_1", index=0, arguments='{"city":', start=False),
        CallDelta(id="weather_1", index=0, arguments=' "Oslo"}', start=False),
        CallDelta(id="weather_1", index=0, start=False, end=True),
        CallDelta(id="time_2", index=1, name="time", arguments='{"tz": "CET"}', start=True),
        CallDelta(id="time_2", index=1, start=False, end=True),
    ]


def test_call_without_argument_deltas_has_empty_arguments() -> None:
    """A start with ``arguments: ""`` and an immediate end leaves empty argument text."""
    deltas = run([call_start(0, "t", "currentTime"), call_end(0)])
    assert "".join(d.arguments for d in deltas if isinstance(d, CallDelta)) == ""


def test_tool_calls_given_as_a_one_element_array_are_accepted() -> None:
    """``tool_calls`` as a one-element array reads like the object form."""
    payload = message("tool-call-start", 0, tool_calls=[{"id": "a", "function": {"name": "f"}}])
    assert run([payload]) == [CallDelta(id="a", index=0, name="f", start=True)]


def test_content_deltas_are_text_and_thinking_is_reasoning() -> None:
    """content-delta text is text; thinking content (reasoning models) is reasoning."""
    deltas = run(
        [
            message("content-start", 0, content={"type": "text", "text": ""}),
            message("content-delta", 0, content={"text": "Hi"}),
            message("content-delta", 1, content={"thinking": "hmm"}),
            {"type": "content-end", "index": 0},
        ]
    )
    assert deltas == [TextPart(text="Hi"), ReasoningPart(text="hmm")]


def test_usage_prefers_real_token_counts_and_keeps_billed_units() -> None:
    """Usage takes ``tokens`` (else ``billed_units``), cached tokens, and keeps all in raw."""
    usage = next(d for d in run(VALID_STREAM) if isinstance(d, UsageDelta))
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (900, 40, 940)
    assert usage.cache_read_tokens == 300 and usage.raw["billed_units"]["input_tokens"] == 10
    billed_only = run([message_end("COMPLETE", usage={"billed_units": {"input_tokens": 3}})])
    assert billed_only[0] == UsageDelta(input_tokens=3, raw={"billed_units": {"input_tokens": 3}})


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("COMPLETE", "stop"),
        ("STOP_SEQUENCE", "stop"),
        ("TOOL_CALL", "tool_calls"),
        ("MAX_TOKENS", "length"),
        ("ERROR_LIMIT", "length"),
        ("ERROR_TOXIC", "content_filter"),
        ("ERROR", "error"),
        ("TIMEOUT", "error"),
        ("USER_CANCEL", "other"),
    ],
)
def test_message_end_finishes_with_the_mapped_reason(reason: str, kind: str) -> None:
    """message-end gives the one FinishDelta with its finish_reason mapped."""
    assert run([message_end(reason)]) == [FinishDelta(raw=reason, kind=kind)]


def test_error_at_message_end_gives_an_error_delta_then_the_finish() -> None:
    """An ``error`` message at message-end becomes an ErrorDelta before the finish."""
    deltas = run([message_end("ERROR", error="internal failure")])
    assert deltas == [
        ErrorDelta(
            message="internal failure",
            error={"finish_reason": "ERROR", "error": "internal failure"},
        ),
        FinishDelta(raw="ERROR", kind="error"),
    ]


def test_unknown_events_are_ignored_and_event_names_stand_in() -> None:
    """Citations, debug and unknown events give nothing; an SSE name replaces a missing type."""
    assert run([{"type": "citation-start", "index": 0}, {"type": "debug"}, {"type": "x"}]) == []
    assert run([({"delta": {"message": {"tool_plan": "p"}}}, "tool-plan-delta")]) == [
        ReasoningPart(text="p")
    ]


BROKEN: list[tuple[str, list[Any]]] = [
    ("not an object", [["message-start"]]),
    ("no type", [{"delta": {}}]),
    ("delta for a call that never started", [call_delta(0, "{}")]),
    ("delta after the end", [call_start(0, "a", "f"), call_end(0), call_delta(0, "{}")]),
    ("end for a call that never started", [call_end(3)]),
    ("call started twice", [call_start(0, "a", "f"), call_start(0, "b", "g")]),
    ("index missing", [{"type": "tool-call-end"}]),
    (
        "start without a name",
        [message("tool-call-start", 0, tool_calls={"id": "a", "function": {}})],
    ),
    ("tool_calls not an object", [message("tool-call-start", 0, tool_calls="f")]),
    ("arguments not a string", [call_start(0, "a", "f"), call_delta(0, {"a": 1})]),
    ("delta message missing", [{"type": "tool-plan-delta", "delta": {}}]),
    ("tool plan not a string", [message("tool-plan-delta", tool_plan=3)]),
    ("usage count negative", [message_end("COMPLETE", usage={"tokens": {"input_tokens": -1}})]),
    ("second message-end", [message_end("COMPLETE"), message_end("COMPLETE")]),
]


@pytest.mark.parametrize(("case", "stream"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_events_raise_a_typed_format_error(case: str, stream: list[Any]) -> None:
    """An event that breaks the format raises StreamFormatError carrying that event."""
    adapter = CohereAdapter()
    for payload in stream[:-1]:
        adapter.translate(payload)
    with pytest.raises(StreamFormatError) as info:
        adapter.translate(stream[-1])
    assert info.value.payload is stream[-1]


@given(mutated_streams(VALID_STREAM))
def test_mutated_events_raise_only_format_errors(stream: list[Any]) -> None:
    """Mutated events give StreamFormatError or well-typed deltas, nothing else."""
    assert_only_format_errors(CohereAdapter, stream)


@pytest.mark.corpus
@pytest.mark.parametrize("name", corpus_files("cohere__"))
def test_corpus_stream_translates_to_its_expected_result(corpus_dir: Path, name: str) -> None:
    """Each recorded Cohere stream yields its expected calls and finish; the plan is reasoning."""
    result = accumulate(run(list(read_payloads(corpus_dir / "streams" / name))))
    expected = load_expected()[name]
    assert_matches_expected(result, expected)
    assert result["reasoning"] == expected["tool_plan"]
