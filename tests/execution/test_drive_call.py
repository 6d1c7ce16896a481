"""The flow the executors' drivers run (``decisions.drive_call``), fed by hand: the core's
tool commands spelled out in primitives, and the caller's cancellation placed where the
core can take it. No driver, thread, clock or store: every answer is the test's."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import Outcome, StoreError
from toolwire._execution.decisions import (
    AbandonTool,
    AwaitTool,
    CallPlan,
    CancelTool,
    ClaimCall,
    DetachTool,
    DriverFlow,
    FinishCall,
    Heartbeat,
    KeepTool,
    ReleaseCall,
    StartTool,
    ToolNotStarted,
    ToolRaised,
    ToolReturned,
    WaitTool,
    Woke,
    drive_call,
)
from toolwire.stores import Claim, Record

DEADLINE = 1_000.0  # the absolute deadline the test "driver" gives every tool
GRACE = 0.5
FENCE = 3


class Cancelled(BaseException):
    """The caller's cancellation, as a driver throws it into the flow."""


def _plan(*, idempotent: bool = False, timeout: float = 5.0) -> CallPlan:
    claim = ClaimCall("k", "h", "i", "me", 30.0, 600.0, idempotent)
    return CallPlan(call_id="c", name="t", claim=claim, heartbeat_interval=2.0, timeout=timeout)


def _claimed() -> Claim:
    record = Record(
        key="k",
        args_hash="h",
        idempotency_key="i",
        status="in_progress",
        owner="me",
        fence=FENCE,
        lease_expires_at=None,
        result=None,
        error=None,
        created_at=0.0,
        expires_at=1.0,
    )
    return Claim(acquired=True, record=record)


def _started(flow: DriverFlow) -> Any:
    """Claim and start the call; the command after the start."""
    assert isinstance(next(flow), ClaimCall)
    start = flow.send(_claimed())
    assert isinstance(start, StartTool) and start.fence == FENCE
    return flow.send(DEADLINE)


def _end(flow: DriverFlow, reply: Any) -> Outcome:
    with pytest.raises(StopIteration) as stop:
        flow.send(reply)
    outcome: Outcome = stop.value.value
    return outcome


def test_store_commands_and_the_start_pass_through_and_a_wait_carries_the_deadline() -> None:
    """The claim and the start reach the driver as the core yields them; the wait that
    follows is interruptible and bounded by the deadline the driver answered the start with."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    wait = _started(flow)
    assert wait == WaitTool(2.0, DEADLINE, True)
    finish = flow.send(Woke(ToolReturned(value=1, result_json="1"), 10.0))
    assert isinstance(finish, FinishCall) and finish.status == "completed"
    outcome = _end(flow, True)
    assert (outcome.status, outcome.value) == ("completed", 1)


def test_a_wait_that_passes_the_deadline_is_a_timeout_and_an_overrun_thread_is_kept() -> None:
    """A wait that wakes at the deadline with the tool still running is a timeout: the
    thread is asked to stop, not waited for (it overran), and offered to the keeper."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    _started(flow)
    heartbeat = flow.send(Woke(None, 5.0))  # before the deadline: pending, then a beat
    assert isinstance(heartbeat, Heartbeat) and heartbeat.fence == FENCE
    assert flow.send(True) == WaitTool(2.0, DEADLINE, True)
    assert flow.send(Woke(None, DEADLINE)) == CancelTool()
    keep = flow.send(None)  # a thread that began cannot be stopped
    assert keep == KeepTool(fence=FENCE)
    outcome = _end(flow, True)
    assert outcome.status == "timed_out"


def test_a_timed_out_task_gets_its_grace_then_is_detached_and_never_kept() -> None:
    """A task past its deadline is cancelled and given the grace (a wait the caller cannot
    cut short); still running, it is detached, not kept, and its call recorded unknown."""
    flow = drive_call(_plan(), in_thread=False, cancel_grace=GRACE)
    _started(flow)
    assert flow.send(Woke(None, DEADLINE + 1)) == CancelTool()
    assert flow.send(None) == WaitTool(GRACE, None, False)
    assert flow.send(Woke(None, DEADLINE + 2)) == DetachTool()
    finish = flow.send(None)
    assert isinstance(finish, FinishCall) and finish.status == "unknown"
    assert _end(flow, True).status == "timed_out"


def test_a_tool_that_ends_within_its_grace_is_settled_with_its_own_result() -> None:
    """A cancelled task that returns during its grace is recorded ``completed``."""
    flow = drive_call(_plan(), in_thread=False, cancel_grace=GRACE)
    _started(flow)
    assert flow.send(Woke(None, DEADLINE)) == CancelTool()
    assert flow.send(None) == WaitTool(GRACE, None, False)
    finish = flow.send(Woke(ToolReturned(value=2, result_json="2"), DEADLINE + 0.1))
    assert isinstance(finish, FinishCall) and finish.status == "completed"
    assert _end(flow, True).status == "completed"


def test_a_thread_stopped_before_it_began_gives_the_call_back() -> None:
    """``CancelTool`` answered ``ToolNotStarted``: nothing ran, the claim is released."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    _started(flow)
    assert flow.send(Woke(None, DEADLINE)) == CancelTool()
    release = flow.send(ToolNotStarted())
    assert isinstance(release, ReleaseCall) and release.fence == FENCE
    assert _end(flow, True).status == "failed"


def test_a_store_failure_reaches_the_core_as_the_commands_failure() -> None:
    """An exception thrown for the claim is the claim's failure: the tool never starts."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    assert isinstance(next(flow), ClaimCall)
    with pytest.raises(StopIteration) as stop:
        flow.throw(StoreError("down"))
    outcome: Outcome = stop.value.value
    assert outcome.status == "failed" and "could not claim" in (outcome.error or "")


def test_a_cancellation_in_place_of_the_claim_ends_the_flow_with_nothing_claimed() -> None:
    """The claim is interruptible: the cancellation goes into the core, which re-raises it."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    assert isinstance(next(flow), ClaimCall)
    cancel = Cancelled()
    with pytest.raises(Cancelled) as raised:
        flow.throw(cancel)
    assert raised.value is cancel


def test_a_cancellation_in_place_of_the_start_releases_the_claim() -> None:
    """Thrown at the start (not performed), the cancellation gives the claim back first."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    next(flow)
    assert isinstance(flow.send(_claimed()), StartTool)
    release = flow.throw(Cancelled())
    assert isinstance(release, ReleaseCall)
    with pytest.raises(Cancelled):
        flow.send(True)


def test_a_cancellation_cutting_a_wait_short_lets_the_tool_go_and_records_the_doubt() -> None:
    """Thrown into the interruptible wait, the cancellation reaches the core: a thread is
    waited for during the grace (the caller cancelled), then left; the call is unknown."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    _started(flow)
    cancel = Cancelled()
    assert flow.throw(cancel) == CancelTool()
    assert flow.send(None) == WaitTool(GRACE, None, False)
    assert flow.send(Woke(None, 3.0)) == DetachTool()
    finish = flow.send(None)
    assert isinstance(finish, FinishCall) and finish.status == "unknown"
    with pytest.raises(Cancelled) as raised:
        flow.send(True)
    assert raised.value is cancel


def test_a_cancellation_in_place_of_a_write_is_kept_and_the_write_asked_for_again() -> None:
    """A store write is not interruptible: thrown in its place, the cancellation is noted,
    the same write is asked for again, and the core's outcome is returned (the driver then
    re-raises the cancellation)."""
    flow = drive_call(_plan(), in_thread=True, cancel_grace=GRACE)
    _started(flow)
    finish = flow.send(Woke(ToolReturned(value=1, result_json="1"), 4.0))
    assert isinstance(finish, FinishCall)
    assert flow.throw(Cancelled()) is finish
    assert _end(flow, True).status == "completed"


def test_an_approval_read_failure_is_a_failed_outcome() -> None:
    """A plan with an approval gate starts with the approval claim; a store error there
    fails the call before its own claim."""
    from toolwire._execution.decisions import ApprovalGate

    plan = _plan()
    plan.approval = ApprovalGate(
        park=ClaimCall("a", "h", "i", "me", 30.0, 600.0, False), details="{}"
    )
    flow = drive_call(plan, in_thread=True, cancel_grace=GRACE)
    park = next(flow)
    assert isinstance(park, ClaimCall) and park.key == "a"
    with pytest.raises(StopIteration) as stop:
        flow.throw(StoreError("down"))
    assert stop.value.value.status == "failed"


# ------------------------------------------------------------------ any driver's answers


_STORE_WRITES = (Heartbeat, FinishCall, ReleaseCall)


_NOT_INTERRUPTIBLE = (FinishCall, ReleaseCall, CancelTool, DetachTool, KeepTool)


@settings(max_examples=1500, deadline=None)
@given(st.data())
def test_any_answers_end_the_flow_with_the_cancellation_placed_once(data: st.DataObject) -> None:
    """Under any driver answers and a cancellation thrown in place of any command, the
    flow ends within a bounded number of commands; a write or a step of letting go that
    the cancellation replaced is asked for again and the core's outcome returned, while one
    thrown at an interruptible command reaches the core, which re-raises that very object."""
    plan = _plan(idempotent=data.draw(st.booleans()))
    flow = drive_call(plan, in_thread=data.draw(st.booleans()), cancel_grace=GRACE)
    command: Any = next(flow)
    cancel = Cancelled()
    placed: str | None = None  # where the cancellation went: "core" or "noted"
    now = 0.0
    outcome: Outcome | None = None
    try:
        for _ in range(60):
            if placed is None and data.draw(st.integers(0, 7)) == 0:
                if isinstance(command, WaitTool) and not command.interruptible:
                    # a driver finishes a wait it may not cut short, then hands it over
                    command = flow.send(Woke(None, now))
                replaced = command
                placed = "noted" if isinstance(replaced, _NOT_INTERRUPTIBLE) else "core"
                command = flow.throw(cancel)
                if placed == "noted":
                    assert command is replaced  # not performed: asked for again
                continue
            assert not isinstance(command, (AwaitTool, AbandonTool))  # spelled out
            command = flow.send(_answer(data, command, now))
            now += data.draw(st.sampled_from([0.0, 1.0, 2.0, DEADLINE]))
        else:
            pytest.fail("the flow did not end")
    except StopIteration as stop:
        outcome = stop.value
    except Cancelled as exc:
        assert exc is cancel and placed == "core"
    if outcome is not None:
        assert placed in (None, "noted") and outcome.call_id == "c"


def _answer(data: st.DataObject, command: Any, now: float) -> Any:
    """A plausible driver answer to ``command``."""
    if isinstance(command, ClaimCall):
        return _claimed()
    if isinstance(command, StartTool):
        return DEADLINE
    if isinstance(command, WaitTool):
        ended = data.draw(
            st.sampled_from(
                [None, ToolReturned(value=1, result_json="1"), ToolRaised(exception=ValueError())]
            )
        )
        return Woke(ended, now)
    if isinstance(command, CancelTool):
        return data.draw(st.sampled_from([None, ToolNotStarted()]))
    if isinstance(command, (DetachTool,)):
        return None
    if isinstance(command, KeepTool):
        return data.draw(st.booleans())
    assert isinstance(command, _STORE_WRITES), command
    return data.draw(st.booleans())
