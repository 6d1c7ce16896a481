"""Cancellation at every await point: no orphaned claim, no lost result, no duplicate.

``AsyncExecutor``: for each store and tool kind, one run is first made to completion while
a callback counts the event-loop iterations it takes; then the same response (with fresh
ids) is run again and again, cancelled at iteration 1, 2, 3, ... until a run completes
before its cancellation comes. Every iteration boundary is a point where the run's tasks
are suspended at an ``await`` (claim, store writes in flight, the tool's own awaits, the
wait for a thread, the final write), so this injects a cancellation at each of them,
including the instant a step completes. The tick callback re-arms itself with
``call_soon``, so while a thread or a socket is awaited the loop keeps spinning and the
cancellation also lands at every moment of those waits.

``Executor``: a Ctrl-C (``_thread.interrupt_main``) is injected before and after every
store operation of the run (on the calling thread, where the run writes to the store) and
at the start and the end of every tool (on the worker threads).

After each schedule: an ``in_progress`` record left behind is an orphaned claim; a tool
that returned but whose record is not ``completed`` is a lost result; then the response is
run again without interference, and a tool body that ran twice is a duplicate. The
figures are printed at the end of the session.
"""

from __future__ import annotations

import _thread
import asyncio
import itertools
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import servers
from executor_support import print_at_the_end, response
from toolwire import (
    AsyncExecutor,
    Executor,
    MemoryStore,
    Outcome,
    SQLiteStore,
    Toolbox,
    ToolContext,
)
from toolwire.stores import Claim

postgres_dsn = servers.postgres_dsn
redis_url = servers.redis_url

FIGURES: Counter[str] = Counter()
_ids = itertools.count()


def _figures() -> list[str]:
    lines = []
    for prefix in ("async", "sync"):
        schedules = FIGURES[f"{prefix} schedules"]
        if schedules:
            lines.append(
                f"{prefix}: {schedules} schedules ({FIGURES[f'{prefix} interrupted']} "
                f"interrupted runs): {FIGURES[f'{prefix} orphaned']} orphaned claims, "
                f"{FIGURES[f'{prefix} lost']} lost results, "
                f"{FIGURES[f'{prefix} duplicates']} duplicates"
            )
    per_store = sorted((n, c) for n, c in FIGURES.items() if n.startswith("per store "))
    return lines + [f"  {name[len('per store ') :]}: {count}" for name, count in per_store]


@pytest.fixture(autouse=True)
def _report(request: pytest.FixtureRequest) -> None:
    """Print the schedules explored and the violations found at the end of the session."""
    print_at_the_end(request.config, "cancellation schedules", _figures)


class Ledger:
    """What each tool body did, per idempotency key."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started: Counter[str] = Counter()
        self.returned: Counter[str] = Counter()

    def start(self, key: str) -> None:
        with self.lock:
            self.started[key] += 1

    def done(self, key: str) -> None:
        with self.lock:
            self.returned[key] += 1


def make_tools(ledger: Ledger, interrupt: set[str] | None = None) -> Toolbox:
    """An async and a sync tool that record their starts and returns.

    ``interrupt`` names the points ("start", "end") where a tool Ctrl-Cs the main thread.
    """
    box = Toolbox()
    points = interrupt if interrupt is not None else set()

    @box.tool(timeout=5)
    async def pay_async(n: int, ctx: ToolContext) -> int:
        """Two awaits, then returns (nothing awaited between the ledger and the return)."""
        ledger.start(ctx.idempotency_key)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        ledger.done(ctx.idempotency_key)
        return n

    @box.tool(timeout=5)
    def pay_sync(n: int, ctx: ToolContext) -> int:
        """Runs on its thread, letting others run once."""
        ledger.start(ctx.idempotency_key)
        if "start" in points:
            _thread.interrupt_main()
        time.sleep(0)
        if "end" in points:
            _thread.interrupt_main()
        ledger.done(ctx.idempotency_key)
        return n

    return box


TOOL_SETS = {
    "async": ["pay_async"],
    "sync": ["pay_sync"],
    "both": ["pay_async", "pay_sync"],
}


def fresh_response(tools: list[str]) -> Any:
    """A response calling ``tools``, with ids never used before."""
    tag = next(_ids)
    return response(
        *((f"call-{tag}-{i}", name, {"n": i}) for i, name in enumerate(tools)),
        response_id=f"resp-{tag}",
    )


async def _get(store: Any, key: str) -> Any:
    record = store.get(key)
    if asyncio.iscoroutine(record):
        record = await record
    return record


def _keys(r: Any, executor: Any) -> dict[str, str]:
    """call id -> (call key, idempotency key) as the executor derives them."""
    decided, jobs = executor._prepare(r, None)
    assert all(o is None for o in decided)
    return {job.plan.claim.key: job.plan.claim.idempotency_key for job in jobs}


def account(prefix: str, records: dict[str, Any], keys: dict[str, str], ledger: Ledger) -> None:
    """Orphaned claims and lost results after one interrupted (or not) run."""
    for key, idem in keys.items():
        record = records[key]
        if record is not None and record.status == "in_progress":
            FIGURES[f"{prefix} orphaned"] += 1
        if ledger.returned[idem] and (record is None or record.status != "completed"):
            FIGURES[f"{prefix} lost"] += 1
        if record is None and ledger.started[idem]:
            FIGURES[f"{prefix} released after start"] += 1


def account_rerun(
    prefix: str, outcomes: list[Outcome], keys: dict[str, str], ledger: Ledger
) -> None:
    """Duplicates, and that every call is settled after an undisturbed rerun."""
    for outcome in outcomes:
        assert outcome.status in ("completed", "replayed", "unknown"), outcome
    for idem in keys.values():
        if ledger.started[idem] > 1:
            FIGURES[f"{prefix} duplicates"] += 1


# ------------------------------------------------------------------ AsyncExecutor


async def run_cancelled_at(executor: AsyncExecutor, r: Any, k: int | None) -> tuple[bool, int]:
    """Run ``r``, cancelling it at loop iteration ``k``; (completed, iterations seen)."""
    loop = asyncio.get_running_loop()
    task = loop.create_task(executor.run(r))
    count = 0

    def tick() -> None:
        nonlocal count
        if task.done():
            return
        count += 1
        if count == k:
            task.cancel()
            return
        loop.call_soon(tick)

    loop.call_soon(tick)
    try:
        await task
    except asyncio.CancelledError:
        assert task.cancelled()
        return False, count
    return True, count


async def explore_async(
    executor: AsyncExecutor, store: Any, ledger: Ledger, tools: list[str]
) -> int:
    """Every cancellation point of one store and tool set; returns the schedules explored."""
    completed, _ = await run_cancelled_at(executor, fresh_response(tools), None)
    assert completed
    schedules, k, finished_in_a_row = 0, 0, 0
    while finished_in_a_row < 3:
        k += 1
        r = fresh_response(tools)
        keys = _keys(r, executor)
        completed, _ = await run_cancelled_at(executor, r, k)
        schedules += 1
        FIGURES["async schedules"] += 1
        FIGURES["async interrupted"] += not completed
        finished_in_a_row = finished_in_a_row + 1 if completed else 0
        records = {key: await _get(store, key) for key in keys}
        account("async", records, keys, ledger)
        rerun = await executor.run(r)
        account_rerun("async", rerun, keys, ledger)
        for key in keys:
            record = await _get(store, key)
            assert record is not None and record.status in ("completed", "unknown"), record
    FIGURES[f"per store async {type(store).__name__} {'+'.join(tools)}"] += schedules
    return schedules


def _async_store(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "cancel.db", durable=False)
    if kind in ("postgres", "async-postgres"):
        from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        return AsyncPostgresStore(dsn) if kind.startswith("async") else PostgresStore(dsn)
    from toolwire.stores.redis import AsyncRedisStore, RedisStore

    url = request.getfixturevalue("redis_url")
    prefix = f"cancel{next(_ids)}:"
    return (
        AsyncRedisStore(url, prefix=prefix)
        if kind.startswith("async")
        else RedisStore(url, prefix=prefix)
    )


STORES = [
    "memory",
    "sqlite",
    pytest.param("async-postgres", marks=pytest.mark.server),
    pytest.param("async-redis", marks=pytest.mark.server),
    pytest.param("postgres", marks=pytest.mark.server),
    pytest.param("redis", marks=pytest.mark.server),
]


@pytest.mark.slow
@pytest.mark.parametrize("kind", STORES)
@pytest.mark.parametrize("tool_set", sorted(TOOL_SETS))
def test_async_cancellation_at_every_await_point(
    kind: str, tool_set: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Cancelled at every loop iteration: 0 orphaned claims, 0 lost results, 0 duplicates."""
    ledger = Ledger()
    before = Counter(FIGURES)

    async def main() -> int:
        store = _async_store(kind, tmp_path, request)
        executor = AsyncExecutor(
            make_tools(ledger), store=store, scope=f"cancel-{kind}", cancel_grace=2.0
        )
        try:
            return await explore_async(executor, store, ledger, TOOL_SETS[tool_set])
        finally:
            closing = getattr(store, "aclose", None)
            if closing is not None:
                await closing()
            else:
                store.close()

    schedules = asyncio.run(main())
    found = {
        name: FIGURES[f"async {name}"] - before[f"async {name}"]
        for name in ("orphaned", "lost", "duplicates", "interrupted")
    }
    assert found["orphaned"] == found["lost"] == found["duplicates"] == 0, found
    assert found["interrupted"] >= 3 and schedules >= found["interrupted"]


# ------------------------------------------------------------------ Executor


class Interrupting:
    """A sync store that Ctrl-Cs the main thread before or after its ``n``-th operation."""

    def __init__(self, inner: Any, at: int | None, after: bool) -> None:
        self.inner = inner
        self.at = at
        self.after = after
        self.count = 0

    def _maybe(self, when_after: bool) -> None:
        if self.count == self.at and self.after == when_after:
            _thread.interrupt_main()

    def _op(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.count += 1
        self._maybe(False)
        result = getattr(self.inner, name)(*args, **kwargs)
        self._maybe(True)
        return result

    def claim(self, key: str, **kw: Any) -> Claim:
        return self._op("claim", key, **kw)  # type: ignore[no-any-return]

    def heartbeat(self, key: str, **kw: Any) -> bool:
        return self._op("heartbeat", key, **kw)  # type: ignore[no-any-return]

    def finish(self, key: str, **kw: Any) -> bool:
        return self._op("finish", key, **kw)  # type: ignore[no-any-return]

    def release(self, key: str, **kw: Any) -> bool:
        return self._op("release", key, **kw)  # type: ignore[no-any-return]

    def get(self, key: str) -> Any:
        return self.inner.get(key)

    def purge(self) -> int:
        return self.inner.purge()  # type: ignore[no-any-return]


def sync_schedules(store_ops: int) -> list[tuple[str, Any]]:
    """Every injection point: before/after each store operation, each tool's start/end."""
    points: list[tuple[str, Any]] = [
        ("store", (n, after)) for n in range(1, store_ops + 1) for after in (False, True)
    ]
    return [*points, ("tool", "start"), ("tool", "end")]


@pytest.mark.parametrize(
    "kind",
    [
        "memory",
        "sqlite",
        pytest.param("postgres", marks=pytest.mark.server),
        pytest.param("redis", marks=pytest.mark.server),
    ],
)
@pytest.mark.parametrize("tool_set", ["sync", "both"])
def test_sync_interrupt_at_every_store_operation_and_tool_edge(
    kind: str, tool_set: str, tmp_path: Path, request: pytest.FixtureRequest, python_sigint: None
) -> None:
    """Ctrl-C before/after every store write and inside tools: no orphan, loss or duplicate."""
    inner = _async_store(kind, tmp_path, request)
    ledger = Ledger()
    before = Counter(FIGURES)
    tools = TOOL_SETS[tool_set]
    probe = Interrupting(inner, None, False)
    Executor(make_tools(ledger), store=probe, scope="probe").run(fresh_response(tools))
    for where, point in sync_schedules(probe.count):
        at, after = point if where == "store" else (None, False)
        store = Interrupting(inner, at, after)
        box = make_tools(ledger, {point} if where == "tool" else set())
        executor = Executor(box, store=store, scope=f"interrupt-{kind}", cancel_grace=2.0)
        r = fresh_response(tools)
        keys = _keys(r, executor)
        interrupted = False
        try:
            executor.run(r)
        except KeyboardInterrupt:
            interrupted = True
        FIGURES["sync schedules"] += 1
        FIGURES["sync interrupted"] += interrupted
        account("sync", {key: inner.get(key) for key in keys}, keys, ledger)
        rerun = Executor(make_tools(ledger), store=inner, scope=f"interrupt-{kind}").run(r)
        account_rerun("sync", rerun, keys, ledger)
    FIGURES[f"per store sync {type(inner).__name__} {'+'.join(tools)}"] += len(
        sync_schedules(probe.count)
    )
    inner.close()
    found = {
        name: FIGURES[f"sync {name}"] - before[f"sync {name}"]
        for name in ("orphaned", "lost", "duplicates", "interrupted", "schedules")
    }
    assert found["orphaned"] == found["lost"] == found["duplicates"] == 0, found
    assert found["interrupted"] == found["schedules"], found  # every Ctrl-C reached the caller
