"""Live-preview cost: toolwire's incremental parser against re-parsing after every delta.

Recipe (``reference/partial-json.md`` §3): the four seeded payloads of
``benchmarks/payloads.py`` are fed as their 1–16 character deltas, and every method keeps a
preview after every delta:

* toolwire, events only: one ``PartialJSONParser``, ``feed(delta)`` for every delta (the
  events are the preview: a UI appends ``StringAppended`` texts);
* toolwire, ``snapshot()`` every 64 deltas (and once at the end) on top of that;
* the re-parsers, as SDKs use them: ``buf += delta; preview = parse(buf)`` (jiter with
  ``buf.encode()``, pydantic-core, partial-json-parser, LangChain, json-repair).

Every cell is timed in this run. Short cells are repeated (at least 3 passes, best kept).
A cell whose first pass would exceed its budget is measured for the first N deltas until
the budget is spent, then ~24 evenly spaced later prefixes are each timed once and the
per-delta cost is integrated with the trapezoid rule; such cells are marked ``≈``. Ratios
are competitor time / toolwire time. Peak memory of toolwire is measured with
``tracemalloc`` in a separate pass, to show it is linear in the payload.

``python -m benchmarks.partial_json [--quick]``; ``--quick`` (or ``TOOLWIRE_BENCH_QUICK=1``)
skips the slow pure-Python re-parsers and shortens the budgets.
"""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from benchmarks.payloads import payloads
from toolwire import PartialJSONParser

Parse = Callable[[str], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One measured total: seconds over the whole stream, and whether it was extrapolated."""

    seconds: float
    extrapolated: bool = False
    note: str = ""


# ----------------------------------------------------------------------------- methods


def toolwire_events(deltas: list[str]) -> None:
    """Feed every delta; the returned events are the live preview."""
    parser = PartialJSONParser()
    feed = parser.feed
    for delta in deltas:
        feed(delta)


def toolwire_snapshot_64(deltas: list[str]) -> None:
    """Feed every delta and take a full snapshot every 64 deltas and at the end."""
    parser = PartialJSONParser()
    feed = parser.feed
    snapshot = parser.snapshot
    for i, delta in enumerate(deltas, 1):
        feed(delta)
        if not i & 63:
            snapshot()
    snapshot()


def _competitors(quick: bool) -> list[tuple[str, Parse | None, str]]:
    """(label, parse(buffer) or None when not installed, reason)."""
    out: list[tuple[str, Parse | None, str]] = []
    try:
        import jiter

        def jiter_ts(buf: str) -> Any:
            return jiter.from_json(buf.encode(), partial_mode="trailing-strings")

        def jiter_on(buf: str) -> Any:
            return jiter.from_json(buf.encode(), partial_mode=True)

        out += [("jiter trailing-strings", jiter_ts, ""), ("jiter partial_mode=True", jiter_on, "")]
    except ImportError:
        out += [("jiter trailing-strings", None, "not installed")]
    try:
        import pydantic_core

        def pdc_ts(buf: str) -> Any:
            return pydantic_core.from_json(buf, allow_partial="trailing-strings")

        def pdc_on(buf: str) -> Any:
            return pydantic_core.from_json(buf, allow_partial=True)

        out += [
            ("pydantic-core trailing-strings", pdc_ts, ""),
            ("pydantic-core allow_partial=True", pdc_on, ""),
        ]
    except ImportError:
        out += [("pydantic-core", None, "not installed")]
    slow: list[tuple[str, Parse | None, str]] = []
    try:
        import partial_json_parser

        slow.append(("partial-json-parser loads", partial_json_parser.loads, ""))
    except ImportError:
        slow.append(("partial-json-parser loads", None, "not installed"))
    try:
        from langchain_core.utils.json import parse_partial_json

        slow.append(("langchain parse_partial_json", parse_partial_json, ""))
    except ImportError:
        slow.append(("langchain parse_partial_json", None, "not installed"))
    try:
        from json_repair import repair_json

        def repair(buf: str) -> Any:
            return repair_json(buf, return_objects=True)

        slow.append(("json-repair return_objects", repair, ""))
    except ImportError:
        slow.append(("json-repair return_objects", None, "not installed"))
    if quick:
        slow = [(label, None, "skipped (--quick)") for label, _, _ in slow]
    return out + slow


# --------------------------------------------------------------------------- measuring


def _gc_paused(measure: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``measure`` with the cyclic garbage collector paused, as ``timeit`` does, so a
    collection triggered by earlier allocations does not land in one method's cell."""

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return measure(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper


@_gc_paused
def _best_of(run: Callable[[], None], min_passes: int = 3, min_total: float = 0.2) -> float:
    """Best time of one call of ``run``: at least ``min_passes`` passes, each pass looping
    ``run`` enough times to last ``min_total`` seconds when it is fast."""
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    loops = max(1, int(min_total / max(first, 1e-7)))
    best = first
    for _ in range(min_passes if first < 2.0 else 0):
        start = time.perf_counter()
        for _ in range(loops):
            run()
        best = min(best, (time.perf_counter() - start) / loops)
    return best


def _call(parse: Parse, buf: str) -> None:
    # A re-parser failing on a prefix still spent the time.
    with contextlib.suppress(Exception):
        parse(buf)


@_gc_paused
def measure_reparse(parse: Parse, deltas: list[str], budget: float) -> Cell:
    """Total time of ``buf += delta; parse(buf)`` over all deltas, extrapolated past
    ``budget`` seconds (first N deltas measured, 24 later prefixes, trapezoid rule)."""
    buf = ""
    start = time.perf_counter()
    done = 0
    for delta in deltas:
        buf += delta
        _call(parse, buf)
        done += 1
        if done % 16 == 0 and time.perf_counter() - start > budget:
            break
    measured = time.perf_counter() - start
    if done == len(deltas):
        if measured < 2.0:

            def whole() -> None:
                b = ""
                for d in deltas:
                    b += d
                    _call(parse, b)

            return Cell(seconds=_best_of(whole))
        return Cell(seconds=measured)
    # Extrapolate the remaining deltas from ~24 evenly spaced prefixes.
    ends: list[int] = []
    total = 0
    for d in deltas:
        total += len(d)
        ends.append(total)
    doc = "".join(deltas)
    points = sorted({done - 1 + round(j * (len(deltas) - done) / 24) for j in range(25)})
    costs = []
    for k in points:
        prefix = doc[: ends[k]]
        t0 = time.perf_counter()
        _call(parse, prefix)
        costs.append(time.perf_counter() - t0)
    rest = 0.0
    for i in range(len(points) - 1):
        rest += (costs[i] + costs[i + 1]) / 2 * (points[i + 1] - points[i])
    return Cell(seconds=measured + rest, extrapolated=True, note=f"first {done:,} deltas measured")


def peak_memory(run: Callable[[list[str]], None], deltas: list[str]) -> int:
    """Peak bytes allocated by ``run(deltas)`` (tracemalloc; the deltas already exist)."""
    gc.collect()
    tracemalloc.start()
    try:
        run(deltas)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ---------------------------------------------------------------------------- printing


def _fmt_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def _fmt_cell(cell: Cell | None, reason: str, base: float) -> str:
    if cell is None:
        return reason or "n/a"
    mark = "≈" if cell.extrapolated else ""
    return f"{mark}{_fmt_time(cell.seconds)} ({mark}{cell.seconds / base:,.1f}×)"


def _fmt_bytes(n: int) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} B"


def main() -> None:
    """Measure every cell in this run and print the tables and the target checks."""
    quick = "--quick" in sys.argv[1:] or os.environ.get("TOOLWIRE_BENCH_QUICK") == "1"
    budget = 3.0 if quick else 10.0
    jiter_budget = 5.0 if quick else 40.0  # the target's reference column: measure it fully
    data = payloads()
    competitors = _competitors(quick)
    names = [name for name, _, _ in data]

    ours: dict[str, dict[str, Cell]] = {"events": {}, "snap64": {}}
    theirs: dict[str, dict[str, Cell]] = {label: {} for label, _, _ in competitors}
    for name, doc, deltas in data:
        print(f"measuring {name} ({len(doc.encode()):,} B, {len(deltas):,} deltas)...", flush=True)
        ours["events"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_events(d)))
        ours["snap64"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_snapshot_64(d)))
        for label, parse, _ in competitors:
            if parse is None:
                continue
            cell_budget = jiter_budget if label == "jiter trailing-strings" else budget
            theirs[label][name] = measure_reparse(parse, deltas, cell_budget)

    sizes = {name: len(doc.encode()) for name, doc, _ in data}
    counts = {name: len(deltas) for name, _, deltas in data}
    print()
    print("### Preview after every delta: total time over the stream (ratio to toolwire events)")
    print()
    header = " | ".join(f"{n} {sizes[n]:,} B / {counts[n]:,} deltas" for n in names)
    print(f"| method | {header} |")
    print("|---|" + "---|" * len(names))
    ev = ours["events"]
    row = [
        f"{_fmt_time(ev[n].seconds)} · {sizes[n] / ev[n].seconds / 1e6:,.1f} MB/s" for n in names
    ]
    print("| **toolwire events** | " + " | ".join(row) + " |")
    row = [_fmt_cell(ours["snap64"][n], "", ev[n].seconds) for n in names]
    print("| toolwire snapshot() every 64 deltas | " + " | ".join(row) + " |")
    for label, _, reason in competitors:
        row = [_fmt_cell(theirs[label].get(n), reason, ev[n].seconds) for n in names]
        print(f"| {label} | " + " | ".join(row) + " |")
    notes = [
        f"{label} on {n}: {cell.note}"
        for label, cells in theirs.items()
        for n, cell in cells.items()
        if cell.extrapolated
    ]
    if notes:
        print()
        print("≈ extrapolated (trapezoid over 24 later prefixes): " + "; ".join(notes))

    print()
    print("### toolwire peak memory (tracemalloc), events only and with snapshots")
    print()
    print(
        "| payload | bytes | events: peak | peak / byte | snapshot every 64: peak | peak / byte |"
    )
    print("|---|---|---|---|---|---|")
    for name, _doc, deltas in data:
        p1 = peak_memory(toolwire_events, deltas)
        p2 = peak_memory(toolwire_snapshot_64, deltas)
        size = sizes[name]
        print(
            f"| {name} | {size:,} | {_fmt_bytes(p1)} | {p1 / size:.1f} | "
            f"{_fmt_bytes(p2)} | {p2 / size:.1f} |"
        )

    print()
    print("### Targets (DESIGN.md)")
    jts = theirs.get("jiter trailing-strings", {})

    def check(label: str, ok: bool | None, detail: str) -> None:
        verdict = "n/a " if ok is None else ("PASS" if ok else "FAIL")
        print(f"- {verdict} {label}: {detail}")

    def ratio(payload: str, mine: dict[str, Cell]) -> float | None:
        if payload not in jts:
            return None
        return jts[payload].seconds / mine[payload].seconds

    for payload, need, what in (
        ("huge", 100.0, "events ≥ 100× less time than jiter trailing-strings on 467 KB"),
        ("large", 10.0, "events ≥ 10× less time than jiter trailing-strings on 46 KB"),
        ("medium", 1.0, "events not slower than jiter trailing-strings on 4.7 KB"),
    ):
        r = ratio(payload, ev)
        mark = "≈" if payload in jts and jts[payload].extrapolated else ""
        check(what, None if r is None else r >= need, f"{mark}{r:,.1f}×" if r else "no jiter")
    if "small" in jts:
        mine = ev["small"].seconds / counts["small"]
        theirs_per = jts["small"].seconds / counts["small"]
        check(
            "events ≤ 5× jiter's per-delta cost on the 41 B call",
            mine <= 5 * theirs_per,
            f"{mine * 1e6:.2f} µs vs {theirs_per * 1e6:.2f} µs per delta "
            f"({mine / theirs_per:.1f}×)",
        )
    r = ratio("huge", ours["snap64"])
    check(
        "snapshot every 64 deltas ≥ 20× less time than jiter trailing-strings on 467 KB",
        None if r is None else r >= 20,
        f"{r:,.1f}×" if r else "no jiter",
    )


if __name__ == "__main__":
    main()
