"""Usage and observability: the output estimator's error on the corpus, what estimating
costs at ``close()``, and what telemetry costs a stream.

* Estimator error: for each recording whose provider reported its output tokens, the
  estimate toolwire would have made had the usage never arrived (the heuristic; tiktoken is
  used in production only where its encoding is cached), per wire format: mean and worst
  |relative error|, and the error of the summed tokens. Recordings whose count includes
  reasoning the stream never showed are listed apart (nothing can estimate those).
  The same rows are bounded by ``tests/core/test_usage_corpus.py``.
* Estimation cost: ``close()`` of the 46 KB and 467 KB ``write_file`` calls with no usage
  reported (the estimate runs) against the same stream ending with its usage chunk (it
  does not).
* Telemetry: ``toolwire.stream()`` over a list of payloads (a 20-chunk and a 2,000-chunk
  OpenAI chat stream), per stream and per chunk, with OpenTelemetry not imported, with the
  API imported but no SDK, and with the SDK recording into in-memory exporters. The hooks
  run at a stream's start and end only, so the per-chunk cost must not move. The heap
  that exists before each measurement is frozen (``gc.freeze()``), so that the figures
  compare the code, not the cost of the cyclic GC over OpenTelemetry's import.

``python -m benchmarks usage`` prints Markdown tables.
"""

from __future__ import annotations

import gc
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import toolwire
from benchmarks.assembly import openai_chunks
from benchmarks.payloads import payloads

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The best wall time of ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ---------------------------------------------------------------------- the estimator


def estimator_table() -> None:
    """Per wire format: the estimate against the reported output tokens."""
    if not (CORPUS / "expected.json").is_file():
        print("(corpus not found: skipped)")
        return
    sys.path.insert(0, str(ROOT / "tests" / "core"))
    import toolwire.accounting.token_counting as counting
    from usage_support import estimator_rows, summarise

    counting._tiktoken_counter = lambda model: None  # type: ignore[assignment]
    counting._counters.clear()
    rows = estimator_rows(CORPUS)
    print("| wire format | recordings | mean error | worst | summed tokens |")
    print("|---|---|---|---|---|")
    for key, s in summarise(rows).items():
        label = f"**{key}**" if key == "all" else key
        print(f"| {label} | {s.streams} | {s.mean:.0%} | {s.worst:.0%} | {s.aggregate:.0%} |")
    hidden = [r for r in rows if r.hidden_reasoning]
    for row in hidden:
        print(
            f"\nHidden reasoning, not estimable: {row.name} reports {row.reported} output "
            f"tokens, {row.estimated} visible ({row.relative:+.0%})."
        )


def _stream_end(deltas: list[str], usage: bool) -> list[dict[str, Any]]:
    chunks = openai_chunks(deltas)
    if usage:
        chunks.append(
            {
                "id": "chatcmpl-bench",
                "choices": [],
                "usage": {"prompt_tokens": 9, "completion_tokens": 9},
            }
        )
    return chunks


def estimation_table() -> None:
    """What ``close()`` costs with and without an estimate to make."""
    print("| payload | close() with usage reported | close() estimating | estimate |")
    print("|---|---|---|---|")
    for name, doc, deltas in payloads():
        if name not in ("large", "huge"):
            continue
        cells = []
        for usage in (True, False):
            chunks = _stream_end(deltas, usage)
            closing: list[float] = []
            for _ in range(5):
                fresh = toolwire.StreamAssembler()
                for chunk in chunks:
                    fresh.feed(chunk)
                gc.collect()
                start = time.perf_counter()
                result = fresh.close()
                closing.append(time.perf_counter() - start)
            cells.append((min(closing), result.usage))
        (reported, _), (estimating, usage_) = cells
        assert usage_ is not None and usage_.estimated
        print(
            f"| {name} ({len(doc):,} B) | {reported * 1e3:.2f} ms | "
            f"{estimating * 1e3:.2f} ms | {usage_.output_tokens:,} tokens |"
        )


# ------------------------------------------------------------------------ telemetry


def _drive(chunks: list[dict[str, Any]]) -> None:
    with toolwire.stream(chunks) as s:
        for _ in s:
            pass


def _measure(chunks: list[dict[str, Any]], repeat: int, rounds: int = 5) -> float:
    """Median over rounds of the best per-stream time. The objects alive before are
    frozen out of the cyclic GC: importing OpenTelemetry grows the heap, which makes every
    full collection slower whatever the code measured (measured: 4.3 µs/chunk becomes
    8.2 with the API merely imported, back to 4.3 once frozen)."""
    gc.collect()
    gc.freeze()
    per = []
    for _ in range(rounds):
        per.append(best(lambda: [_drive(chunks) for _ in range(repeat)], 3) / repeat)
    return statistics.median(per)


def telemetry_table() -> None:
    """Per stream and per chunk, without and with OpenTelemetry."""
    from benchmarks.payloads import split_deltas

    def document(words: int) -> str:
        return '{"path": "notes.md", "content": "' + "a few words of text " * words + '"}'

    short = openai_chunks(split_deltas(document(6), seed=1))
    long = openai_chunks(split_deltas(document(850), seed=1))
    rows: list[tuple[str, float, float]] = []
    assert "opentelemetry.trace" not in sys.modules, "import nothing of OpenTelemetry first"
    rows.append(("OpenTelemetry not imported", _measure(short, 200), _measure(long, 5)))
    import opentelemetry.metrics
    import opentelemetry.trace  # noqa: F401

    rows.append(("API imported, no SDK", _measure(short, 200), _measure(long, 5)))
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolwire import _telemetry

    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    with _telemetry.providers(tracer_provider, meter_provider):
        rows.append(("SDK, in-memory exporters", _measure(short, 200), _measure(long, 5)))
        spans.clear()
    base_short, base_long = rows[0][1], rows[0][2]
    print(
        f"| telemetry | {len(short)}-chunk stream | vs off | "
        f"{len(long):,}-chunk stream: µs/chunk | vs off |"
    )
    print("|---|---|---|---|---|")
    for label, t_short, t_long in rows:
        print(
            f"| {label} | {t_short * 1e6:.0f} µs | {t_short / base_short:.2f}× | "
            f"{t_long / len(long) * 1e6:.2f} | {t_long / base_long:.2f}× |"
        )


def main() -> None:
    """Print every table."""
    print("\n## Output estimator against the reported output tokens (corpus)\n")
    estimator_table()
    print("\n## Estimating at close()\n")
    estimation_table()
    print("\n## Telemetry cost per stream (toolwire.stream over a list of payloads)\n")
    # in a fresh interpreter: the suites run before this one (pydantic-ai's, LangChain's)
    # may have imported OpenTelemetry already, and the first row needs it absent
    sys.stdout.flush()
    subprocess.run(
        [sys.executable, "-c", "from benchmarks.usage import telemetry_table; telemetry_table()"],
        cwd=ROOT,
        check=True,
    )


if __name__ == "__main__":
    main()
