"""``Executor`` and ``AsyncExecutor``: the two drivers of the sans-IO execution core.

Each performs the commands of one :func:`~toolwire._execution.decisions.drive_call` flow
per call and decides nothing itself. Each call runs at most once per idempotency key; a
response with a rejected call runs nothing by default; store failures fail closed; the
caller's cancellation is re-raised after a bounded clean-up. O(n) hashing and store round
trips per response of n calls.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext, suppress
from dataclasses import dataclass
from functools import partial
from typing import Any, Generic, TypeVar, cast

from .._core.content import MAX_BINARY_BYTES, binary_size, rich_parts
from .._core.outcome import Outcome
from .._core.response import Response
from .._errors import (
    ApprovalError,
    RetryableError,
    SettingsError,
    UsageError,
)
from .._telemetry import ToolObserver, decided_tool, tool_observer
from .._tools.context import ToolContext
from .._tools.mcp import MCPCall
from .._tools.toolbox import Tool, Toolbox, ValidCall
from ..stores._protocol import AsyncStore, Record, Store
from ..stores._requests import GetRequest
from ..stores.memory import MemoryStore
from . import approvals
from .approvals import PendingCall
from .decisions import (
    CancelTool,
    Command,
    DetachTool,
    DriverCommand,
    DriverFlow,
    KeepTool,
    StartTool,
    ToolEnded,
    ToolNotStarted,
    ToolRaised,
    ToolReturned,
    WaitTool,
    Woke,
    describe,
    drive_call,
)
from .interrupts import DeferredInterrupts
from .planning import Job, plan_calls, timeout_of
from .runaways import Keeper, RunawayCall
from .settings import (
    DEFAULT_CANCEL_GRACE,
    DEFAULT_LEASE,
    DEFAULT_MAX_THREADS,
    DEFAULT_RETENTION,
    DEFAULT_TIMEOUT,
    TRANSIENT_ERRORS,
    ErrorText,
    Settings,
    check_retention,
    default_error_text,
)
from .settings import (
    ERROR_TEXT_LIMIT as ERROR_TEXT_LIMIT,
)
from .store_commands import StoreLane, perform_async_store, perform_store
from .workers import LoopTool, ThreadTool, invoke_async, pool, task_end

# The constants and default_error_text are documented (in .settings), not exported: the
# public surface stays the two executors (their attributes show the settings in force).
__all__ = [
    "AsyncExecutor",
    "Executor",
]

T = TypeVar("T")

logger = logging.getLogger("toolwire.executor")


class _RunInterrupted(BaseException):
    """Thrown into a call's core when the caller interrupted ``Executor.run``."""


# ------------------------------------------------------------------ shared set-up

S = TypeVar("S", bound="Store | AsyncStore")


class _ExecutorBase(Generic[S]):
    """The settings (one signature, checked once) and the store-free preparation step
    shared by both executors; ``S`` is the kind of store the driver can use."""

    store: S

    def __init__(
        self,
        toolbox: Toolbox,
        *,
        store: S | None = None,
        scope: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_concurrency: int | None = None,
        max_threads: int = DEFAULT_MAX_THREADS,
        lease: float = DEFAULT_LEASE,
        heartbeat_interval: float | None = None,
        retention: float = DEFAULT_RETENTION,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        retry_on: tuple[type[Exception], ...] = TRANSIENT_ERRORS,
        error_text: ErrorText | None = None,
        run_on_rejection: bool = False,
        max_binary_bytes: int = MAX_BINARY_BYTES,
    ) -> None:
        if not isinstance(toolbox, Toolbox):
            raise SettingsError(f"toolbox must be a toolwire.Toolbox, not {type(toolbox).__name__}")
        settings = Settings.checked(
            scope=scope,
            timeout=timeout,
            max_concurrency=max_concurrency,
            max_threads=max_threads,
            lease=lease,
            heartbeat_interval=heartbeat_interval,
            retention=retention,
            cancel_grace=cancel_grace,
            retry_on=retry_on,
            error_text=error_text,
            run_on_rejection=run_on_rejection,
            max_binary_bytes=max_binary_bytes,
        )
        self._settings = settings
        self.toolbox = toolbox
        self.scope = settings.scope
        self.timeout = settings.timeout
        self.max_concurrency = settings.max_concurrency
        self.max_threads = settings.max_threads
        self.lease = settings.lease
        self.heartbeat_interval = settings.heartbeat_interval
        self.retention = settings.retention
        self.cancel_grace = settings.cancel_grace
        self.retry_on = settings.retry_on
        self.error_text: ErrorText = settings.error_text
        self.run_on_rejection = settings.run_on_rejection
        self.max_binary_bytes = settings.max_binary_bytes
        for tool in toolbox:
            self._check_retention(tool.name, self._timeout_of(tool))
        # Owners are unique per run: a random prefix per executor and a counter.
        self._owner_prefix = uuid.uuid4().hex
        self._runs = itertools.count()
        self.store = cast(S, MemoryStore()) if store is None else _check_store(store)
        self._async_store = inspect.iscoroutinefunction(getattr(self.store, "claim", None))
        self._keeper = Keeper(self.retention)

    def runaways(self) -> list[RunawayCall]:
        """The calls whose tools are still running in this process after their timeout
        (a thread cannot be stopped), oldest first. Each stays claimed while it runs (its
        lease renewed, so it is neither purged nor expired) and then records the tool's
        own result."""
        return self._keeper.runaways()

    def _keep(
        self,
        job: Job,
        handle: ThreadTool | LoopTool | None,
        fence: int,
        deadline: float | None,
        perform: Callable[[Command], Any],
    ) -> bool:
        """Hand a thread tool still running past its timeout to the keeper (the flow
        offers only those, with a deadline)."""
        assert isinstance(handle, ThreadTool) and deadline is not None
        assert job.plan.timeout is not None
        raised: list[BaseException] = []

        def prepare(event: ToolEnded) -> ToolEnded:
            if isinstance(event, ToolRaised):
                raised.append(event.exception)
            return self._for_core(job, event)

        def report(outcome: Outcome) -> None:
            _log_late(job, outcome, raised[0] if raised else None)

        return self._keeper.keep(
            plan=job.plan,
            fence=fence,
            handle=handle,
            started=deadline - job.plan.timeout,
            perform=perform,
            prepare=prepare,
            report=report,
        )

    def _timeout_of(self, tool: Tool) -> float:
        return timeout_of(self._settings, tool)

    def _check_retention(self, name: str | None, timeout: float) -> None:
        check_retention(self._settings, name, timeout)

    def _prepare(
        self, response: Response, turn: str | None
    ) -> tuple[list[Outcome | None], list[Job]]:
        """Validate and key every call; outcomes decided now, jobs for the rest."""
        owner = f"{self._owner_prefix}:{next(self._runs)}"
        return plan_calls(self._settings, self.toolbox, response, turn, owner)

    def _gated(self, response: Response, turn: str | None) -> list[tuple[str, Job]]:
        """The approval record keys of the calls of ``response`` that need approval."""
        _decided, jobs = self._prepare(response, turn)
        return [(job.plan.approval.park.key, job) for job in jobs if job.plan.approval is not None]

    def _check_edit(self, name: str, _parameters: Any, arguments: Any) -> dict[str, Any]:
        """Approved arguments validated by the tool (``ArgumentsInvalid`` if they do not fit)."""
        tool = self.toolbox.get(name)
        if tool is None:
            raise ApprovalError(
                f"tool {name!r} of the call is not in this executor's toolbox; its edited "
                "arguments cannot be checked",
                key=name,
                status="awaiting",
            )
        return tool.validate(arguments)

    def _edited(self, job: Job, arguments: dict[str, Any]) -> None:
        """Run ``job`` on approved arguments instead of the model's, validated again."""
        validated, built = job.tool._validated(arguments)
        job.check = ValidCall(call=job.call, tool=job.tool, arguments=validated, built=built)

    def _decider(self) -> Any:
        """The store, once it is known to settle records (approve, deny)."""
        if not callable(getattr(self.store, "resolve", None)):
            raise SettingsError(
                f"approve() and deny() need a store with resolve() (every toolwire store); "
                f"{type(self.store).__name__} has none"
            )
        return self.store

    def _for_core(self, job: Job, event: ToolEnded) -> ToolEnded:
        """Attach what the model is to read of a raised exception (the ``error_text`` hook);
        a result whose images and files exceed ``max_binary_bytes`` becomes a failure."""
        if isinstance(event, ToolReturned):
            return self._bounded(job, event)
        if not isinstance(event, ToolRaised) or event.text is not None:
            return event
        exc = event.exception
        try:
            text = self.error_text(exc, job.call)
            if not isinstance(text, str):
                raise TypeError(f"error_text returned {type(text).__name__}, not str")
        except Exception:
            logger.exception(
                "error_text failed for tool %r; the model gets the default text",
                job.plan.name,
                extra=_fields(job, "failed"),
            )
            text = default_error_text(exc, job.call)
        return ToolRaised(exception=exc, text=text)

    def _bounded(self, job: Job, event: ToolReturned) -> ToolEnded:
        parts = rich_parts(event.value)
        size = 0 if parts is None else binary_size(parts)
        if size <= self.max_binary_bytes:
            return event
        text = (
            f"The tool {job.plan.name!r} returned {size} bytes of images and files, more than "
            f"the executor's max_binary_bytes ({self.max_binary_bytes}); the result was not "
            "kept. Ask for a smaller result."
        )
        return ToolRaised(exception=ResultTooLarge(text), text=text)


class ResultTooLarge(Exception):
    """A tool result's images and files exceed the executor's ``max_binary_bytes``."""


_STORE_METHODS = ("claim", "heartbeat", "finish", "release", "purge")


def _check_store(store: T) -> T:
    """Refuse, at construction, an object that lacks the store operations."""
    missing = [m for m in _STORE_METHODS if not callable(getattr(store, m, None))]
    if missing:
        raise SettingsError(
            f"store must implement the toolwire Store or AsyncStore protocol; "
            f"{type(store).__name__} lacks {', '.join(missing)}"
        )
    return store


def _context(job: Job, deadline: float | None) -> ToolContext:
    return ToolContext(
        idempotency_key=job.plan.claim.idempotency_key,
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


# ------------------------------------------------------------------ logging


def _fields(job: Job, status: str, *, replayed: bool = False) -> dict[str, Any]:
    return {
        "tool_name": job.plan.name,
        "call_id": job.plan.call_id,
        "idempotency_key": job.plan.claim.idempotency_key,
        "status": status,
        "replayed": replayed,
    }


def _who(job: Job) -> tuple[str, str, str]:
    """The call a log line is about: tool name, call id, idempotency key."""
    return job.plan.name, job.plan.call_id, job.plan.claim.idempotency_key


_WHO = "tool %r call %s (key %s)"


def _log_outcome(job: Job, outcome: Outcome, raised: BaseException | None) -> None:
    """Log what a person debugging the call needs; silent for plain successes."""
    status = outcome.status
    if status in ("completed", "replayed", "in_progress", "conflict", "awaiting_approval"):
        return
    extra = _fields(job, status, replayed=outcome.replayed)
    if outcome.replayed:
        message = _WHO + ": replayed the stored %s outcome, the tool did not run: %s"
        logger.info(message, *_who(job), status, outcome.error, extra=extra)
        return
    if raised is not None and not isinstance(raised, asyncio.CancelledError):
        released = status == "failed" and isinstance(raised, (RetryableError, *job.plan.retry_on))
        level = logging.WARNING if released else logging.ERROR
        why = " (released for a retry)" if released else ""
        message = _WHO + " raised; outcome %s%s"
        logger.log(level, message, *_who(job), status, why, exc_info=raised, extra=extra)
        return
    # No exception from the tool: an outage (a claim the store refused to record), a
    # timeout, a lost lease or a write that failed; the first is an error, the rest doubts.
    level = logging.ERROR if status == "failed" else logging.WARNING
    logger.log(level, _WHO + ": outcome %s: %s", *_who(job), status, outcome.error, extra=extra)


def _log_late(job: Job, outcome: Outcome, raised: BaseException | None) -> None:
    """Log how a kept tool ended after its timeout (the record now says so)."""
    extra = _fields(job, outcome.status)
    if outcome.status == "completed":
        message = _WHO + " ended after its timeout; its result was recorded (completed)"
        logger.info(message, *_who(job), extra=extra)
        return
    message = _WHO + " ended after its timeout; recorded as %s: %s"
    args = (*_who(job), outcome.status, outcome.error)
    logger.warning(message, *args, exc_info=raised, extra=extra)


def _log_detached(job: Job, *, in_thread: bool) -> Callable[[asyncio.Future[ToolEnded]], None]:
    """Log a tool left running after its grace; a done-callback to log its end."""
    why = "a thread cannot be stopped" if in_thread else "it ignored its cancellation"
    message = (
        _WHO + " is still running after its cancellation (%s); it is left to end on its own, "
        "its record stays unknown and its result will be discarded"
    )
    logger.warning(message, *_who(job), why, extra=_fields(job, "unknown"))

    def ended(task: asyncio.Future[ToolEnded]) -> None:
        with suppress(BaseException):
            task_end(task)  # retrieve it, so asyncio does not warn
        message = "abandoned " + _WHO + " has ended; its result was discarded"
        logger.info(message, *_who(job), extra=_fields(job, "unknown"))

    return ended


def _observe_decided(decided: list[Outcome | None]) -> None:
    """A span for each call decided without running (rejected, skipped)."""
    for outcome in decided:
        if outcome is not None:
            decided_tool(outcome)


def _internal_error(job: Job, exc: Exception) -> Outcome:
    """A bug in the core must cost one outcome, never the whole run's."""
    message = "internal error while executing " + _WHO
    logger.error(message, *_who(job), exc_info=exc, extra=_fields(job, "unknown"))
    return Outcome(
        call_id=job.plan.call_id,
        name=job.plan.name,
        status="unknown",
        error=f"internal error in toolwire ({describe(exc)}); the outcome is in doubt",
        idempotency_key=job.plan.claim.idempotency_key,
    )


# ------------------------------------------------------------------ store commands


async def _run_async(store: Any, flow: Any, *, native: bool) -> Any:
    reply = None
    while True:
        try:
            request = flow.send(reply)
        except StopIteration as stop:
            return stop.value
        if native:
            reply = await approvals.perform(store, request)
        else:
            reply = await asyncio.to_thread(approvals.perform, store, request)


def _pending_of(gated: list[tuple[str, Job]], records: list[Record | None]) -> list[PendingCall]:
    found = []
    for (_key, job), record in zip(gated, records, strict=True):
        if record is not None:
            pending = approvals.pending_call(job.plan.claim.idempotency_key, record)
            if pending is not None:
                found.append(pending)
    return found


# ------------------------------------------------------------------ the sync driver


@dataclass(slots=True, eq=False)
class _SyncCall:
    """Driver state of one call of ``Executor.run``."""

    job: Job
    flow: DriverFlow
    uses_thread: bool
    handle: ThreadTool | LoopTool | None = None
    deadline: float | None = None
    wait: WaitTool | None = None  # the wait it is parked on
    wake_at: float = math.inf
    thrown: bool = False
    raised: BaseException | None = None
    observer: ToolObserver | None = None


_PARKED: Any = object()
"""What performing a :class:`WaitTool` returns when the call must wait for its tool."""


class _SyncRun:
    """One ``Executor.run``: every call's flow driven from the calling thread.

    The calls share one thread, so a call whose tool is running is parked on its
    :class:`WaitTool` and the run sleeps until a tool ends or the earliest wake-up.
    """

    def __init__(self, executor: Executor, jobs: list[Job], guard: DeferredInterrupts) -> None:
        self.executor = executor
        self.store = executor.store
        self.guard = guard
        self.queued: deque[Job] = deque(jobs)
        self.active: list[_SyncCall] = []
        self.outcomes: dict[int, Outcome] = {}
        self.interrupt: BaseException | None = None
        self.wake = _Wake()
        self.slots = executor.max_concurrency or len(jobs)
        self.threads = executor.max_threads
        # Sync tools started in this round of admissions, for their (reserved) workers:
        # handed over just before the driver waits, so that a worker is not woken while
        # the driver still holds the GIL (a wake-up in which it could only wait).
        self.starting: list[Callable[[], None]] = []

    def drive(self) -> dict[int, Outcome]:
        """Run every call to its end; re-raise the caller's interruption after clean-up."""
        try:
            return self._drive()
        finally:
            if self.starting:  # never strand a reserved worker (nothing raises here, but)
                pool().deliver(self.starting)

    def _drive(self) -> dict[int, Outcome]:
        while self.queued or self.active:
            self._admit()
            if self.starting:
                pool().deliver(self.starting)
            if self.interrupt is not None:
                self._interrupt_all()
            if not self.active:
                continue
            self._wait()
            now = time.monotonic()
            for call in list(self.active):
                if call.wait is not None:
                    self._poll(call, now)
        if self.interrupt is not None:
            raise self.interrupt
        return self.outcomes

    # -- admission, waiting

    def _admit(self) -> None:
        """Start the calls that have a slot (and a thread, for a sync tool), in order."""
        queued = self.queued
        while queued and self.interrupt is None and self.slots > 0:
            job = self._next_job()
            if job is None:
                return
            in_thread = not job.tool.is_async
            grace = self.executor.cancel_grace
            plan = job.plan
            call = _SyncCall(
                job=job,
                flow=drive_call(plan, in_thread=in_thread, cancel_grace=grace),
                uses_thread=in_thread,
                observer=tool_observer(plan.name, plan.call_id, plan.claim.idempotency_key),
            )
            self.slots -= 1
            self.threads -= in_thread
            self.active.append(call)
            self._advance(call)
        if self.interrupt is not None:
            self.queued.clear()  # never claimed: nothing to clean up

    def _next_job(self) -> Job | None:
        """The first job in line, or with no thread free the first async tool in line."""
        queued = self.queued
        if self.threads or queued[0].tool.is_async:
            return queued.popleft()
        index = next((i for i, job in enumerate(queued) if job.tool.is_async), None)
        if index is None:
            return None
        job = queued[index]
        del queued[index]
        return job

    def _interrupt_all(self) -> None:
        """Cut short the interruptible waits (the others end first)."""
        for call in list(self.active):
            if call.wait is not None and call.wait.interruptible and not call.thrown:
                call.wait = None
                call.thrown = True
                self._advance(call, throw=_RunInterrupted())

    def _wait(self) -> None:
        """Sleep until a tool ends or the earliest wake-up time (a heartbeat, a deadline)."""
        timeout = max(0.0, min(c.wake_at for c in self.active) - time.monotonic())
        if self.interrupt is None:
            self.guard.waiting = True
            try:
                self.wake.wait(min(timeout, self.guard.slice))
                self.guard.waiting = False
                self.guard.deliver()  # held while we were not waiting: a safe point too
            except BaseException as exc:  # Ctrl-C, let through here on purpose
                self.interrupt = exc
            finally:
                self.guard.waiting = False
        else:
            self.wake.wait(timeout)  # a second Ctrl-C during the clean-up stays held

    def _poll(self, call: _SyncCall, now: float) -> None:
        """Resume a parked call whose tool has ended or whose wait is over."""
        ended = self._ended(call)
        if ended is not None or now >= call.wake_at:
            call.wait = None
            self._advance(call, Woke(ended, now))

    # -- one call

    def _advance(
        self, call: _SyncCall, reply: Any = None, throw: BaseException | None = None
    ) -> None:
        """Perform the call's commands until it is parked or its flow returns."""
        while True:
            try:
                command = call.flow.send(reply) if throw is None else call.flow.throw(throw)
            except StopIteration as stop:
                self._finish(call, stop.value)
                return
            except _RunInterrupted:
                self._finish(call, None)
                return
            except Exception as exc:
                self._finish(call, _internal_error(call.job, exc))
                return
            reply, throw = None, None
            if self.interrupt is not None or self.guard.pending is not None:
                throw = self._interruption(call)
                if throw is not None:
                    continue  # in place of the command: the flow says where it lands
            try:
                reply = self._perform(call, command)
            except Exception as exc:
                throw = exc
                continue
            if reply is _PARKED:
                return

    def _interruption(self, call: _SyncCall) -> BaseException | None:
        """The run's interruption, for a call that has not been told yet (a held-back
        Ctrl-C is let through here, between two commands: a safe point)."""
        if self.interrupt is None and self.guard.pending is not None:
            try:
                self.guard.deliver()
            except BaseException as exc:
                self.interrupt = exc
        if self.interrupt is None or call.thrown:
            return None
        call.thrown = True
        return _RunInterrupted()

    def _perform(self, call: _SyncCall, command: DriverCommand) -> Any:
        """Perform one command of the call's flow; ``_PARKED`` when it must wait."""
        if isinstance(command, WaitTool):
            return self._park(call, command)
        if isinstance(command, StartTool):
            return self._start(call, command)
        if isinstance(command, CancelTool):
            return self._cancel(call)
        if isinstance(command, DetachTool):
            return self._detach(call)
        if isinstance(command, KeepTool):
            perform = partial(perform_store, self.store)
            job = call.job
            return self.executor._keep(job, call.handle, command.fence, call.deadline, perform)
        return perform_store(self.store, command)

    def _park(self, call: _SyncCall, wait: WaitTool) -> Any:
        """Answer the wait now if the tool has ended or the time has come, else park."""
        ended = self._ended(call)
        now = time.monotonic()
        until = now + wait.seconds
        if wait.deadline is not None and wait.deadline < until:
            until = wait.deadline
        if ended is not None or now >= until:
            return Woke(ended, now)
        call.wake_at, call.wait = until, wait
        return _PARKED

    def _start(self, call: _SyncCall, command: StartTool) -> float | None:
        job = call.job
        if command.arguments is not None:
            self.executor._edited(job, command.arguments)
        call.deadline = _deadline(command.timeout)
        ctx = _context(job, call.deadline)
        handle: ThreadTool | LoopTool
        if job.tool.is_async:
            handle = LoopTool(job.check, ctx, self.wake.set)
            handle.start()
        else:
            handle = ThreadTool(job.check, ctx, self.wake.set)
            handle.start(self.starting)
        call.handle = handle
        return call.deadline

    def _cancel(self, call: _SyncCall) -> ToolEnded | None:
        ended = self._ended(call)
        if ended is not None or call.handle is None:
            return ended
        return ToolNotStarted() if call.handle.cancel() else None

    def _detach(self, call: _SyncCall) -> None:
        handle = call.handle
        if isinstance(handle, LoopTool):
            handle.cancel()  # a second cancellation, for a tool that swallowed one
            handle.detach(_log_detached(call.job, in_thread=False))
        else:
            _log_detached(call.job, in_thread=True)

    def _ended(self, call: _SyncCall) -> ToolEnded | None:
        handle = call.handle
        if handle is None or handle.result is None:
            return None
        event = handle.result
        if isinstance(event, ToolRaised):
            call.raised = event.exception
        return self.executor._for_core(call.job, event)

    def _finish(self, call: _SyncCall, outcome: Outcome | None) -> None:
        self.active.remove(call)
        self.slots += 1
        self.threads += call.uses_thread
        if outcome is not None:
            self.outcomes[call.job.position] = outcome
            _log_outcome(call.job, outcome, call.raised)
        if call.observer is not None:
            call.observer.end(outcome, call.raised)


class _Wake:
    """An auto-resetting flag the tools raise when they end, and the driver sleeps on.

    A lock held while the flag is down: ``set`` releases it (once: a second ``set`` is a
    no-op), ``wait`` acquires it, which lowers the flag again. A tool publishes its result
    before it raises the flag, so an end is seen by the poll that follows the wait it
    interrupted, or it wakes the next wait. Cheaper to build than ``threading.Event``.
    """

    __slots__ = ("_down",)

    def __init__(self) -> None:
        self._down = threading.Lock()
        self._down.acquire()

    def set(self) -> None:
        """Raise the flag (thread-safe)."""
        with suppress(RuntimeError):  # already raised
            self._down.release()

    def wait(self, timeout: float) -> None:
        """Sleep until the flag is raised (lowering it) or ``timeout`` seconds pass."""
        self._down.acquire(timeout=timeout)


class Executor(_ExecutorBase[Store]):
    """Runs the tool calls of a finished ``Response`` at most once per idempotency key.

    ``store`` defaults to a private :class:`~toolwire.MemoryStore`. ``scope`` is required:
    the key space of the calls, usually tenant and conversation (calls in different
    scopes never share a record). ``timeout`` is the default per-tool timeout (a tool's
    own ``timeout`` wins; ``None`` is refused). ``lease`` is how long a claim lives
    without a heartbeat (heartbeats every ``heartbeat_interval``, default a third of
    it); ``retention`` how long a record is kept (after it, the call may run again), at
    least every timeout + ``cancel_grace`` + ``lease``. ``max_concurrency`` (``None``: no
    limit) bounds the calls of a run in flight, ``max_threads`` the sync tools running
    at once. ``retry_on`` lists the exceptions that release the claim like
    ``RetryableError`` (default ``(ConnectionError, TimeoutError, socket.gaierror)``:
    the downstream could not be reached or did not answer; ``()`` for none); they say
    "nothing happened": a tool whose downstream may act before the connection drops
    should forward ``ctx.idempotency_key``, or the executor be given ``retry_on=()``.
    ``error_text(exc, call) -> str`` decides what the model reads of an exception
    (default: ``Type: message``, cut to 500 characters); a hook that fails costs the
    default text and a log line. ``run_on_rejection`` runs the valid calls of a
    response that also has rejected ones. ``max_binary_bytes`` (default 10 MiB) bounds the
    images and files of one result (``toolwire.Image`` / ``toolwire.File``): a larger one
    is a ``failed`` outcome, recorded so. Settings that cannot hold the at-most-once
    promise raise :class:`~toolwire.SettingsError`, saying what to set.
    """

    def purge(self) -> int:
        """Delete the store's records past their retention; return how many."""
        return self.store.purge()

    def approve(self, key: str, *, arguments: dict[str, Any] | None = None) -> None:
        """Approve the call awaiting approval under ``key`` (``Outcome.idempotency_key``,
        ``PendingCall.key``): the next run of its response runs it, once. ``arguments``
        replace the model's: validated by the tool first (:class:`ArgumentsInvalid`, and
        nothing stored, if they do not fit), and recorded with the decision.
        :class:`ApprovalError` when no call awaits approval under ``key``."""
        store = self._decider()
        approvals.run(store, approvals.approve(key, arguments, self._check_edit))

    def deny(self, key: str, reason: str) -> None:
        """Deny the call awaiting approval under ``key``: it never runs; the next run of
        its response answers it ``denied``, with ``reason`` for the model.
        :class:`ApprovalError` when no call awaits approval under ``key``."""
        approvals.run(self._decider(), approvals.deny(key, reason))

    def pending(self, response: Response, *, turn: str | None = None) -> list[PendingCall]:
        """The calls of ``response`` (run with this ``turn``) that await approval."""
        gated = self._gated(response, turn)
        return _pending_of(gated, [self.store.get(key) for key, _job in gated])

    def run(self, response: Response, *, turn: str | None = None) -> list[Outcome]:
        """Run every call of ``response``; the outcomes, one per call, in call order.

        ``turn`` identifies the request that produced ``response`` (e.g. a digest of the
        request body) and is part of every call key: needed for a response that carries
        no response id, no timestamp and synthesised call ids (refused without it), and
        harmless otherwise; pass the same value when the same response runs again. A
        ``KeyboardInterrupt`` during the run is re-raised after the running calls have
        been finalised.
        """
        decided, jobs = self._prepare(response, turn)
        for job in jobs:
            if isinstance(job.tool.fn, MCPCall):  # its session lives on an event loop
                raise UsageError(
                    f"the tool {job.tool.name!r} calls an MCP server through its session, "
                    "which runs on an event loop: run it with toolwire.AsyncExecutor on that "
                    "loop (await executor.run(response)); nothing was run"
                )
        _observe_decided(decided)
        if jobs:
            with DeferredInterrupts() as guard:
                outcomes = _SyncRun(self, jobs, guard).drive()
            for job in jobs:
                decided[job.position] = outcomes[job.position]
        return [o for o in decided if o is not None]


# ------------------------------------------------------------------ the async driver


@dataclass(slots=True, eq=False)
class _AsyncCall:
    """Driver state of one call of ``AsyncExecutor.run``."""

    job: Job
    task: asyncio.Task[ToolEnded] | None = None
    thread: ThreadTool | None = None
    thread_done: asyncio.Future[None] | None = None
    deadline: float | None = None
    cancel: BaseException | None = None
    thrown: bool = False
    raised: BaseException | None = None
    yielded: bool = False
    observer: ToolObserver | None = None


class _AsyncRun:
    """One ``AsyncExecutor.run``: what its calls share (store access, bounds)."""

    def __init__(self, executor: AsyncExecutor, jobs: list[Job]) -> None:
        self.executor = executor
        self.loop = asyncio.get_running_loop()
        store: Any = executor.store
        self.store = store
        self.async_store = executor._async_store
        # MemoryStore is a lock and a dict: calling it inline is cheaper than any hand-off
        # (exactly MemoryStore: a subclass may block).
        self.inline = type(store) is MemoryStore
        self.lane = None if self.async_store or self.inline else StoreLane(store, self.loop)
        limit = executor.max_concurrency
        self.slots = asyncio.Semaphore(limit) if limit and limit < len(jobs) else None
        sync_jobs = sum(not job.tool.is_async for job in jobs)
        threads = executor.max_threads
        self.threads = asyncio.Semaphore(threads) if threads < sync_jobs else None

    async def guarded(self, job: Job) -> Outcome:
        """``drive`` within the run's bounds (waiting for a slot is cancellable: nothing
        is claimed before it)."""
        if self.slots is not None:
            await self.slots.acquire()
        try:
            if self.threads is not None and not job.tool.is_async:
                await self.threads.acquire()
                try:
                    return await self.drive(job)
                finally:
                    self.threads.release()
            return await self.drive(job)
        finally:
            if self.slots is not None:
                self.slots.release()

    async def drive(self, job: Job) -> Outcome:
        """Perform one call's commands until its flow returns; re-raise a cancellation
        after clean-up."""
        plan = job.plan
        call = _AsyncCall(
            job=job, observer=tool_observer(plan.name, plan.call_id, plan.claim.idempotency_key)
        )
        in_thread = not job.tool.is_async
        flow = drive_call(plan, in_thread=in_thread, cancel_grace=self.executor.cancel_grace)
        reply: Any = None
        throw: BaseException | None = None
        while True:
            try:
                command = flow.send(reply) if throw is None else flow.throw(throw)
            except StopIteration as stop:
                _log_outcome(job, stop.value, call.raised)
                return self._end(call, stop.value, call.raised)
            except Exception as exc:
                return self._end(call, _internal_error(job, exc), exc)
            reply, throw = None, None
            if call.cancel is not None and not call.thrown:
                call.thrown, throw = True, call.cancel  # in place of the command
                continue
            try:
                reply = await self._perform(command, call)
            except asyncio.CancelledError as exc:  # only an interruptible wait lets it through
                if call.cancel is None:
                    call.cancel = exc
                call.thrown, throw = True, call.cancel
            except Exception as exc:
                throw = exc

    def _end(self, call: _AsyncCall, outcome: Outcome, raised: BaseException | None) -> Outcome:
        if call.observer is not None:
            call.observer.end(outcome, raised)
        if call.cancel is not None:
            raise call.cancel from None
        return outcome

    async def _perform(self, command: DriverCommand, call: _AsyncCall) -> Any:
        """Perform one command of the call's flow."""
        if isinstance(command, WaitTool):
            return await self._wait(command, call)
        if isinstance(command, StartTool):
            return self._start(command, call)
        if isinstance(command, CancelTool):
            return self._cancel(call)
        if isinstance(command, DetachTool):
            return self._detach(call)
        if isinstance(command, KeepTool):
            return self._keep(command, call)
        if self.inline:
            return perform_store(self.store, command)
        if self.lane is not None:
            return await self._shielded(call, self.lane.submit(command))
        return await self._shielded(call, perform_async_store(self.store, command))

    async def _wait(self, wait: WaitTool, call: _AsyncCall) -> Woke:
        ended = self._ended(call)
        if ended is None and call.task is not None and not call.yielded:
            # One pass of the loop runs the new task's first step (it was scheduled
            # first): a tool that returns without awaiting is done then, with no
            # timer and no wake-up future.
            call.yielded = True
            await asyncio.sleep(0)
            ended = self._ended(call)
        if ended is None:
            waiter: asyncio.Future[Any] | None = call.task or call.thread_done
            assert waiter is not None
            until_done = _until_done(waiter, _remaining(wait.seconds, wait.deadline))
            if wait.interruptible:
                await until_done
            else:
                await self._shielded(call, until_done)
            ended = self._ended(call)
        return Woke(ended, time.monotonic())

    def _start(self, command: StartTool, call: _AsyncCall) -> float | None:
        job = call.job
        if command.arguments is not None:
            self.executor._edited(job, command.arguments)
        call.deadline = _deadline(command.timeout)
        ctx = _context(job, call.deadline)
        if job.tool.is_async:
            # the task copies the current context: the tool's own spans nest under its call's
            with call.observer.current() if call.observer is not None else nullcontext():
                call.task = self.loop.create_task(invoke_async(job.check, ctx))
            return call.deadline
        done: asyncio.Future[None] = self.loop.create_future()
        loop = self.loop

        def wake() -> None:  # on the worker: the result is already published
            loop.call_soon_threadsafe(_settle, done)

        thread = ThreadTool(job.check, ctx, wake)
        thread.start()
        call.thread, call.thread_done = thread, done
        return call.deadline

    def _cancel(self, call: _AsyncCall) -> ToolEnded | None:
        ended = self._ended(call)
        if ended is not None:
            return ended
        if call.task is not None:
            call.task.cancel()
            return None
        if call.thread is not None and call.thread.cancel():
            return ToolNotStarted()
        return None

    def _detach(self, call: _AsyncCall) -> None:
        if call.task is not None:
            call.task.cancel()  # a tool that swallowed one cancellation gets a second
            call.task.add_done_callback(_log_detached(call.job, in_thread=False))
        else:
            _log_detached(call.job, in_thread=True)

    def _keep(self, command: KeepTool, call: _AsyncCall) -> bool:
        """Hand a thread tool past its timeout to the keeper, whose thread calls a sync
        store itself and an ``AsyncStore`` on this loop (while the loop runs)."""
        perform: Callable[[Command], Any]
        if self.async_store:
            store, loop, wait = self.store, self.loop, self.executor.lease

            def perform(command: Command) -> Any:
                coroutine = perform_async_store(store, command)
                try:
                    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
                except BaseException:  # the loop has closed: the beat is missed
                    coroutine.close()
                    raise
                return future.result(wait)
        else:
            perform = partial(perform_store, self.store)
        return self.executor._keep(call.job, call.thread, command.fence, call.deadline, perform)

    def _ended(self, call: _AsyncCall) -> ToolEnded | None:
        """How the tool ended, if it has (a thread's result is read as soon as published)."""
        event: ToolEnded | None = None
        if call.task is not None:
            if call.task.done():
                event = task_end(call.task)
        elif call.thread is not None:
            event = call.thread.result
        if event is None:
            return None
        if isinstance(event, ToolRaised):
            call.raised = event.exception
        return self.executor._for_core(call.job, event)

    async def _shielded(self, call: _AsyncCall, step: Awaitable[T]) -> T:
        """Run ``step`` to completion even if the caller cancels meanwhile.

        The cancellation is remembered in ``call.cancel`` and handed to the flow in place
        of the next command, once the flow knows the result of this step; a cancellation
        that lands as the step completes keeps the step's result.
        """
        future = asyncio.ensure_future(step)
        while True:
            try:
                return await asyncio.shield(future)
            except asyncio.CancelledError as exc:
                if call.cancel is None:
                    call.cancel = exc
                if future.done():
                    return future.result()


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


async def _until_done(future: asyncio.Future[Any], timeout: float) -> None:
    """Wait until ``future`` is done or ``timeout`` seconds pass (never raises its result,
    never cancels it). ``asyncio.wait`` for one future, without its set bookkeeping."""
    if future.done():
        return
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not woken.done():
            woken.set_result(None)

    timer = loop.call_later(timeout, wake)
    future.add_done_callback(wake)
    try:
        await woken
    finally:
        timer.cancel()
        future.remove_done_callback(wake)


class AsyncExecutor(_ExecutorBase[Store | AsyncStore]):
    """The asyncio twin of :class:`Executor`: ``await executor.run(response)``.

    ``store`` may be a synchronous ``Store`` (``MemoryStore`` is called inline, any other
    on a worker thread in batches) or an ``AsyncStore``; the other arguments are those of
    :class:`Executor`. By default every async tool of a response runs at once; sync tools
    run on at most ``max_threads`` threads.
    """

    async def purge(self) -> int:
        """Delete the store's records past their retention; return how many."""
        store: Any = self.store
        if self._async_store:
            count: int = await store.purge()
        elif type(store) is MemoryStore:
            count = store.purge()
        else:
            count = await asyncio.to_thread(store.purge)
        return count

    async def approve(self, key: str, *, arguments: dict[str, Any] | None = None) -> None:
        """:meth:`Executor.approve`, awaited."""
        store = self._decider()
        flow = approvals.approve(key, arguments, self._check_edit)
        await _run_async(store, flow, native=self._async_store)

    async def deny(self, key: str, reason: str) -> None:
        """:meth:`Executor.deny`, awaited."""
        flow = approvals.deny(key, reason)
        await _run_async(self._decider(), flow, native=self._async_store)

    async def pending(self, response: Response, *, turn: str | None = None) -> list[PendingCall]:
        """:meth:`Executor.pending`, awaited."""
        gated = self._gated(response, turn)
        records = [
            await _run_async(self.store, _read(key), native=self._async_store) for key, _ in gated
        ]
        return _pending_of(gated, records)

    async def run(self, response: Response, *, turn: str | None = None) -> list[Outcome]:
        """Run every call of ``response``; the outcomes, one per call, in call order.

        ``turn`` is as for :meth:`Executor.run`. Cancelling the task that awaits ``run``
        cancels every call (finalising running ones in shielded steps) and then re-raises
        ``CancelledError``.
        """
        decided, jobs = self._prepare(response, turn)
        _observe_decided(decided)
        if len(jobs) == 1:
            [job] = jobs
            decided[job.position] = await _AsyncRun(self, jobs).drive(job)
        elif jobs:
            run = _AsyncRun(self, jobs)
            tasks = [run.loop.create_task(run.guarded(job)) for job in jobs]
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


def _read(key: str) -> Any:
    record = yield GetRequest(key)
    return record


async def _wait_through_cancellation(tasks: Sequence[asyncio.Future[Any]]) -> None:
    """Wait until every task has finished, even if cancelled again meanwhile."""
    pending = [t for t in tasks if not t.done()]
    while pending:
        with suppress(asyncio.CancelledError):  # the caller re-raises the first one
            await asyncio.wait(pending)
        pending = [t for t in pending if not t.done()]
