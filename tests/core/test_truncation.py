"""The truncation sweep: every corpus stream cut at every payload and at every byte offset
returns no tool call (a StreamError) unless the cut falls after the terminal event, and
then exactly the calls of the whole stream; and the loss sweep: every corpus stream with
any single payload dropped never finalises a call with other arguments than the whole
stream's.

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
from conftest import load_expected
from corpus_support import FAILING, NAMES, stream_bytes, stream_payloads
from toolwire import StreamAssembler, StreamError
from toolwire._core.deltas import CallDelta, MetaDelta, UsageDelta
from toolwire._core.framing import DONE, FrameDecoder
from toolwire._providers import FORMATS

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


@pytest.mark.slow
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


# Formats whose calls restate their whole arguments at their own end (Responses
# function_call_arguments.done / output_item.done): there even a lost fragment is caught.
_RESTATED = frozenset({"openai-responses"})
DROPS: dict[str, int] = {}  # stream -> payloads dropped one at a time


def _argument_only(items: list[tuple[str | None, Any]]) -> list[bool]:
    """For each payload: is it nothing but argument text of calls already started?

    Losing such a payload leaves valid JSON that is merely shorter (``{"q": "ab"}`` for
    ``{"q": "abc"}``) on every wire format that neither numbers its events nor restates
    the arguments; no reader can detect that loss, so the sweep exempts it there.
    """
    payloads = [(e, p) for e, p in items if p != DONE]
    adapter = FORMATS.detect(payloads[0][1], payloads[0][0]).adapter(0)
    out = []
    for event, payload in items:
        if payload == DONE:
            out.append(False)
            continue
        deltas = adapter.translate(payload, event)
        calls = [d for d in deltas if isinstance(d, CallDelta)]
        out.append(
            bool(calls)
            and all(isinstance(d, (CallDelta, MetaDelta, UsageDelta)) for d in deltas)
            and all(
                c.arguments
                and c.start is not True
                and not c.end
                and not c.name
                and c.final_arguments is None
                for c in calls
            )
        )
    return out


@pytest.mark.parametrize("name", NAMES)
def test_dropping_any_one_payload_never_changes_a_call(corpus_dir: Any, name: str) -> None:
    """With any single payload lost, close() returns no call whose name and arguments
    differ from the whole stream's: a lost start, end, stop or finish fails the stream
    (only a lost bare argument fragment, which no such format can notice, is exempt)."""
    items = stream_payloads(name)
    entry = load_expected()[name]
    # a failing stream's expected calls are what arrived; none of them may be finalised
    want = [] if name in FAILING else [(c["name"], c["arguments"]) for c in entry["tool_calls"]]
    exempt = _argument_only(items)
    first = next((e, p) for e, p in items if p != DONE)
    restated = FORMATS.detect(first[1], first[0]).name in _RESTATED
    for i in range(len(items)):
        outcome = _outcome(items[:i] + items[i + 1 :])
        if isinstance(outcome, StreamError):
            continue
        if exempt[i] and not restated:
            continue
        for call in outcome.tool_calls:
            assert (call.name, call.arguments) in want, (
                f"{name} without payload {i} finalised {call.name} {call.arguments!r}"
            )
    DROPS[name] = len(items)


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
        f"{len(CUTS)} streams; 0 truncated calls returned; "
        f"{sum(DROPS.values())} single-payload losses, 0 changed calls"
    )


# ------------------------------------------------- a call that never got its own end


def _anthropic_tool(stop: bool) -> list[dict[str, Any]]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "wipe_disk", "input": {"device": "sdb"}}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude"}},
        {"type": "content_block_start", "index": 0, "content_block": block},
    ]
    if stop:
        events.append({"type": "content_block_stop", "index": 0})
    return [
        *events,
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def _bedrock_tool(stop: bool) -> list[dict[str, Any]]:
    start = {"toolUse": {"toolUseId": "tooluse_1", "name": "wipe_disk"}}
    events: list[dict[str, Any]] = [
        {"messageStart": {"role": "assistant"}},
        {"contentBlockStart": {"contentBlockIndex": 0, "start": start}},
    ]
    if stop:
        events.append({"contentBlockStop": {"contentBlockIndex": 0}})
    return [*events, {"messageStop": {"stopReason": "tool_use"}}]


def _responses_tool(stop: bool) -> list[dict[str, Any]]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "wipe_disk"}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {"id": "resp_1", "model": "gpt"}},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
        },
    ]
    if stop:
        done = {**item, "arguments": "{}", "status": "completed"}
        events.append({"type": "response.output_item.done", "output_index": 0, "item": done})
    return [*events, {"type": "response.completed", "response": {"id": "resp_1"}}]


def _cohere_tool(stop: bool) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "wipe_disk", "arguments": ""}}
    events: list[dict[str, Any]] = [
        {"type": "message-start", "id": "m1"},
        {"type": "tool-call-start", "index": 0, "delta": {"message": {"tool_calls": call}}},
    ]
    if stop:
        events.append({"type": "tool-call-end", "index": 0})
    return [*events, {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}}]


def _gemini_tool(stop: bool) -> list[dict[str, Any]]:
    def chunk(call: dict[str, Any], **extra: Any) -> dict[str, Any]:
        content = {"role": "model", "parts": [{"functionCall": call}]}
        return {"candidates": [{"content": content, **extra}], "responseId": "r1"}

    events = [chunk({"name": "wipe_disk", "willContinue": True})]
    if stop:
        events.append(chunk({}))
    return [*events, {"candidates": [{"finishReason": "STOP"}], "responseId": "r1"}]


_STREAMS = {
    "anthropic": (_anthropic_tool, {"device": "sdb"}),
    "bedrock-converse": (_bedrock_tool, {}),
    "openai-responses": (_responses_tool, {}),
    "cohere": (_cohere_tool, {}),
    "gemini": (_gemini_tool, {}),
}


@pytest.mark.parametrize("fmt", sorted(_STREAMS))
def test_a_call_without_its_own_end_is_never_final(fmt: str) -> None:
    """A call that the format ends on its own but whose end never arrived raises
    StreamAborted under a normal finish, and nothing runs (before: ``arguments={}``)."""
    make, _ = _STREAMS[fmt]
    asm = StreamAssembler(format=fmt)
    for payload in make(stop=False):
        asm.feed(payload)
    with pytest.raises(toolwire.StreamAborted, match="never got its own end") as info:
        asm.close()
    assert info.value.partial is not None
    assert [(c.name, c.ended) for c in info.value.partial.calls] == [("wipe_disk", False)]


@pytest.mark.parametrize("fmt", sorted(_STREAMS))
def test_the_same_call_with_its_end_is_final(fmt: str) -> None:
    """With its end the same call is final, and input carried by its start is kept."""
    make, arguments = _STREAMS[fmt]
    asm = StreamAssembler(format=fmt)
    for payload in make(stop=True):
        asm.feed(payload)
    (call,) = asm.close().tool_calls
    assert (call.name, call.arguments) == ("wipe_disk", arguments)
