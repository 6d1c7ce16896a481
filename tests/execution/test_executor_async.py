"""``AsyncExecutor``: the asyncio driver of the same core, with sync and async stores."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from executor_support import AsyncMemoryStore, response
from toolwire import AsyncExecutor, MemoryStore, RetryableError, SQLiteStore, Toolbox, ToolContext
from toolwire._execution.idempotency import arguments_hash, call_key
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


def test_thread_tool_timeout_is_claimed_until_its_late_return(
    tools: Toolbox, runs: dict[str, int]
) -> None:
    """A sync tool past its timeout is timed_out, in_progress while it still runs, and its
    late return is recorded as completed."""
    store = MemoryStore()
    ex = AsyncExecutor(tools, store=store, scope="s")
    r = response(("a", "blocking", {"seconds": 0.3}))
    [o] = asyncio.run(ex.run(r))
    assert o.status == "timed_out"
    [meanwhile] = asyncio.run(ex.run(r))
    assert meanwhile.status == "in_progress" and runs["blocking"] == 1
    time.sleep(0.35)
    record = store.get(call_key("s", "resp_1", "blocking", "a"))
    assert record is not None and record.status == "completed" and record.result == '"late"'
    assert ex.runaways() == []


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


def test_tool_that_swallows_cancellation_is_bounded(runs: dict[str, int]) -> None:
    """A tool ignoring its cancellation is cancelled again after the grace: run returns by
    timeout + grace, the tool ends there too, the outcome is timed_out, the record unknown."""
    box = Toolbox()
    ended: list[float] = []

    @box.tool(timeout=0.05)
    async def stubborn(x: int) -> int:
        """Swallows the first cancellation and sleeps on."""
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            try:
                await asyncio.sleep(3)
            finally:
                ended.append(time.monotonic())
        return x

    store = MemoryStore()

    async def main() -> str:
        started = time.monotonic()
        ex = AsyncExecutor(box, store=store, scope="s", cancel_grace=0.2)
        [o] = await ex.run(response(("a", "stubborn", {"x": 1})))
        assert time.monotonic() - started < 0.05 + 0.2 + 0.5  # timeout + grace + slack
        await asyncio.sleep(0.05)  # the second cancellation reaches it at its next await
        assert asyncio.all_tasks() == {asyncio.current_task()}
        assert ended and ended[0] - started < 0.05 + 0.2 + 0.5
        return o.status

    assert asyncio.run(main()) == "timed_out"
    record = store.get(call_key("s", "resp_1", "stubborn", "a"))
    assert record is not None and record.status == "unknown"


def test_cancellation_landing_as_a_claim_completes_releases_it(runs: dict[str, int]) -> None:
    """Regression: a cancel arriving after the claim's write, before the driver resumed,
    used to lose the claim (left in_progress, later unknown, although nothing ran)."""
    box = Toolbox()

    @box.tool
    async def act(x: int) -> int:
        """Never reached."""
        runs["act"] = runs.get("act", 0) + 1
        return x

    victim: list[asyncio.Task[Any]] = []

    class CancelOnClaim(AsyncMemoryStore):
        async def claim(self, key: str, **kw: Any) -> Claim:
            claim = await super().claim(key, **kw)
            # Scheduled before the driver learns the result: lands "just as" it completes.
            asyncio.get_running_loop().call_soon(victim[0].cancel)
            return claim

    store = CancelOnClaim()
    ex = AsyncExecutor(box, store=store, scope="s")

    async def main() -> None:
        victim.append(asyncio.ensure_future(ex.run(response(("a", "act", {"x": 1})))))
        with pytest.raises(asyncio.CancelledError):
            await victim[0]

    asyncio.run(main())
    assert store.inner.get(call_key("s", "resp_1", "act", "a")) is None  # released
    assert store.calls == ["claim", "release"] and runs == {}


def test_cancellation_after_the_tool_returned_keeps_its_result(runs: dict[str, int]) -> None:
    """Regression: a cancel landing after the tool returned used to record unknown; the
    result is now recorded completed (and replayed), and the cancellation re-raised."""
    box = Toolbox()
    victim: list[asyncio.Task[Any]] = []

    @box.tool
    async def pay(amount: int) -> int:
        """Returns; the caller's cancellation is already on its way."""
        runs["pay"] = runs.get("pay", 0) + 1
        victim[0].cancel()  # lands before the driver has seen the return
        return amount

    store = MemoryStore()
    ex = AsyncExecutor(box, store=store, scope="s")
    r = response(("a", "pay", {"amount": 7}))

    async def main() -> None:
        victim.append(asyncio.ensure_future(ex.run(r)))
        with pytest.raises(asyncio.CancelledError):
            await victim[0]

    asyncio.run(main())
    record = store.get(call_key("s", "resp_1", "pay", "a"))
    assert record is not None and record.status == "completed" and record.result == "7"
    [again] = asyncio.run(ex.run(r))
    assert again.status == "replayed" and again.value == 7 and runs == {"pay": 1}


def test_default_settings_do_not_throttle_async_tools(runs: dict[str, int]) -> None:
    """Regression: 100 async tools of one response all run at once by default (was 8)."""
    box = Toolbox()
    state = {"active": 0, "peak": 0}

    @box.tool
    async def io(i: int) -> int:
        """Waits (bounded) until every call of the response is running."""
        state["active"] += 1
        state["peak"] = max(state["peak"], state["active"])
        for _ in range(200):
            if state["peak"] == 100:
                break
            await asyncio.sleep(0.005)
        state["active"] -= 1
        return i

    calls = [(f"c{i}", "io", {"i": i}) for i in range(100)]
    outcomes = asyncio.run(AsyncExecutor(box, scope="s").run(response(*calls)))
    assert [o.value for o in outcomes] == list(range(100)) and state["peak"] == 100


def test_sync_tools_are_bounded_by_max_threads(runs: dict[str, int]) -> None:
    """Sync tools under AsyncExecutor run on at most max_threads threads at once."""
    box = Toolbox()
    lock = threading.Lock()
    state = {"active": 0, "peak": 0}

    @box.tool
    def work(i: int) -> int:
        """Holds a thread for a moment."""
        with lock:
            state["active"] += 1
            state["peak"] = max(state["peak"], state["active"])
        time.sleep(0.02)
        with lock:
            state["active"] -= 1
        return i

    calls = [(f"c{i}", "work", {"i": i}) for i in range(12)]
    ex = AsyncExecutor(box, scope="s", max_threads=3)
    outcomes = asyncio.run(ex.run(response(*calls)))
    assert [o.value for o in outcomes] == list(range(12)) and 1 < state["peak"] <= 3


def test_unserialisable_async_result_is_in_doubt(runs: dict[str, int]) -> None:
    """An async tool returning what JSON cannot carry: unknown, and the error says why."""
    box = Toolbox()

    @box.tool
    async def weird(n: int) -> Any:
        """Returns a set of objects."""
        return {object()}

    [o] = asyncio.run(AsyncExecutor(box, scope="s").run(response(("a", "weird", {"n": 1}))))
    assert o.status == "unknown" and o.error is not None
    assert "the tool ran, but its return value could not be stored" in o.error


def test_sync_store_commands_are_batched_off_the_loop(tmp_path: Path) -> None:
    """A sync store (not MemoryStore) is called off the event loop, in batches."""
    box = Toolbox()

    @box.tool
    async def noop(i: int) -> int:
        """Returns at once."""
        return i

    loop_thread: list[int] = []
    store_threads: list[int] = []

    class Watched(SQLiteStore):
        def claim(self, key: str, **kw: Any) -> Claim:
            store_threads.append(threading.get_ident())
            return super().claim(key, **kw)

    from toolwire._execution import workers as _workers

    submitted = [0]
    original = _workers.WorkerPool.submit

    def counting(self: Any, job: Any) -> None:
        submitted[0] += 1
        original(self, job)

    async def main() -> list[str]:
        loop_thread.append(threading.get_ident())
        store = Watched(tmp_path / "b.db")
        store_threads.clear()  # its start-up self-test claimed on this thread
        ex = AsyncExecutor(box, store=store, scope="s")
        outcomes = await ex.run(response(*((f"c{i}", "noop", {"i": i}) for i in range(20))))
        return [o.status for o in outcomes]

    _workers.WorkerPool.submit = counting  # type: ignore[method-assign]
    try:
        statuses = asyncio.run(main())
    finally:
        _workers.WorkerPool.submit = original  # type: ignore[method-assign]
    assert statuses == ["completed"] * 20
    assert len(store_threads) == 20 and loop_thread[0] not in store_threads
    assert submitted[0] < 40 / 2  # 40 store commands (claims and finishes) in few hand-offs
