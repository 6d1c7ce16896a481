"""Framing raw bytes: one large payload in small reads, and whole bodies against the floor.

Workloads, all generated deterministically (no files):

* **One large payload**: an OpenAI chat chunk carrying a whole ``write_file`` call (as
  Gemini and Ollama-style servers send it) whose arguments are the seeded Python-source
  document of ``benchmarks/payloads.py`` grown to 1, 2, 4 and 8 MiB, framed as one SSE
  event, one NDJSON line and one JSON-array element, arriving in 4 KB reads. Measured:
  toolwire's ``FrameDecoder`` (payload parsed), toolwire's ``SSEDecoder.feed_events``
  (raw events, what the SSE competitors produce), openai-python's ``SSEDecoder``
  (``iter_bytes`` over the reads), httpx-sse's ``SSELineDecoder`` + ``SSEDecoder`` (fed
  the reads decoded by an incremental UTF-8 decoder, as httpx does), and the floor: the
  reads joined once, split at the terminator, ``json.loads`` once. The growth exponent is
  the least-squares slope of log(time) over log(size) from 1 to 8 MiB (1.0 is linear).
* **Many data lines**: one SSE event of 200,000 ``data:`` lines (a pretty-printed JSON
  array), in 4 KB reads.
* **``feed_bytes`` against the floor**: OpenAI chat bodies of one call split into 1–16
  character deltas (the 467 KB ``huge`` payload, 55k chunks): the real chunk shape, about
  16 MB, and a minimal one, about 6 MB, in 64 KB reads (and 8 KB reads: fewer payloads
  alive at once, so fewer survive into the older garbage-collector generations). toolwire
  runs ``StreamAssembler.feed_bytes`` per read, reads ``ev.preview`` every 64 argument
  events and calls ``close()``. The floor is what any consumer must do: split the lines,
  ``json.loads`` each ``data:`` line, append each argument fragment to its call, and
  ``json.loads`` each call once at the end (the faster of a bytes and a str variant). The
  framing-only time (``FrameDecoder`` over the same reads) splits toolwire's time into
  framing and the rest (adapter, assembler, partial-JSON parser, events).

``--before=PATH_OR_REF`` adds a "before" column: a directory holding a copy of an older
``toolwire`` package, or a git ref whose ``src/toolwire`` is extracted to a temporary
directory (``--before=main``); it is imported as ``toolwire_before``. ``--profile`` prints
cProfile's top functions of one ``feed_bytes`` run. ``--quick`` stops at 4 MiB.

Each figure is the least CPU time (``time.process_time``: other processes on a shared
machine do not count) of several passes, ``gc.collect()`` before each (two passes for the
slow "before" cells), and every result is checked. The SSE competitors stop at the event's
text, so the like-for-like ratio is toolwire's raw events against httpx-sse; toolwire's
payload column also parses the JSON, which the floor column does too.
"""

from __future__ import annotations

import atexit
import codecs
import cProfile
import gc
import importlib
import importlib.util
import io
import json
import math
import pstats
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.payloads import _write_file_document, payloads
from toolwire._core.framing import SSEDecoder

MIB = 1024 * 1024
READ = 4096
BODY_READ = 64 * 1024
LINES = 200_000
PREVIEW_EVERY = 64
_SEED = 20240611
TOOL = "write_file"


# --------------------------------------------------------------------------- workloads


def large_chunk(size: int) -> dict[str, Any]:
    """An OpenAI chat chunk whose one call carries ``size`` bytes of arguments, whole."""
    arguments = _write_file_document(random.Random(_SEED), size)
    call = {"index": 0, "id": "call_1", "type": "function"}
    call["function"] = {"name": TOOL, "arguments": arguments}
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}],
    }


def framed(payload: Any) -> dict[str, bytes]:
    """``payload`` as one SSE event, one NDJSON line and a one-element JSON array."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return {
        "sse": f"data: {text}\n\n".encode(),
        "ndjson": f"{text}\n".encode(),
        "json-array": f"[{text}]".encode(),
    }


def reads(body: bytes, size: int = READ) -> list[bytes]:
    """``body`` cut into reads of ``size`` bytes."""
    return [body[i : i + size] for i in range(0, len(body), size)]


def many_lines_body() -> tuple[bytes, Any]:
    """One SSE event whose data is a JSON array pretty-printed over 200k ``data:`` lines."""
    value = [f"line {i:06d} of a pretty-printed payload" for i in range(LINES - 2)]
    text = json.dumps(value, indent=0)
    assert text.count("\n") + 1 == LINES
    body = "".join(f"data: {line}\n" for line in text.split("\n")) + "\n"
    return body.encode(), value


def openai_body(minimal: bool) -> tuple[bytes, str, int]:
    """An OpenAI chat SSE body of the ``huge`` call in 1–16 character deltas: the body, the
    arguments document and the number of chunks. ``minimal`` drops every field but the
    delta (the shape some OpenAI-compatible servers send); otherwise the chunks have the
    fields and compact spacing of OpenAI's own stream."""
    document, deltas = next((doc, deltas) for name, doc, deltas in payloads() if name == "huge")
    base: dict[str, Any] = {}
    if not minimal:
        base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1735689600}
        base |= {"model": "gpt-4o-2024-08-06", "system_fingerprint": "fp_f5bdcc3276"}
    extra: dict[str, Any] = {} if minimal else {"logprobs": None, "finish_reason": None}
    head = {"index": 0, "id": "call_bench0001", "type": "function"}
    head["function"] = {"name": TOOL, "arguments": ""}
    chunks: list[dict[str, Any]] = [
        {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [head]}}]}
    ]
    for delta in deltas:
        fragment = {"index": 0, "function": {"arguments": delta}}
        choice = {"index": 0, "delta": {"tool_calls": [fragment]}, **extra}
        chunks.append({**base, "choices": [choice]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    text = "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)
    return (text + "data: [DONE]\n\n").encode(), document, len(chunks)


# ----------------------------------------------------------------------------- runners


def run_frames(module: ModuleType, framing: str, chunks: list[bytes]) -> list[Any]:
    """``module``'s FrameDecoder over ``chunks``, then close(): the payloads."""
    decoder = module.FrameDecoder(framing)
    out: list[Any] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    out += decoder.close()
    return [payload for _, payload in out]


def run_events(chunks: list[bytes]) -> list[str]:
    """toolwire's raw SSE events (no JSON parsing): their data."""
    decoder = SSEDecoder()
    out = []
    for chunk in chunks:
        out += decoder.feed_events(chunk)
    out += decoder.close_events()
    return [event.data for event in out]


def run_openai(chunks: list[bytes]) -> list[str]:
    """openai-python's SSEDecoder over the reads: the events' data."""
    from openai._streaming import SSEDecoder as OpenAIDecoder

    return [event.data for event in OpenAIDecoder().iter_bytes(iter(chunks))]


def run_httpx_sse(chunks: list[bytes]) -> list[str]:
    """httpx-sse's line decoder and SSE decoder, fed the reads decoded as httpx does."""
    from httpx_sse._decoders import SSEDecoder as HttpxDecoder
    from httpx_sse._decoders import SSELineDecoder

    text = codecs.getincrementaldecoder("utf-8")()
    lines = SSELineDecoder()
    decoder = HttpxDecoder()
    out = []
    for chunk in chunks:
        for line in lines.decode(text.decode(chunk)):
            event = decoder.decode(line)
            if event is not None:
                out.append(event.data)
    for line in lines.flush():
        event = decoder.decode(line)
        if event is not None:
            out.append(event.data)
    return out


def run_floor(framing: str, chunks: list[bytes]) -> list[Any]:
    """The least any decoder must do: join the reads once, split, ``json.loads`` once."""
    body = b"".join(chunks)
    if framing == "json-array":
        return list(json.loads(body))
    if framing == "ndjson":
        return [json.loads(line) for line in body.split(b"\n") if line]
    return [json.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: ")]


def floor_bytes(body: bytes) -> Any:
    """The feed_bytes floor on bytes: split lines, ``json.loads`` each ``data:`` line,
    append each fragment to its call, ``json.loads`` each call once at the end."""
    calls: dict[int, list[str]] = {}
    for line in body.split(b"\n"):
        if line.startswith(b"data: ") and line != b"data: [DONE]":
            for choice in json.loads(line[6:])["choices"]:
                for fragment in choice["delta"].get("tool_calls") or ():
                    arguments = fragment["function"].get("arguments", "")
                    calls.setdefault(fragment["index"], []).append(arguments)
    return [json.loads("".join(parts)) for parts in calls.values()]


def floor_text(body: bytes) -> Any:
    """:func:`floor_bytes` on the body decoded once (json.loads then skips its own
    per-line decoding)."""
    calls: dict[int, list[str]] = {}
    for line in body.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            for choice in json.loads(line[6:])["choices"]:
                for fragment in choice["delta"].get("tool_calls") or ():
                    arguments = fragment["function"].get("arguments", "")
                    calls.setdefault(fragment["index"], []).append(arguments)
    return [json.loads("".join(parts)) for parts in calls.values()]


def _class(package: ModuleType, modules: tuple[str, ...], name: str) -> Any:
    """``name`` from the first of ``modules`` the package has: the room layout, or the
    flat one of a baseline checkout from before the move."""
    for module in modules:
        try:
            return getattr(importlib.import_module(f"{package.__name__}.{module}"), name)
        except ModuleNotFoundError:
            continue
    raise ModuleNotFoundError(f"{package.__name__} has none of {modules}")


def run_feed_bytes(package: ModuleType, chunks: list[bytes]) -> Any:
    """``StreamAssembler.feed_bytes`` per read, a preview every 64 argument events,
    ``close()``: the calls' arguments. (The classes are taken from the package's own
    submodules: ``toolwire/__init__`` resolves its names in ``toolwire`` itself.)"""
    asm = _class(package, ("_output.assembler", "_assembler"), "StreamAssembler")()
    arguments_type = _class(package, ("_core.events", "_events"), "ToolCallArguments")
    n = 0
    for chunk in chunks:
        for ev in asm.feed_bytes(chunk):
            if type(ev) is arguments_type:
                n += 1
                if n % PREVIEW_EVERY == 0:
                    ev.preview  # noqa: B018 - reading the preview is part of the work
    return [call.arguments for call in asm.close().tool_calls]


def run_framing_only(package: ModuleType, chunks: list[bytes]) -> int:
    """The package's FrameDecoder over the reads, payloads dropped as they come."""
    decoder = _class(package, ("_core.framing", "_framing"), "FrameDecoder")()
    n = 0
    for chunk in chunks:
        n += len(decoder.feed(chunk))
    return n + len(decoder.close())


# ------------------------------------------------------------------------------ timing


def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Least CPU time of ``repeat`` passes (``gc.collect()`` before each) and the result."""
    times = []
    result = None
    for _ in range(repeat):
        result = None
        gc.collect()
        start = time.process_time()
        result = fn()
        times.append(time.process_time() - start)
    return min(times), result


def exponent(sizes: list[float], times: list[float]) -> float:
    """Least-squares slope of log(time) over log(size)."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(t) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def _fmt(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:,.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:,.1f} ms"
    return f"{seconds * 1e6:,.0f} µs"


# ------------------------------------------------------------------------ "before" code


def load_before(spec: str) -> ModuleType:
    """An older toolwire imported as ``toolwire_before``: from a directory holding a copy
    of the package (``DIR/toolwire`` or ``DIR`` itself), or from a git ref's
    ``src/toolwire`` extracted to a temporary directory."""
    path = Path(spec)
    if not path.is_dir():
        archive = subprocess.run(
            ["git", "archive", spec, "src/toolwire"],
            cwd=Path(__file__).resolve().parents[1],
            check=True,
            capture_output=True,
        ).stdout
        path = Path(tempfile.mkdtemp(prefix="toolwire-before-"))
        atexit.register(shutil.rmtree, path, True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.10.12/3.11.4 on
                tar.extractall(path, filter="data")
            else:
                tar.extractall(path)  # our own repository's archive
        path = path / "src"
    package = path / "toolwire" if (path / "toolwire" / "__init__.py").is_file() else path
    module_spec = importlib.util.spec_from_file_location(
        "toolwire_before", package / "__init__.py", submodule_search_locations=[str(package)]
    )
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    sys.modules["toolwire_before"] = module
    module_spec.loader.exec_module(module)
    importlib.import_module("toolwire_before._framing")
    return module


# ------------------------------------------------------------------------------ report


def _large_payloads(before: ModuleType | None, sizes: list[int]) -> None:
    import toolwire._core.framing as after_framing

    before_framing = sys.modules["toolwire_before._framing"] if before else None
    print("\n## One large payload in 4 KB reads (one run)\n")
    head = ["framing · size"]
    head += ["before"] if before else []
    head += ["toolwire", "toolwire raw events", "openai SSEDecoder", "httpx-sse", "floor"]
    head += ["raw events / httpx-sse", "toolwire / floor"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    series: dict[tuple[str, str], list[float]] = {}
    for framing in ("sse", "ndjson", "json-array"):
        for mib in sizes:
            chunk = large_chunk(mib * MIB)
            body = framed(chunk)[framing]
            chunks = reads(body)
            cells: dict[str, float] = {}
            t, got = best(lambda c=chunks, f=framing: run_frames(after_framing, f, c), 5)
            assert got == [chunk]
            cells["toolwire"] = t
            if before_framing is not None:
                repeat = 2 if mib >= 4 else 3
                t, got = best(lambda c=chunks, f=framing: run_frames(before_framing, f, c), repeat)
                assert got == [chunk]
                cells["before"] = t
            t, got = best(lambda c=chunks, f=framing: run_floor(f, c), 5)
            assert got == [chunk]
            cells["floor"] = t
            if framing == "sse":
                data = body[6:-2].decode()
                for name, runner in (
                    ("toolwire raw events", run_events),
                    ("openai SSEDecoder", run_openai),
                    ("httpx-sse", run_httpx_sse),
                ):
                    t, got = best(lambda c=chunks, r=runner: r(c), 5)
                    assert got == [data], name
                    cells[name] = t
            for name, t in cells.items():
                series.setdefault((framing, name), []).append(t)
            row = [f"{framing} · {mib} MiB ({len(body) / MIB:.1f} MiB)"]
            row += [_fmt(cells["before"])] if before else []
            row += [_fmt(cells[c]) if c in cells else "" for c in head[len(row) : -2]]
            if "httpx-sse" in cells:
                row.append(f"{cells['toolwire raw events'] / cells['httpx-sse']:.2f}×")
            else:
                row.append("")
            row.append(f"{cells['toolwire'] / cells['floor']:.2f}×")
            print("| " + " | ".join(row) + " |")
    print("\nGrowth exponents (log-log slope over the sizes; 1.0 is linear, target ≤ 1.1):\n")
    print("| framing | " + " | ".join(head[1:-2]) + " |")
    print("|" + "---|" * (len(head) - 2))
    for framing in ("sse", "ndjson", "json-array"):
        row = [framing]
        for name in head[1:-2]:
            times = series.get((framing, name))
            row.append(f"{exponent([float(s) for s in sizes], times):.2f}" if times else "")
        print("| " + " | ".join(row) + " |")


def _many_lines(before: ModuleType | None) -> None:
    import toolwire._core.framing as after_framing

    body, value = many_lines_body()
    chunks = reads(body)
    print(f"\n## One SSE event of {LINES:,} data: lines ({len(body) / MIB:.1f} MiB, 4 KB reads)\n")
    text = "\n".join(line[6:] for line in body.decode().split("\n")[:-2])
    rows: list[tuple[str, float]] = []
    t, got = best(lambda: run_frames(after_framing, "sse", chunks), 5)
    assert got == [value]
    rows.append(("toolwire (payload parsed)", t))
    if before is not None:
        old = sys.modules["toolwire_before._framing"]
        t, got = best(lambda: run_frames(old, "sse", chunks), 2)
        assert got == [value]
        rows.insert(0, ("before (payload parsed)", t))
    for name, runner in (
        ("toolwire raw events", run_events),
        ("openai SSEDecoder", run_openai),
        ("httpx-sse", run_httpx_sse),
    ):
        t, got = best(lambda r=runner: r(chunks), 3)
        assert got == [text], name
        rows.append((name, t))
    print("| decoder | time |")
    print("|---|---|")
    for name, t in rows:
        print(f"| {name} | {_fmt(t)} |")


def _feed_bytes(before: ModuleType | None, profile: bool) -> None:
    import toolwire

    print("\n## feed_bytes against the floor (OpenAI chat, 1–16 character deltas)\n")
    head = ["body", "floor"]
    head += ["before, 64 KB reads", "× floor"] if before else []
    head += ["toolwire, 64 KB reads", "× floor", "toolwire, 8 KB reads", "× floor"]
    head += ["framing only (64 KB)", "rest: adapter, assembler, parser (64 KB)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    profiled: list[bytes] = []
    for minimal in (False, True):
        body, document, n_chunks = openai_body(minimal)
        want = [json.loads(document)]
        chunks = reads(body, BODY_READ)
        small = reads(body, 8 * 1024)
        t_bytes, got = best(lambda b=body: floor_bytes(b), 5)
        assert got == want
        t_text, got = best(lambda b=body: floor_text(b), 5)
        assert got == want
        floor = min(t_bytes, t_text)
        label = "minimal chunks" if minimal else "OpenAI's chunk shape"
        row = [f"{label} ({len(body) / 1e6:.1f} MB, {n_chunks:,} chunks)", _fmt(floor)]
        if before is not None:
            t_old, got = best(lambda c=chunks: run_feed_bytes(before, c), 3)
            assert got == want
            row += [_fmt(t_old), f"{t_old / floor:.2f}×"]
        t_tw, got = best(lambda c=chunks: run_feed_bytes(toolwire, c), 5)
        assert got == want
        t_small, got = best(lambda c=small: run_feed_bytes(toolwire, c), 5)
        assert got == want
        t_frame, _ = best(lambda c=chunks: run_framing_only(toolwire, c), 5)
        row += [_fmt(t_tw), f"{t_tw / floor:.2f}×", _fmt(t_small), f"{t_small / floor:.2f}×"]
        row += [f"{_fmt(t_frame)} ({t_frame / floor:.2f}× floor)"]
        rest = t_tw - t_frame
        row += [f"{_fmt(rest)} ({rest / floor:.2f}× floor, {rest / n_chunks * 1e6:.2f} µs/chunk)"]
        print("| " + " | ".join(row) + " |")
        if not minimal:
            profiled = chunks
    print(
        "\nfloor: split lines, json.loads each data: line, append each fragment to its call, "
        "json.loads each call once (the faster of bytes and str)."
    )
    if profile:
        print("\ncProfile of one feed_bytes run (OpenAI's chunk shape, 64 KB reads):\n\n```")
        profiler = cProfile.Profile()
        profiler.enable()
        run_feed_bytes(toolwire, profiled)
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(16)
        print("```")


def main() -> None:
    """Measure and print the Markdown tables."""
    argv = sys.argv[1:]
    quick = "--quick" in argv
    profile = "--profile" in argv
    before_spec = next((a.split("=", 1)[1] for a in argv if a.startswith("--before=")), None)
    before = load_before(before_spec) if before_spec else None
    sizes = [1, 2, 4] if quick else [1, 2, 4, 8]
    # feed_bytes first: the competitors' imports (pydantic models...) grow the heap that
    # every full garbage collection walks, which would tax whoever collects most
    _feed_bytes(before, profile)
    _large_payloads(before, sizes)
    _many_lines(before)


if __name__ == "__main__":
    main()
