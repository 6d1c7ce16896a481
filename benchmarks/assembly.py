"""Assembling whole streams: toolwire against the SDK accumulators, measured in one run.

Workloads (``benchmarks/payloads.py``): the 46 KB (``large``) and 467 KB (``huge``)
``write_file`` calls split into 1–16 character deltas, as OpenAI chat chunks and as
Anthropic events shaped like the real streams (``reference/accumulators.md``), plus the
whole recorded corpus. Every path does the work a live consumer does:

* toolwire: ``for payload in chunks: for ev in asm.feed(payload): ...`` reading
  ``ev.preview`` every 64 argument events, then ``close()``;
* openai-python: ``construct_type(type_=ChatCompletionChunk)`` per chunk (as
  ``openai.Stream`` does), ``ChatCompletionStreamState.handle_chunk`` with its events
  drained, ``get_final_completion()``; plain, and with a ``strict`` input tool (which
  re-parses the arguments with jiter on every delta);
* anthropic: ``construct_type(type_=RawMessageStreamEvent)``, ``accumulate_event`` and
  ``build_events`` per event (its snapshot re-parses the input on every delta);
* LangChain: ``acc = acc + chunk`` over ``AIMessageChunk``s built beforehand (building is
  not timed). Its cost is quadratic (a pure-Python partial parse of the whole arguments
  per merge), so it is measured up to a time cap and the rest is extrapolated by timing
  single steps at evenly spaced positions (accumulator rebuilt from the argument prefix)
  and integrating them with the trapezoid rule; such cells are marked ``≈``.

Also measured: the same big calls fed as the SDKs' event objects (``ChatCompletionChunk``,
Anthropic and Responses events, built beforehand) and as chat chunks padded with null
members, each against the plain dicts (target: within 1.3×).

Each figure is the best of several passes (one pass for the slow competitors on ``huge``),
with ``gc.collect()`` before each; every result is checked against ``json.loads`` of the
document. ``python -m benchmarks assembly`` prints Markdown tables;
``python -m benchmarks.assembly --quick`` skips the 467 KB payload.
"""

from __future__ import annotations

import gc
import itertools
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.payloads import payloads
from toolwire import StreamAssembler, StreamError, ToolCallArguments
from toolwire._core.framing import FrameDecoder

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
TOOL = "write_file"
CALL_ID = "call_bench000000000000000001"
PREVIEW_EVERY = 64
LANGCHAIN_CAP = 3.0  # seconds measured before extrapolating
TARGETS = {"large": 10.0, "huge": 20.0}

_INPUT_TOOL = {
    "type": "function",
    "function": {
        "name": TOOL,
        "strict": True,
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
            "additionalProperties": False,
        },
    },
}


# ------------------------------------------------------------------------ streams


def openai_chunks(deltas: list[str]) -> list[dict[str, Any]]:
    """OpenAI chat chunk dicts: a header, one chunk per delta, the finish chunk."""
    base = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_bench",
    }
    header = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "index": 0,
                "id": CALL_ID,
                "type": "function",
                "function": {"name": TOOL, "arguments": ""},
            }
        ],
    }
    out = [
        {
            **base,
            "choices": [{"index": 0, "delta": header, "logprobs": None, "finish_reason": None}],
        }
    ]
    for d in deltas:
        delta = {"tool_calls": [{"index": 0, "function": {"arguments": d}}]}
        out.append(
            {
                **base,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": None}],
            }
        )
    out.append(
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}],
        }
    )
    return out


def anthropic_events(deltas: list[str]) -> list[dict[str, Any]]:
    """Anthropic Messages events for one tool_use block."""
    usage = {"input_tokens": 100, "output_tokens": 1}
    out: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_bench",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-6",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_bench", "name": TOOL, "input": {}},
        },
    ]
    for d in deltas:
        out.append(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": d},
            }
        )
    out.append({"type": "content_block_stop", "index": 0})
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": len(deltas)},
        }
    )
    out.append({"type": "message_stop"})
    return out


def responses_events(deltas: list[str]) -> list[dict[str, Any]]:
    """OpenAI Responses events for one function_call item, numbered as the API numbers them."""
    item = {"type": "function_call", "id": "fc_bench", "call_id": CALL_ID, "name": TOOL}
    response = {"id": "resp_bench", "model": "gpt-4.1", "status": "in_progress"}
    out: list[dict[str, Any]] = [
        {"type": "response.created", "response": response},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
    ]
    out += [
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_bench",
            "output_index": 0,
            "delta": d,
        }
        for d in deltas
    ]
    whole = "".join(deltas)
    out += [
        {
            "type": "response.function_call_arguments.done",
            "item_id": "fc_bench",
            "output_index": 0,
            "arguments": whole,
        },
        {
            "type": "response.output_item.done",
            "output_index": 0,
            "item": {**item, "arguments": whole, "status": "completed"},
        },
        {"type": "response.completed", "response": {**response, "status": "completed"}},
    ]
    for number, event in enumerate(out):
        event["sequence_number"] = number
    return out


def with_null_members(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``chunks`` whose fragment deltas also carry ``content``/``role``/``refusal`` as null,
    as the OpenAI SDK's dumps and several servers send them."""
    out = []
    for chunk in chunks:
        choice = chunk["choices"][0]
        delta = {"content": None, "role": None, "refusal": None, **choice["delta"]}
        out.append({**chunk, "choices": [{**choice, "delta": delta}]})
    return out


def sdk_objects(kind: str, events: list[dict[str, Any]]) -> list[Any]:
    """The SDK's event objects for ``events``, built as its stream builds them (untimed)."""
    if kind == "anthropic":
        from anthropic._models import construct_type as construct_anthropic
        from anthropic.types import RawMessageStreamEvent

        return [construct_anthropic(type_=RawMessageStreamEvent, value=e) for e in events]  # type: ignore[arg-type]
    from openai._models import construct_type
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent

    target: Any = ChatCompletionChunk if kind == "chat" else ResponseStreamEvent
    return [construct_type(type_=target, value=e) for e in events]


# ------------------------------------------------------------------------- runners


def run_toolwire(chunks: list[Any], fmt: str = "auto") -> Any:
    """toolwire's consumer loop: events, a preview every 64 argument events, close()."""
    asm = StreamAssembler(format=fmt)
    n = 0
    for payload in chunks:
        for ev in asm.feed(payload):
            if isinstance(ev, ToolCallArguments):
                n += 1
                if n % PREVIEW_EVERY == 0:
                    ev.preview  # noqa: B018 - reading the preview is the work measured
    return [(c.name, c.arguments) for c in asm.close().tool_calls]


def _sse(events: list[dict[str, Any]]) -> bytes:
    """``events`` as an SSE body (with ``event:`` lines for typed events)."""
    parts = []
    for e in events:
        head = f"event: {e['type']}\n" if "type" in e else ""
        parts.append(f"{head}data: {json.dumps(e)}\n\n")
    return "".join(parts).encode()


def run_toolwire_bytes(body: bytes) -> Any:
    """toolwire from raw bytes: framing, JSON decoding, events, previews, close()."""
    asm = StreamAssembler()
    n = 0
    for ev in asm.feed_bytes(body):
        if isinstance(ev, ToolCallArguments):
            n += 1
            if n % PREVIEW_EVERY == 0:
                ev.preview  # noqa: B018
    return [(c.name, c.arguments) for c in asm.close().tool_calls]


def run_openai(chunks: list[dict[str, Any]], strict: bool = False) -> Any:
    """openai-python's ChatCompletionStreamState over construct_type-built chunks."""
    from openai._models import construct_type
    from openai.lib.streaming.chat._completions import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk

    state: Any = (
        ChatCompletionStreamState(input_tools=[_INPUT_TOOL])  # type: ignore[list-item]
        if strict
        else ChatCompletionStreamState()
    )
    for d in chunks:
        chunk = construct_type(type_=ChatCompletionChunk, value=d)
        for _ in state.handle_chunk(chunk):
            pass
    message = state.get_final_completion().choices[0].message
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or []]


def run_anthropic(events: list[dict[str, Any]]) -> Any:
    """The Anthropic SDK's accumulate_event + build_events over construct_type events."""
    from anthropic._models import construct_type
    from anthropic.lib.streaming._messages import accumulate_event, build_events
    from anthropic.types import RawMessageStreamEvent

    snapshot: Any = None
    json_bufs: dict[int, bytes] = {}
    for d in events:
        event: Any = construct_type(type_=RawMessageStreamEvent, value=d)  # type: ignore[arg-type]
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=json_bufs)
        build_events(event=event, message_snapshot=snapshot)
    return [(b.name, b.input) for b in snapshot.content if b.type == "tool_use"]


def langchain_chunks(chunks: list[dict[str, Any]]) -> list[Any]:
    """One AIMessageChunk per OpenAI chunk, as langchain-openai shapes them."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    out = []
    for d in chunks:
        choice = d["choices"][0] if d.get("choices") else {}
        delta = choice.get("delta") or {}
        tcs = [
            tool_call_chunk(
                name=(tc.get("function") or {}).get("name"),
                args=(tc.get("function") or {}).get("arguments"),
                id=tc.get("id"),
                index=tc.get("index"),
            )
            for tc in delta.get("tool_calls") or []
        ]
        meta = {"finish_reason": choice["finish_reason"]} if choice.get("finish_reason") else {}
        out.append(
            AIMessageChunk(
                content=delta.get("content") or "",
                tool_call_chunks=tcs,
                id=d.get("id"),
                response_metadata=meta,
            )
        )
    return out


def run_langchain(lc_chunks: list[Any], cap: float | None = None) -> tuple[float, bool, Any]:
    """``acc = acc + chunk`` over all chunks; returns (seconds, extrapolated, result)."""
    start = time.perf_counter()
    acc = lc_chunks[0]
    done = len(lc_chunks)
    for i in range(1, len(lc_chunks)):
        acc = acc + lc_chunks[i]
        if cap is not None and time.perf_counter() - start > cap:
            done = i + 1
            break
    measured = time.perf_counter() - start
    if done == len(lc_chunks):
        return measured, False, [(c["name"], c["args"]) for c in acc.tool_calls]
    return measured + _langchain_rest(lc_chunks, done), True, None


def _langchain_rest(lc_chunks: list[Any], done: int) -> float:
    """Estimated cost of merge steps ``done..end``: sampled single steps, trapezoid rule."""
    from langchain_core.messages import AIMessageChunk
    from langchain_core.messages.tool import tool_call_chunk

    head = lc_chunks[0].tool_call_chunks[0]
    args = [c.tool_call_chunks[0]["args"] if c.tool_call_chunks else "" for c in lc_chunks]
    prefix_len = [0]
    for a in args:
        prefix_len.append(prefix_len[-1] + len(a or ""))
    joined = "".join(a or "" for a in args)
    positions = sorted({done + (len(lc_chunks) - 1 - done) * k // 11 for k in range(12)})
    samples: list[tuple[int, float]] = []
    for pos in positions:
        pos = min(pos, len(lc_chunks) - 2)
        acc = AIMessageChunk(
            content="",
            tool_call_chunks=[
                tool_call_chunk(
                    name=head["name"], args=joined[: prefix_len[pos]], id=head["id"], index=0
                )
            ],
            id=lc_chunks[0].id,
        )
        t = time.perf_counter()
        for j in range(pos, pos + 2):
            acc = acc + lc_chunks[j]
        samples.append((pos, (time.perf_counter() - t) / 2))
    total = 0.0
    for (p0, c0), (p1, c1) in itertools.pairwise(samples):
        total += (p1 - p0) * (c0 + c1) / 2
    return total + samples[-1][1]


def best(
    fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, Any]:
    """Minimum time of ``repeat`` passes (gc.collect() before each) and the result; wall
    time by default, CPU time (``time.process_time``) where two toolwire paths are
    compared, which a busy machine disturbs less."""
    times = []
    result = None
    for _ in range(repeat):
        gc.collect()
        t = clock()
        result = fn()
        times.append(clock() - t)
    return min(times), result


# -------------------------------------------------------------------------- report


def _fmt(seconds: float, approx: bool = False) -> str:
    mark = "≈" if approx else ""
    if seconds >= 1:
        return f"{mark}{seconds:,.2f} s"
    if seconds >= 1e-3:
        return f"{mark}{seconds * 1e3:,.1f} ms"
    return f"{mark}{seconds * 1e6:,.0f} µs"


def _corpus_payloads() -> dict[str, list[tuple[str | None, Any]]]:
    out: dict[str, list[tuple[str | None, Any]]] = {}
    expected = json.loads((CORPUS / "expected.json").read_text("utf-8"))
    for name in sorted(expected):
        dec = FrameDecoder()
        data = (CORPUS / "streams" / name).read_bytes()
        items = dec.feed(data) + dec.close()
        if name.endswith(".json"):
            # llama-stack recordings wrap each payload in a recorder envelope
            items = [(e, p["__data__"]) for e, p in items]
        out[name] = items
    return out


def _corpus_rows() -> list[str]:
    if not (CORPUS / "expected.json").is_file():
        return ["(corpus not found: skipped)"]
    streams = _corpus_payloads()
    expected = json.loads((CORPUS / "expected.json").read_text("utf-8"))
    chat = {n: s for n, s in streams.items() if expected[n]["api_format"] == "openai-chat"}
    anth = {n: s for n, s in streams.items() if expected[n]["api_format"] == "anthropic-messages"}

    def tw(group: dict[str, Any]) -> Callable[[], int]:
        def run() -> int:
            ok = 0
            for items in group.values():
                asm = StreamAssembler()
                try:
                    for event, payload in items:
                        for ev in asm.feed(payload, event=event):
                            if isinstance(ev, ToolCallArguments):
                                ev.preview  # noqa: B018
                    asm.close()
                    ok += 1
                except StreamError:
                    pass
            return ok

        return run

    def sdk(group: dict[str, Any], runner: Callable[[list[Any]], Any]) -> Callable[[], int]:
        def run() -> int:
            ok = 0
            for items in group.values():
                try:
                    runner([p for _, p in items if isinstance(p, dict)])
                    ok += 1
                except Exception:
                    pass  # the SDK raises on some real-world quirks (missing index...)
            return ok

        return run

    def lc(group: dict[str, Any]) -> Callable[[], int]:
        prepared = {
            n: langchain_chunks([p for _, p in s if isinstance(p, dict)]) for n, s in group.items()
        }

        def run() -> int:
            ok = 0
            for chunks in prepared.values():
                try:
                    run_langchain(chunks)
                    ok += 1
                except Exception:
                    pass
            return ok

        return run

    rows = []
    t_all, ok_all = best(tw(streams), 5)
    rows.append(
        f"| corpus · all formats ({len(streams)} streams) | {_fmt(t_all)} ({ok_all} ok) | | | | |"
    )
    t_chat, ok_chat = best(tw(chat), 5)
    t_oa, ok_oa = best(sdk(chat, run_openai), 3)
    t_lc, ok_lc = best(lc(chat), 3)
    rows.append(
        f"| corpus · openai-chat ({len(chat)} streams) | {_fmt(t_chat)} ({ok_chat} ok) | "
        f"openai {_fmt(t_oa)} ({ok_oa} ran) {t_oa / t_chat:.0f}× · LangChain {_fmt(t_lc)} "
        f"({ok_lc} ran) {t_lc / t_chat:.0f}× | | | |"
    )
    t_an, ok_an = best(tw(anth), 5)
    t_as, ok_as = best(sdk(anth, run_anthropic), 3)
    rows.append(
        f"| corpus · anthropic ({len(anth)} streams) | {_fmt(t_an)} ({ok_an} ok) | "
        f"anthropic {_fmt(t_as)} ({ok_as} ran) {t_as / t_an:.0f}× | | | |"
    )
    return rows


def main() -> None:
    """Measure and print the Markdown tables."""
    quick = "--quick" in sys.argv
    sizes = ("large",) if quick else ("large", "huge")
    by_name = {name: (doc, deltas) for name, doc, deltas in payloads()}
    print("\n## Assembling streams: toolwire vs the SDK accumulators (one run)\n")
    print("| payload · format | toolwire | µs/chunk | competitor | its time | ratio | target | |")
    print("|---|---|---|---|---|---|---|---|")
    for size in sizes:
        doc, deltas = by_name[size]
        want = [(TOOL, json.loads(doc))]
        slow_repeat = 3 if size == "large" else 1
        chunks = openai_chunks(deltas)
        events = anthropic_events(deltas)
        t_tw, got = best(lambda c=chunks: run_toolwire(c), 5)
        checks = {"OpenAI chat": got == want}
        t_twa, got = best(lambda e=events: run_toolwire(e), 5)
        checks["Anthropic"] = got == want
        label = f"{size} ({len(doc) / 1000:.0f} KB, {len(deltas):,} deltas)"
        competitors: list[tuple[str, str, float, float, bool]] = []
        t, got = best(lambda c=chunks: run_openai(c), slow_repeat)
        assert got == want
        competitors.append(("OpenAI chat", "openai plain", t, t_tw, False))
        t, got = best(lambda c=chunks: run_openai(c, strict=True), slow_repeat)
        assert got == want
        competitors.append(("OpenAI chat", "openai strict", t, t_tw, False))
        lc_chunks = langchain_chunks(chunks)
        gc.collect()
        t, approx, got = run_langchain(lc_chunks, cap=LANGCHAIN_CAP)
        if got is not None:
            assert got == want
        competitors.append(("OpenAI chat", "LangChain acc+chunk", t, t_tw, approx))
        del lc_chunks
        t, got = best(lambda e=events: run_anthropic(e), slow_repeat)
        assert got == want
        competitors.append(("Anthropic", "anthropic SDK", t, t_twa, False))
        for fmt, name, their, ours, approx in competitors:
            n_chunks = len(chunks) if fmt == "OpenAI chat" else len(events)
            ratio = their / ours
            target = TARGETS[size]
            verdict = "PASS" if ratio >= target else "FAIL"
            if not checks[fmt]:
                verdict += " (toolwire's result was WRONG)"
            print(
                f"| {label} · {fmt} | {_fmt(ours)} | {ours / n_chunks * 1e6:.2f} | {name} | "
                f"{_fmt(their, approx)} | {'≈' if approx else ''}{ratio:,.0f}× | "
                f"≥ {target:.0f}× | {verdict} |"
            )
    print("\n## toolwire from raw SSE bytes (framing and JSON decoding included, one read)\n")
    print("| payload | OpenAI chat SSE | µs/chunk | Anthropic SSE | µs/event |")
    print("|---|---|---|---|---|")
    for size in sizes:
        doc, deltas = by_name[size]
        row = [size]
        for events in (openai_chunks(deltas), anthropic_events(deltas)):
            body = _sse(events)
            t, got = best(lambda b=body: run_toolwire_bytes(b), 3)
            assert got == [(TOOL, json.loads(doc))]
            row += [_fmt(t), f"{t / len(events) * 1e6:.2f}"]
        print("| " + " | ".join(row) + " |")
    print("\n## toolwire fed SDK objects and null-padded chunks, against the same dicts (CPU)\n")
    print("| payload · input | dicts µs/chunk | this input µs/chunk | ratio | target | |")
    print("|---|---|---|---|---|---|")
    for size in sizes:
        doc, deltas = by_name[size]
        want = [(TOOL, json.loads(doc))]
        chat, anthropic, responses = (
            openai_chunks(deltas),
            anthropic_events(deltas),
            responses_events(deltas),
        )
        rows = [
            ("OpenAI chat, content/role/refusal null", chat, with_null_members(chat)),
            ("OpenAI ChatCompletionChunk objects", chat, sdk_objects("chat", chat)),
            ("Anthropic event objects", anthropic, sdk_objects("anthropic", anthropic)),
            ("OpenAI Responses event objects", responses, sdk_objects("responses", responses)),
        ]
        for label, dicts, other in rows:
            t_dicts, got = best(lambda c=dicts: run_toolwire(c), 7, clock=time.process_time)
            assert got == want
            t_other, got = best(lambda c=other: run_toolwire(c), 7, clock=time.process_time)
            assert got == want
            ratio = t_other / t_dicts
            verdict = "PASS" if ratio <= 1.3 else "FAIL"
            print(
                f"| {size} · {label} | {t_dicts / len(dicts) * 1e6:.2f} | "
                f"{t_other / len(other) * 1e6:.2f} | {ratio:.2f}× | ≤ 1.3× | {verdict} |"
            )
    print("\n## Whole recorded corpus (payloads decoded beforehand; events, previews, close)\n")
    print("| workload | toolwire | competitors (same streams) | | | |")
    print("|---|---|---|---|---|---|")
    for row in _corpus_rows():
        print(row)


if __name__ == "__main__":
    main()
