"""Id-less providers: two turns never share a key, one response delivered twice always does.

Ollama's native API sends no call id and no response id; the assembler synthesises call ids
from the response id, model and the provider's timestamp (``Response.created``). The
executor keys calls by scope, response id, timestamp, the caller's ``turn``, tool name and
call id, and refuses a response whose synthesised ids nothing else tells apart.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import executor_support
from executor_support import Counter, response
from toolwire import (
    AsyncExecutor,
    Executor,
    MemoryStore,
    Response,
    SettingsError,
    StreamAssembler,
    Toolbox,
    ToolContext,
)
from toolwire._execution.idempotency import call_key

runs = executor_support.runs


@pytest.fixture
def tools(runs: Counter) -> Toolbox:
    """A messaging tool that records the idempotency key it ran under."""
    box = Toolbox()

    @box.tool
    def send_message(to: str, text: str, ctx: ToolContext) -> str:
        """Send a chat message."""
        runs.hit("send_message")
        return ctx.idempotency_key

    return box


def ollama_turn(created: str | None, to: str, text: str) -> Response:
    """A native Ollama /api/chat tool turn through the real assembler (no ids at all)."""
    stamp = {} if created is None else {"created_at": created}
    asm = StreamAssembler(format="ollama")
    call = {"function": {"name": "send_message", "arguments": {"to": to, "text": text}}}
    asm.feed(
        {"model": "llama3.1", **stamp, "done": False,
         "message": {"role": "assistant", "content": "", "tool_calls": [call]}}
    )  # fmt: skip
    asm.feed(
        {"model": "llama3.1", **stamp, "done": True, "done_reason": "stop",
         "message": {"role": "assistant", "content": ""}}
    )  # fmt: skip
    return asm.close()


def test_ollama_turns_with_timestamps_never_collide(tools: Toolbox, runs: Counter) -> None:
    """Turn 2's send_message is sent (not a conflict), a repeat of turn 1 is not replayed."""
    ex = Executor(tools, scope="chat-1")
    turn1 = ollama_turn("2024-07-22T20:33:28.123648Z", "bob", "hi")
    turn2 = ollama_turn("2024-07-22T20:33:31.004113Z", "bob", "are you there?")
    turn3 = ollama_turn("2024-07-22T20:33:35.550021Z", "bob", "hi")  # same args as turn 1
    assert turn1.tool_calls[0].synthetic_id and turn1.response_id is None
    outcomes = [ex.run(t)[0] for t in (turn1, turn2, turn3)]
    assert [o.status for o in outcomes] == ["completed"] * 3
    assert len({o.idempotency_key for o in outcomes}) == 3 and runs["send_message"] == 3
    [again] = ex.run(turn2)  # the same response delivered twice: one key, replayed
    assert again.status == "replayed" and again.value == outcomes[1].value
    assert runs["send_message"] == 3


def test_unidentifiable_turn_is_refused_before_anything_runs(tools: Toolbox, runs: Counter) -> None:
    """No response id, no timestamp, synthesised ids, no turn=: a usage error naming turn=."""
    store = MemoryStore()
    bare = ollama_turn(None, "bob", "hi")
    assert bare.created is None and bare.response_id is None
    for run in (
        lambda: Executor(tools, store=store, scope="s").run(bare),
        lambda: asyncio.run(AsyncExecutor(tools, store=store, scope="s").run(bare)),
    ):
        with pytest.raises(SettingsError) as info:
            run()
        assert "turn=" in str(info.value) and "synthesised" in str(info.value)
    assert runs["send_message"] == 0 and store._records == {}
    [o] = Executor(tools, store=store, scope="s").run(bare, turn="request-digest-1")
    assert o.status == "completed"


def test_provider_ids_need_no_turn(tools: Toolbox, runs: Counter) -> None:
    """Real call ids, or a response id, identify the turn: no turn= needed."""
    ex = Executor(tools, scope="s")
    args = {"to": "a", "text": "x"}
    [with_ids] = ex.run(response(("call_1", "send_message", args), response_id=None))
    [with_rid] = ex.run(response(("c", "send_message", args), synthetic=True))
    assert with_ids.status == with_rid.status == "completed"


ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=12)


@settings(max_examples=200)
@given(
    call_id=ids,
    turns=st.lists(ids, min_size=2, max_size=4, unique=True),
    created=st.one_of(st.none(), ids),
)
def test_different_turns_never_share_a_key(
    call_id: str, turns: list[str], created: str | None
) -> None:
    """Same synthesised ids and arguments, different turns: every turn runs, keys differ."""
    box = Toolbox()
    seen: list[str] = []

    @box.tool
    def act(n: int, ctx: ToolContext) -> int:
        """Records its key."""
        seen.append(ctx.idempotency_key)
        return n

    ex = Executor(box, scope="s")
    r = response((call_id, "act", {"n": 1}), response_id=None, created=created, synthetic=True)
    outcomes = [ex.run(r, turn=t)[0] for t in turns]
    assert [o.status for o in outcomes] == ["completed"] * len(turns)
    assert len(set(seen)) == len(turns)


@settings(max_examples=200)
@given(
    call_id=ids,
    turn=st.one_of(st.none(), ids),
    created=st.one_of(st.none(), ids),
    response_id=st.one_of(st.none(), ids),
    deliveries=st.integers(2, 4),
)
def test_the_same_response_twice_always_shares_its_key(
    call_id: str,
    turn: str | None,
    created: str | None,
    response_id: str | None,
    deliveries: int,
) -> None:
    """Delivered again with the same turn, a response replays: one key, one execution."""
    if turn is None and created is None and response_id is None:
        turn = "t"  # the refused case has its own test
    box = Toolbox()
    runs: list[int] = []

    @box.tool
    def act(n: int) -> int:
        """Counts its runs."""
        runs.append(n)
        return n

    ex = Executor(box, scope="s")
    r = response(
        (call_id, "act", {"n": 2}), response_id=response_id, created=created, synthetic=True
    )
    outcomes = [ex.run(r, turn=turn)[0] for _ in range(deliveries)]
    assert [o.status for o in outcomes] == ["completed"] + ["replayed"] * (deliveries - 1)
    assert len({o.idempotency_key for o in outcomes}) == 1 and runs == [2]


def test_turn_is_part_of_the_key_and_async_agrees(tools: Toolbox) -> None:
    """Both executors key a call with its turn exactly as call_key(..., turn=) does."""
    store = MemoryStore()
    r = response(("c", "send_message", {"to": "a", "text": "b"}), response_id=None,
                 created="2025-01-01T00:00:00Z", synthetic=True)  # fmt: skip
    Executor(tools, store=store, scope="s").run(r, turn="t1")
    asyncio.run(AsyncExecutor(tools, store=store, scope="s").run(r, turn="t2"))
    for turn in ("t1", "t2"):
        key = call_key("s", None, "send_message", "c", created="2025-01-01T00:00:00Z", turn=turn)
        record = store.get(key)
        assert record is not None and record.status == "completed"


def _keys(**kwargs: Any) -> str:
    return call_key("s", "r", "t", "c", **kwargs)


def test_call_key_without_turn_is_unchanged() -> None:
    """Keys of responses without timestamp or turn are those stored before turn= existed."""
    assert _keys() == call_key("s", "r", "t", "c", 0)
    assert _keys() == "59c1b0782eea4e6edb05ff77d0a9ba0083de21423c7042f2b7e6323a44436872"
    assert len({_keys(), _keys(turn="x"), _keys(created="x"), _keys(turn="x", created="x")}) == 4
