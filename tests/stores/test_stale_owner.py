"""Stale owner (Kleppmann's scenario): a worker paused past its lease writes nothing.

Worker A claims a call and runs it through the sans-IO core; the store clock jumps past
A's lease while A is "paused"; worker B claims the call (taking it over for an idempotent
tool, turning it ``unknown`` otherwise) and maybe finishes it; then A resumes and tries
every write: heartbeat, finish, release, directly and through its core. Every one must be
refused and the record must be exactly what B left. 1,000 seeded schedules per backend.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolwire import MemoryStore, RetryableError, SQLiteStore
from toolwire._core.outcome import Outcome
from toolwire._execution.decisions import (
    AbandonTool,
    AwaitTool,
    CallPlan,
    ClaimCall,
    Heartbeat,
    StartTool,
    ToolPending,
    ToolRaised,
    ToolReturned,
    execute_call,
)
from toolwire._execution.store_commands import perform_store as _perform_store

SCHEDULES = 1000


class Clock:
    """The store clock; the schedule moves it."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Any, Clock]]:
    """A store of each in-process kind, with a controlled clock."""
    clock = Clock()
    store: Any
    if request.param == "memory":
        store = MemoryStore(clock=clock)
    else:
        store = SQLiteStore(tmp_path / "stale.db", clock=clock, durable=False)
    yield store, clock
    store.close()


def perform(store: Any, command: Any) -> Any:
    """What a driver does with a store command (the synchronous executor's own code)."""
    return _perform_store(store, command)


def stale_write(store: Any, kind: str, key: str, owner: str, fence: int, lease: float) -> bool:
    """One write of the paused worker A."""
    if kind == "heartbeat":
        return bool(store.heartbeat(key, owner=owner, fence=fence, lease=lease))
    if kind == "release":
        return bool(store.release(key, owner=owner, fence=fence))
    status = "completed" if kind == "complete" else "failed"
    result = '"A"' if kind == "complete" else None
    return bool(
        store.finish(key, owner=owner, fence=fence, status=status, result=result, error=None)
    )


def test_paused_worker_never_gets_a_write_accepted(backend: tuple[Any, Clock]) -> None:
    """1,000 random pause schedules: 0 stale writes accepted, B's record untouched."""
    store, clock = backend
    stale_attempts = 0
    for seed in range(SCHEDULES):
        rng = random.Random(seed)
        key = f"stale/{seed}"
        lease = rng.uniform(1.0, 60.0)
        idempotent = rng.random() < 0.5
        plan = CallPlan(
            call_id="c",
            name="t",
            claim=ClaimCall(key, "h", f"k{seed}", f"A{seed}", lease, 1e6, idempotent),
            heartbeat_interval=lease / 3,
            timeout=None,
        )
        flow = execute_call(plan)
        claim = perform(store, next(flow))
        assert claim.acquired, seed
        fence_a = claim.record.fence
        assert isinstance(flow.send(claim), StartTool)
        command = flow.send(None)
        # A runs for a while, heartbeating normally.
        for _ in range(rng.randrange(4)):
            assert isinstance(command, AwaitTool)
            clock.now += rng.uniform(0, lease / 3)
            command = flow.send(ToolPending())
            assert isinstance(command, Heartbeat)
            alive = perform(store, command)
            assert alive, seed
            command = flow.send(alive)
        # A pauses (GC, SIGSTOP, VM migration) past its lease.
        clock.now += lease + rng.uniform(0.001, 3 * lease)
        b = store.claim(
            key, args_hash="h", idempotency_key=f"k{seed}", owner=f"B{seed}",
            lease=lease, retention=1e6, reclaim=idempotent,
        )  # fmt: skip
        assert b.acquired is idempotent, seed
        assert b.record.fence == fence_a + 1
        if idempotent and rng.random() < 0.5:
            assert store.heartbeat(key, owner=f"B{seed}", fence=b.record.fence, lease=lease)
        if idempotent and rng.random() < 0.5:
            assert store.finish(
                key, owner=f"B{seed}", fence=b.record.fence,
                status="completed", result='"B"', error=None,
            )  # fmt: skip
        if rng.random() < 0.3:
            clock.now += rng.uniform(0, 2 * lease)  # more time passes before A wakes
        before = store.get(key)
        assert before is not None
        # A resumes: direct writes, in a random order.
        attempts = ["heartbeat", "complete", "fail", "release"]
        rng.shuffle(attempts)
        for attempt in attempts:
            stale_attempts += 1
            assert stale_write(store, attempt, key, f"A{seed}", fence_a, lease) is False, seed
        # ... and through its core, which must end in doubt, never completed.
        assert isinstance(command, AwaitTool)
        wake = rng.choice(["heartbeat", "returned", "raised", "retryable"])
        outcome: Outcome | None = None
        try:
            if wake == "heartbeat":
                command = flow.send(ToolPending())
            elif wake == "returned":
                command = flow.send(ToolReturned(value="A", result_json=json.dumps("A")))
            elif wake == "raised":
                command = flow.send(ToolRaised(exception=ValueError("late")))
            else:
                command = flow.send(ToolRaised(exception=RetryableError("late")))
            while True:
                if isinstance(command, AbandonTool):
                    command = flow.send(None)
                    continue
                stale_attempts += 1
                accepted = perform(store, command)
                assert accepted is False, (seed, command)
                command = flow.send(accepted)
        except StopIteration as stop:
            outcome = stop.value
        assert outcome is not None and outcome.status == "unknown", (seed, outcome)
        assert store.get(key) == before, seed
        if not idempotent:
            assert before.status == "unknown"
    print(f"stale-owner writes attempted: {stale_attempts}, accepted: 0")
    assert stale_attempts >= SCHEDULES * 5
