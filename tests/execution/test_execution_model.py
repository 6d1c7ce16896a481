"""Crash/retry model test: workers driven step by step through the sans-IO core.

A Hypothesis ``RuleBasedStateMachine`` plays several workers against one real store
(``MemoryStore`` or ``SQLiteStore``) with a controlled clock. Each worker is one
``execute_call`` generator whose commands the machine performs one rule at a time, so two
owners interleave at every possible point. Faults are injected as rules: duplicate and
concurrent delivery, a worker crashing at any point (before its claim, after it, after the
side effect, before the completion write), a restart of everything (the SQLite store is
reopened), the clock jumping past the lease, store calls failing before or after they took
effect, and the caller cancelling. The side effect of a tool is a separate rule, so a
crash can fall between the effect and the write that records it.

The driver's answers are drawn too: a tool may return JSON, return a value JSON cannot
carry, raise, raise a transient error of the plan's ``retry_on`` (only before any effect,
as those say "nothing happened"), time out, or still be running; when the core abandons a
tool (timeout, lost lease, cancellation), the tool may turn out to have ended meanwhile
(returned, raised, cancelled by the abandonment) or never to have begun; a tool still
running past its timeout may be kept, and its keeper goes on as one more worker.

Invariants: a non-idempotent tool's effect happens at most once per key; a ``completed``
record always holds the result of an execution of that key (of the only one, for
non-idempotent tools); a worker reports ``completed`` only for its own execution; once an
effect happened its record never disappears; an effect whose worker did not record it
ends ``unknown`` (or ``timed_out``) for that worker; an effect whose value JSON cannot
carry is never ``completed``; an outcome read from an earlier run is marked ``replayed``
and one from this run is not.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from toolwire import MemoryStore, Outcome, RetryableError, SQLiteStore, StoreError
from toolwire._execution.decisions import (
    INTERRUPTIBLE,
    AbandonTool,
    AwaitTool,
    CallFlow,
    CallPlan,
    ClaimCall,
    Command,
    FinishCall,
    Heartbeat,
    KeepTool,
    ReleaseCall,
    StartTool,
    ToolNotStarted,
    ToolPending,
    ToolRaised,
    ToolReturned,
    ToolTimedOut,
    ToolUnstorable,
    execute_call,
    keep_running,
)
from toolwire._execution.store_commands import perform_store as _perform_store

pytestmark = pytest.mark.slow

LEASE = 30.0
# (name, idempotent): two side-effecting tools and one read that may be repeated.
CALLS = {"pay": False, "mail": False, "read": True}
MAX_WORKERS = 5
# Weighted event mix: progress (step, deliver, side_effect) dominates, faults interleave.
ACTIONS = (
    ["step"] * 14
    + ["deliver"] * 4
    + ["side_effect"] * 3
    + ["crash", "jump_clock", "store_fault", "cancel", "restart"]
)
FAULTS: Counter[str] = Counter()
STEPS: Counter[str] = Counter()


class Clock:
    """The store clock; rules move it."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class Cancelled(BaseException):
    """The caller's cancellation, as the drivers throw it into the core."""


@dataclass
class Worker:
    """One delivery of one call: a core generator and what its tool has done."""

    call: str
    plan: CallPlan
    flow: CallFlow
    command: Command | None = None
    effect: str | None = None
    raised: bool = False
    unstorable: bool = False
    kept: bool = False  # the keeper's continuation of a tool that outlived its timeout
    history: list[str] = field(default_factory=list)


class ExecutionModel(RuleBasedStateMachine):
    """Workers, a store and a ledger of real side effects, checked after every step."""

    backend = "memory"
    sqlite_path: Path | None = None

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.namespace = uuid.uuid4().hex
        self.store: Any = self._open()
        self.workers: dict[int, Worker] = {}
        self.next_worker = 0
        self.effects: dict[str, list[str]] = {name: [] for name in CALLS}

    def _open(self) -> Any:
        if self.backend == "memory":
            return MemoryStore(clock=self.clock)
        assert self.sqlite_path is not None
        return SQLiteStore(self.sqlite_path, clock=self.clock, durable=False)

    def key(self, call: str) -> str:
        return f"{self.namespace}/{call}"

    # ------------------------------------------------------------- plumbing

    def advance(self, wid: int, *, send: Any = None, throw: BaseException | None = None) -> None:
        """Resume worker ``wid`` and keep its next command, or check its outcome."""
        worker = self.workers[wid]
        try:
            if throw is not None:
                worker.command = worker.flow.throw(throw)
            else:
                worker.command = worker.flow.send(send)
        except StopIteration as stop:
            del self.workers[wid]
            self.check_outcome(worker, stop.value)
        except Cancelled:
            del self.workers[wid]
            # A cancelled worker re-raised; if its tool had an effect it is now unknown.
            if worker.effect is not None and not worker.plan.claim.reclaim:
                record = self.store.get(self.key(worker.call))
                assert record is not None
                assert record.status != "in_progress" or record.owner != worker.plan.claim.owner

    def check_outcome(self, worker: Worker, outcome: Outcome) -> None:
        STEPS[f"{'keeper ' if worker.kept else ''}outcome:{outcome.status}"] += 1
        executions = self.effects[worker.call]
        # Read from an existing record (a claim not acquired) <=> marked replayed.
        from_record = worker.history == [ClaimCall.__name__]
        expected = from_record and outcome.status in ("replayed", "failed", "unknown")
        assert outcome.replayed == expected, (outcome, worker.history)
        STEPS["outcome marked replayed:True"] += outcome.replayed
        if worker.unstorable:
            assert outcome.status != "completed", outcome
        if outcome.status == "completed":
            assert worker.effect is not None, "completed without an execution"
            assert outcome.result_json == json.dumps(worker.effect)
            record = self.store.get(self.key(worker.call))
            assert record is not None and record.status == "completed"
            assert record.result == outcome.result_json
        elif outcome.status == "replayed":
            assert outcome.result_json is not None
            assert json.loads(outcome.result_json) in executions
        if worker.effect is not None and outcome.status != "completed":
            allowed = {"unknown", "timed_out"} | ({"failed"} if worker.raised else set())
            assert outcome.status in allowed, (outcome, worker.history)

    def live(self, kinds: tuple[type, ...]) -> list[int]:
        return sorted(w for w, wk in self.workers.items() if isinstance(wk.command, kinds))

    def cancellable(self) -> list[int]:
        """Workers at an interruptible step; the keeper has no caller to cancel it."""
        interruptible = self.live((ClaimCall, StartTool, AwaitTool, Heartbeat))
        return [w for w in interruptible if not self.workers[w].kept]

    # ------------------------------------------------------------- rules

    @initialize()
    def start(self) -> None:
        """Every example starts with an empty ledger."""
        STEPS["examples"] += 1

    def deliver(self, data: st.DataObject) -> None:
        """A call arrives at a new worker (a duplicate if the call was seen before)."""
        call = data.draw(st.sampled_from(sorted(CALLS)))
        other_args = data.draw(st.sampled_from([False] * 7 + [True]))
        args_hash = "other" if other_args else "same"
        if any(w.call == call for w in self.workers.values()):
            FAULTS["concurrent delivery"] += 1
        elif self.store.get(self.key(call)) is not None:
            FAULTS["duplicate delivery"] += 1
        plan = CallPlan(
            call_id=call,
            name=call,
            claim=ClaimCall(
                key=self.key(call),
                args_hash=args_hash,
                idempotency_key=f"idem-{call}-{args_hash}",
                owner=f"owner-{self.next_worker}",
                lease=LEASE,
                retention=1e9,
                reclaim=CALLS[call],
            ),
            heartbeat_interval=LEASE / 3,
            timeout=5.0,
            retry_on=(ConnectionError,),
        )
        worker = Worker(call=call, plan=plan, flow=execute_call(plan))
        worker.command = next(worker.flow)
        self.workers[self.next_worker] = worker
        self.next_worker += 1

    def step(self, data: st.DataObject) -> None:
        """One worker performs its pending command (interleaving workers arbitrarily)."""
        wid = data.draw(st.sampled_from(sorted(self.workers)))
        worker = self.workers[wid]
        command = worker.command
        worker.history.append(type(command).__name__)
        STEPS["steps"] += 1
        if isinstance(command, StartTool):
            result: Any = None
        elif isinstance(command, KeepTool):
            result = self.kept(worker, command, data)
        elif isinstance(command, AbandonTool):
            result = self.abandoned(worker, data)
        elif isinstance(command, AwaitTool):
            # Weighted towards finishing, so completions and replays are common too.
            choices = ["pending", "pending", "timeout", "raise"]
            if worker.effect is not None:
                choices += ["return"] * 5 + ["unstorable"]
            else:
                choices += ["retry", "transient"]
            choice = data.draw(st.sampled_from(choices))
            if choice == "pending":
                result = ToolPending()
            elif choice == "timeout":
                result = ToolTimedOut(timeout=5.0)
            else:
                result = self.ended(worker, choice)
        else:  # a store command, performed exactly as the synchronous executor does
            result = _perform_store(self.store, command)
        self.advance(wid, send=result)

    def kept(self, worker: Worker, command: KeepTool, data: st.DataObject) -> bool:
        """The driver takes over a tool still running past its timeout, or declines: a
        kept tool goes on as a new worker (the keeper), whose tool may still act."""
        if not data.draw(st.sampled_from([True, True, True, False])):
            STEPS["timed-out tool kept:False"] += 1
            return False
        STEPS["timed-out tool kept:True"] += 1
        keeper = Worker(
            call=worker.call,
            plan=worker.plan,
            flow=keep_running(worker.plan, command.fence),
            effect=worker.effect,
            raised=worker.raised,
            kept=True,
            history=["kept"],
        )
        keeper.command = next(keeper.flow)
        self.workers[self.next_worker] = keeper
        self.next_worker += 1
        return True

    def ended(self, worker: Worker, choice: str) -> Any:
        """The event of a tool that ended as ``choice`` says."""
        if choice == "raise":
            worker.raised = True
            return ToolRaised(exception=ValueError("boom"), text="ValueError: boom")
        if choice == "retry":
            return ToolRaised(exception=RetryableError("nothing happened"))
        if choice == "transient":
            return ToolRaised(exception=ConnectionRefusedError("downstream unreachable"))
        if choice == "unstorable":
            worker.unstorable = True
            return ToolUnstorable(value=object(), reason="TypeError: not JSON")
        return ToolReturned(value=worker.effect, result_json=json.dumps(worker.effect))

    def abandoned(self, worker: Worker, data: st.DataObject) -> Any:
        """What the driver saw of a tool it let go: still running, or how it ended."""
        choices = ["running", "running", "raise", "cancelled"]
        if worker.effect is not None:
            choices += ["return"] * 3 + ["unstorable"]
        else:
            choices += ["not started", "retry"]
        choice = data.draw(st.sampled_from(choices))
        STEPS[f"abandoned tool found:{choice}"] += 1
        if choice == "running":
            return None
        if choice == "not started":
            return ToolNotStarted()
        if choice == "cancelled":  # it ended *by* the abandonment: still in doubt
            return ToolRaised(exception=Cancelled())
        return self.ended(worker, choice)

    def side_effect(self, data: st.DataObject) -> None:
        """A running tool performs its side effect (recorded in the ledger)."""
        candidates = [
            w
            for w, wk in self.workers.items()
            if isinstance(wk.command, AwaitTool) and not wk.effect
        ]
        worker = self.workers[data.draw(st.sampled_from(sorted(candidates)))]
        worker.effect = f"{worker.call}-execution-{uuid.uuid4().hex[:8]}"
        worker.history.append("effect")
        self.effects[worker.call].append(worker.effect)

    def crash(self, data: st.DataObject) -> None:
        """A worker dies wherever it is: its generator is closed and never resumes."""
        wid = data.draw(st.sampled_from(sorted(self.workers)))
        worker = self.workers.pop(wid)
        if isinstance(worker.command, ClaimCall):
            FAULTS["crash before claim"] += 1
        elif isinstance(worker.command, StartTool):
            FAULTS["crash after claim"] += 1
        elif isinstance(worker.command, FinishCall):
            FAULTS["crash before the completion write"] += 1
        elif worker.effect is not None:
            FAULTS["crash after side effect"] += 1
        else:
            FAULTS["crash while running"] += 1
        worker.flow.close()

    def restart(self, data: st.DataObject) -> None:
        """Every worker dies at once; the store is reopened (SQLite) as after a reboot."""
        FAULTS["restart"] += 1
        for worker in self.workers.values():
            worker.flow.close()
        self.workers.clear()
        if self.backend != "memory":
            self.store.close()
            self.store = self._open()

    def jump_clock(self, data: st.DataObject) -> None:
        """The store clock passes every current lease (paused workers, lost heartbeats)."""
        FAULTS["clock past lease"] += 1
        self.clock.now += LEASE + 1

    def store_fault(self, data: st.DataObject) -> None:
        """A store call raises, either before it took effect or after (a lost reply)."""
        after = data.draw(st.booleans())
        wid = data.draw(st.sampled_from(self.live((ClaimCall, Heartbeat, FinishCall, ReleaseCall))))
        worker = self.workers[wid]
        command = worker.command
        FAULTS[f"store fault {'after' if after else 'before'} {type(command).__name__}"] += 1
        if after:
            # Perform it, then lose the answer.
            self.workers[wid].history.append("lost-reply")
            _perform_store(self.store, command)
        self.advance(wid, throw=StoreError("injected store failure"))

    def cancel(self, data: st.DataObject) -> None:
        """The caller cancels a worker at an interruptible step; cleanup runs, then it ends."""
        wid = data.draw(st.sampled_from(self.cancellable()))
        FAULTS["cancellation"] += 1
        self.advance(wid, throw=Cancelled())
        # Drive the cleanup to its end, as the drivers do (shielded).
        while wid in self.workers:
            command = self.workers[wid].command
            if isinstance(command, AbandonTool):
                result: Any = self.abandoned(self.workers[wid], data)
            else:
                assert isinstance(command, (FinishCall, ReleaseCall)), command
                result = _perform_store(self.store, command)
            self.advance(wid, send=result)

    def enabled(self, action: str) -> bool:
        """Whether ``action`` can happen in the current state."""
        if action == "deliver":
            return len(self.workers) < MAX_WORKERS
        if action in ("step", "crash"):
            return bool(self.workers)
        if action == "side_effect":
            return any(
                isinstance(w.command, AwaitTool) and w.effect is None for w in self.workers.values()
            )
        if action == "store_fault":
            return bool(self.live((ClaimCall, Heartbeat, FinishCall, ReleaseCall)))
        if action == "cancel":
            return bool(self.cancellable())
        return True

    @rule(data=st.data())
    def act(self, data: st.DataObject) -> None:
        """One event, drawn with weights so that work progresses between faults."""
        STEPS["actions"] += 1
        actions = [a for a in ACTIONS if self.enabled(a)]
        getattr(self, data.draw(st.sampled_from(actions)))(data)

    # ------------------------------------------------------------- invariants

    @invariant()
    def at_most_once_and_nothing_lost(self) -> None:
        """0 duplicate executions, completed records hold an execution's result, none lost."""
        for call, idempotent in CALLS.items():
            executions = self.effects[call]
            if not idempotent:
                assert len(executions) <= 1, f"{call} executed {len(executions)} times"
            record = self.store.get(self.key(call))
            if executions and not idempotent:
                assert record is not None, "a record of an execution disappeared"
            if record is not None and record.status == "completed":
                assert record.result is not None
                assert json.loads(record.result) in executions, "completed without execution"
                if not idempotent:
                    assert record.result == json.dumps(executions[0])

    def teardown(self) -> None:
        for worker in self.workers.values():
            worker.flow.close()
        if self.backend != "memory":
            self.store.close()


EXAMPLES = {"memory": 200, "sqlite": 60}


class _FaultReport:
    """A pytest plugin, registered by the fixture below, that prints the fault totals."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        total = sum(FAULTS.values())
        terminalreporter.section("execution model")
        terminalreporter.write_line(
            f"{STEPS['examples']} examples, {STEPS['actions']} rule steps ({STEPS['steps']} "
            f"worker commands), {total} injected "
            "faults (any duplicate execution or lost result fails the test)"
        )
        for name, count in sorted(FAULTS.items()):
            terminalreporter.write_line(f"  {name}: {count}")
        for name, count in sorted(STEPS.items()):
            if ":" in name:
                terminalreporter.write_line(f"  {name}: {count}")


@pytest.fixture(scope="module", autouse=True)
def report_fault_totals(request: pytest.FixtureRequest) -> Iterator[None]:
    """Print the injected-fault totals of this module's runs in the terminal summary."""
    manager = request.config.pluginmanager
    if not manager.has_plugin("toolwire-execution-model"):
        manager.register(_FaultReport(), "toolwire-execution-model")
    yield


def test_model_on_memory_store() -> None:
    """Crashes, duplicates, clock jumps, store faults: one execution per key, no lost result."""
    machine = type("MemoryModel", (ExecutionModel,), {"backend": "memory"})
    run_state_machine_as_test(
        machine, settings=settings(max_examples=EXAMPLES["memory"], stateful_step_count=50)
    )
    assert sum(FAULTS.values()) > 0


def test_model_on_sqlite_store(tmp_path: Path) -> None:
    """The same model on SQLiteStore, reopened on restart, keeps the same invariants."""
    machine = type(
        "SQLiteModel",
        (ExecutionModel,),
        {"backend": "sqlite", "sqlite_path": tmp_path / "model.db"},
    )
    run_state_machine_as_test(
        machine, settings=settings(max_examples=EXAMPLES["sqlite"], stateful_step_count=50)
    )
    assert FAULTS["restart"] > 0 and FAULTS["clock past lease"] > 0


# ----------------------------------------------------------------- the core on its own


def test_core_is_sans_io() -> None:
    """The decision core imports no clock, thread, event loop, socket or database module."""
    import ast

    import toolwire._execution.decisions as core

    tree = ast.parse(Path(core.__file__).read_text("utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    } | {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0
    }
    forbidden = {"time", "threading", "asyncio", "socket", "sqlite3", "concurrent", "os"}
    assert imported & forbidden == set()


_RECORD_STATUSES = ["in_progress", "completed", "failed", "unknown"]


@settings(max_examples=1500)
@given(st.data())
def test_core_never_writes_without_its_claim(data: st.DataObject) -> None:
    """Under any driver answers, writes carry the claim's owner/fence and follow a claim."""
    from toolwire.stores import Claim, Record

    claim_call = ClaimCall("k", "h", "i", "me", 30.0, 600.0, data.draw(st.booleans()))
    plan = CallPlan(call_id="c", name="t", claim=claim_call, heartbeat_interval=10.0, timeout=5.0)
    flow = execute_call(plan)
    command: Any = next(flow)
    acquired = data.draw(st.booleans())
    fence = data.draw(st.integers(1, 5))
    record = Record(
        key="k",
        args_hash=data.draw(st.sampled_from(["h", "h", "other"])) if not acquired else "h",
        idempotency_key="i",
        status="in_progress" if acquired else data.draw(st.sampled_from(_RECORD_STATUSES)),
        owner="me" if acquired else "someone",
        fence=fence,
        lease_expires_at=None,
        result=json.dumps("stored"),
        error="stored error",
        created_at=0.0,
        expires_at=1.0,
    )
    cancellation: Cancelled | None = None
    returned: ToolReturned | None = None
    completed_written = False
    settled = False
    steps = 0
    outcome: Outcome | None = None
    try:
        while True:
            steps += 1
            assert steps < 100
            if isinstance(command, (Heartbeat, FinishCall, ReleaseCall)):
                assert acquired and not settled
                assert (command.owner, command.fence, command.key) == ("me", fence, "k")
            if isinstance(command, StartTool):
                assert acquired and command.fence == fence
            if (
                cancellation is None
                and type(command) in INTERRUPTIBLE
                and data.draw(st.integers(0, 9)) == 0
            ):
                cancellation = Cancelled()
                command = flow.throw(cancellation)
                continue
            if isinstance(command, ClaimCall):
                if data.draw(st.integers(0, 9)) == 0:
                    command = flow.throw(StoreError("claim failed"))
                    continue
                command = flow.send(Claim(acquired=acquired, record=record))
            elif isinstance(command, (StartTool, AbandonTool)):
                command = flow.send(None)
            elif isinstance(command, AwaitTool):
                choice = data.draw(
                    st.sampled_from(["pending", "returned", "raised", "retry", "timeout", "base"])
                )
                event: Any = {
                    "pending": ToolPending(),
                    "returned": ToolReturned(value=[1], result_json="[1]"),
                    "raised": ToolRaised(exception=ValueError("x")),
                    "retry": ToolRaised(exception=RetryableError("x")),
                    "timeout": ToolTimedOut(timeout=5.0),
                    "base": ToolRaised(exception=SystemExit(3)),
                }[choice]
                if isinstance(event, ToolReturned):
                    returned = event
                command = flow.send(event)
            else:
                answer = data.draw(st.sampled_from(["ok", "refused", "raise"]))
                if answer == "raise":
                    command = flow.throw(StoreError("write failed"))
                    continue
                accepted = answer == "ok"
                if accepted and isinstance(command, (FinishCall, ReleaseCall)):
                    settled = True
                    completed_written = isinstance(command, FinishCall) and (
                        command.status == "completed"
                    )
                command = flow.send(accepted)
    except StopIteration as stop:
        outcome = stop.value
    except Cancelled as exc:
        assert exc is cancellation  # re-raised, the very same object
    if outcome is None:
        assert cancellation is not None
        return
    assert outcome.idempotency_key == "i"
    if outcome.status == "completed":
        assert returned is not None and completed_written
        assert outcome.result_json == "[1]"
    if outcome.status == "replayed":
        assert not acquired and outcome.value == "stored"
    if not acquired and outcome.status not in ("failed",):
        assert outcome.status in ("replayed", "unknown", "in_progress", "conflict")
