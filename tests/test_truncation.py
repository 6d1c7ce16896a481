"""The truncation sweep: every corpus stream cut at every payload and at every byte offset
returns no tool call (a StreamError) unless the cut falls after the terminal event, and
then exactly the calls of the whole stream.

Byte cuts: the body is fed to the framing decoder one byte at a time; after byte k the
payloads dispatched so far, plus what ``close()`` would flush from the state at k (a last
event lacking only its terminator), fully determine the assembler's outcome for the
prefix of length k. Outcomes are computed once per distinct (payloads, flush) pair, so
every byte offset of every stream is checked exactly, in linear-ish time. A sample of the
cuts (every offset of streams under 2 KB, every 61st offset elsewhere) is also checked by
really feeding the prefix bytes to a fresh assembler, which must agree.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

import toolwire
from test_corpus import NAMES, stream_bytes, stream_payloads
from toolwire import StreamAssembler, StreamError
from toolwire._framing import DONE, FrameDecoder

pytestmark = pytest.mark.corpus

CUTS: dict[str, tuple[int, int]] = {}  # stream -> (byte cuts, payload cuts) checked


def _outcome(items: list[tuple[str | None, Any]]) -> Any:
    """Assemble payloads and close: the Response, or the StreamError."""
    asm = StreamAssembler()
    try:
        for event, payload in items:
            if payload != DONE:
                asm.feed(payload, event=event)
        return asm.close()
    except StreamError as exc:
        return exc


def _calls(response: toolwire.Response) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.arguments) for c in response.tool_calls]


def _check(outcome: Any, full: Any, after_terminal: bool, where: str) -> None:
    """A cut returns calls only after the terminal event, and then the whole stream's."""
    if isinstance(outcome, StreamError):
        assert not (after_terminal and isinstance(full, toolwire.Response)), (
            f"{where}: cut after the terminal event failed: {outcome!r}"
        )
        return
    assert isinstance(full, toolwire.Response), f"{where}: a cut of a failing stream succeeded"
    assert after_terminal, f"{where}: a cut before the terminal event returned a Response"
    assert _calls(outcome) == _calls(full), where
    assert outcome.text == full.text and outcome.raw_finish_reason == full.raw_finish_reason


def _terminal_position(items: list[tuple[str | None, Any]]) -> int:
    """How many payloads must arrive before the terminal event has (len+1 if never)."""
    asm = StreamAssembler()
    try:
        for i, (event, payload) in enumerate(items):
            if payload == DONE:
                continue
            if any(isinstance(e, toolwire.Finished) for e in asm.feed(payload, event=event)):
                return i + 1
    except StreamError:
        pass
    return len(items) + 1


@pytest.mark.parametrize("name", NAMES)
def test_every_payload_cut(corpus_dir: Any, name: str) -> None:
    """Cutting after any number of payloads returns calls only after the terminal event."""
    items = stream_payloads(name)
    full = _outcome(items)
    terminal = _terminal_position(items)
    for n in range(len(items) + 1):
        _check(_outcome(items[:n]), full, n >= terminal, f"{name} after {n} payloads")
    byte_cuts = CUTS.get(name, (0, 0))[0]
    CUTS[name] = (byte_cuts, len(items) + 1)


@pytest.mark.parametrize("name", NAMES)
def test_every_byte_cut(corpus_dir: Any, name: str) -> None:
    """Cutting the raw bytes at any offset returns calls only after the terminal event."""
    body = stream_bytes(name)
    dec = FrameDecoder()
    items: list[tuple[str | None, Any]] = []
    cache: dict[Any, Any] = {}
    full = _outcome(dec.feed(body) + dec.close())
    terminal = _terminal_position(stream_payloads(name))
    dec = FrameDecoder()
    sample_every = 1 if len(body) < 2048 else 61
    last_solid = -1  # index of the last non-whitespace byte so far
    for k in range(len(body) + 1):
        if k:
            items.extend(dec.feed(body[k - 1 : k]))
            if not body[k - 1 : k].isspace():
                last_solid = k - 1
        # only a prefix ending in "}" or "]" can leave a complete payload to flush
        flush: list[Any] = []
        if last_solid >= 0 and body[last_solid] in b"}]":
            flush = copy.deepcopy(dec).close()
        key = (len(items), repr(flush))
        if key not in cache:
            cache[key] = _outcome(items + flush)
        outcome = cache[key]
        _check(outcome, full, len(items) + len(flush) >= terminal, f"{name} cut at byte {k}")
        if k % sample_every == 0:
            asm = StreamAssembler()
            try:
                asm.feed_bytes(body[:k])
                real: Any = asm.close()
            except StreamError as exc:
                real = exc
            if isinstance(real, StreamError):
                assert isinstance(outcome, StreamError), f"{name} at {k}: {real!r}"
                assert type(real) is type(outcome)
            else:
                assert not isinstance(outcome, StreamError) and _calls(real) == _calls(outcome)
    CUTS[name] = (len(body) + 1, CUTS.get(name, (0, 0))[1])


def test_sweep_totals(record_property: Any) -> None:
    """Report how many cuts the sweep checked (run with -rP to see the line)."""
    if len(CUTS) < len(NAMES) or any(0 in v for v in CUTS.values()):
        pytest.skip("run the whole module to total the sweep")
    byte_cuts = sum(v[0] for v in CUTS.values())
    payload_cuts = sum(v[1] for v in CUTS.values())
    record_property("byte_cuts", byte_cuts)
    record_property("payload_cuts", payload_cuts)
    print(
        f"truncation sweep: {byte_cuts} byte cuts and {payload_cuts} payload cuts over "
        f"{len(CUTS)} streams; 0 truncated calls returned"
    )
