"""The threads the executors reuse, and the handles of running tools.

A submitted job runs exactly once, on some worker, or ``submit`` raises and it never runs;
a hung tool never delays later jobs. O(1) per job.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from .._tools.context import ToolContext
from .._tools.toolbox import Tool, ValidCall
from .decisions import ToolEnded, ToolNotStarted, ToolRaised, ToolReturned, ToolUnstorable, describe

__all__ = [
    "LoopTool",
    "ThreadTool",
    "WorkerPool",
    "background_loop",
    "call_tool",
    "invoke_async",
    "pool",
]

_IDLE_TIMEOUT = 30.0


class WorkerPool:
    """Daemon threads shared by the process; see the module docstring."""

    def __init__(self, *, idle_timeout: float = _IDLE_TIMEOUT) -> None:
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        # Workers waiting for a job that no submitter has counted on yet.
        self._idle = 0
        self._idle_timeout = idle_timeout

    def submit(
        self, job: Callable[[], None], later: list[Callable[[], None]] | None = None
    ) -> None:
        """Run ``job`` on a worker; raise (``RuntimeError``) if no thread can run it.

        ``job`` must not raise: its exceptions are swallowed to keep the worker alive.
        With ``later``, a job that goes to an idle worker (which is reserved for it now,
        so nothing can fail any more) is appended to ``later`` instead of being handed
        over: the caller must pass ``later`` to :meth:`deliver` before it waits. A caller
        that has more to do before it waits saves the worker a wake-up in which it could
        only wait for the GIL.
        """
        with self._lock:
            reuse = self._idle > 0
            if reuse:
                self._idle -= 1  # that worker is promised this job
        if reuse:
            if later is not None:
                later.append(job)
            else:
                self._jobs.put(job)
            return
        thread = threading.Thread(
            target=self._work, args=(job,), name="toolwire-worker", daemon=True
        )
        thread.start()

    def deliver(self, jobs: list[Callable[[], None]]) -> None:
        """Hand over the jobs that :meth:`submit` kept in ``jobs`` (and empty it)."""
        put = self._jobs.put
        for job in jobs:
            put(job)
        jobs.clear()

    def _work(self, job: Callable[[], None]) -> None:
        while True:
            with suppress(BaseException):  # jobs report their own outcome; keep the worker
                job()
            del job  # drop the finished job's references while idle
            with self._lock:
                self._idle += 1
            while True:
                try:
                    job = self._jobs.get(timeout=self._idle_timeout)
                    break
                except queue.Empty:
                    with self._lock:
                        if self._idle > 0:  # nobody counts on this worker: retire it
                            self._idle -= 1
                            return
                    # Every idle worker is promised a job, one of which is on its way.


_pool = WorkerPool()
_loop_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def pool() -> WorkerPool:
    """The process-wide worker pool."""
    return _pool


def background_loop() -> asyncio.AbstractEventLoop:
    """The process-wide event loop for async tools of synchronous executors (started once)."""
    global _loop
    with _loop_lock:
        if _loop is None:
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def main() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            threading.Thread(target=main, name="toolwire-async-tools", daemon=True).start()
            ready.wait()
            _loop = loop
        return _loop


def _after_fork_in_child() -> None:
    global _pool, _loop, _loop_lock
    _pool = WorkerPool()
    _loop = None  # its thread does not exist in the child
    _loop_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


# ------------------------------------------------------------------ calling tools


def returned(tool: Tool, value: Any) -> ToolReturned | ToolUnstorable:
    """The event of a tool that returned ``value``: stored JSON, or unstorable."""
    try:
        return ToolReturned(value=value, result_json=tool.result_json(value))
    except Exception as exc:  # TypeError for non-JSON; anything a broken value raises
        return ToolUnstorable(value=value, reason=describe(exc))


def call_tool(check: ValidCall, ctx: ToolContext) -> ToolEnded:
    """Call a checked sync tool; how it ended (never raises)."""
    try:
        value = check.invoke(ctx)
    except BaseException as exc:  # the core classifies; nothing may escape a worker
        return ToolRaised(exception=exc)
    return returned(check.tool, value)


async def invoke_async(check: ValidCall, ctx: ToolContext) -> ToolEnded:
    """Await an async tool; how it ended. Its own cancellation is an end like any other.

    ``KeyboardInterrupt`` and ``SystemExit`` propagate, as asyncio wants them to, except on
    the background loop (see :class:`LoopTool`), whose thread must survive them.
    """
    try:
        value = await check.invoke(ctx)
    except (Exception, asyncio.CancelledError) as exc:
        return ToolRaised(exception=exc)
    return returned(check.tool, value)


async def _invoke_anything(check: ValidCall, ctx: ToolContext) -> ToolEnded:
    try:
        return await invoke_async(check, ctx)
    except BaseException as exc:  # KeyboardInterrupt, SystemExit: the loop must survive
        return ToolRaised(exception=exc)


def task_end(task: asyncio.Future[ToolEnded]) -> ToolEnded:
    """How a finished tool task ended; cancelled before its first step: never started."""
    if task.cancelled():
        return ToolNotStarted()
    return task.result()


class _ToolRun:
    """What both handles hold: the call, the driver's ``on_done`` and the ``result``."""

    def __init__(self, check: ValidCall, ctx: ToolContext, on_done: Callable[[], None]) -> None:
        self._check = check
        self._ctx = ctx
        self._on_done = on_done
        self.result: ToolEnded | None = None

    def notify(self, on_done: Callable[[], None]) -> None:
        """From now on call ``on_done`` instead when the tool ends (a keeper taking over a
        tool its driver let go of). An end published just before is missed by the new
        callback, so its caller reads ``result`` after this."""
        self._on_done = on_done

    def _publish(self, event: ToolEnded) -> None:
        """Set ``result``, then tell the driver (never the other way round)."""
        self.result = event
        with suppress(Exception):  # e.g. the event loop that waited for it has closed
            self._on_done()


class ThreadTool(_ToolRun):
    """A sync tool on a pooled worker thread."""

    in_thread = True

    def __init__(self, check: ValidCall, ctx: ToolContext, on_done: Callable[[], None]) -> None:
        super().__init__(check, ctx, on_done)
        self._lock = threading.Lock()
        self._begun = False
        self._cancelled = False

    def start(self, later: list[Callable[[], None]] | None = None) -> None:
        """Hand the call to a worker (raises if no thread can be started: nothing ran);
        with ``later``, see :meth:`WorkerPool.submit`."""
        _pool.submit(self._main, later)

    def _main(self) -> None:
        with self._lock:
            begin = not self._cancelled
            self._begun = begin
        self._publish(call_tool(self._check, self._ctx) if begin else ToolNotStarted())

    def cancel(self) -> bool:
        """A thread cannot be stopped; if no worker has begun the call yet, it never will.

        Returns whether that was the case (the call ends ``ToolNotStarted``).
        """
        with self._lock:
            self._cancelled = True
            return not self._begun


class LoopTool(_ToolRun):
    """An async tool of a synchronous executor, as a task on the background loop."""

    in_thread = False
    _loop: asyncio.AbstractEventLoop | None = None  # the background loop, once started
    _task: asyncio.Task[ToolEnded] | None = None  # set on that loop, once begun

    def start(self) -> None:
        """Schedule the task on the background loop."""
        self._loop = background_loop()
        self._loop.call_soon_threadsafe(self._begin)

    def _begin(self) -> None:  # on the loop; always before any _cancel (FIFO)
        assert self._loop is not None
        self._task = self._loop.create_task(_invoke_anything(self._check, self._ctx))
        self._task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[ToolEnded]) -> None:
        self._publish(task_end(task))

    def cancel(self) -> bool:
        """Cancel the task (thread-safe); a task cancelled before it began never begins.

        Returns ``False``: whether it had begun is known only once it has ended.
        """
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._cancel)
        return False

    def _cancel(self) -> None:
        if self._task is not None:
            self._task.cancel()

    def detach(self, ended: Callable[[asyncio.Future[ToolEnded]], None]) -> None:
        """Call ``ended(task)`` on the background loop whenever the task ends."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._detach, ended)

    def _detach(self, ended: Callable[[asyncio.Future[ToolEnded]], None]) -> None:
        if self._task is not None:
            self._task.add_done_callback(ended)
