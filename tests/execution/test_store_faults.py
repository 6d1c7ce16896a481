"""Store outages: the real Executor over a store that fails at each call point.

A wrapper around ``MemoryStore`` raises ``StoreError`` at a chosen operation (claim,
heartbeat, finish, release, get), either before the operation takes effect or after it
(the reply is lost). Checked: no tool body runs without a durable claim in the store;
no ``completed`` record exists for a call whose completion write failed; outcomes never
claim a success the store does not hold; a clean retry afterwards never runs a tool twice.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from typing import Any

import pytest

from toolwire import (
    Executor,
    MemoryStore,
    Response,
    RetryableError,
    StoreError,
    Toolbox,
    ToolCall,
    ToolContext,
)
from toolwire._execution.idempotency import call_key
from toolwire.stores import Claim, Record

RUNS = 400
POINTS = ("claim", "heartbeat", "finish", "release")  # get: see the test below


class Clock:
    """A store clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class FaultyStore:
    """Delegates to ``inner`` but raises ``StoreError`` at ``point`` (before or after it)."""

    def __init__(self, inner: MemoryStore, point: str, after: bool, always: bool) -> None:
        self.inner = inner
        self.point = point
        self.after = after
        self.always = always
        self.faults = 0
        self.failed_keys: set[str] = set()
        self.calls: Counter[str] = Counter()

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.calls[name] += 1
        failing = name == self.point and (self.always or self.faults == 0)
        if failing and args:
            self.failed_keys.add(args[0])
        if failing and not self.after:
            self.faults += 1
            raise StoreError(f"injected {name} failure")
        result = getattr(self.inner, name)(*args, **kwargs)
        if failing:
            self.faults += 1
            raise StoreError(f"injected lost reply of {name}")
        return result

    def claim(self, key: str, **kwargs: Any) -> Claim:
        result: Claim = self._call("claim", key, **kwargs)
        return result

    def heartbeat(self, key: str, **kwargs: Any) -> bool:
        return bool(self._call("heartbeat", key, **kwargs))

    def finish(self, key: str, **kwargs: Any) -> bool:
        return bool(self._call("finish", key, **kwargs))

    def release(self, key: str, **kwargs: Any) -> bool:
        return bool(self._call("release", key, **kwargs))

    def get(self, key: str) -> Record | None:
        result: Record | None = self._call("get", key)
        return result

    def purge(self) -> int:
        return int(self._call("purge"))

    def close(self) -> None:
        self.inner.close()


def response(*calls: tuple[str, str, Any]) -> Response:
    """A finished response of ``(call_id, tool, arguments)``."""
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(id=c, name=n, arguments=a, raw_arguments=json.dumps(a), index=i)
            for i, (c, n, a) in enumerate(calls)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id="resp",
        model=None,
    )


class Ledger:
    """What the tools really did, and what the store held when they did it."""

    def __init__(self) -> None:
        self.executions: Counter[str] = Counter()
        self.unclaimed: list[str] = []
        self.inner: MemoryStore | None = None
        self.store: FaultyStore | None = None
        self.heartbeats = 0


def make_tools(ledger: Ledger) -> Toolbox:
    """Tools that check, as they start, that the store durably holds their claim."""
    box = Toolbox()

    def enter(name: str, ctx: ToolContext) -> None:
        key = call_key(ctx.scope, "resp", name, ctx.call_id)
        ledger.executions[key] += 1
        ledger.executions[name] += 1
        assert ledger.inner is not None
        record = ledger.inner.get(key)
        if record is None or record.status != "in_progress":
            ledger.unclaimed.append(name)

    @box.tool
    def ok(x: int, ctx: ToolContext) -> dict[str, int]:
        """Succeeds, after long enough for heartbeats when they are under test."""
        enter("ok", ctx)
        # Wait for heartbeats by count, not by time: a loaded machine still sees them all.
        deadline = time.monotonic() + 5.0
        while ledger.store is not None and ledger.store.calls["heartbeat"] < ledger.heartbeats:
            if time.monotonic() > deadline:
                break
            time.sleep(0.0005)
        return {"x": x}

    @box.tool
    def bad(x: int, ctx: ToolContext) -> None:
        """Fails permanently."""
        enter("bad", ctx)
        raise ValueError("permanent")

    @box.tool
    def busy(x: int, ctx: ToolContext) -> None:
        """Asks for a retry."""
        enter("busy", ctx)
        raise RetryableError("try later")

    return box


@pytest.mark.slow
def test_store_faults_never_execute_without_claim_nor_fake_completion() -> None:
    """Faults at claim/heartbeat/finish/release/get: 0 unclaimed runs, 0 false completions."""
    rng = random.Random(9)
    totals: Counter[str] = Counter()
    for run in range(RUNS):
        point = POINTS[run % len(POINTS)]
        after, always = rng.random() < 0.5, rng.random() < 0.5
        clock = Clock()
        inner = MemoryStore(clock=clock)
        ledger = Ledger()
        ledger.inner = inner
        store = FaultyStore(inner, point, after, always)
        ledger.store = store
        ledger.heartbeats = 4 if point == "heartbeat" else 0
        box = make_tools(ledger)
        calls = response(
            *((f"{tool}{i}", tool, {"x": i}) for i in range(2) for tool in ("ok", "bad", "busy"))
        )
        ex = Executor(box, store=store, scope=f"s{run}", lease=1.0, heartbeat_interval=0.001)
        outcomes = {o.call_id: o for o in ex.run(calls)}
        totals[f"{point} {'after' if after else 'before'}"] += store.faults
        assert ledger.unclaimed == [], (run, point)
        for outcome in outcomes.values():
            name = outcome.name
            key = call_key(f"s{run}", "resp", name, outcome.call_id)
            record = inner.get(key)
            if outcome.status == "completed":
                assert record is not None and record.status == "completed"
                assert record.result == outcome.result_json
            if record is not None and record.status == "completed":
                assert ledger.executions[key] == 1
            if point == "finish" and not after and key in store.failed_keys:
                # The completion write failed: nothing may read completed.
                assert record is None or record.status != "completed", (run, name)
                if name != "busy":
                    assert outcome.status == "unknown", (run, name, outcome)
            if point == "claim" and not after and key in store.failed_keys:
                assert ledger.executions[key] == 0
                assert outcome.status == "failed" and "StoreError" in (outcome.error or "")
        # A clean retry after every lease has expired never runs anything a second time.
        clock.now += 10
        retry = Executor(box, store=inner, scope=f"s{run}", lease=1.0)
        for outcome in retry.run(calls):
            key = call_key(f"s{run}", "resp", outcome.name, outcome.call_id)
            assert ledger.executions[key] <= 1 or outcome.name == "busy", run
            if outcome.status == "completed":
                assert ledger.executions[key] == 1
    faults = sum(totals.values())
    print(f"store faults injected: {faults} {dict(totals)}")
    assert faults >= 1000, totals
    assert all(totals[f"{p} {w}"] > 0 for p in POINTS for w in ("after", "before"))


def test_executor_never_reads_outside_its_claim() -> None:
    """A store whose ``get`` always fails still runs and replays calls (claim carries state)."""
    ledger = Ledger()
    inner = MemoryStore()
    ledger.inner = inner
    store = FaultyStore(inner, "get", after=False, always=True)
    ex = Executor(make_tools(ledger), store=store, scope="g")
    r = response(("a", "ok", {"x": 1}))
    [first] = ex.run(r)
    [again] = ex.run(r)
    assert (first.status, again.status) == ("completed", "replayed")
    assert store.faults == 0


@pytest.mark.parametrize("after", [False, True])
def test_claim_failure_fails_closed(after: bool) -> None:
    """If the claim raises, the tool does not run and the outcome is a typed store failure."""
    ledger = Ledger()
    inner = MemoryStore()
    ledger.inner = inner
    store = FaultyStore(inner, "claim", after=after, always=True)
    [o] = Executor(make_tools(ledger), store=store, scope="c").run(response(("a", "ok", {"x": 1})))
    assert o.status == "failed" and o.error is not None and o.error.startswith("StoreError")
    assert ledger.executions["ok"] == 0


def test_failed_completion_write_reports_unknown_and_never_reruns() -> None:
    """A lost completion write gives unknown now; later runs report unknown, not re-run."""
    ledger = Ledger()
    clock = Clock()
    inner = MemoryStore(clock=clock)
    ledger.inner = inner
    store = FaultyStore(inner, "finish", after=False, always=True)
    r = response(("a", "ok", {"x": 1}))
    [o] = Executor(make_tools(ledger), store=store, scope="f", lease=1.0).run(r)
    assert o.status == "unknown" and o.value == {"x": 1}
    record = inner.get(call_key("f", "resp", "ok", "a"))
    assert record is not None and record.status == "in_progress"
    clock.now += 5
    [later] = Executor(make_tools(ledger), store=inner, scope="f", lease=1.0).run(r)
    assert later.status == "unknown" and ledger.executions["ok"] == 1
