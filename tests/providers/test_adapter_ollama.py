"""The Ollama native ``/api/chat`` adapter.

The corpus has no native Ollama recording, so the streams below are written by hand in
the shape documented by Ollama's API reference (``docs/api.md``: "Generate a chat
completion", the streaming, "Chat request (with tools)" and ``think`` examples) and its Go
types (``api/types.go``: ``ChatResponse``, ``Message.Thinking``, ``ToolCall.Function``
with ``Index`` and object ``Arguments``, ``Metrics``): one object per line, tool calls
whole in a ``done: false`` line, then a ``done: true`` line with ``done_reason`` and the
counters.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given

from adapter_support import (
    accumulate,
    assert_only_format_errors,
    check_deltas,
    mutated_streams,
    translate_all,
    without_parts,
)
from toolwire import StreamFormatError
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    TextPart,
    UsageDelta,
)
from toolwire._providers.ollama import OllamaAdapter

CREATED = "2025-06-01T10:00:00.1234Z"


def line(message: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"model": "qwen3:8b", "created_at": CREATED}
    if message is not None:
        out["message"] = {"role": "assistant", "content": "", **message}
    return {**out, "done": False, **fields}


DONE = line(
    {},
    done=True,
    done_reason="stop",
    total_duration=4883583458,
    load_duration=1334875,
    prompt_eval_count=26,
    prompt_eval_duration=342546000,
    eval_count=282,
    eval_duration=4535599000,
)

TEXT_STREAM = [line({"content": "The"}), line({"content": " sky"}), line({"content": ""}), DONE]

TOOL_STREAM = [
    line({"thinking": "The user wants"}),
    line({"thinking": " two cities."}),
    line(
        {
            "tool_calls": [
                {"function": {"index": 0, "name": "get_weather", "arguments": {"city": "Paris"}}}
            ]
        }
    ),
    line(
        {
            "tool_calls": [
                {
                    "id": "call_x1",
                    "function": {"index": 0, "name": "get_weather", "arguments": {"city": "Köln"}},
                }
            ]
        }
    ),
    DONE,
]


def run(payloads: list[Any]) -> list[Delta]:
    """The adapter's deltas for ``payloads``, part boundaries left out."""
    return without_parts(run_with_parts(payloads))


def run_with_parts(payloads: Sequence[Any]) -> list[Delta]:
    """Every delta the adapter makes of ``payloads``, checked."""
    deltas = translate_all(OllamaAdapter(), payloads)
    check_deltas(deltas)
    return deltas


def test_text_stream_gives_text_meta_usage_and_finish() -> None:
    """Content pieces are text, the model is reported once, done gives usage and finish."""
    deltas = run(TEXT_STREAM)
    assert deltas[0] == MetaDelta(model="qwen3:8b", created=CREATED)
    assert [d for d in deltas if isinstance(d, MetaDelta)] == [deltas[0]]
    assert [d.text for d in deltas if isinstance(d, TextPart)] == ["The", " sky"]
    usage = deltas[-2]
    assert isinstance(usage, UsageDelta)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (26, 282, 308)
    assert usage.raw["eval_duration"] == 4535599000
    assert deltas[-1] == FinishDelta(raw="stop", kind="stop")


def test_tool_calls_are_whole_calls_with_serialised_arguments() -> None:
    """Each tool call is one started and ended piece; object arguments become compact JSON."""
    result = accumulate(run(TOOL_STREAM))
    assert result["reasoning"] == "The user wants two cities."
    calls = [d for d in run(TOOL_STREAM) if isinstance(d, CallDelta)]
    assert calls == [
        CallDelta(index=0, name="get_weather", arguments='{"city":"Paris"}', start=True, end=True),
        CallDelta(
            id="call_x1",
            index=1,
            name="get_weather",
            arguments='{"city":"Köln"}',
            start=True,
            end=True,
        ),
    ]


def test_reused_provider_index_does_not_merge_calls() -> None:
    """Ollama's ``index: 0`` on every call is not used: calls get their own positions."""
    calls = [d for d in run(TOOL_STREAM) if isinstance(d, CallDelta)]
    assert [c.index for c in calls] == [0, 1]


def test_string_arguments_are_kept_and_missing_ones_are_empty() -> None:
    """A string ``arguments`` is JSON text already; absent arguments give empty text."""
    calls = [
        {"function": {"name": "a", "arguments": '{"x": 1}'}},
        {"function": {"name": "b"}},
    ]
    deltas = run([line({"tool_calls": calls})])
    assert [c.arguments for c in deltas if isinstance(c, CallDelta)] == ['{"x": 1}', ""]


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("stop", "stop"),
        ("length", "length"),
        ("load", "other"),
        ("unload", "other"),
        ("new_reason", "other"),
        (None, "stop"),
    ],
)
def test_done_reason_is_mapped(reason: str | None, kind: str) -> None:
    """done_reason maps to a finish kind; an old server's missing reason is a normal stop."""
    fields: dict[str, Any] = {"done": True}
    if reason is not None:
        fields["done_reason"] = reason
    assert run([line(**fields)])[-1] == FinishDelta(raw=reason, kind=kind)


@pytest.mark.parametrize(
    ("error", "message"), [("model 'x' not found", "model 'x' not found"), ({}, "Ollama error")]
)
def test_error_lines_become_error_deltas(error: Any, message: str) -> None:
    """An ``{"error": ...}`` line becomes an ErrorDelta."""
    assert run([{"error": error}]) == [ErrorDelta(message=message, error=error)]


def test_lines_without_content_give_nothing_new() -> None:
    """Empty content, unknown fields and repeated models add no deltas."""
    deltas = run([line({"content": "a"}), line({"content": "", "images": None}, extra=1)])
    assert deltas == [MetaDelta(model="qwen3:8b", created=CREATED), TextPart(text="a")]


BROKEN: list[tuple[str, list[Any]]] = [
    ("not an object", ["done"]),
    ("message not an object", [{"model": "m", "message": "hi", "done": False}]),
    ("content not a string", [line({"content": 5})]),
    ("tool_calls not an array", [line({"tool_calls": {"function": {}}})]),
    ("tool call not an object", [line({"tool_calls": ["f"]})]),
    ("function missing", [line({"tool_calls": [{"id": "x"}]})]),
    ("function without a name", [line({"tool_calls": [{"function": {"arguments": {}}}]})]),
    ("arguments an array", [line({"tool_calls": [{"function": {"name": "f", "arguments": [1]}}]})]),
    ("index negative", [line({"tool_calls": [{"function": {"name": "f", "index": -1}}]})]),
    ("done not a boolean", [line(done="true")]),
    ("count negative", [line(done=True, eval_count=-5)]),
    ("second done", [line(done=True), line(done=True)]),
    ("error a number", [{"error": 500}]),
]


@pytest.mark.parametrize(("case", "stream"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_lines_raise_a_typed_format_error(case: str, stream: list[Any]) -> None:
    """A line that breaks the format raises StreamFormatError carrying that line."""
    adapter = OllamaAdapter()
    for payload in stream[:-1]:
        adapter.translate(payload)
    with pytest.raises(StreamFormatError) as info:
        adapter.translate(stream[-1])
    assert info.value.payload is stream[-1]


@given(mutated_streams(TOOL_STREAM))
def test_mutated_lines_raise_only_format_errors(stream: list[Any]) -> None:
    """Mutated lines give StreamFormatError or well-typed deltas, nothing else."""
    assert_only_format_errors(OllamaAdapter, stream)
