"""``Executor`` and ``AsyncExecutor``: the two drivers of the sans-IO execution core.

Strategy. ``run(response)`` first decides, without touching the store, what may run:
the toolbox validates every call; a response with any rejected call (or arguments that
cannot be canonically hashed) runs nothing (``rejected`` for those, ``skipped`` for the
rest) unless ``run_on_rejection=True``. Each runnable call gets its call key (scope,
response id, tool name, call id), args hash and idempotency key, and one generator of
:func:`toolwire._execution.execute_call`; the driver performs that generator's commands
and returns the outcomes in call order. All policy lives in the core; the drivers only
know how to wait.

- ``Executor`` runs up to ``max_concurrency`` calls at once, each driven by a worker
  thread; every sync tool runs in its own daemon thread so that the driver can stop
  waiting for it at its deadline. **A thread cannot be killed**: a timed-out tool keeps
  running in the background, its outcome is ``timed_out`` and its record ``unknown``; a
  value it returns later is discarded, never stored as ``completed``. Async tools run in
  a private event loop in such a thread and are cancelled at the deadline.
- ``AsyncExecutor`` runs calls as tasks under a semaphore; async tools are tasks,
  cancelled at their deadline (and awaited for a short grace period); sync tools run in
  daemon threads as above. A synchronous ``Store`` is called through
  ``asyncio.to_thread``, an ``AsyncStore`` directly.
- Cancellation. The caller's ``KeyboardInterrupt`` (``Executor``) or ``CancelledError``
  (``AsyncExecutor``) is always re-raised. Before that, every call is told to stop at its
  next interruptible step: calls not yet claimed stop, claimed calls not yet started are
  released, and calls whose tool is running are finalised ``unknown``. Store operations
  already in flight are shielded and completed first, so a claim is never left orphaned
  by a cancellation that arrived mid-write.
- Store failures fail closed. A claim the store cannot record means the tool does not
  run: the outcome is ``failed`` with an error starting ``StoreError:`` (nothing ran and
  nothing was recorded as done, so retrying is safe; ``run`` does not raise, so the other
  calls' outcomes are not lost). A final write that fails makes the outcome ``unknown``:
  the tool ran, but the store does not hold its result.
- Deadlines are absolute (``time.monotonic()``), computed when a tool starts (a call
  waiting for a concurrency slot does not spend its budget) and given to the tool in
  ``ctx.deadline`` together with ``ctx.idempotency_key``.

Not guaranteed: exactly-once effects in systems the tool talks to, unless the tool
forwards ``ctx.idempotency_key`` to a downstream that honours it. Cost: O(n) hashing and
store round trips per response of n calls, plus one store write per heartbeat interval
of each running tool.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, TypeVar

from ._context import ToolContext
from ._errors import ExecutorSettingsError, IdempotencyKeyError
from ._execution import (
    AbandonTool,
    AwaitTool,
    CallFlow,
    CallPlan,
    ClaimCall,
    Command,
    FinishCall,
    Heartbeat,
    ReleaseCall,
    StartTool,
    ToolEvent,
    ToolPending,
    ToolRaised,
    ToolReturned,
    ToolTimedOut,
    execute_call,
)
from ._idempotency import arguments_hash, call_key, idempotency_key
from ._outcome import Outcome
from ._response import Response
from ._toolbox import Tool, Toolbox, ValidCall
from .stores._protocol import AsyncStore, Store
from .stores.memory import MemoryStore

__all__ = [
    "AsyncExecutor",
    "Executor",
]

T = TypeVar("T")

# How long an abandoned async tool task is given to honour its cancellation.
_CANCEL_GRACE = 1.0
# How often Executor.run's waiting main thread lets a pending KeyboardInterrupt in.
_POLL = 0.05


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """One validated call ready for the core, with what the driver needs to run it."""

    position: int
    plan: CallPlan
    tool: Tool
    arguments: Any
    scope: str


class _RunInterrupted(BaseException):
    """Thrown into a call's core when the caller interrupted ``Executor.run``."""


# ------------------------------------------------------------------ shared set-up


class _ExecutorBase:
    """Configuration and the store-free preparation step shared by both executors."""

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        scope: str,
        timeout: float | None,
        max_concurrency: int,
        lease: float,
        heartbeat_interval: float | None,
        retention: float,
        run_on_rejection: bool,
    ) -> None:
        if not isinstance(toolbox, Toolbox):
            raise ExecutorSettingsError(
                f"toolbox must be a toolwire.Toolbox, not {type(toolbox).__name__}"
            )
        if not isinstance(scope, str):
            raise ExecutorSettingsError(f"scope must be a str, not {type(scope).__name__}")
        if timeout is not None and not _positive(timeout):
            raise ExecutorSettingsError(
                f"timeout must be None or a positive number, not {timeout!r}"
            )
        if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int):
            raise ExecutorSettingsError("max_concurrency must be an int")
        if max_concurrency < 1:
            raise ExecutorSettingsError("max_concurrency must be at least 1")
        if not _positive(lease):
            raise ExecutorSettingsError(
                f"lease must be a positive number of seconds, not {lease!r}"
            )
        interval = lease / 3 if heartbeat_interval is None else heartbeat_interval
        if not _positive(interval) or interval >= lease:
            raise ExecutorSettingsError(
                "heartbeat_interval must be positive and shorter than the lease"
            )
        if not _positive(retention) or retention <= lease:
            raise ExecutorSettingsError(
                "retention must be a positive number of seconds above the lease"
            )
        self.toolbox = toolbox
        self.scope = scope
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.lease = float(lease)
        self.heartbeat_interval = float(interval)
        self.retention = float(retention)
        self.run_on_rejection = run_on_rejection

    def _prepare(self, response: Response) -> tuple[list[Outcome | None], list[_Job]]:
        """Validate and key every call; outcomes decided now, jobs for the rest."""
        checks = list(self.toolbox.check_response(response))
        owner = str(uuid.uuid4())
        decided: list[Outcome | None] = []
        candidates: list[tuple[int, Any, CallPlan]] = []
        seen: dict[tuple[str, str], int] = {}
        for position, check in enumerate(checks):
            if not isinstance(check, ValidCall):
                decided.append(_rejected(check.call.id, check.call.name, check.reason))
                continue
            call, tool = check.call, check.tool
            occurrence = seen.get((tool.name, call.id), 0)
            seen[(tool.name, call.id)] = occurrence + 1
            try:
                digest = arguments_hash(check.arguments)
                key = call_key(self.scope, response.response_id, tool.name, call.id, occurrence)
            except IdempotencyKeyError as exc:
                decided.append(_rejected(call.id, call.name, str(exc)))
                continue
            decided.append(None)
            timeout = tool.timeout if tool.timeout is not None else self.timeout
            plan = CallPlan(
                call_id=call.id,
                name=tool.name,
                key=key,
                args_hash=digest,
                idempotency_key=idempotency_key(key, digest),
                owner=owner,
                lease=self.lease,
                retention=self.retention,
                heartbeat_interval=self.heartbeat_interval,
                idempotent=bool(tool.idempotent),
                timeout=timeout,
            )
            candidates.append((position, check, plan))
        if any(o is not None for o in decided) and not self.run_on_rejection:
            for position, check, _plan in candidates:
                decided[position] = Outcome(
                    call_id=check.call.id,
                    name=check.call.name,
                    status="skipped",
                    error="not run: another call of the same response was rejected",
                )
            return decided, []
        jobs = [
            _Job(
                position=position,
                plan=plan,
                tool=check.tool,
                arguments=check.arguments,
                scope=self.scope,
            )
            for position, check, plan in candidates
        ]
        return decided, jobs


_STORE_METHODS = ("claim", "heartbeat", "finish", "release", "purge")


def _check_store(store: T) -> T:
    """Refuse, at construction, an object that lacks the store operations."""
    missing = [m for m in _STORE_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise ExecutorSettingsError(
            f"store must implement the toolwire Store or AsyncStore protocol; "
            f"{type(store).__name__} lacks {', '.join(missing)}"
        )
    return store


def _positive(value: object) -> bool:
    return not isinstance(value, bool) and isinstance(value, (int, float)) and value > 0


def _rejected(call_id: str, name: str, reason: str) -> Outcome:
    return Outcome(call_id=call_id, name=name, status="rejected", error=reason)


def _context(job: _Job, deadline: float | None) -> ToolContext:
    return ToolContext(
        idempotency_key=job.plan.idempotency_key,
        deadline=deadline,
        call_id=job.plan.call_id,
        tool_name=job.plan.name,
        scope=job.scope,
    )


def _deadline(timeout: float | None) -> float | None:
    return None if timeout is None else time.monotonic() + timeout


def _remaining(interval: float, deadline: float | None) -> float:
    if deadline is None:
        return interval
    return max(0.0, min(interval, deadline - time.monotonic()))


def _past(deadline: float | None) -> bool:
    return deadline is not None and time.monotonic() >= deadline


# ------------------------------------------------------------------ tool threads


class _ToolThread:
    """Runs one tool call in a daemon thread; ``event`` is set once it has finished.

    A sync tool is called directly; an async tool gets a private event loop, so that it
    can be cancelled from outside through ``cancel()``.
    """

    def __init__(
        self, tool: Tool, arguments: Any, ctx: ToolContext, on_done: Callable[[ToolEvent], None]
    ) -> None:
        self._tool = tool
        self._arguments = arguments
        self._ctx = ctx
        self._on_done = on_done
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Future[Any] | None = None
        self._cancelled = False
        self.result: ToolEvent | None = None

    def start(self) -> None:
        thread = threading.Thread(
            target=self._main, name=f"toolwire-tool-{self._tool.name}", daemon=True
        )
        thread.start()

    def _main(self) -> None:
        event: ToolEvent
        try:
            if self._tool.is_async:
                value = asyncio.run(self._run_async())
            else:
                value = self._tool.invoke(self._arguments, self._ctx)
            event = ToolReturned(value=value, result_json=self._tool.result_json(value))
        except BaseException as exc:  # the core classifies; nothing may escape a thread
            event = ToolRaised(exception=exc)
        self.result = event
        with suppress(RuntimeError):  # the loop that waited for an abandoned tool has closed
            self._on_done(event)

    async def _run_async(self) -> Any:
        with self._lock:
            if self._cancelled:
                raise asyncio.CancelledError
            self._loop = asyncio.get_running_loop()
            self._task = asyncio.ensure_future(self._tool.invoke(self._arguments, self._ctx))
        return await self._task

    def cancel(self) -> None:
        """Cancel an async tool's task; a sync tool cannot be stopped."""
        with self._lock:
            self._cancelled = True
            if self._loop is not None and self._task is not None:
                self._loop.call_soon_threadsafe(self._task.cancel)


# ------------------------------------------------------------------ the sync driver


class Executor(_ExecutorBase):
    """Runs the tool calls of a finished ``Response`` at most once per idempotency key.

    ``store`` defaults to a private :class:`~toolwire.MemoryStore`; ``scope`` names the
    conversation or tenant and is part of every key; ``timeout`` is the default per-tool
    timeout (a tool's own ``timeout`` wins); ``lease`` is how long a claim lives without a
    heartbeat (heartbeats every ``heartbeat_interval``, default a third of it);
    ``retention`` is how long a record is kept (after it, the call may run again);
    ``run_on_rejection`` runs the valid calls of a response that also has rejected ones.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        store: Store | None = None,
        scope: str,
        timeout: float | None = None,
        max_concurrency: int = 8,
        lease: float = 30.0,
        heartbeat_interval: float | None = None,
        retention: float = 86400.0,
        run_on_rejection: bool = False,
    ) -> None:
        super().__init__(
            toolbox,
            scope=scope,
            timeout=timeout,
            max_concurrency=max_concurrency,
            lease=lease,
            heartbeat_interval=heartbeat_interval,
            retention=retention,
            run_on_rejection=run_on_rejection,
        )
        self.store: Store = MemoryStore() if store is None else _check_store(store)

    def purge(self) -> int:
        """Delete the store's records past their retention; return how many."""
        return self.store.purge()

    def run(self, response: Response) -> list[Outcome]:
        """Run every call of ``response``; the outcomes, one per call, in call order.

        A ``KeyboardInterrupt`` (or any other ``BaseException``) while waiting is
        re-raised after the running calls have been finalised.
        """
        decided, jobs = self._prepare(response)
        if jobs:
            cancel = threading.Event()
            wakers: list[threading.Event] = []
            lock = threading.Lock()
            pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=min(self.max_concurrency, len(jobs)),
                thread_name_prefix="toolwire-call",
            )
            futures: list[concurrent.futures.Future[Outcome]] = []
            # Drivers wait at the gate until every future is in ``futures``: an interrupt
            # landing mid-submission then finds each started driver in the list (or, if
            # not, stopped at the gate by ``cancel``, before it could claim anything).
            gate = threading.Event()
            try:
                for job in jobs:
                    futures.append(pool.submit(self._drive, job, gate, cancel, wakers, lock))
                gate.set()
                # Wait in slices: a blocking wait is not woken by a signal delivered to
                # another thread, and Ctrl-C must reach the main thread promptly.
                while concurrent.futures.wait(futures, timeout=_POLL)[1]:
                    pass
            except BaseException:
                with lock:
                    cancel.set()
                    gate.set()
                    for wake in wakers:
                        wake.set()
                for future in futures:
                    future.cancel()
                concurrent.futures.wait(futures)
                raise
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
            for job, future in zip(jobs, futures, strict=True):
                decided[job.position] = future.result()
        return [o for o in decided if o is not None]

    def _drive(
        self,
        job: _Job,
        gate: threading.Event,
        cancel: threading.Event,
        wakers: list[threading.Event],
        lock: threading.Lock,
    ) -> Outcome:
        gate.wait()
        wake = threading.Event()
        with lock:
            wakers.append(wake)
            if cancel.is_set():
                wake.set()
        flow: CallFlow = execute_call(job.plan)
        runner: _ToolThread | None = None
        deadline: float | None = None
        interrupted: BaseException | None = None
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                command = flow.send(send) if throw is None else flow.throw(throw)
            except StopIteration as stop:
                if interrupted is not None:
                    raise interrupted from None
                result: Outcome = stop.value
                return result
            send, throw = None, None
            if interrupted is None and command.interruptible and cancel.is_set():
                interrupted = throw = _RunInterrupted()
                continue
            try:
                if isinstance(command, StartTool):
                    deadline = _deadline(command.timeout)
                    runner = _ToolThread(
                        job.tool, job.arguments, _context(job, deadline), lambda _e: wake.set()
                    )
                    runner.start()
                elif isinstance(command, AwaitTool):
                    assert runner is not None
                    wake.wait(_remaining(command.interval, deadline))
                    if runner.result is not None:
                        send = runner.result
                    elif cancel.is_set():
                        interrupted = throw = _RunInterrupted()
                    elif _past(deadline):
                        send = ToolTimedOut(timeout=job.plan.timeout)
                    else:
                        send = ToolPending()
                elif isinstance(command, AbandonTool):
                    if runner is not None:
                        runner.cancel()
                else:
                    send = _perform_store(self.store, command)
            except Exception as exc:
                throw = exc


def _perform_store(store: Store, command: Command) -> Any:
    """Perform one store command on a synchronous store."""
    if isinstance(command, ClaimCall):
        return store.claim(
            command.key,
            args_hash=command.args_hash,
            idempotency_key=command.idempotency_key,
            owner=command.owner,
            lease=command.lease,
            retention=command.retention,
            reclaim=command.reclaim,
        )
    if isinstance(command, Heartbeat):
        return store.heartbeat(
            command.key, owner=command.owner, fence=command.fence, lease=command.lease
        )
    if isinstance(command, FinishCall):
        return store.finish(
            command.key,
            owner=command.owner,
            fence=command.fence,
            status=command.status,
            result=command.result,
            error=command.error,
        )
    if isinstance(command, ReleaseCall):
        return store.release(command.key, owner=command.owner, fence=command.fence)
    raise AssertionError(f"not a store command: {command!r}")  # pragma: no cover


# ------------------------------------------------------------------ the async driver


async def _invoke_async(tool: Tool, arguments: Any, ctx: ToolContext) -> ToolEvent:
    try:
        value = await tool.invoke(arguments, ctx)
        return ToolReturned(value=value, result_json=tool.result_json(value))
    except (Exception, asyncio.CancelledError) as exc:
        return ToolRaised(exception=exc)


@dataclass(slots=True)
class _AsyncCall:
    """Per-call driver state of ``AsyncExecutor``."""

    job: _Job
    task: asyncio.Future[ToolEvent] | None = None
    thread: _ToolThread | None = None
    deadline: float | None = None
    pending: BaseException | None = None


class AsyncExecutor(_ExecutorBase):
    """The asyncio twin of :class:`Executor`: ``await executor.run(response)``.

    ``store`` may be a synchronous ``Store`` (called in a worker thread) or an
    ``AsyncStore``; the other arguments are those of :class:`Executor`.
    """

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        store: Store | AsyncStore | None = None,
        scope: str,
        timeout: float | None = None,
        max_concurrency: int = 8,
        lease: float = 30.0,
        heartbeat_interval: float | None = None,
        retention: float = 86400.0,
        run_on_rejection: bool = False,
    ) -> None:
        super().__init__(
            toolbox,
            scope=scope,
            timeout=timeout,
            max_concurrency=max_concurrency,
            lease=lease,
            heartbeat_interval=heartbeat_interval,
            retention=retention,
            run_on_rejection=run_on_rejection,
        )
        self.store: Store | AsyncStore = MemoryStore() if store is None else _check_store(store)
        self._async_store = inspect.iscoroutinefunction(getattr(self.store, "claim", None))

    async def purge(self) -> int:
        """Delete the store's records past their retention; return how many."""
        count: int = await self._store_call("purge")
        return count

    async def _store_call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        function = getattr(self.store, method)
        if self._async_store:
            return await function(*args, **kwargs)
        return await asyncio.to_thread(function, *args, **kwargs)

    async def run(self, response: Response) -> list[Outcome]:
        """Run every call of ``response``; the outcomes, one per call, in call order.

        Cancelling the task that awaits ``run`` cancels every call (finalising running
        ones as ``unknown`` in shielded steps) and then re-raises ``CancelledError``.
        """
        decided, jobs = self._prepare(response)
        if not jobs:
            return [o for o in decided if o is not None]
        slots = asyncio.Semaphore(self.max_concurrency)
        tasks = [asyncio.ensure_future(self._guarded(job, slots)) for job in jobs]
        try:
            await asyncio.wait(tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await _wait_through_cancellation(tasks)
            raise
        for job, task in zip(jobs, tasks, strict=True):
            decided[job.position] = task.result()
        return [o for o in decided if o is not None]

    async def _guarded(self, job: _Job, slots: asyncio.Semaphore) -> Outcome:
        async with slots:
            return await self._drive(job)

    async def _drive(self, job: _Job) -> Outcome:
        flow: CallFlow = execute_call(job.plan)
        state = _AsyncCall(job=job)
        thrown = False
        send: Any = None
        throw: BaseException | None = None
        while True:
            try:
                command = flow.send(send) if throw is None else flow.throw(throw)
            except StopIteration as stop:
                if state.pending is not None:
                    raise state.pending from None
                result: Outcome = stop.value
                return result
            send, throw = None, None
            if state.pending is not None and not thrown and command.interruptible:
                thrown, throw = True, state.pending
                continue
            try:
                send = await self._perform(command, state)
            except asyncio.CancelledError as exc:
                # Only AwaitTool lets the caller's cancellation through; deliver it there.
                if state.pending is None:
                    state.pending = exc
                if not thrown:
                    thrown, throw = True, state.pending
            except Exception as exc:
                throw = exc

    async def _perform(self, command: Command, state: _AsyncCall) -> Any:
        job = state.job
        if isinstance(command, StartTool):
            state.deadline = _deadline(command.timeout)
            ctx = _context(job, state.deadline)
            if job.tool.is_async:
                state.task = asyncio.ensure_future(_invoke_async(job.tool, job.arguments, ctx))
            else:
                loop = asyncio.get_running_loop()
                done: asyncio.Future[ToolEvent] = loop.create_future()
                runner = _ToolThread(
                    job.tool,
                    job.arguments,
                    ctx,
                    lambda event: _settle_threadsafe(loop, done, event),
                )
                state.thread, state.task = runner, done
                runner.start()
            return None
        if isinstance(command, AwaitTool):
            assert state.task is not None
            task = state.task
            await asyncio.wait({task}, timeout=_remaining(command.interval, state.deadline))
            if state.task.done():
                return state.task.result()
            if _past(state.deadline):
                return ToolTimedOut(timeout=job.plan.timeout)
            return ToolPending()
        if isinstance(command, AbandonTool):
            abandoned = state.task
            if abandoned is not None and state.thread is None and not abandoned.done():
                abandoned.cancel()
                await self._shielded(
                    state, lambda: asyncio.wait({abandoned}, timeout=_CANCEL_GRACE)
                )
            return None
        return await self._shielded(state, lambda: self._store_command(command))

    async def _store_command(self, command: Command) -> Any:
        if not self._async_store:
            return await asyncio.to_thread(_perform_store, self.store, command)  # type: ignore[arg-type]
        store: Any = self.store
        if isinstance(command, ClaimCall):
            return await store.claim(
                command.key,
                args_hash=command.args_hash,
                idempotency_key=command.idempotency_key,
                owner=command.owner,
                lease=command.lease,
                retention=command.retention,
                reclaim=command.reclaim,
            )
        if isinstance(command, Heartbeat):
            return await store.heartbeat(
                command.key, owner=command.owner, fence=command.fence, lease=command.lease
            )
        if isinstance(command, FinishCall):
            return await store.finish(
                command.key,
                owner=command.owner,
                fence=command.fence,
                status=command.status,
                result=command.result,
                error=command.error,
            )
        if isinstance(command, ReleaseCall):
            return await store.release(command.key, owner=command.owner, fence=command.fence)
        raise AssertionError(f"not a store command: {command!r}")  # pragma: no cover

    async def _shielded(self, state: _AsyncCall, make: Callable[[], Awaitable[T]]) -> T:
        """Run ``make()`` to completion even if the caller cancels meanwhile.

        The cancellation is remembered in ``state.pending`` and delivered to the core at
        its next interruptible command, once the core knows the result of this step.
        """
        future = asyncio.ensure_future(make())
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError as exc:
                if future.done():
                    raise
                if state.pending is None:
                    state.pending = exc


def _settle_threadsafe(
    loop: asyncio.AbstractEventLoop, done: asyncio.Future[ToolEvent], event: ToolEvent
) -> None:
    loop.call_soon_threadsafe(_settle, done, event)


def _settle(done: asyncio.Future[ToolEvent], event: ToolEvent) -> None:
    if not done.done():
        done.set_result(event)


async def _wait_through_cancellation(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every task has finished, even if cancelled again meanwhile."""
    pending = [t for t in tasks if not t.done()]
    while pending:
        with suppress(asyncio.CancelledError):  # the caller re-raises the first one
            await asyncio.wait(pending)
        pending = [t for t in pending if not t.done()]
