"""Threads only where a guarantee needs one: reused workers, store work and heartbeats on
the calling thread, async tools without threads, bounds that do not throttle I/O."""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import threading
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executor_support import response
from toolwire import AsyncExecutor, Executor, MemoryStore, Toolbox
from toolwire._execution.workers import WorkerPool
from toolwire.stores import Claim


class Recording(MemoryStore):
    """A MemoryStore that records which thread performed each operation."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[tuple[str, int]] = []

    def claim(self, key: str, **kw: Any) -> Claim:
        self.threads.append(("claim", threading.get_ident()))
        return super().claim(key, **kw)

    def heartbeat(self, key: str, **kw: Any) -> bool:
        self.threads.append(("heartbeat", threading.get_ident()))
        return super().heartbeat(key, **kw)

    def finish(self, key: str, **kw: Any) -> bool:
        self.threads.append(("finish", threading.get_ident()))
        return super().finish(key, **kw)


def tools_recording(seen: list[int]) -> Toolbox:
    """A sync and an async tool that record the thread they ran on."""
    box = Toolbox()

    @box.tool
    def where(n: int) -> int:
        """Notes its thread."""
        seen.append(threading.get_ident())
        return n

    @box.tool
    async def where_async(n: int) -> int:
        """Notes its thread."""
        seen.append(threading.get_ident())
        return n

    return box


def test_sequential_runs_reuse_one_worker_and_start_no_thread() -> None:
    """200 runs one after the other: one worker runs every sync tool; no thread or pool is
    created once the worker exists (it used to be a pool per run and a thread per call)."""
    seen: list[int] = []
    ex = Executor(tools_recording(seen), scope="s")
    ex.run(response(("warm", "where", {"n": 0})))
    started = [0]
    original_start = threading.Thread.start
    original_pool = concurrent.futures.ThreadPoolExecutor.__init__

    def counting_start(self: threading.Thread) -> None:
        started[0] += 1
        original_start(self)

    def no_pool(self: Any, *args: Any, **kwargs: Any) -> None:
        raise AssertionError("a thread pool was created")

    threading.Thread.start = counting_start  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.__init__ = no_pool  # type: ignore[method-assign]
    try:
        for i in range(200):
            [o] = ex.run(response((f"c{i}", "where", {"n": i})))
            assert o.status == "completed"
    finally:
        threading.Thread.start = original_start  # type: ignore[method-assign]
        concurrent.futures.ThreadPoolExecutor.__init__ = original_pool  # type: ignore[method-assign]
    assert started[0] == 0
    assert threading.get_ident() not in seen  # the caller never runs a sync tool itself
    workers = {t.ident for t in threading.enumerate() if t.name == "toolwire-worker"}
    assert set(seen) <= workers  # idle pooled workers (other tests left some) take the calls


def test_store_work_and_heartbeats_happen_on_the_calling_thread() -> None:
    """Executor claims, heartbeats and finishes from the caller; only the tool moves."""
    store = Recording()
    box = Toolbox()
    tool_thread: list[int] = []

    @box.tool
    def slow(n: int) -> int:
        """Outlives a few heartbeat intervals."""
        tool_thread.append(threading.get_ident())
        time.sleep(0.08)
        return n

    Executor(box, store=store, scope="s", lease=0.06, heartbeat_interval=0.02).run(
        response(("a", "slow", {"n": 1}))
    )
    ops = [op for op, _ in store.threads]
    assert ops[0] == "claim" and ops[-1] == "finish" and ops.count("heartbeat") >= 2
    assert {ident for _, ident in store.threads} == {threading.get_ident()}
    assert tool_thread[0] != threading.get_ident()


def test_async_executor_uses_no_thread_for_memory_store_and_async_tools() -> None:
    """MemoryStore is called inline and async tools are tasks: nothing is handed to a thread."""
    store = MemoryStore()  # exactly MemoryStore (a subclass may block: it gets a thread)
    store_threads: list[int] = []
    claim, finish = store.claim, store.finish

    def recording_claim(key: str, **kw: Any) -> Claim:
        store_threads.append(threading.get_ident())
        return claim(key, **kw)

    def recording_finish(key: str, **kw: Any) -> bool:
        store_threads.append(threading.get_ident())
        return finish(key, **kw)

    store.claim, store.finish = recording_claim, recording_finish  # type: ignore[method-assign]
    seen: list[int] = []
    submitted = [0]
    original = WorkerPool.submit

    def counting(self: WorkerPool, job: Any) -> None:
        submitted[0] += 1
        original(self, job)

    async def main() -> int:
        ex = AsyncExecutor(tools_recording(seen), store=store, scope="s")
        outcomes = await ex.run(response(*((f"c{i}", "where_async", {"n": i}) for i in range(5))))
        assert [o.status for o in outcomes] == ["completed"] * 5
        return threading.get_ident()

    WorkerPool.submit = counting  # type: ignore[method-assign]
    try:
        loop_thread = asyncio.run(main())
    finally:
        WorkerPool.submit = original  # type: ignore[method-assign]
    assert submitted[0] == 0
    assert len(store_threads) == 10 and set(store_threads) == {loop_thread} == set(seen)


def test_a_hung_tool_does_not_hold_up_later_calls() -> None:
    """A sync tool stuck past its timeout keeps its thread; the next call gets another."""
    box = Toolbox()
    release = threading.Event()

    @box.tool(timeout=0.05)
    def hang(n: int) -> int:
        """Blocks until the test ends."""
        release.wait(10)
        return n

    @box.tool(timeout=1.0)
    def quick(n: int) -> int:
        """Returns at once."""
        return n

    ex = Executor(box, scope="s")
    try:
        [hung] = ex.run(response(("a", "hang", {"n": 1})))
        started = time.monotonic()
        [ok] = ex.run(response(("b", "quick", {"n": 2})))
        assert hung.status == "timed_out" and ok.status == "completed"
        assert time.monotonic() - started < 0.5
    finally:
        release.set()


def test_async_tools_of_the_sync_executor_need_no_threads_and_sync_ones_are_bounded() -> None:
    """Executor: 60 async tools run at once by default; sync tools at most max_threads."""
    box = Toolbox()
    lock = threading.Lock()
    state = {"async": 0, "async_peak": 0, "sync": 0, "sync_peak": 0}

    @box.tool
    async def io(n: int) -> int:
        """Waits (bounded) until all 60 run."""
        state["async"] += 1
        state["async_peak"] = max(state["async_peak"], state["async"])
        for _ in range(400):
            if state["async_peak"] == 60:
                break
            await asyncio.sleep(0.005)
        state["async"] -= 1
        return n

    @box.tool
    def cpu(n: int) -> int:
        """Holds a thread for a moment."""
        with lock:
            state["sync"] += 1
            state["sync_peak"] = max(state["sync_peak"], state["sync"])
        time.sleep(0.02)
        with lock:
            state["sync"] -= 1
        return n

    calls = [(f"a{i}", "io", {"n": i}) for i in range(60)]
    calls += [(f"s{i}", "cpu", {"n": i}) for i in range(12)]
    outcomes = Executor(box, scope="s", max_threads=3).run(response(*calls))
    assert all(o.status == "completed" for o in outcomes)
    assert state["async_peak"] == 60 and 1 < state["sync_peak"] <= 3


@settings(max_examples=30, deadline=None)
@given(jobs=st.integers(1, 40), idle=st.sampled_from([0.001, 0.01, 1.0]))
def test_worker_pool_runs_every_job_exactly_once(jobs: int, idle: float) -> None:
    """Jobs submitted from many threads at once each run once; idle workers retire."""
    pool = WorkerPool(idle_timeout=idle)
    lock = threading.Lock()
    ran: list[int] = []
    done = threading.Semaphore(0)

    def job(i: int) -> None:
        with lock:
            ran.append(i)
        done.release()

    submitters = [
        threading.Thread(target=pool.submit, args=(lambda i=i: job(i),)) for i in range(jobs)
    ]
    for t in submitters:
        t.start()
    for t in submitters:
        t.join()
    for _ in range(jobs):
        assert done.acquire(timeout=10)
    assert sorted(ran) == list(range(jobs))


def test_a_job_kept_for_later_runs_once_it_is_delivered_on_its_reserved_worker() -> None:
    """submit(later=...) reserves an idle worker and keeps the job until deliver(): it
    runs then, exactly once, on that worker, and no thread is started for it."""
    pool = WorkerPool(idle_timeout=5.0)
    idents: list[int] = []
    ran = threading.Semaphore(0)

    def job() -> None:
        idents.append(threading.get_ident())
        ran.release()

    pool.submit(job)  # starts the worker
    assert ran.acquire(timeout=5)
    deadline = time.monotonic() + 5
    while pool._idle == 0 and time.monotonic() < deadline:  # until it waits for a job
        time.sleep(0.001)
    later: list[Any] = []
    pool.submit(job, later)
    assert later == [job] and not ran.acquire(timeout=0.05)
    pool.deliver(later)
    assert later == [] and ran.acquire(timeout=5)
    assert idents[0] == idents[1]  # the reserved worker, no new thread


def test_idle_workers_retire() -> None:
    """A worker idle for idle_timeout seconds exits; the next job starts a new one."""
    pool = WorkerPool(idle_timeout=0.05)
    idents: list[int] = []
    ran = threading.Event()

    def job() -> None:
        idents.append(threading.get_ident())
        ran.set()

    pool.submit(job)
    assert ran.wait(5)
    names = lambda: [t for t in threading.enumerate() if t.ident in idents]  # noqa: E731
    deadline = time.monotonic() + 5
    while names() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert names() == []


def _run_in_child(conn: Any) -> None:
    seen: list[int] = []
    outcomes = Executor(tools_recording(seen), scope="child").run(
        response(("a", "where", {"n": 1}), ("b", "where_async", {"n": 2}))
    )
    conn.send([o.status for o in outcomes])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_fresh_workers() -> None:
    """After fork the child has none of the parent's threads; it still runs tools."""
    seen: list[int] = []
    Executor(tools_recording(seen), scope="parent").run(
        response(("a", "where", {"n": 1}), ("b", "where_async", {"n": 2}))
    )  # the parent now has a worker and the background loop
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=_run_in_child, args=(child,))
    process.start()
    assert parent.poll(30), "the child hung: it inherited the parent's dead workers"
    assert parent.recv() == ["completed", "completed"]
    process.join(10)
