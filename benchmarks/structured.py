"""Streamed structured output: a typed preview kept current after every delta, toolwire against
the libraries that re-parse and re-validate the whole buffer on every chunk.

Recipe. Three seeded documents (fixed seed, the same streams for every method): a
``Catalog`` of ``Record``\\s, each with a nested ``Author``, a list of tags, a date, a
literal status and a long text field (50 to 400 words with quotes, backslashes, non-ASCII
text and emoji), serialised to about 4.7 KB, 46 KB and 467 KB, split into 1–16 character
deltas (``benchmarks.payloads.split_deltas``). Every method keeps a typed preview of the
``Catalog`` current after every delta, and the caller drops it (render and forget):

* **toolwire**: one ``OutputParser`` (what ``StreamAssembler(output=Catalog)`` runs on its
  text channel): ``feed(delta)``, then ``preview()``; at the end the validated value;
* **toolwire (assembler)**: the same through ``StreamAssembler(output=Catalog)`` fed the
  OpenAI chat chunks as dicts (events, ``OutputPreview.preview`` read on each);
* **instructor**: ``Partial[Catalog].model_from_chunks(deltas)``, its streaming path
  (per chunk: ``buf += chunk``, jiter partial parse of the whole buffer, a completeness scan
  of the whole buffer, ``model_construct`` of the partial tree, full validation once
  complete);
* **openai-python**: ``ChatCompletionStreamState(response_format=Catalog)`` fed synthetic
  ``ChatCompletionChunk``\\s (built before timing), reading the parsed snapshot after each:
  what ``client.chat.completions.stream(response_format=...)`` does per chunk;
* **pydantic-ai**: its ``ObjectOutputProcessor(Catalog).validate(buffer, allow_partial=True)``
  on the growing buffer (pydantic-core ``allow_partial='trailing-strings'``);
* **pydantic**: ``TypeAdapter(Catalog).validate_json(buffer, experimental_allow_partial=True)``
  on the growing buffer: the floor any re-validating library pays (for a model with
  required fields it mostly raises on a prefix; the time is spent either way).

Cells are CPU time of this process (``time.process_time``), best of several passes for short
ones. A method whose first pass would exceed its budget is measured for its first deltas,
then 24 evenly spaced later prefixes are each timed once and the per-delta cost integrated
with the trapezoid rule (the method of ``benchmarks.partial_json``); such cells are marked
``≈``. Ratios are method time / toolwire time. Peak memory is tracemalloc's peak over one
pass. Targets: ≥ 50× less time than the fastest competitor on 46 KB, ≥ 200× on 467 KB, not
slower on 4.7 KB.

``python -m benchmarks structured [--quick]``.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from benchmarks.partial_json import (
    Cell,
    _best_of,
    _fmt_bytes,
    _fmt_time,
    _gc_paused,
    peak_memory,
)
from benchmarks.payloads import _EMOJI, _NON_ASCII, _WORDS, split_deltas
from toolwire import OutputPreview, StreamAssembler
from toolwire._output.structured import OutputParser, compile_output

_clock = time.process_time
_SEED = 20251201
_TARGETS = {"4.7 KB": 1.0, "46 KB": 50.0, "467 KB": 200.0}


class Author(BaseModel):
    """A record's author."""

    name: str
    email: str


class Record(BaseModel):
    """One record: nested object, list, date, literal and a long text."""

    id: int
    title: str
    author: Author
    tags: list[str]
    published: datetime.date
    status: Literal["draft", "review", "final"]
    score: float
    text: str


class Catalog(BaseModel):
    """The structured output: a list of records."""

    records: list[Record]


# ------------------------------------------------------------------------------ payloads


def _record(rng: random.Random, i: int) -> dict[str, Any]:
    words = []
    for _ in range(rng.randint(50, 400)):
        r = rng.random()
        if r < 0.05:
            words.append(rng.choice(_NON_ASCII))
        elif r < 0.06:
            words.append(rng.choice(_EMOJI))
        elif r < 0.08:
            words.append(f'"{rng.choice(_WORDS)}"')
        elif r < 0.09:
            words.append(f"C:\\{rng.choice(_WORDS)}\\{rng.choice(_WORDS)}")
        else:
            words.append(rng.choice(_WORDS))
    return {
        "id": i,
        "title": " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 6))).capitalize(),
        "author": {
            "name": rng.choice(_WORDS).capitalize(),
            "email": f"{rng.choice(_WORDS)}.{rng.choice(_WORDS)}@example.com",
        },
        "tags": [rng.choice(_WORDS) for _ in range(rng.randint(0, 5))],
        "published": f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "status": rng.choice(["draft", "review", "final"]),
        "score": round(rng.uniform(0, 100), 2),
        "text": " ".join(words),
    }


def document(target: int, seed: int = _SEED) -> str:
    """A ``Catalog`` JSON text of about ``target`` bytes (records added until it is reached;
    the document is cut back to the record count nearest the target)."""
    rng = random.Random(seed)
    records: list[dict[str, Any]] = []
    size = len('{"records": []}')
    while size < target:
        rec = _record(rng, len(records))
        grown = size + len(json.dumps(rec).encode()) + 2
        if grown > target and abs(grown - target) > abs(size - target) and records:
            break
        records.append(rec)
        size = grown
    return json.dumps({"records": records})


def documents() -> list[tuple[str, str, list[str]]]:
    """``(name, text, deltas)`` of the three documents."""
    out = []
    for name, target, seed in (("4.7 KB", 4_700, 1), ("46 KB", 46_000, 2), ("467 KB", 467_000, 3)):
        text = document(target, _SEED + seed)
        out.append((name, text, split_deltas(text, _SEED + seed)))
    return out


# ------------------------------------------------------------------------------- methods


@dataclass(frozen=True, slots=True, kw_only=True)
class Method:
    """A way to keep a typed preview current: ``run(deltas, deadline)`` returns how many
    deltas it handled before ``deadline`` (``None``: all); ``at(text, k)`` times handling
    delta ``k`` once the text before it has been read (for extrapolation); ``reason`` says
    why a method is missing."""

    label: str
    run: Callable[[list[str], float | None], int] | None
    at: Callable[[list[str], int], float] | None = None
    reason: str = ""


def toolwire_run(deltas: list[str], deadline: float | None = None) -> int:
    """``OutputParser``: feed each delta, build the preview (dropped), then the value."""
    parser = OutputParser(compile_output(Catalog))
    feed = parser.feed
    preview = parser.preview
    for delta in deltas:
        feed(delta)
        preview()
    parser.finish()
    return len(deltas)


def chat_chunks(deltas: list[str]) -> list[dict[str, Any]]:
    """OpenAI chat chunks (dicts) streaming the deltas as content, then ``stop``."""
    head = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    out += [{**head, "choices": [{"index": 0, "delta": {"content": d}}]} for d in deltas]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return out


def toolwire_assembler(chunks: list[dict[str, Any]]) -> Callable[[list[str], Any], int]:
    """The assembler with ``output=Catalog`` on chat chunks, each preview read."""

    def run(deltas: list[str], deadline: float | None = None) -> int:
        asm = StreamAssembler(format="openai-chat", output=Catalog)
        feed = asm.feed
        for chunk in chunks:
            for ev in feed(chunk):
                if type(ev) is OutputPreview:
                    ev.preview  # noqa: B018 (the caller reads the preview)
        asm.close()
        return len(deltas)

    return run


def _limited(deltas: list[str], deadline: float | None, counter: list[int]) -> Iterator[str]:
    for delta in deltas:
        yield delta
        counter[0] += 1
        if deadline is not None and not counter[0] & 15 and time.perf_counter() > deadline:
            return


def _instructor() -> Method:
    try:
        from instructor import Partial
        from instructor.v2.dsl.partial import process_potential_object
    except ImportError:
        return Method(label="instructor Partial", run=None, reason="not installed")
    partial_model = Partial[Catalog]  # type: ignore[type-arg,valid-type]

    def run(deltas: list[str], deadline: float | None = None) -> int:
        counter = [0]
        with contextlib.suppress(Exception):
            for _ in partial_model.model_from_chunks(_limited(deltas, deadline, counter)):
                pass
        return counter[0]

    model = partial_model.get_partial_model()

    def at(deltas: list[str], k: int) -> float:
        prefix = "".join(deltas[: k + 1])
        t0 = _clock()
        with contextlib.suppress(Exception):
            process_potential_object(prefix, "trailing-strings", model)
        return _clock() - t0

    return Method(label="instructor Partial", run=run, at=at)


def _openai() -> Method:
    try:
        from openai.lib.streaming.chat import ChatCompletionStreamState
        from openai.types.chat import ChatCompletionChunk
    except ImportError:
        return Method(label="openai .stream()", run=None, reason="not installed")
    built: dict[int, list[Any]] = {}

    def chunks_of(deltas: list[str]) -> list[Any]:
        key = id(deltas)
        if key not in built:
            built[key] = [ChatCompletionChunk.model_validate(c) for c in chat_chunks(deltas)]
        return built[key]

    def run(deltas: list[str], deadline: float | None = None) -> int:
        chunks = chunks_of(deltas)
        state = ChatCompletionStreamState(response_format=Catalog)
        # chunks[0] opens the message; chunk i (1..n) carries delta i - 1
        for done, chunk in enumerate(chunks[:-1]):
            state.handle_chunk(chunk)
            state.current_completion_snapshot.choices[0].message.parsed  # noqa: B018
            if deadline is not None and not (done + 1) & 15 and time.perf_counter() > deadline:
                return done
        state.handle_chunk(chunks[-1])
        state.get_final_completion()
        return len(deltas)

    def at(deltas: list[str], k: int) -> float:
        chunks = chunks_of(deltas)
        state = ChatCompletionStreamState(response_format=Catalog)
        state.handle_chunk(chunks[0])
        before = ChatCompletionChunk.model_validate(chat_chunks(["".join(deltas[:k])])[1])
        with contextlib.suppress(Exception):
            state.handle_chunk(before)
        t0 = _clock()
        with contextlib.suppress(Exception):
            state.handle_chunk(chunks[k + 1])
            state.current_completion_snapshot.choices[0].message.parsed  # noqa: B018
        return _clock() - t0

    return Method(label="openai .stream()", run=run, at=at)


def _revalidating(label: str, validate: Callable[[str], Any]) -> Method:
    def run(deltas: list[str], deadline: float | None = None) -> int:
        buf = ""
        done = 0
        for delta in deltas:
            buf += delta
            try:  # noqa: SIM105 (contextlib.suppress costs more per call)
                validate(buf)
            except Exception:
                pass
            done += 1
            if deadline is not None and not done & 15 and time.perf_counter() > deadline:
                break
        return done

    def at(deltas: list[str], k: int) -> float:
        prefix = "".join(deltas[: k + 1])
        t0 = _clock()
        with contextlib.suppress(Exception):
            validate(prefix)
        return _clock() - t0

    return Method(label=label, run=run, at=at)


def _pydantic_ai() -> Method:
    try:
        from pydantic_ai._output import ObjectOutputProcessor
    except ImportError:
        return Method(label="pydantic-ai allow_partial", run=None, reason="not installed")
    processor = ObjectOutputProcessor(Catalog)
    return _revalidating(
        "pydantic-ai allow_partial", lambda buf: processor.validate(buf, allow_partial=True)
    )


def _pydantic() -> Method:
    from pydantic import TypeAdapter

    adapter = TypeAdapter(Catalog)
    return _revalidating(
        "pydantic validate_json partial",
        lambda buf: adapter.validate_json(buf, experimental_allow_partial=True),
    )


def competitors() -> list[Method]:
    """The re-validating libraries, each driven on the same deltas."""
    return [_instructor(), _openai(), _pydantic_ai(), _pydantic()]


# ----------------------------------------------------------------------------- measuring


@_gc_paused
def measure(method: Method, deltas: list[str], budget: float) -> Cell:
    """Total time over all deltas; past ``budget`` seconds, the first deltas measured and the
    rest integrated from 24 evenly spaced later prefixes (trapezoid rule)."""
    run = method.run
    assert run is not None
    start = _clock()
    done = run(deltas, time.perf_counter() + budget)
    measured = _clock() - start
    if done >= len(deltas):
        if measured < 2.0:
            return Cell(seconds=_best_of(lambda: run(deltas, None)))
        return Cell(seconds=measured)
    assert method.at is not None
    last = len(deltas) - 1
    points = sorted({done - 1 + round(j * (last - done + 1) / 24) for j in range(25)})
    points = [min(max(p, 0), last) for p in points]
    costs = [method.at(deltas, k) for k in points]
    rest = 0.0
    for i in range(len(points) - 1):
        rest += (costs[i] + costs[i + 1]) / 2 * (points[i + 1] - points[i])
    return Cell(seconds=measured + rest, extrapolated=True, note=f"first {done:,} measured")


def _cell(cell: Cell | None, reason: str, base: float) -> str:
    if cell is None:
        return reason or "n/a"
    mark = "≈" if cell.extrapolated else ""
    ratio = cell.seconds / base
    return f"{mark}{_fmt_time(cell.seconds)} ({mark}{ratio:,.1f}×)"


def main() -> None:
    """Measure every cell in this run; print the time and memory tables and the targets."""
    quick = "--quick" in sys.argv[1:] or os.environ.get("TOOLWIRE_BENCH_QUICK") == "1"
    budget = 4.0 if quick else 30.0
    data = documents()
    theirs = competitors()
    times: dict[str, dict[str, Cell]] = {}
    memory: dict[str, dict[str, int]] = {}
    for name, text, deltas in data:
        print(f"measuring {name} ({len(text.encode()):,} B, {len(deltas):,} deltas)...", flush=True)
        assert OutputParser(compile_output(Catalog)) is not None
        chunks = chat_chunks(deltas)
        ours = {
            "toolwire": Method(label="toolwire", run=toolwire_run),
            "toolwire (assembler)": Method(
                label="toolwire (assembler)", run=toolwire_assembler(chunks)
            ),
        }
        for method in [*ours.values(), *theirs]:
            if method.run is None:
                continue
            times.setdefault(method.label, {})[name] = measure(method, deltas, budget)
            # memory: ours everywhere; a re-validating method's peak is its own (one buffer
            # and one parse at a time), measured where a whole pass takes seconds at most
            if method.label.startswith("toolwire") or name != "467 KB":
                run = method.run
                memory.setdefault(method.label, {})[name] = peak_memory(
                    lambda ds, r=run: r(ds, None), deltas
                )
    names = [name for name, _, _ in data]
    sizes = {name: len(text.encode()) for name, text, _ in data}
    print()
    print("### Typed preview after every delta: total CPU time (ratio to toolwire)")
    print()
    print("| method | " + " | ".join(f"{n} ({sizes[n]:,} B)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    base = times["toolwire"]
    labels = ["toolwire", "toolwire (assembler)"] + [m.label for m in theirs]
    reasons = {m.label: m.reason for m in theirs}
    for label in labels:
        row = times.get(label, {})
        cells = [_cell(row.get(n), reasons.get(label, ""), base[n].seconds) for n in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    notes = [
        f"{label} {n}: {cell.note}"
        for label, row in times.items()
        for n, cell in row.items()
        if cell.extrapolated
    ]
    if notes:
        print()
        print("≈ extrapolated (first deltas measured, 24 later prefixes, trapezoid rule): ")
        print("; ".join(notes))
    print()
    print("### Peak memory (tracemalloc, one pass)")
    print()
    print("| method | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for label in labels:
        row_m = memory.get(label)
        if row_m is None:
            continue
        cells = [_fmt_bytes(row_m[n]) if n in row_m else "not measured" for n in names]
        print(f"| {label} | " + " | ".join(cells) + " |")
    print()
    print("### Targets (against the fastest competitor in this run)")
    print()
    for n in names:
        rivals = [times[m.label][n] for m in theirs if m.label in times and n in times[m.label]]
        if not rivals:
            continue
        fastest = min(rivals, key=lambda c: c.seconds)
        ratio = fastest.seconds / base[n].seconds
        verdict = "PASS" if ratio >= _TARGETS[n] else "MISS"
        print(
            f"- {n}: {ratio:,.1f}× less time than the fastest competitor "
            f"(target ≥ {_TARGETS[n]:g}×): {verdict}"
        )


if __name__ == "__main__":
    main()
