"""The sans-IO decision core of idempotent execution: one generator per tool call.

:func:`execute_call` yields commands (claim, start, await, heartbeat, abandon, keep,
finish, release), receives their results, and returns the call's :class:`~toolwire.Outcome`.
:func:`drive_call`, the flow the drivers run, spells the tool commands out in primitives
(start, wait, cancel, detach, keep) and delivers the caller's cancellation at a safe point.
Every policy decision lives here, once; the drivers only perform commands. O(1) per command.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Literal

from .._core.content import decode_result
from .._core.outcome import Outcome, OutcomeStatus
from .._errors import EffectInDoubt, RetryableError
from ..stores._protocol import Claim, FinalStatus, Record
from ..stores._requests import ClaimRequest, FinishRequest, HeartbeatRequest, ReleaseRequest
from .approvals import AWAITING, Decision, read_decision

__all__ = [
    "INTERRUPTIBLE",
    "AbandonTool",
    "ApprovalGate",
    "AwaitTool",
    "CallPlan",
    "CancelTool",
    "ClaimCall",
    "Command",
    "DetachTool",
    "DriverCommand",
    "DriverFlow",
    "FinishCall",
    "Heartbeat",
    "KeepTool",
    "ReleaseCall",
    "StartTool",
    "ToolNotStarted",
    "ToolPending",
    "ToolRaised",
    "ToolReturned",
    "ToolTimedOut",
    "ToolUnstorable",
    "WaitTool",
    "Woke",
    "drive_call",
    "execute_call",
    "keep_running",
]


@dataclass(slots=True, kw_only=True)
class CallPlan:
    """Everything the core needs to decide about one validated call (no I/O handles).

    ``claim`` is the call's first command, with its key, arguments hash, idempotency key,
    owner, lease and retention; its ``reclaim`` is whether the tool is declared
    idempotent (safe to repeat). ``retry_on`` names the exception types that, like
    :class:`RetryableError`, mean "nothing happened, the call may run again": the claim is
    released instead of a failure being recorded.
    """

    call_id: str
    name: str
    claim: ClaimCall
    heartbeat_interval: float
    timeout: float | None
    retry_on: tuple[type[Exception], ...] = ()
    approval: ApprovalGate | None = None


@dataclass(slots=True, kw_only=True)
class ApprovalGate:
    """The approval a call waits for: ``park`` claims its approval record (see
    :mod:`toolwire._execution.approvals`), which is then finished ``unknown`` with
    ``details`` (the call's JSON, for whoever decides) while no decision is stored."""

    park: ClaimRequest
    details: str


# ------------------------------------------------------------------------- commands

# The store commands are the stores' own checked requests (toolwire.stores._requests):
# the core yields what a store performs, each field declared once. The driver performs
# each with the store method of its name and sends back the store's answer.
ClaimCall = ClaimRequest
"""Claim the call in the store; the driver sends back the store's ``Claim``."""
Heartbeat = HeartbeatRequest
"""Extend the lease; the driver sends back the store's ``bool``."""
FinishCall = FinishRequest
"""Write the final record (fenced); the driver sends back the store's ``bool``."""
ReleaseCall = ReleaseRequest
"""Delete the claim (fenced) so a later run may execute; sends back the ``bool``."""


@dataclass(slots=True, kw_only=True)
class StartTool:
    """Start the tool (thread or task) with a context carrying the idempotency key and an
    absolute deadline of now + ``timeout``; the driver sends back ``None``."""

    fence: int
    timeout: float | None
    arguments: dict[str, Any] | None = None
    """The arguments a person approved instead of the model's, or ``None``: the driver
    validates them again and runs the tool on them (a failure: the tool could not start)."""


@dataclass(slots=True, kw_only=True)
class AwaitTool:
    """Wait up to ``interval`` seconds (and no later than the deadline) for the tool; the
    driver sends back the tool's final event (``ToolReturned``, ``ToolUnstorable``,
    ``ToolRaised``), ``ToolTimedOut`` or ``ToolPending``."""

    interval: float


AbandonReason = Literal["timed out", "cancelled", "lease lost"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AbandonTool:
    """Let go of the tool; the driver sends back its final event if it has ended, else
    ``None``.

    An async task is cancelled and given the driver's grace period to end. A thread
    cannot be stopped: it is waited for (up to the grace) only when the reason is the
    caller's cancellation, since on a timeout or a lost lease it has already overrun.
    """

    reason: AbandonReason


@dataclass(frozen=True, slots=True, kw_only=True)
class KeepTool:
    """Hand a tool still running past its timeout to the driver's keeper, which drives
    :func:`keep_running` with this ``fence`` until the tool ends; the driver sends back
    whether it took the call (``False``: the core records the doubt itself)."""

    fence: int


Command = (
    ClaimCall
    | StartTool
    | AwaitTool
    | Heartbeat
    | AbandonTool
    | KeepTool
    | FinishCall
    | ReleaseCall
)

INTERRUPTIBLE: frozenset[type[Command]] = frozenset({ClaimCall, StartTool, AwaitTool, Heartbeat})
"""The commands at which a driver may deliver the caller's cancellation (the others are
store writes that complete first, and letting go of the tool)."""


# ------------------------------------------------------------ what AwaitTool reports


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolReturned:
    """The tool returned ``value``, serialised as ``result_json``."""

    value: Any
    result_json: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUnstorable:
    """The tool returned ``value``, which JSON cannot carry (``reason`` says why): its
    effect happened, but its result cannot be stored or replayed."""

    value: Any
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolRaised:
    """The tool raised ``exception``; ``text`` is what the model is to read of it (the
    driver's ``error_text``), ``None`` for the core's default ``Type: message``."""

    exception: BaseException
    text: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolNotStarted:
    """The tool never began: it was let go before its thread or task started it, so
    nothing ran (the claim is released)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolPending:
    """The interval passed and the tool is still running."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolTimedOut:
    """The tool's deadline passed before it finished."""

    timeout: float | None


ToolEnded = ToolReturned | ToolUnstorable | ToolRaised | ToolNotStarted
ToolEvent = ToolEnded | ToolPending | ToolTimedOut
CallFlow = Generator[Command, Any, Outcome]


_NOT_DURABLE = "; the store did not record it, so the outcome is in doubt"
_CANCELLED = "cancelled while the tool was running"


def describe(exc: BaseException) -> str:
    """``Type: message`` (or ``Type`` alone when the message is empty)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _outcome(
    plan: CallPlan,
    status: OutcomeStatus,
    *,
    error: str | None = None,
    value: Any = None,
    result_json: str | None = None,
    replayed: bool = False,
) -> Outcome:
    return Outcome(
        call_id=plan.call_id,
        name=plan.name,
        status=status,
        value=value,
        error=error,
        idempotency_key=plan.claim.idempotency_key,
        result_json=result_json,
        replayed=replayed,
    )


def report_record(plan: CallPlan, record: Record) -> Outcome:
    """The outcome of a call whose claim was not acquired, read from the existing record.

    What the record says about an earlier run (completed, failed, unknown) is marked
    ``replayed``; a conflict or a call another worker holds is news, not a replay.
    """
    if record.args_hash != plan.claim.args_hash:
        return _outcome(
            plan,
            "conflict",
            error=f"call {plan.call_id!r} of {plan.name!r} was seen before with different "
            "arguments; it was neither run nor replayed",
        )
    if record.status == "completed":
        text = record.result
        try:
            value = decode_result(text) if text is not None else None
        except ValueError:
            return _outcome(
                plan, "unknown", error="the stored result is not valid JSON", replayed=True
            )
        return _outcome(plan, "replayed", value=value, result_json=text, replayed=True)
    if record.status == "failed":
        return _outcome(plan, "failed", error=record.error or "the tool failed", replayed=True)
    if record.status == "unknown":
        return _outcome(
            plan,
            "unknown",
            error=record.error or "the tool may have run; it is not re-run",
            replayed=True,
        )
    return _outcome(plan, "in_progress", error="another worker is running this call")


def execute_call(plan: CallPlan) -> CallFlow:
    """Decide one call: yield commands, receive their results, return the ``Outcome``."""
    edited: dict[str, Any] | None = None
    if plan.approval is not None:
        gate = yield from _approval(plan, plan.approval)
        if isinstance(gate, Outcome):
            return gate
        edited = gate.arguments
    try:
        claim: Claim = yield plan.claim
    except Exception as exc:
        # Fail closed: without a durable claim the tool must not run.
        return _outcome(
            plan, "failed", error=f"StoreError: could not claim the call, it did not run: {exc}"
        )
    if not claim.acquired:
        return report_record(plan, claim.record)

    fence = claim.record.fence
    # The claim the core holds is the release that would give it back: every write after
    # the claim is fenced on its key, owner and fence.
    held = ReleaseCall(plan.claim.key, plan.claim.owner, fence)
    try:
        yield StartTool(fence=fence, timeout=plan.timeout, arguments=edited)
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
            yield from _cancelled(plan, held)
            raise
        if not isinstance(event, ToolPending):
            break
        alive = yield from _beat(plan, held)
        if not alive:
            return (yield from _lease_lost(plan))
    if isinstance(event, ToolTimedOut):
        return (yield from _timed_out(plan, held, event))
    return (yield from _settle(plan, held, event))


def _lease_lost(plan: CallPlan) -> CallFlow:
    """Another worker may take the call over now: let the tool go; the effect is in doubt."""
    ended = yield from _let_go("lease lost")
    returned = ended if isinstance(ended, (ToolReturned, ToolUnstorable)) else None
    return _outcome(
        plan,
        "unknown",
        error="the lease was lost while the tool was running; its effect is in doubt",
        value=None if returned is None else returned.value,
    )


def _beat(plan: CallPlan, held: ReleaseCall) -> Generator[Command, Any, bool]:
    """Extend the lease; whether it is still held (a failed beat counts as held: fenced
    writes keep a missed beat safe, the next interval tries again)."""
    try:
        alive = yield Heartbeat(
            key=held.key, owner=held.owner, fence=held.fence, lease=plan.claim.lease
        )
    except Exception:
        return True
    except GeneratorExit:
        raise
    except BaseException:
        yield from _cancelled(plan, held)
        raise
    return bool(alive)


def _timed_out(plan: CallPlan, held: ReleaseCall, event: ToolTimedOut) -> CallFlow:
    """The tool overran: its own end if it came while being let go, else the doubt (or
    the keeper, which holds the claim until the tool ends)."""
    ended = yield from _let_go("timed out")
    if ended is not None:
        # It ended while being abandoned: its own result is better than a doubt.
        return (yield from _settle(plan, held, ended))
    message = f"the tool did not finish within {event.timeout} s; its effect is in doubt"
    if not plan.claim.reclaim and (yield from _kept(held.fence)):
        return _outcome(plan, "timed_out", error=message)  # the keeper holds the claim
    yield from _in_doubt(held, plan.claim.reclaim, message)
    return _outcome(plan, "timed_out", error=message)


def _approval(plan: CallPlan, gate: ApprovalGate) -> Generator[Command, Any, Outcome | Decision]:
    """The approval phase: the outcome when the call is not to run (awaiting, denied, or
    a store that cannot say), else the approval, and with it any edited arguments."""
    park = gate.park
    try:
        claim: Claim = yield park
    except Exception as exc:
        return _outcome(
            plan, "failed", error=f"StoreError: could not read the call's approval: {exc}"
        )
    if claim.acquired:
        # A new approval record: store the call's details for the decider to read.
        yield from _finish_quietly(
            ReleaseCall(park.key, park.owner, claim.record.fence), "unknown", gate.details, AWAITING
        )
        return _outcome(plan, "awaiting_approval", error=AWAITING)
    record = claim.record
    if record.args_hash != park.args_hash:
        return report_record(plan, record)  # a conflict
    decision = read_decision(record)
    if decision.status == "approved":
        return decision
    if decision.status == "denied":
        return _outcome(plan, "denied", error=decision.reason, replayed=True)
    if decision.status == "invalid":
        return _outcome(plan, "failed", error=decision.reason)
    return _outcome(plan, "awaiting_approval", error=AWAITING)


def keep_running(plan: CallPlan, fence: int) -> CallFlow:
    """The rest of a call whose tool outlived its timeout and was kept (``KeepTool``).

    While the tool runs, the claim is held as before: every ``AwaitTool`` that comes back
    pending is followed by a heartbeat, so the record stays ``in_progress`` with a live
    lease (and unexpired). When the tool ends, its late result is settled as any other
    (``completed``, ``failed``, released, or ``unknown``); a heartbeat answered ``False``
    (the lease lapsed and another worker declared the call ``unknown``) ends the keeping.
    Returns the outcome the late end would have had (for the driver's log).
    """
    held = ReleaseCall(plan.claim.key, plan.claim.owner, fence)
    while True:
        event: ToolEvent = yield AwaitTool(interval=plan.heartbeat_interval)
        if not isinstance(event, (ToolPending, ToolTimedOut)):
            return (yield from _settle(plan, held, event))
        try:
            alive = yield Heartbeat(
                key=held.key, owner=held.owner, fence=held.fence, lease=plan.claim.lease
            )
        except Exception:
            continue  # fenced writes keep a missed beat safe; try again next interval
        if not alive:
            return _outcome(
                plan,
                "unknown",
                error="the lease was lost while the tool was still running past its timeout; "
                "its effect is in doubt",
            )


def _kept(fence: int) -> Generator[Command, Any, bool]:
    """Offer the still-running tool to the driver's keeper; whether it took the call."""
    try:
        taken = yield KeepTool(fence=fence)
    except Exception:
        return False
    return taken is True


def _settle(
    plan: CallPlan, held: ReleaseCall, event: ToolEnded
) -> Generator[Command, Any, Outcome]:
    """Record how the tool ended and return the outcome (the heart of "no lost results")."""
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
    if isinstance(event, ToolNotStarted):
        message = "the tool was stopped before it began; nothing ran"
        released = yield from _release_quietly(held)
        return _outcome(plan, "failed" if released else "unknown", error=message)
    if isinstance(event, ToolUnstorable):
        message = (
            "the tool ran, but its return value could not be stored: "
            f"{event.reason}; its effect happened, its result is lost"
        )
        yield from _in_doubt(held, plan.claim.reclaim, message)
        return _outcome(plan, "unknown", error=message, value=event.value)
    raised = event.exception
    message = event.text if event.text is not None else describe(raised)
    if isinstance(raised, EffectInDoubt):
        # The tool says its effect is in doubt (a request sent, no answer): never re-run.
        yield from _in_doubt(held, plan.claim.reclaim, message)
        return _outcome(plan, "unknown", error=message)
    if isinstance(raised, (RetryableError, *plan.retry_on)):
        released = yield from _release_quietly(held)
        if released:
            return _outcome(plan, "failed", error=message)
        return _outcome(plan, "unknown", error=message + _NOT_DURABLE)
    if not isinstance(raised, Exception):
        # The tool was interrupted from inside (its own cancellation, SystemExit).
        yield from _in_doubt(held, plan.claim.reclaim, message)
        return _outcome(plan, "unknown", error=message)
    stored = yield from _finish_quietly(held, "failed", None, message)
    if stored:
        return _outcome(plan, "failed", error=message)
    return _outcome(plan, "unknown", error=message + _NOT_DURABLE)


def _let_go(reason: AbandonReason) -> Generator[Command, Any, ToolEnded | None]:
    """Abandon the tool; its final event if the driver saw it end, else ``None``."""
    try:
        ended = yield AbandonTool(reason=reason)
    except Exception:
        return None  # letting go is best effort; the record below is what matters
    if isinstance(ended, ToolRaised) and not isinstance(ended.exception, Exception):
        return None  # it ended *by* being abandoned (its cancellation): still in doubt
    if isinstance(ended, (ToolReturned, ToolUnstorable, ToolRaised, ToolNotStarted)):
        return ended
    return None


def _cancelled(plan: CallPlan, held: ReleaseCall) -> Generator[Command, Any, None]:
    """The caller cancelled while the tool ran: settle what the tool did, or the doubt."""
    ended = yield from _let_go("cancelled")
    if ended is None:
        yield from _in_doubt(held, plan.claim.reclaim, _CANCELLED)
    else:
        yield from _settle(plan, held, ended)


def _finish_quietly(
    held: ReleaseCall, status: FinalStatus, result: str | None, error: str | None
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


def _release_quietly(held: ReleaseCall) -> Generator[Command, Any, bool]:
    """Release the claim; a store error leaves it to expire into ``unknown``."""
    try:
        released: bool = yield held
    except Exception:
        return False
    return bool(released)


def _in_doubt(held: ReleaseCall, idempotent: bool, message: str) -> Generator[Command, Any, None]:
    """The effect is in doubt: record ``unknown``, or, for a tool that is safe to repeat,
    give the call back so that a later run executes it again."""
    if idempotent:
        yield from _release_quietly(held)
    else:
        yield from _finish_quietly(held, "unknown", None, message)


# ------------------------------------------------------------------ the driven flow
#
# ``drive_call`` is what the drivers run: ``execute_call`` with the tool commands spelled
# out in the few primitives a driver performs (start, wait, cancel, detach, keep) and the
# caller's cancellation delivered at a safe point. The drivers keep no policy.


@dataclass(slots=True)
class WaitTool:
    """Wait until the tool ends, ``seconds`` pass, or the clock reaches ``deadline``
    (absolute, on the driver's clock; ``None``: no deadline); the driver sends back
    :class:`Woke`. Only an ``interruptible`` wait may be cut short by the caller's
    cancellation; the driver finishes any other before it says so. Built positionally,
    on every wait (keyword arguments cost more than the rest of the wait's work)."""

    seconds: float
    deadline: float | None
    interruptible: bool


@dataclass(slots=True)
class Woke:
    """What a :class:`WaitTool` found: how the tool ended (``None``: still running) and
    the driver's clock when it looked. Built on every wait, positionally."""

    ended: ToolEnded | None
    now: float


@dataclass(frozen=True, slots=True)
class CancelTool:
    """Ask the tool to stop; the driver sends back its final event if it has ended
    already, :class:`ToolNotStarted` if it was stopped before it began, else ``None`` (an
    async task was asked to stop; a thread cannot be)."""


@dataclass(frozen=True, slots=True)
class DetachTool:
    """Leave a tool that outlived its grace to end on its own (cancelled once more if it
    is a task, logged either way); the driver sends back ``None``."""


DriverCommand = (
    ClaimCall
    | StartTool
    | WaitTool
    | Heartbeat
    | CancelTool
    | DetachTool
    | KeepTool
    | FinishCall
    | ReleaseCall
)
DriverFlow = Generator[DriverCommand, Any, Outcome]


class _Drive:
    """What the driven flow knows of its call beyond the core's own state."""

    __slots__ = (
        "cancel",
        "cancel_grace",
        "core",
        "deadline",
        "delivered",
        "in_thread",
        "interruptible",
        "plan",
    )

    def __init__(self, plan: CallPlan, in_thread: bool, cancel_grace: float) -> None:
        self.plan = plan
        self.in_thread = in_thread
        self.cancel_grace = cancel_grace
        self.core = execute_call(plan)
        self.deadline: float | None = None
        self.cancel: BaseException | None = None
        self.delivered = False
        self.interruptible = False

    def remember(self, cancel: BaseException) -> bool:
        """Note the caller's cancellation, thrown in place of a command; whether it goes
        into the core now (at an interruptible command) or the command is asked again."""
        if self.cancel is None:
            self.cancel = cancel
        return self.interruptible


def drive_call(plan: CallPlan, *, in_thread: bool, cancel_grace: float) -> DriverFlow:
    """Run :func:`execute_call` for a driver; return the call's ``Outcome``.

    ``in_thread`` says the tool runs on a thread (which cannot be stopped) rather than as a
    task; ``cancel_grace`` is how long a cancelled tool is given to end. The driver sends
    back each command's result, throws an ``Exception`` for a command that failed, and
    throws the caller's cancellation (any other ``BaseException``) in place of a command
    it did not perform or a wait it cut short. The cancellation is thrown into the core at
    its first interruptible command (:data:`INTERRUPTIBLE`), once; a command not performed
    meanwhile is asked for again. When the core ends without it, the driver re-raises it.
    O(1) per command: store commands and ``StartTool`` pass through as they are.
    """
    drive = _Drive(plan, in_thread, cancel_grace)
    core = drive.core
    reply: Any = None
    failure: BaseException | None = None
    while True:
        try:
            command = core.send(reply) if failure is None else core.throw(failure)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        reply, failure = None, None
        drive.interruptible = type(command) in INTERRUPTIBLE and not drive.delivered
        if drive.interruptible and drive.cancel is not None:  # remembered: its safe point
            drive.delivered, failure = True, drive.cancel
            continue
        spelled = _SPELLED.get(type(command))
        while True:
            try:
                if spelled is None:
                    reply = yield command  # type: ignore[misc]  # a store command, StartTool
                else:
                    reply = yield from spelled(drive, command)
            except Exception as exc:  # the command failed
                failure = exc
            except GeneratorExit:
                raise
            except BaseException as exc:  # the cancellation
                if not drive.remember(exc):
                    continue  # the command was not performed: ask for it again
                drive.delivered, failure = True, exc
            break
        if failure is None and isinstance(command, StartTool):
            drive.deadline, reply = reply, None


def _ask(drive: _Drive, command: DriverCommand) -> Generator[DriverCommand, Any, Any]:
    """Yield ``command`` until the driver performs it. A cancellation thrown in its place
    is remembered; it propagates at an interruptible command, else the command is asked
    for again (it was not performed: store writes and letting go of a tool complete)."""
    while True:
        try:
            return (yield command)
        except (Exception, GeneratorExit):
            raise
        except BaseException as exc:
            if drive.remember(exc):
                raise


def _await(drive: _Drive, command: AwaitTool) -> Generator[DriverCommand, Any, ToolEvent]:
    """``AwaitTool``: one wait, then the tool's end, its timeout, or still pending."""
    wait = WaitTool(command.interval, drive.deadline, True)  # interruptible
    try:
        woke: Woke = yield wait
    except (Exception, GeneratorExit):
        raise
    except BaseException as exc:  # (``_ask`` written out: this wait is the hot path)
        if drive.remember(exc):
            raise
        woke = yield from _ask(drive, wait)
    if woke.ended is not None:
        return woke.ended
    if drive.deadline is not None and woke.now >= drive.deadline:
        return ToolTimedOut(timeout=drive.plan.timeout)
    return ToolPending()


def _abandon(
    drive: _Drive, command: AbandonTool
) -> Generator[DriverCommand, Any, ToolEnded | None]:
    """``AbandonTool``: cancel; wait out the grace for a task, or for a thread when the
    caller cancelled (a thread that overran is not waited for); then leave it running."""
    ended: ToolEnded | None = yield from _ask(drive, CancelTool())
    if ended is not None or (drive.in_thread and command.reason != "cancelled"):
        return ended
    wait = WaitTool(drive.cancel_grace, None, False)  # not interruptible
    woke: Woke = yield from _ask(drive, wait)
    if woke.ended is None:
        yield from _ask(drive, DetachTool())
    return woke.ended


def _keep(drive: _Drive, command: KeepTool) -> Generator[DriverCommand, Any, bool]:
    """``KeepTool``: only a thread with a deadline is kept (a task was cancelled)."""
    if not drive.in_thread or drive.deadline is None or drive.plan.timeout is None:
        return False
    taken: bool = yield from _ask(drive, command)
    return taken


_SPELLED: dict[type[Command], Callable[[_Drive, Any], Generator[DriverCommand, Any, Any]]] = {
    AwaitTool: _await,
    AbandonTool: _abandon,
    KeepTool: _keep,
}
"""The core's tool commands, spelled out in the driver's primitives."""
