"""The output estimator measured on the recorded corpus: for every recording whose provider
reported its output tokens, the estimate toolwire would have made had the usage never
arrived, against the reported count. Shared by ``tests/core/test_usage_corpus.py`` (bounds) and
``python -m benchmarks usage`` (the figures)."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolwire import StreamAssembler, StreamError
from toolwire._core.framing import FrameDecoder
from toolwire._core.usage_estimate import estimate_output, heuristic_tokens


@dataclass(frozen=True)
class EstimateRow:
    """One recording: the reported output count, toolwire's estimate, and whether the
    count includes reasoning the stream never showed (which no estimator can see)."""

    name: str
    format: str
    model: str | None
    reported: int
    estimated: int
    method: str
    hidden_reasoning: bool

    @property
    def relative(self) -> float:
        """(estimate - reported) / reported."""
        return (self.estimated - self.reported) / self.reported


def _payloads(corpus: Path, name: str) -> list[tuple[str | None, Any]]:
    if name.endswith(".eventstream"):
        name = name.removesuffix(".eventstream") + ".decoded.jsonl"
    decoder = FrameDecoder()
    items = decoder.feed((corpus / "streams" / name).read_bytes()) + decoder.close()
    if name.endswith(".json"):
        items = [(event, payload["__data__"]) for event, payload in items]
    return [(event, payload) for event, payload in items if payload != "[DONE]"]


def estimator_rows(corpus: Path) -> list[EstimateRow]:
    """A row for each recording (the binary event stream's decoded twin counted once)
    whose provider reported its output tokens."""
    names = sorted(json.loads((corpus / "expected.json").read_text("utf-8")))
    rows: list[EstimateRow] = []
    for name in names:
        if name.endswith(".eventstream"):
            continue  # the same recording as its .decoded.jsonl sibling
        asm = StreamAssembler()
        try:
            for event, payload in _payloads(corpus, name):
                asm.feed(payload, event=event)
            response = asm.close()
            found = sorted([*response.tool_calls, *response.rejected], key=lambda c: c.index)
            calls = [(c.name, c.raw_arguments) for c in found]
            outcome: Any = response
        except StreamError as exc:
            outcome = exc.partial
            calls = [(c.name, c.raw_arguments) for c in outcome.calls]
        usage = outcome.usage
        if usage is None or usage.estimated or usage.output_tokens is None:
            continue  # nothing reported to compare with
        guess = estimate_output(
            format=outcome.format,
            model=outcome.model,
            text=outcome.text,
            reasoning=outcome.reasoning,
            new_calls=calls,
            more_arguments=[],
            calls_in_response=len(calls),
        )
        reasoning = usage.reasoning_tokens or 0
        shown = heuristic_tokens(outcome.reasoning)
        hidden = bool(reasoning) and not usage._reasoning_apart() and shown < reasoning / 2
        rows.append(
            EstimateRow(
                name=name,
                format=outcome.format,
                model=outcome.model,
                reported=usage.output_tokens,
                estimated=guess.output,
                method=guess.method,
                hidden_reasoning=hidden,
            )
        )
    return rows


@dataclass(frozen=True)
class Summary:
    """Errors of one group of recordings: count, mean and max of |relative error|, and
    the error of the summed tokens (what a ledger would show)."""

    streams: int
    mean: float
    worst: float
    aggregate: float


def summarise(rows: list[EstimateRow]) -> dict[str, Summary]:
    """Per format, and ``"all"``, over the recordings without hidden reasoning."""
    groups: dict[str, list[EstimateRow]] = {}
    for row in rows:
        if not row.hidden_reasoning:
            groups.setdefault(row.format, []).append(row)
            groups.setdefault("all", []).append(row)
    out: dict[str, Summary] = {}
    for key, group in sorted(groups.items()):
        errors = [abs(r.relative) for r in group]
        reported = sum(r.reported for r in group)
        estimated = sum(r.estimated for r in group)
        out[key] = Summary(
            streams=len(group),
            mean=statistics.mean(errors),
            worst=max(errors),
            aggregate=abs(estimated - reported) / reported,
        )
    return out
