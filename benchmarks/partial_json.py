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
from functools import partial
from typing import Any

from benchmarks.payloads import payloads
from toolwire import PartialJSONParser

Parse = Callable[[Any], Any]  # takes the buffer (str, or bytes for jiter)


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Competitor:
    """A re-parser: ``parse(buffer)``, given ``buffer.encode()`` when ``encode`` (jiter)."""

    label: str
    parse: Parse | None
    encode: bool = False
    reason: str = ""


def _competitors(quick: bool) -> list[Competitor]:
    """The re-parsers of the reference, as C-level partials where they take options."""
    out: list[Competitor] = []
    try:
        import jiter

        out += [
            Competitor(
                label="jiter trailing-strings",
                parse=partial(jiter.from_json, partial_mode="trailing-strings"),
                encode=True,
            ),
            Competitor(
                label="jiter partial_mode=True",
                parse=partial(jiter.from_json, partial_mode=True),
                encode=True,
            ),
        ]
    except ImportError:
        out.append(Competitor(label="jiter", parse=None, reason="not installed"))
    try:
        import pydantic_core

        out += [
            Competitor(
                label="pydantic-core trailing-strings",
                parse=partial(pydantic_core.from_json, allow_partial="trailing-strings"),
            ),
            Competitor(
                label="pydantic-core allow_partial=True",
                parse=partial(pydantic_core.from_json, allow_partial=True),
            ),
        ]
    except ImportError:
        out.append(Competitor(label="pydantic-core", parse=None, reason="not installed"))
    slow: list[Competitor] = []
    try:
        import partial_json_parser

        slow.append(Competitor(label="partial-json-parser loads", parse=partial_json_parser.loads))
    except ImportError:
        slow.append(Competitor(label="partial-json-parser", parse=None, reason="not installed"))
    try:
        from langchain_core.utils.json import parse_partial_json

        slow.append(Competitor(label="langchain parse_partial_json", parse=parse_partial_json))
    except ImportError:
        slow.append(Competitor(label="langchain", parse=None, reason="not installed"))
    try:
        from json_repair import repair_json

        slow.append(
            Competitor(
                label="json-repair return_objects",
                parse=partial(repair_json, return_objects=True),
            )
        )
    except ImportError:
        slow.append(Competitor(label="json-repair", parse=None, reason="not installed"))
    if quick:
        slow = [Competitor(label=c.label, parse=None, reason="skipped (--quick)") for c in slow]
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
def _best_of(run: Callable[[], None], min_passes: int = 3, budget: float = 1.0) -> float:
    """Best time of one call of ``run``. Fast runs are looped into passes of about 20 ms;
    at least ``min_passes`` passes, and more (up to ~``budget`` seconds) so that the best
    pass lands in a quiet moment of a shared machine."""
    start = time.perf_counter()
    run()
    first = time.perf_counter() - start
    if first >= 2.0:
        return first
    loops = max(1, int(0.02 / max(first, 1e-7)))
    best = first
    passes = 0
    deadline = time.perf_counter() + budget
    while passes < min_passes or time.perf_counter() < deadline:
        start = time.perf_counter()
        for _ in range(loops):
            run()
        best = min(best, (time.perf_counter() - start) / loops)
        passes += 1
    return best


def _reparse_loop(c: Competitor, deltas: list[str], budget: float) -> int:
    """``buf += delta; parse(buf)`` over the deltas until ``budget`` seconds are spent;
    returns how many deltas were handled. A failure on a prefix still spent the time."""
    parse = c.parse
    assert parse is not None
    encode = c.encode
    buf = ""
    done = 0
    deadline = time.perf_counter() + budget
    for delta in deltas:
        buf += delta
        # try/except costs nothing here; contextlib.suppress would add ~0.3 µs per call.
        try:  # noqa: SIM105
            parse(buf.encode() if encode else buf)
        except Exception:
            pass
        done += 1
        if not done & 15 and time.perf_counter() > deadline:
            break
    return done


def _reparse_all(c: Competitor, deltas: list[str]) -> None:
    """The tight caller loop over every delta (no budget checks), for repeated passes."""
    parse = c.parse
    assert parse is not None
    buf = ""
    if c.encode:
        for delta in deltas:
            buf += delta
            try:  # noqa: SIM105 (see _reparse_loop)
                parse(buf.encode())
            except Exception:
                pass
    else:
        for delta in deltas:
            buf += delta
            try:  # noqa: SIM105
                parse(buf)
            except Exception:
                pass


@_gc_paused
def measure_reparse(c: Competitor, deltas: list[str], budget: float) -> Cell:
    """Total time of ``buf += delta; parse(buf)`` over all deltas, extrapolated past
    ``budget`` seconds (first N deltas measured, 24 later prefixes, trapezoid rule)."""
    parse = c.parse
    assert parse is not None
    start = time.perf_counter()
    done = _reparse_loop(c, deltas, budget)
    measured = time.perf_counter() - start
    if done == len(deltas):
        if measured < 2.0:
            return Cell(seconds=_best_of(lambda: _reparse_all(c, deltas)))
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
        with contextlib.suppress(Exception):
            parse(prefix.encode() if c.encode else prefix)
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
    theirs: dict[str, dict[str, Cell]] = {c.label: {} for c in competitors}
    for name, doc, deltas in data:
        print(f"measuring {name} ({len(doc.encode()):,} B, {len(deltas):,} deltas)...", flush=True)
        ours["events"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_events(d)))
        ours["snap64"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_snapshot_64(d)))
        for c in competitors:
            if c.parse is not None:
                cell_budget = jiter_budget if c.label == "jiter trailing-strings" else budget
                theirs[c.label][name] = measure_reparse(c, deltas, cell_budget)

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
    for c in competitors:
        row = [_fmt_cell(theirs[c.label].get(n), c.reason, ev[n].seconds) for n in names]
        print(f"| {c.label} | " + " | ".join(row) + " |")
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
