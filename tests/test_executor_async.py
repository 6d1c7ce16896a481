"""``AsyncExecutor``: the asyncio driver of the same core, with sync and async stores."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from executor_support import AsyncMemoryStore, response
from toolwire import (
    AsyncExecutor,
    MemoryStore,
    RetryableError,
    SQLiteStore,
    Toolbox,
    ToolContext,
)
from toolwire._idempotency import arguments_hash, call_key
from toolwire.stores import AsyncStore, Claim


@pytest.fixture
def runs() -> dict[str, int]:
    """Counts tool executions by name."""
    return {}


@pytest.fixture
def tools(runs: dict[str, int]) -> Toolbox:
    """Async and sync tools that count their executions."""
    box = Toolbox()

    def hit(name: str) -> None:
        runs[name] = runs.get(name, 0) + 1

    @box.tool
    async def transfer(amount: int, ctx: ToolContext) -> dict[str, Any]:
        """Move money."""
        hit("transfer")
        await asyncio.sleep(0)
        return {"moved": amount, "key": ctx.idempotency_key}

    @box.tool
    async def explode(reason: str) -> None:
        """Always fails."""
        hit("explode")
        raise ValueError(reason)

    @box.tool
    async def flaky(n: int) -> int:
        """Fails retryably the first time."""
        hit("flaky")
        if runs["flaky"] == 1:
            raise RetryableError("later")
        return n

    @box.tool(timeout=0.1)
    async def slow(seconds: float) -> str:
        """Sleeps past its timeout and notes its cancellation."""
        hit("slow")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            hit("slow-cancelled")
            raise
        return "late"

    @box.tool(timeout=0.1)
    def blocking(seconds: float) -> str:
        """A sync tool (thread) past its timeout."""
        hit("blocking")
        time.sleep(seconds)
        return "late"

    @box.tool
    def sync_add(a: int, b: int) -> int:
        """A sync tool under the async executor."""
        hit("sync_add")
        return a + b

    @box.tool
    async def sleeper(seconds: float) -> float:
        """Sleeps, then returns."""
        hit("sleeper")
        await asyncio.sleep(seconds)
        return seconds

    return box


def test_completed_then_replayed(tools: Toolbox, runs: dict[str, int]) -> None:
    """An async tool completes once; the next run replays the stored bytes."""
    ex = AsyncExecutor(tools, scope="s")
    r = response(("a", "transfer", {"amount": 3}), ("b", "sync_add", {"a": 1, "b": 2}))
    first = asyncio.run(ex.run(r))
    again = asyncio.run(ex.run(r))
    assert [o.status for o in first] == ["completed", "completed"]
    assert [o.status for o in again] == ["replayed", "replayed"]
    assert [o.result_json for o in first] == [o.result_json for o in again]
    assert first[0].value["key"] == first[0].idempotency_key
    assert runs == {"transfer": 1, "sync_add": 1}


def test_async_store_is_awaited(tools: Toolbox, runs: dict[str, int]) -> None:
    """An AsyncStore is called directly (claim and finish awaited) and replays."""
    store = AsyncMemoryStore()
    assert isinstance(store, AsyncStore)
    ex = AsyncExecutor(tools, store=store, scope="s")
    r = response(("a", "transfer", {"amount": 3}))
    [first] = asyncio.run(ex.run(r))
    [again] = asyncio.run(ex.run(r))
    assert first.status == "completed" and again.status == "replayed"
    assert store.calls == ["claim", "finish", "claim"]
    assert asyncio.run(ex.purge()) == 0


def test_failed_replay_and_retryable(tools: Toolbox, runs: dict[str, int]) -> None:
    """Failures are stored and replayed; RetryableError frees the call for a re-run."""
    ex = AsyncExecutor(tools, scope="s")
    r = response(("a", "explode", {"reason": "x"}), ("b", "flaky", {"n": 4}))
    first = asyncio.run(ex.run(r))
    second = asyncio.run(ex.run(r))
    assert [o.status for o in first] == ["failed", "failed"]
    assert [o.status for o in second] == ["failed", "completed"]
    assert runs == {"explode": 1, "flaky": 2}


def test_async_tool_is_cancelled_at_its_timeout(tools: Toolbox, runs: dict[str, int]) -> None:
    """An async tool past its deadline is cancelled, timed_out, and its record unknown."""
    store = MemoryStore()
    ex = AsyncExecutor(tools, store=store, scope="s")
    started = time.monotonic()
    [o] = asyncio.run(ex.run(response(("a", "slow", {"seconds": 5}))))
    assert time.monotonic() - started < 1.0
    assert o.status == "timed_out" and runs["slow-cancelled"] == 1
    record = store.get(call_key("s", "resp_1", "slow", "a"))
    assert record is not None and record.status == "unknown"


def test_thread_tool_timeout_never_completes_later(tools: Toolbox, runs: dict[str, int]) -> None:
    """A sync tool's late return after its timeout is discarded: the record stays unknown."""
    store = MemoryStore()
    ex = AsyncExecutor(tools, store=store, scope="s")
    [o] = asyncio.run(ex.run(response(("a", "blocking", {"seconds": 0.3}))))
    assert o.status == "timed_out"
    time.sleep(0.35)
    record = store.get(call_key("s", "resp_1", "blocking", "a"))
    assert record is not None and record.status == "unknown" and record.result is None


def test_concurrency_limit(runs: dict[str, int]) -> None:
    """No more than max_concurrency calls run at once; more than one does."""
    box = Toolbox()
    active = [0, 0]

    @box.tool
    async def busy(i: int) -> int:
        """Holds a slot."""
        active[0] += 1
        active[1] = max(active[1], active[0])
        await asyncio.sleep(0.02)
        active[0] -= 1
        return i

    calls = [(f"c{i}", "busy", {"i": i}) for i in range(7)]
    outcomes = asyncio.run(AsyncExecutor(box, scope="s", max_concurrency=3).run(response(*calls)))
    assert [o.value for o in outcomes] == list(range(7)) and active[1] == 3


def test_skipped_and_rejected(tools: Toolbox, runs: dict[str, int]) -> None:
    """A rejected call makes the others skipped; nothing runs."""
    r = response(("a", "transfer", {"amount": 1}), ("b", "transfer", {"amount": "x"}))
    outcomes = asyncio.run(AsyncExecutor(tools, scope="s").run(r))
    assert [o.status for o in outcomes] == ["skipped", "rejected"] and runs == {}


def test_conflict_and_in_progress(tools: Toolbox, runs: dict[str, int]) -> None:
    """Other arguments under a known call identity conflict; a held call is in_progress."""
    store = MemoryStore()
    ex = AsyncExecutor(tools, store=store, scope="s")
    asyncio.run(ex.run(response(("a", "transfer", {"amount": 1}))))
    [clash] = asyncio.run(ex.run(response(("a", "transfer", {"amount": 2}))))
    store.claim(
        call_key("s", "resp_1", "sync_add", "b"),
        args_hash=arguments_hash({"a": 1, "b": 1}),
        idempotency_key="k",
        owner="other",
        lease=60,
        retention=600,
        reclaim=False,
    )
    [held] = asyncio.run(ex.run(response(("b", "sync_add", {"a": 1, "b": 1}))))
    assert clash.status == "conflict" and held.status == "in_progress"
    assert runs == {"transfer": 1}


@pytest.mark.parametrize("store_kind", ["memory", "async", "sqlite"])
def test_cancelling_run_is_reraised_and_finalises_unknown(
    tools: Toolbox, runs: dict[str, int], tmp_path: Path, store_kind: str
) -> None:
    """Cancelling ``run`` re-raises CancelledError after running calls are recorded unknown."""
    store: Any
    if store_kind == "memory":
        store = MemoryStore()
    elif store_kind == "async":
        store = AsyncMemoryStore()
    else:
        store = SQLiteStore(tmp_path / "c.db")
    ex = AsyncExecutor(tools, store=store, scope="s", max_concurrency=1)
    r = response(("a", "sleeper", {"seconds": 5}), ("b", "sleeper", {"seconds": 6}))

    async def main() -> None:
        task = asyncio.ensure_future(ex.run(r))
        while runs.get("sleeper", 0) == 0:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 2.0
    get = store.inner.get if store_kind == "async" else store.get
    first = get(call_key("s", "resp_1", "sleeper", "a"))
    assert first is not None and first.status == "unknown"
    assert get(call_key("s", "resp_1", "sleeper", "b")) is None  # never claimed
    assert runs["sleeper"] == 1


def test_cancellation_during_claim_releases_the_call(runs: dict[str, int]) -> None:
    """A cancel that lands while the claim is being written releases it before re-raising."""
    box = Toolbox()

    @box.tool
    async def act(x: int) -> int:
        """Never reached."""
        runs["act"] = runs.get("act", 0) + 1
        return x

    inner = MemoryStore()
    entered, proceed = threading.Event(), threading.Event()

    class SlowClaims(MemoryStore):
        def claim(self, key: str, **kw: Any) -> Claim:
            entered.set()
            proceed.wait(5)
            return inner.claim(key, **kw)

        def release(self, key: str, *, owner: str, fence: int) -> bool:
            return inner.release(key, owner=owner, fence=fence)

    ex = AsyncExecutor(box, store=SlowClaims(), scope="s")

    async def main() -> None:
        task = asyncio.ensure_future(ex.run(response(("a", "act", {"x": 1}))))
        while not entered.is_set():
            await asyncio.sleep(0.005)
        task.cancel()
        await asyncio.sleep(0.02)
        proceed.set()  # the claim completes after the cancellation arrived
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert inner.get(call_key("s", "resp_1", "act", "a")) is None  # released, not orphaned
    assert runs == {}


def test_sync_tool_context_and_deadline(runs: dict[str, int]) -> None:
    """A sync tool run by AsyncExecutor gets its key and an absolute monotonic deadline."""
    box = Toolbox()
    seen: list[ToolContext] = []

    @box.tool(timeout=3.0)
    def probe(x: int, ctx: ToolContext) -> int:
        """Records its context."""
        seen.append(ctx)
        return x

    before = time.monotonic()
    [o] = asyncio.run(AsyncExecutor(box, scope="s").run(response(("a", "probe", {"x": 1}))))
    deadline = seen[0].deadline
    assert seen[0].idempotency_key == o.idempotency_key
    assert deadline is not None and before + 3.0 <= deadline <= time.monotonic() + 3.0


def test_deadlines_hold_and_no_tool_task_survives(runs: dict[str, int]) -> None:
    """40 runs of tools around their deadline: return within budget + 0.2 s, no task left."""
    import random

    box = Toolbox()

    @box.tool(timeout=0.05)
    async def jitter(seconds: float) -> float:
        """Sleeps a random time around its timeout."""
        await asyncio.sleep(seconds)
        return seconds

    rng = random.Random(7)
    store = MemoryStore()
    ex = AsyncExecutor(box, store=store, scope="t7")

    async def main() -> list[str]:
        statuses: list[str] = []
        for i in range(40):
            seconds = rng.uniform(0.0, 0.1)
            started = time.monotonic()
            [o] = await ex.run(response((f"c{i}", "jitter", {"seconds": seconds})))
            assert time.monotonic() - started < 0.05 + 0.2
            assert o.status in ("completed", "timed_out")
            assert (o.status == "completed") == (o.value == seconds)
            assert asyncio.all_tasks() == {asyncio.current_task()}
            record = store.get(call_key("t7", "resp_1", "jitter", f"c{i}"))
            assert record is not None
            assert record.status == ("completed" if o.status == "completed" else "unknown")
            statuses.append(o.status)
        return statuses

    statuses = asyncio.run(main())
    assert {"completed", "timed_out"} <= set(statuses)


def test_tool_that_swallows_cancellation_does_not_hang_run(runs: dict[str, int]) -> None:
    """A tool ignoring its cancellation is abandoned after a bounded grace; run returns."""
    box = Toolbox()

    @box.tool(timeout=0.05)
    async def stubborn(x: int) -> int:
        """Swallows the first cancellation and sleeps on."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            await asyncio.sleep(3)
        return x

    async def main() -> str:
        started = time.monotonic()
        [o] = await AsyncExecutor(box, scope="s").run(response(("a", "stubborn", {"x": 1})))
        assert time.monotonic() - started < 0.05 + 1.0 + 0.5  # timeout + grace + slack
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()  # the test cleans up what the tool refused to stop
        return o.status

    assert asyncio.run(main()) == "timed_out"
