"""Helpers that every ``test_adapter_*`` module uses, so that each adapter is held to the
same properties: reading corpus payloads, mutating valid payloads, checking delta types,
and a minimal accumulator that is independent of the assembler."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from conftest import load_expected
from toolwire import Response, StreamAssembler, StreamFormatError
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    MetaDelta,
    PartDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)


class GeneralPathAssembler(StreamAssembler):
    """A ``StreamAssembler`` with the fragment fast paths off: every payload takes the
    general path (``translate`` and the deltas), and SDK objects are dumped. Tests compare
    its events with the real assembler's."""

    def _use(self, entry: Any) -> None:
        super()._use(entry)
        self._fast = None


def sse_body(payloads: Sequence[dict[str, Any]]) -> bytes:
    """``payloads`` as an SSE body, each under its ``type`` (if any) as the event name."""
    return b"".join(
        (f"event: {p['type']}\n" if "type" in p else "").encode()
        + f"data: {json.dumps(p)}\n\n".encode()
        for p in payloads
    )


def assemble_bytes(chunks: Sequence[bytes], format: str = "auto") -> tuple[Response, list[Any]]:
    """The response of a raw body fed in ``chunks``, and its events."""
    asm = StreamAssembler(format=format)
    events = [e for chunk in chunks for e in asm.feed_bytes(chunk)]
    events.extend(asm.feed_eof())
    return asm.close(), events


def assemble_every_way(
    payloads: Sequence[dict[str, Any]], objects: Sequence[Any] = (), *, body: bool = True
) -> tuple[Response, list[Any]]:
    """The response of ``payloads`` and its events, after checking that every way of
    feeding them gives the same: as dicts and as the SDK's event ``objects`` (when given),
    each on the fast and on the general path, and (``body``) as an SSE body fed whole and
    byte by byte."""
    runs: list[tuple[Response, list[Any]]] = []
    for items in (payloads, objects):
        for make in (StreamAssembler, GeneralPathAssembler):
            if items:
                asm = make()
                events = [e for item in items for e in asm.feed(item)]
                runs.append((asm.close(), events))
    if body:
        data = sse_body(payloads)
        runs.append(assemble_bytes([data]))
        runs.append(assemble_bytes([data[i : i + 1] for i in range(len(data))]))
    for run in runs[1:]:
        assert run == runs[0]
    return runs[0]


def read_payloads(path: Path) -> Iterator[tuple[dict[str, Any], str | None]]:
    """``(payload, sse event name)`` for each event of a recorded SSE or JSON Lines file."""
    text = path.read_text("utf-8")
    if path.suffix != ".sse":
        for line in text.splitlines():
            if line.strip():
                yield json.loads(line), None
        return
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data and data != ["[DONE]"]:
            yield json.loads("\n".join(data)), event


def translate_all(adapter: Any, payloads: Sequence[Any]) -> list[Delta]:
    """Every delta ``adapter`` makes of ``payloads`` (dicts, or ``(dict, event)`` pairs)."""
    out: list[Delta] = []
    for item in payloads:
        payload, event = item if isinstance(item, tuple) else (item, None)
        out.extend(adapter.translate(payload, event))
    return out


def without_parts(deltas: Sequence[Delta]) -> list[Delta]:
    """``deltas`` without the part boundaries (``PartDelta``), for tests about content."""
    return [d for d in deltas if not isinstance(d, PartDelta)]


_SWAPS: list[Any] = [None, 0, -1, 1.5, True, "", "x", [], [1], {}, {"a": 1}]


def _positions(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _positions(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _positions(item, (*path, index))


@st.composite
def mutated(draw: st.DrawFn, payload: dict[str, Any]) -> Any:
    """``payload`` with one node dropped, set to null or replaced by another JSON type."""
    positions = list(_positions(payload))
    path = draw(st.sampled_from(positions))
    result = copy.deepcopy(payload)
    if not path:
        return draw(st.sampled_from(_SWAPS))
    parent = result
    for key in path[:-1]:
        parent = parent[key]
    action = draw(st.sampled_from(["drop", "swap"]))
    if action == "drop" and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = draw(st.sampled_from(_SWAPS))
    return result


def mutated_streams(stream: Sequence[dict[str, Any]]) -> st.SearchStrategy[list[Any]]:
    """``stream`` with one to three of its payloads mutated."""

    @st.composite
    def build(draw: st.DrawFn) -> list[Any]:
        out: list[Any] = list(stream)
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(out) - 1))
            out[at] = draw(mutated(stream[at]))
        return out

    return build()


def check_deltas(deltas: Sequence[Delta]) -> None:
    """Every delta is well typed: what an adapter emits never needs checking downstream."""
    for delta in deltas:
        if isinstance(delta, CallDelta):
            assert isinstance(delta.arguments, str)
            assert delta.id is None or (isinstance(delta.id, str) and delta.id)
            assert delta.name is None or isinstance(delta.name, str)
            assert delta.index is None or (type(delta.index) is int and delta.index >= 0)
            assert delta.start in (True, False, None) and delta.end in (True, False)
        elif isinstance(delta, (TextPart, ReasoningPart)):
            assert isinstance(delta.text, str) and delta.text
        elif isinstance(delta, UsageDelta):
            for name in ("input_tokens", "output_tokens", "total_tokens", "cache_read_tokens"):
                count = getattr(delta, name)
                assert count is None or (type(count) is int and count >= 0)
        elif isinstance(delta, FinishDelta):
            assert delta.raw is None or isinstance(delta.raw, str)
        elif isinstance(delta, ErrorDelta):
            assert isinstance(delta.message, str) and delta.message
        elif isinstance(delta, PartDelta):
            assert delta.kind in ("text", "reasoning", "item")
            assert delta.data is None or isinstance(delta.data, dict)
        else:
            assert isinstance(delta, MetaDelta)


def assert_only_format_errors(make: Callable[[], Any], stream: Sequence[Any]) -> None:
    """Feeding ``stream`` raises nothing but ``StreamFormatError`` carrying the payload."""
    adapter = make()
    for payload in stream:
        try:
            deltas = adapter.translate(payload)
        except StreamFormatError as exc:
            assert exc.payload is payload
            assert str(exc)
            return
        check_deltas(deltas)


def accumulate(deltas: Sequence[Delta]) -> dict[str, Any]:
    """A deliberately simple reading of an adapter's deltas, independent of the assembler.

    A ``start=True`` piece opens a call; any other piece continues the open call with the
    same id, else the same index, else the latest one.
    """
    calls: list[dict[str, Any]] = []
    text, reasoning, finish, errors = [], [], [], []
    meta: dict[str, Any] = {}
    for delta in deltas:
        if isinstance(delta, CallDelta):
            if delta.start:
                calls.append(
                    {
                        "id": delta.id,
                        "index": delta.index,
                        "name": delta.name,
                        "raw": "",
                        "ended": False,
                        "metadata": {},
                    }
                )
                call = calls[-1]
            else:
                open_calls = [c for c in calls if not c["ended"]]
                by_id = [c for c in open_calls if delta.id and c["id"] == delta.id]
                by_index = [c for c in open_calls if c["index"] == delta.index]
                call = (by_id or by_index or open_calls)[-1]
            call["raw"] += delta.arguments
            final = delta.final_arguments
            if final is not None and final.startswith(call["raw"]):
                call["raw"] = final  # a whole statement completes what streamed
            call["ended"] = call["ended"] or delta.end
            call["metadata"].update(delta.metadata or {})
        elif isinstance(delta, TextPart):
            text.append(delta.text)
        elif isinstance(delta, ReasoningPart):
            reasoning.append(delta.text)
        elif isinstance(delta, FinishDelta):
            finish.append(delta)
        elif isinstance(delta, ErrorDelta):
            errors.append(delta)
        elif isinstance(delta, MetaDelta):
            meta.update({k: v for k, v in (("id", delta.response_id), ("model", delta.model)) if v})
    return {
        "calls": calls,
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "finish": finish,
        "errors": errors,
        "meta": meta,
    }


def corpus_files(prefix: str) -> list[str]:
    """Names of the corpus streams whose file name starts with ``prefix``.

    Without the corpus this is one placeholder, so that the test still runs and its
    ``corpus_dir`` fixture skips it (or fails it under ``CI=true``).
    """
    names = sorted(name for name in load_expected() if name.startswith(prefix))
    return names or [f"{prefix}<corpus absent>"]


def assert_matches_expected(result: dict[str, Any], expected: dict[str, Any]) -> None:
    """The accumulated deltas agree with ``expected.json``'s entry for the stream."""
    assert result["text"] == expected["text"]
    assert len(result["calls"]) == len(expected["tool_calls"])
    for call, want in zip(result["calls"], expected["tool_calls"], strict=True):
        assert call["name"] == want["name"]
        assert call["id"] == want["id"]
        if want.get("arguments_valid_json"):
            assert call["ended"]
            assert json.loads(call["raw"] or "{}") == want["arguments"]
        if isinstance(want.get("arguments_raw"), str):
            assert call["raw"] == want["arguments_raw"]
    assert [f.raw for f in result["finish"]] == [expected["finish_reason"]]
    if expected.get("reasoning_chars"):
        assert len(result["reasoning"]) == expected["reasoning_chars"]
    if expected.get("response_id"):
        assert result["meta"].get("id") == expected["response_id"]
    if expected.get("model"):
        assert result["meta"].get("model") == expected["model"]
