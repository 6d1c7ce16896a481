"""The keeper of tools that outlived their timeout: a thread cannot be stopped, so its call
stays claimed (heartbeated) while it runs, and its late end is recorded.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._core.outcome import Outcome
from .decisions import AwaitTool, CallFlow, CallPlan, Command, ToolEnded, ToolPending, keep_running
from .workers import ThreadTool

__all__ = ["RunawayCall"]  # the keeper itself is the executors' business

logger = logging.getLogger("toolwire.executor")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunawayCall:
    """A tool call whose body is still running in this process after its timeout.

    Its record stays claimed (``in_progress``, the lease renewed by heartbeats) until the
    body ends, and then holds the body's own result. ``running_for`` is the seconds since
    the tool started; ``timeout`` the one it outlived.
    """

    tool_name: str
    call_id: str
    key: str
    idempotency_key: str
    timeout: float | None
    running_for: float


@dataclass(slots=True, eq=False)
class _Kept:
    """One kept call: its continuation and how to perform, prepare and report."""

    plan: CallPlan
    handle: ThreadTool
    flow: CallFlow
    command: Command
    perform: Callable[[Command], Any]
    prepare: Callable[[ToolEnded], ToolEnded]
    report: Callable[[Outcome], None]
    started: float
    wake_at: float
    warn_at: float


class Keeper:
    """The runaway calls of one executor and the thread that keeps them claimed."""

    def __init__(self, retention: float) -> None:
        self._retention = retention
        self._lock = threading.Lock()
        self._calls: list[_Kept] = []
        self._thread: threading.Thread | None = None
        self._wake = threading.Event()
        _keepers.add(self)

    def keep(
        self,
        *,
        plan: CallPlan,
        fence: int,
        handle: ThreadTool,
        started: float,
        perform: Callable[[Command], Any],
        prepare: Callable[[ToolEnded], ToolEnded],
        report: Callable[[Outcome], None],
    ) -> bool:
        """Take over a call whose tool is still running; ``False`` if no thread can keep it."""
        flow = keep_running(plan, fence)
        now = time.monotonic()
        kept = _Kept(
            plan=plan,
            handle=handle,
            flow=flow,
            command=next(flow),  # the first wait: pure, no I/O
            perform=perform,
            prepare=prepare,
            report=report,
            started=started,
            wake_at=now + plan.heartbeat_interval,
            warn_at=started + self._retention,
        )
        handle.notify(self._wake.set)  # the loop reads ``result`` after this: no end is missed
        with self._lock:
            self._calls.append(kept)
            if self._thread is None:
                thread = threading.Thread(target=self._main, name="toolwire-keeper", daemon=True)
                try:
                    thread.start()
                except Exception:  # no thread: the core records the doubt itself
                    self._calls.remove(kept)
                    flow.close()
                    return False
                self._thread = thread
        self._wake.set()
        message = (
            "tool %r call %s (key %s) did not finish within %s s and is still running (a thread "
            "cannot be stopped); its call stays claimed while it runs and its own result "
            "will be recorded when it ends"
        )
        logger.warning(message, *_who(plan), plan.timeout, extra=_fields(plan, "in_progress"))
        return True

    def runaways(self) -> list[RunawayCall]:
        """The calls kept right now, oldest first."""
        now = time.monotonic()
        with self._lock:
            calls = list(self._calls)
        return [
            RunawayCall(
                tool_name=kept.plan.name,
                call_id=kept.plan.call_id,
                key=kept.plan.claim.key,
                idempotency_key=kept.plan.claim.idempotency_key,
                timeout=kept.plan.timeout,
                running_for=now - kept.started,
            )
            for kept in sorted(calls, key=lambda kept: kept.started)
        ]

    def _main(self) -> None:
        while True:
            self._wake.clear()  # cleared before the poll: an end published later wakes us
            with self._lock:
                calls = list(self._calls)
                if not calls:
                    self._thread = None
                    return
            for kept in calls:
                try:
                    done = self._step(kept)
                except Exception:  # a bug must cost this one call's keeping, not all
                    message = "internal error while keeping tool %r call %s (key %s)"
                    extra = _fields(kept.plan, "unknown")
                    logger.exception(message, *_who(kept.plan), extra=extra)
                    done = True
                if done:
                    with self._lock:
                        self._calls.remove(kept)
            with self._lock:
                earliest = min((kept.wake_at for kept in self._calls), default=0.0)
            self._wake.wait(max(0.0, earliest - time.monotonic()))

    def _step(self, kept: _Kept) -> bool:
        """Advance one kept call as far as it can go now; whether it has ended."""
        now = time.monotonic()
        if now >= kept.warn_at:
            kept.warn_at += self._retention
            message = (
                "tool %r call %s (key %s) has been running for %.1f s, past the retention (%g s); "
                "its call stays claimed while it runs, but if this process stops, the call "
                "becomes unknown and, once its record expires, may run again"
            )
            args = (*_who(kept.plan), now - kept.started, self._retention)
            logger.warning(message, *args, extra=_fields(kept.plan, "in_progress"))
        ended = kept.handle.result
        if ended is not None:
            value: Any = kept.prepare(ended)
        elif now >= kept.wake_at:
            value = ToolPending()
        else:
            return False
        throw: Exception | None = None
        while True:
            try:
                command = kept.flow.throw(throw) if throw is not None else kept.flow.send(value)
            except StopIteration as stop:
                outcome: Outcome = stop.value
                kept.report(outcome)
                return True
            value, throw = None, None
            kept.command = command
            if isinstance(command, AwaitTool):
                kept.wake_at = time.monotonic() + command.interval
                return False
            try:
                value = kept.perform(command)
            except Exception as exc:
                throw = exc


def _who(plan: CallPlan) -> tuple[str, str, str]:
    """The call a log line is about: tool name, call id, idempotency key."""
    return plan.name, plan.call_id, plan.claim.idempotency_key


def _fields(plan: CallPlan, status: str) -> dict[str, Any]:
    return {
        "tool_name": plan.name,
        "call_id": plan.call_id,
        "idempotency_key": plan.claim.idempotency_key,
        "status": status,
        "replayed": False,
    }


_keepers: weakref.WeakSet[Keeper] = weakref.WeakSet()


def _warn_at_exit() -> None:
    """A body still running when the interpreter exits dies with it, unrecorded: say so."""
    for keeper in list(_keepers):
        for call in keeper.runaways():
            message = (
                "at interpreter exit, tool %r call %s (key %s) is still running %.1f s after "
                "it started; it dies with the process: its call stays in_progress until "
                "its lease runs out and then becomes unknown, to be settled by hand"
            )
            args = (call.tool_name, call.call_id, call.idempotency_key, call.running_for)
            extra = {
                "tool_name": call.tool_name,
                "call_id": call.call_id,
                "idempotency_key": call.idempotency_key,
                "status": "in_progress",
                "replayed": False,
            }
            logger.warning(message, *args, extra=extra)


def _after_fork_in_child() -> None:
    # The child has none of the parent's threads: nothing of theirs runs here to keep.
    for keeper in list(_keepers):
        keeper._lock = threading.Lock()
        keeper._calls = []
        keeper._thread = None


atexit.register(_warn_at_exit)
os.register_at_fork(after_in_child=_after_fork_in_child)
