"""Live-preview cost: toolwire's incremental parser against re-parsing after every delta.

Recipe (``reference/partial-json.md`` §3): the four seeded payloads of
``benchmarks/payloads.py`` are fed as their 1–16 character deltas, and every method keeps a
preview after every delta:

* toolwire, events only: one ``PartialJSONParser``, ``feed(delta)`` for every delta (the
  events are the preview: a UI appends ``StringAppended`` texts);
* toolwire, ``snapshot()`` every 64 deltas (and once at the end) on top of that;
* the re-parsers, as SDKs use them: ``buf += delta; preview = parse(buf)`` (jiter with
  ``buf.encode()``, pydantic-core, partial-json-parser, LangChain, json-repair).

Every cell is timed in this run, in CPU time of the process (``time.process_time``, so
other load on a shared machine does not land in it). Short cells are repeated (at least 3
passes, best kept). A cell whose first pass would exceed its budget is measured for the
first N deltas until the budget is spent, then ~24 evenly spaced later prefixes are each
timed once and the per-delta cost is integrated with the trapezoid rule; such cells are
marked ``≈``. Ratios
are competitor time / toolwire time. Peak memory of toolwire is measured with
``tracemalloc`` in a separate pass, to show it is linear in the payload.

Then the parser's own cost checks, each against its floor measured in the same run:

* depth: feeding 42 kB of numbers inside 999 open arrays against the same at depth 1 (time
  per character, tracemalloc bytes per kept event), and ``parse_partial`` of 999 ``[`` and
  100k numbers (peak / input size);
* a preview on every delta: ``snapshot()`` after every delta of a 512 KiB array, object and
  string, against feeding alone; and the open string's per-character cost at 100k against
  400k characters (1.0 is linear);
* escapes: an escape-heavy string against plain ASCII of the same length, per byte;
* the 41 B call without events (``PartialJSONParser(events=False)``) against jiter's
  per-delta re-parse.

``python -m benchmarks partial_json [--quick] [--baseline=DIR]``; ``--quick`` (or
``TOOLWIRE_BENCH_QUICK=1``) skips the slow pure-Python re-parsers and shortens the budgets.
``--baseline=DIR`` (a ``src/toolwire`` directory of another checkout, e.g. main's) loads that
parser alongside and adds its rows to the tables, so before and after are measured in one
run.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import time
import tracemalloc
import types
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from benchmarks.payloads import (
    ascii_string_document,
    big_array_document,
    big_object_document,
    big_string_document,
    deep_numbers,
    escaped_string_document,
    payloads,
    split_deltas,
)
from toolwire import PartialJSONParser

Parse = Callable[[Any], Any]  # takes the buffer (str, or bytes for jiter)

# Cells are CPU time of this process: on a shared machine another process's load does not
# land in them (wall-clock time only adds the time spent waiting for a core). Budgets and
# deadlines stay wall-clock.
_clock = time.process_time


@dataclass(frozen=True, slots=True, kw_only=True)
class Cell:
    """One measured total: seconds over the whole stream, and whether it was extrapolated."""

    seconds: float
    extrapolated: bool = False
    note: str = ""


# ----------------------------------------------------------------------------- methods


def toolwire_events(deltas: list[str], make: Callable[[], Any] = PartialJSONParser) -> None:
    """Feed every delta; the returned events are the live preview."""
    parser = make()
    feed = parser.feed
    for delta in deltas:
        feed(delta)


def toolwire_snapshot_64(deltas: list[str], make: Callable[[], Any] = PartialJSONParser) -> None:
    """Feed every delta and take a full snapshot every 64 deltas and at the end."""
    parser = make()
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
    start = _clock()
    run()
    first = _clock() - start
    if first >= 2.0:
        return first
    loops = max(1, int(0.02 / max(first, 1e-7)))
    best = first
    passes = 0
    deadline = time.perf_counter() + budget
    while passes < min_passes or time.perf_counter() < deadline:
        start = _clock()
        for _ in range(loops):
            run()
        best = min(best, (_clock() - start) / loops)
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
    start = _clock()
    done = _reparse_loop(c, deltas, budget)
    measured = _clock() - start
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
        t0 = _clock()
        with contextlib.suppress(Exception):
            parse(prefix.encode() if c.encode else prefix)
        costs.append(_clock() - t0)
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


# ------------------------------------------------------------- the parser's own cost checks

Factory = Callable[[], Any]  # makes a parser (this checkout's or the baseline's)


def load_baseline(src: str) -> types.ModuleType:
    """The partial-JSON module of another checkout's ``src/toolwire`` directory, imported as
    a private package (only the modules the parser needs): the room layout
    (``_core/partial_json.py``) or the earlier flat one (``_partial_json.py``)."""
    name = "_toolwire_baseline"
    package = types.ModuleType(name)
    package.__path__ = [src]
    sys.modules[name] = package
    inner = "_core.partial_json" if os.path.isdir(os.path.join(src, "_core")) else "_partial_json"
    return importlib.import_module(f"{name}.{inner}")


def feed_all(make: Factory, deltas: list[str]) -> None:
    """Feed every delta into a new parser."""
    feed = make().feed
    for delta in deltas:
        feed(delta)


def feed_and_snapshot(make: Factory, deltas: list[str]) -> None:
    """Feed every delta and take (and drop) a snapshot after each, as a live preview does."""
    parser = make()
    feed = parser.feed
    snapshot = parser.snapshot
    for delta in deltas:
        feed(delta)
        snapshot()


def bytes_per_event(make: Factory, deltas: list[str]) -> float:
    """tracemalloc peak of feeding with every event kept, divided by the number of events."""
    kept: list[Any] = []

    def run(ds: list[str]) -> None:
        feed = make().feed
        for delta in ds:
            kept.extend(feed(delta))

    size = peak_memory(run, deltas)
    return size / max(1, len(kept))


def parse_partial_peak(parse: Callable[[str], Any], text: str) -> float:
    """tracemalloc peak of ``parse(text)`` (result included) over the input's size."""
    return peak_memory(lambda ds: parse(ds[0]), [text]) / sys.getsizeof(text)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def cost_checks(quick: bool, baseline: types.ModuleType | None) -> None:
    """Measure and print the depth, preview, escape and small-call checks."""
    ours: dict[str, Factory] = {"toolwire": PartialJSONParser}
    if baseline is not None:
        ours["baseline"] = baseline.PartialJSONParser
    checks: list[str] = []

    print()
    print("### Depth: 999 open arrays against 1 (events on; parse_partial builds none)")
    print()
    shallow = deep_numbers(1, 42_000)
    deep = deep_numbers(999, 42_000)
    d_shallow, d_deep = split_deltas(shallow, 1), split_deltas(deep, 1)
    pp_shallow = "[" + "0," * 100_000
    pp_deep = "[" * 999 + "0," * 100_000
    print("| parser | measure | depth 1 | depth 999 | 999 / 1 |")
    print("|---|---|---|---|---|")
    for label, make in ours.items():
        t1 = _best_of(lambda m=make: feed_all(m, d_shallow)) / len(shallow)
        t999 = _best_of(lambda m=make: feed_all(m, d_deep)) / len(deep)
        print(
            f"| {label} | feed 42 kB of numbers, ns per character | {t1 * 1e9:.0f} | "
            f"{t999 * 1e9:.0f} | {t999 / t1:.2f}× |"
        )
        b1 = bytes_per_event(make, d_shallow)
        b999 = bytes_per_event(make, d_deep)
        print(f"| {label} | bytes per kept event | {b1:,.0f} | {b999:,.0f} | {b999 / b1:.2f}× |")
        module = baseline if label == "baseline" else None
        parse = module.parse_partial if module is not None else _parse_partial
        p1 = parse_partial_peak(parse, pp_shallow)
        p999 = parse_partial_peak(parse, pp_deep)
        print(
            f"| {label} | parse_partial of 202 kB ('0,' × 100k): peak / input size | "
            f"{p1:,.1f} | {p999:,.1f} | {p999 / p1:.2f}× |"
        )
        if label == "toolwire":
            checks.append(
                f"{_verdict(t999 / t1 <= 1.3)} feed time per character independent of depth: "
                f"depth 999 / depth 1 = {t999 / t1:.2f}×"
            )
            checks.append(
                f"{_verdict(b999 / b1 <= 1.3)} memory per event independent of depth: "
                f"{b999:,.0f} B vs {b1:,.0f} B ({b999 / b1:.2f}×)"
            )
            checks.append(
                f"{_verdict(max(p1, p999) <= 20)} parse_partial peak ≤ 20× the input: "
                f"{p999:.1f}× at depth 999, {p1:.1f}× at depth 1"
            )

    print()
    print("### A preview on every delta (snapshot() after each, dropped), 1–16 char deltas")
    print()
    size = 512 * 1024
    shapes = {
        "array 512 KiB": big_array_document(size),
        "object 512 KiB": big_object_document(size),
        "string 512 KiB": big_string_document(size),
    }
    print("| parser | payload | feed only | feed + snapshot every delta | ratio |")
    print("|---|---|---|---|---|")
    for shape, doc in shapes.items():
        deltas = split_deltas(doc, 7)
        for label, make in ours.items():
            if label == "baseline" and quick:
                continue
            base = _best_of(lambda m=make, d=deltas: feed_all(m, d), budget=0.5)
            with_snap = _best_of(lambda m=make, d=deltas: feed_and_snapshot(m, d), budget=0.5)
            print(
                f"| {label} | {shape} | {_fmt_time(base)} | {_fmt_time(with_snap)} | "
                f"{with_snap / base:.2f}× |"
            )
            if label == "toolwire":
                nf = _best_of(
                    lambda d=deltas: feed_and_snapshot(partial(PartialJSONParser, events=False), d),
                    budget=0.5,
                )
                print(f"| toolwire events=False | {shape} | | {_fmt_time(nf)} | {nf / base:.2f}× |")
                checks.append(
                    f"{_verdict(with_snap / base <= 2)} a preview per delta within 2× of feeding "
                    f"alone, {shape}: {with_snap / base:.2f}×"
                )
    growth: dict[str, list[float]] = {}
    for label, make in ours.items():
        for chars in (100_000, 400_000):
            doc = big_string_document(chars)[: chars + 30]  # still open: the string grows
            deltas = split_deltas(doc, 8)
            t = _best_of(lambda m=make, d=deltas: feed_and_snapshot(m, d), budget=0.5)
            growth.setdefault(label, []).append(t / len(doc))
    print()
    print("| parser | open string, snapshot every delta: ns per char at 100k | at 400k | ratio |")
    print("|---|---|---|---|")
    for label, (small, large) in growth.items():
        print(f"| {label} | {small * 1e9:.0f} | {large * 1e9:.0f} | {large / small:.2f}× |")
    small, large = growth["toolwire"]
    checks.append(
        f"{_verdict(large / small <= 1.3)} snapshot per delta on a growing string is linear: "
        f"per-character cost at 400k / 100k = {large / small:.2f}×"
    )

    print()
    print("### Escapes: escape-heavy string against plain ASCII of the same length, per byte")
    print()
    esc = escaped_string_document(46_000)
    plain = ascii_string_document(46_000)
    d_esc, d_plain = split_deltas(esc, 9), split_deltas(plain, 9)
    print("| parser | ASCII ns/byte | escapes ns/byte | ratio |")
    print("|---|---|---|---|")
    variants = dict(ours)
    variants["toolwire events=False"] = partial(PartialJSONParser, events=False)
    for label, make in variants.items():
        ta = _best_of(lambda m=make: feed_all(m, d_plain)) / len(plain)
        te = _best_of(lambda m=make: feed_all(m, d_esc)) / len(esc)
        print(f"| {label} | {ta * 1e9:.1f} | {te * 1e9:.1f} | {te / ta:.2f}× |")
        if label == "toolwire":
            checks.append(
                f"{_verdict(te / ta <= 2)} escapes cost ≤ 2× ASCII per byte: {te / ta:.2f}×"
            )

    print()
    print("### The 41 B call: per-delta cost against jiter trailing-strings (re-parse per delta)")
    print()
    small_deltas = payloads()[0][2]
    jiter_cell: float | None = None
    for c in _competitors(True):
        if c.label == "jiter trailing-strings" and c.parse is not None:
            jiter_cell = _best_of(lambda c=c: _reparse_all(c, small_deltas)) / len(small_deltas)
    rows: dict[str, float] = {}
    rows["toolwire events"] = _best_of(lambda: feed_all(PartialJSONParser, small_deltas))
    no_events = partial(PartialJSONParser, events=False)
    rows["toolwire events=False"] = _best_of(lambda: feed_all(no_events, small_deltas))
    rows["toolwire events=False + snapshot every delta"] = _best_of(
        lambda: feed_and_snapshot(no_events, small_deltas)
    )
    if baseline is not None:
        rows["baseline events"] = _best_of(
            lambda: feed_all(baseline.PartialJSONParser, small_deltas)
        )
    print("| method | per delta | ratio to jiter |")
    print("|---|---|---|")
    if jiter_cell is not None:
        print(f"| jiter trailing-strings | {jiter_cell * 1e6:.2f} µs | 1.0× |")
    for label, total in rows.items():
        per = total / len(small_deltas)
        ratio = f"{per / jiter_cell:.1f}×" if jiter_cell else "n/a"
        print(f"| {label} | {per * 1e6:.2f} µs | {ratio} |")
    if jiter_cell is not None:
        per = rows["toolwire events=False"] / len(small_deltas)
        checks.append(
            f"{_verdict(per <= 5 * jiter_cell)} events=False ≤ 5× jiter's per-delta cost on the "
            f"41 B call: {per * 1e6:.2f} µs vs {jiter_cell * 1e6:.2f} µs "
            f"({per / jiter_cell:.1f}×)"
        )

    print()
    print("### Targets (issues: guarantees 9, linear everywhere 2–4)")
    for line in checks:
        print(f"- {line}")


def _parse_partial(text: str) -> Any:
    from toolwire import parse_partial

    return parse_partial(text)


def main() -> None:
    """Measure every cell in this run and print the tables and the target checks."""
    argv = sys.argv[1:]
    quick = "--quick" in argv or os.environ.get("TOOLWIRE_BENCH_QUICK") == "1"
    baseline = None
    for arg in argv:
        if arg.startswith("--baseline="):
            baseline = load_baseline(arg.partition("=")[2])
    budget = 3.0 if quick else 10.0
    jiter_budget = 5.0 if quick else 40.0  # the target's reference column: measure it fully
    data = payloads()
    competitors = _competitors(quick)
    names = [name for name, _, _ in data]

    ours: dict[str, dict[str, Cell]] = {"events": {}, "snap64": {}, "noev": {}}
    if baseline is not None:
        ours.update({"base events": {}, "base snap64": {}})
    no_events = partial(PartialJSONParser, events=False)
    theirs: dict[str, dict[str, Cell]] = {c.label: {} for c in competitors}
    for name, doc, deltas in data:
        print(f"measuring {name} ({len(doc.encode()):,} B, {len(deltas):,} deltas)...", flush=True)
        ours["events"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_events(d)))
        ours["snap64"][name] = Cell(seconds=_best_of(lambda d=deltas: toolwire_snapshot_64(d)))
        ours["noev"][name] = Cell(
            seconds=_best_of(lambda d=deltas: toolwire_snapshot_64(d, no_events))
        )
        if baseline is not None:
            make = baseline.PartialJSONParser
            ours["base events"][name] = Cell(
                seconds=_best_of(lambda d=deltas, m=make: toolwire_events(d, m))
            )
            ours["base snap64"][name] = Cell(
                seconds=_best_of(lambda d=deltas, m=make: toolwire_snapshot_64(d, m))
            )
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
    row = [_fmt_cell(ours["noev"][n], "", ev[n].seconds) for n in names]
    print("| toolwire events=False, snapshot() every 64 deltas | " + " | ".join(row) + " |")
    if baseline is not None:
        for key, label in (("base events", "events"), ("base snap64", "snapshot() every 64")):
            row = [_fmt_cell(ours[key][n], "", ev[n].seconds) for n in names]
            print(f"| baseline {label} | " + " | ".join(row) + " |")
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
    makers = {"": PartialJSONParser}
    if baseline is not None:
        makers["baseline "] = baseline.PartialJSONParser
    for prefix, make in makers.items():
        for name, _doc, deltas in data:
            p1 = peak_memory(partial(toolwire_events, make=make), deltas)
            p2 = peak_memory(partial(toolwire_snapshot_64, make=make), deltas)
            size = sizes[name]
            print(
                f"| {prefix}{name} | {size:,} | {_fmt_bytes(p1)} | {p1 / size:.1f} | "
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

    cost_checks(quick, baseline)


if __name__ == "__main__":
    main()
