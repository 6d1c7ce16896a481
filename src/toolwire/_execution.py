"""The sans-IO decision core of idempotent execution: one generator per tool call.

Strategy. :func:`execute_call` is a generator (the shape of httpx's ``Auth.auth_flow``):
it yields *commands* (claim the call, start the tool, wait for it, heartbeat, abandon it,
finish or release the record) and receives each command's result through ``send``, or the
exception it raised through ``throw``; it returns the call's :class:`~toolwire.Outcome`.
It holds no clock, no thread, no socket and no store: the two drivers in
:mod:`toolwire._executor` (threads, asyncio) perform the commands, and the model test drives
it step by step to interleave workers and inject crashes. Every policy decision lives
here, once:

- claim first (G10): a claim that raises means the tool never runs; the outcome is
  ``failed`` with a ``StoreError`` message (nothing ran, nothing was recorded as done, so
  a later run may try again);
- a claim not acquired is reported from the existing record: ``conflict`` (other args
  hash), ``replayed`` (completed: the stored JSON text, byte for byte), ``failed``
  (a stored failure), ``unknown``, ``in_progress``;
- while the tool runs, every ``AwaitTool`` that comes back pending is followed by a
  heartbeat; a heartbeat answered ``False`` means the lease is lost: the tool is abandoned
  and the outcome is ``unknown`` (another worker may have taken over). A heartbeat that
  *raises* is tolerated: every later write is fenced, so a missed beat can cost the call
  its record (it turns ``unknown``) but never allows a second owner to be overwritten;
- the tool returned: ``finish(completed, result_json)``; it raised ``RetryableError``:
  ``release``; it raised another ``Exception``: ``finish(failed)``; it raised a
  ``BaseException`` (its own cancellation, ``SystemExit``): ``finish(unknown)``;
- the deadline passed: the tool is abandoned (an async task is cancelled, a thread cannot
  be) and the record is finished ``unknown``; the outcome is ``timed_out``. Whenever the
  effect is in doubt like this (timeout, cancellation, the tool's own ``BaseException``)
  and the tool is declared ``idempotent=True``, the claim is released instead, so that a
  later run repeats the call rather than reporting ``unknown`` forever;
- a final write that is refused or raises leaves the outcome ``unknown``: the store does
  not hold the result, so the caller must not treat it as durable (the tool's value is
  still attached to the outcome);
- the caller's cancellation (thrown in as a ``BaseException`` that is not an
  ``Exception``) before the tool started releases the claim; while the tool runs it
  abandons the tool and finishes the record ``unknown``; the cancellation is re-raised.

Drivers deliver a cancellation only at *interruptible* commands (``ClaimCall``,
``StartTool``, ``AwaitTool``, ``Heartbeat``); store writes in flight complete first, so
the core always knows whether it holds a claim. Closing the generator (``GeneratorExit``:
its driver died) yields nothing more, as a crashed process would not.

Cost: O(1) per command; a call takes 2 + 2 x (tool duration / heartbeat interval) + 2
commands.
"""

from __future__ import annotations

import json
from collections.abc import Generator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any, ClassVar

from ._errors import RetryableError
from ._outcome import Outcome, OutcomeStatus
from .stores._protocol import Claim, FinalStatus, Record

__all__ = [
    "AbandonTool",
    "AwaitTool",
    "CallPlan",
    "ClaimCall",
    "Command",
    "FinishCall",
    "Heartbeat",
    "ReleaseCall",
    "StartTool",
    "ToolPending",
    "ToolRaised",
    "ToolReturned",
    "ToolTimedOut",
    "execute_call",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class CallPlan:
    """Everything the core needs to decide about one validated call (no I/O handles)."""

    call_id: str
    name: str
    key: str
    args_hash: str
    idempotency_key: str
    owner: str
    lease: float
    retention: float
    heartbeat_interval: float
    idempotent: bool
    timeout: float | None


# ------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimCall:
    """Claim the call in the store; the driver sends back the store's ``Claim``."""

    interruptible: ClassVar[bool] = True
    key: str
    args_hash: str
    idempotency_key: str
    owner: str
    lease: float
    retention: float
    reclaim: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StartTool:
    """Start the tool (thread or task) with a context carrying the idempotency key and an
    absolute deadline of now + ``timeout``; the driver sends back ``None``."""

    interruptible: ClassVar[bool] = True
    fence: int
    timeout: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class AwaitTool:
    """Wait up to ``interval`` seconds (and no later than the deadline) for the tool; the
    driver sends back ``ToolReturned``, ``ToolRaised``, ``ToolTimedOut`` or ``ToolPending``."""

    interruptible: ClassVar[bool] = True
    interval: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Heartbeat:
    """Extend the lease; the driver sends back the store's ``bool``."""

    interruptible: ClassVar[bool] = True
    key: str
    owner: str
    fence: int
    lease: float


@dataclass(frozen=True, slots=True, kw_only=True)
class AbandonTool:
    """Stop waiting for the tool: cancel an async task (a thread cannot be stopped)."""

    interruptible: ClassVar[bool] = False
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishCall:
    """Write the final record (fenced); the driver sends back the store's ``bool``."""

    interruptible: ClassVar[bool] = False
    key: str
    owner: str
    fence: int
    status: FinalStatus
    result: str | None
    error: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReleaseCall:
    """Delete the claim (fenced) so a later run may execute; sends back the ``bool``."""

    interruptible: ClassVar[bool] = False
    key: str
    owner: str
    fence: int


Command = ClaimCall | StartTool | AwaitTool | Heartbeat | AbandonTool | FinishCall | ReleaseCall


# ------------------------------------------------------------ what AwaitTool reports


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolReturned:
    """The tool returned ``value``, serialised as ``result_json``."""

    value: Any
    result_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRaised:
    """The tool (or the serialisation of its value) raised ``exception``."""

    exception: BaseException


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPending:
    """The interval passed and the tool is still running."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolTimedOut:
    """The tool's deadline passed before it finished."""

    timeout: float | None


ToolEvent = ToolReturned | ToolRaised | ToolPending | ToolTimedOut
CallFlow = Generator[Command, Any, Outcome]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Held:
    """The claim the core holds: every write after the claim is fenced on all three."""

    key: str
    owner: str
    fence: int


_NOT_DURABLE = "; the store did not record it, so the outcome is in doubt"


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _outcome(
    plan: CallPlan,
    status: OutcomeStatus,
    *,
    error: str | None = None,
    value: Any = None,
    result_json: str | None = None,
) -> Outcome:
    return Outcome(
        call_id=plan.call_id,
        name=plan.name,
        status=status,
        value=value,
        error=error,
        idempotency_key=plan.idempotency_key,
        result_json=result_json,
    )


def report_record(plan: CallPlan, record: Record) -> Outcome:
    """The outcome of a call whose claim was not acquired, read from the existing record."""
    if record.args_hash != plan.args_hash:
        return _outcome(
            plan,
            "conflict",
            error=f"call {plan.call_id!r} of {plan.name!r} was seen before with different "
            "arguments; it was neither run nor replayed",
        )
    if record.status == "completed":
        text = record.result
        try:
            value = json.loads(text) if text is not None else None
        except ValueError:
            return _outcome(plan, "unknown", error="the stored result is not valid JSON")
        return _outcome(plan, "replayed", value=value, result_json=text)
    if record.status == "failed":
        return _outcome(plan, "failed", error=record.error or "the tool failed")
    if record.status == "unknown":
        return _outcome(
            plan, "unknown", error=record.error or "the tool may have run; it is not re-run"
        )
    return _outcome(plan, "in_progress", error="another worker is running this call")


def execute_call(plan: CallPlan) -> CallFlow:
    """Decide one call: yield commands, receive their results, return the ``Outcome``."""
    try:
        claim: Claim = yield ClaimCall(
            key=plan.key,
            args_hash=plan.args_hash,
            idempotency_key=plan.idempotency_key,
            owner=plan.owner,
            lease=plan.lease,
            retention=plan.retention,
            reclaim=plan.idempotent,
        )
    except Exception as exc:
        # Fail closed (G10): without a durable claim the tool must not run.
        return _outcome(
            plan, "failed", error=f"StoreError: could not claim the call, it did not run: {exc}"
        )
    if not claim.acquired:
        return report_record(plan, claim.record)

    fence = claim.record.fence
    held = _Held(key=plan.key, owner=plan.owner, fence=fence)
    try:
        yield StartTool(fence=fence, timeout=plan.timeout)
    except Exception as exc:
        # The tool could not be started (no thread available...): nothing ran.
        yield from _release_quietly(held)
        return _outcome(plan, "failed", error=f"the tool could not be started: {exc}")
    except GeneratorExit:
        raise  # the driver is gone (a crashed worker): nothing more can be done
    except BaseException:
        # Cancelled between claim and start: nothing ran, give the call back.
        yield from _release_quietly(held)
        raise

    while True:
        try:
            event: ToolEvent = yield AwaitTool(interval=plan.heartbeat_interval)
        except GeneratorExit:
            raise
        except BaseException:
            yield from _abandon(held, plan.idempotent, "cancelled while the tool was running")
            raise
        if not isinstance(event, ToolPending):
            break
        try:
            alive = yield Heartbeat(
                key=held.key, owner=held.owner, fence=held.fence, lease=plan.lease
            )
        except Exception:
            continue  # fenced writes keep a missed beat safe; try again next interval
        except GeneratorExit:
            raise
        except BaseException:
            yield from _abandon(held, plan.idempotent, "cancelled while the tool was running")
            raise
        if not alive:
            yield AbandonTool(reason="lease lost")
            return _outcome(
                plan,
                "unknown",
                error="the lease was lost while the tool was running; its effect is in doubt",
            )

    if isinstance(event, ToolTimedOut):
        yield AbandonTool(reason="timed out")
        message = f"the tool did not finish within {event.timeout} s; its effect is in doubt"
        yield from _in_doubt(held, plan.idempotent, message)
        return _outcome(plan, "timed_out", error=message)

    if isinstance(event, ToolReturned):
        stored = yield from _finish_quietly(held, "completed", event.result_json, None)
        if stored:
            return _outcome(plan, "completed", value=event.value, result_json=event.result_json)
        return _outcome(
            plan,
            "unknown",
            error="the tool returned" + _NOT_DURABLE,
            value=event.value,
            result_json=event.result_json,
        )

    raised = event.exception
    message = _describe(raised)
    if isinstance(raised, RetryableError):
        released = yield from _release_quietly(held)
        if released:
            return _outcome(plan, "failed", error=message)
        return _outcome(plan, "unknown", error=message + _NOT_DURABLE)
    if not isinstance(raised, Exception):
        # The tool was interrupted from inside (its own cancellation, SystemExit).
        yield from _in_doubt(held, plan.idempotent, message)
        return _outcome(plan, "unknown", error=message)
    stored = yield from _finish_quietly(held, "failed", None, message)
    if stored:
        return _outcome(plan, "failed", error=message)
    return _outcome(plan, "unknown", error=message + _NOT_DURABLE)


def _finish_quietly(
    held: _Held, status: FinalStatus, result: str | None, error: str | None
) -> Generator[Command, Any, bool]:
    """Finish the record; a store error counts as not recorded (the record stays in doubt)."""
    try:
        stored: bool = yield FinishCall(
            key=held.key,
            owner=held.owner,
            fence=held.fence,
            status=status,
            result=result,
            error=error,
        )
    except Exception:
        return False
    return bool(stored)


def _release_quietly(held: _Held) -> Generator[Command, Any, bool]:
    """Release the claim; a store error leaves it to expire into ``unknown``."""
    try:
        released: bool = yield ReleaseCall(key=held.key, owner=held.owner, fence=held.fence)
    except Exception:
        return False
    return bool(released)


def _in_doubt(held: _Held, idempotent: bool, message: str) -> Generator[Command, Any, None]:
    """The effect is in doubt: record ``unknown``, or, for a tool that is safe to repeat,
    give the call back so that a later run executes it again."""
    if idempotent:
        yield from _release_quietly(held)
    else:
        yield from _finish_quietly(held, "unknown", None, message)


def _abandon(held: _Held, idempotent: bool, message: str) -> Generator[Command, Any, None]:
    """Stop the tool and settle its record as in doubt (the cancellation path)."""
    with suppress(Exception):  # abandoning is best effort; the record below is what matters
        yield AbandonTool(reason=message)
    yield from _in_doubt(held, idempotent, message)
