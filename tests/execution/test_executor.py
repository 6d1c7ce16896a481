"""``Executor`` (threads): every outcome status, timeouts, leases, concurrency, interruption."""

from __future__ import annotations

import _thread
import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import executor_support
from executor_support import Clock, Counter, response
from toolwire import (
    AsyncExecutor,
    Executor,
    MemoryStore,
    RetryableError,
    SQLiteStore,
    Toolbox,
    ToolContext,
    ToolwireError,
)
from toolwire._execution.executor import DEFAULT_TIMEOUT, SettingsError
from toolwire._execution.idempotency import arguments_hash, call_key
from toolwire._execution.workers import background_loop

runs = executor_support.runs


@pytest.fixture
def tools(runs: Counter) -> Toolbox:
    """A toolbox whose tools count their executions."""
    box = Toolbox()

    @box.tool
    def transfer(amount: int, to: str, ctx: ToolContext) -> dict[str, Any]:
        """Move money."""
        runs.hit("transfer")
        return {"moved": amount, "to": to, "key": ctx.idempotency_key, "z": [1.5, "é"]}

    @box.tool
    def explode(reason: str) -> None:
        """Always fails."""
        runs.hit("explode")
        raise ValueError(reason)

    @box.tool
    def flaky(n: int) -> int:
        """Fails retryably the first time."""
        runs.hit("flaky")
        if runs["flaky"] == 1:
            raise RetryableError("backend busy")
        return n

    @box.tool(timeout=0.15)
    def stuck(seconds: float) -> str:
        """Sleeps longer than its timeout."""
        runs.hit("stuck")
        time.sleep(seconds)
        return "late"

    @box.tool(timeout=0.15)
    async def astuck(seconds: float) -> str:
        """An async tool that sleeps past its timeout."""
        runs.hit("astuck")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            runs.hit("astuck-cancelled")
            raise
        return "late"

    @box.tool
    def nap(seconds: float) -> float:
        """Sleeps, then returns."""
        runs.hit("nap")
        time.sleep(seconds)
        return seconds

    @box.tool(idempotent=True)
    def lookup(q: str) -> str:
        """A read, safe to repeat."""
        runs.hit("lookup")
        return q.upper()

    @box.tool
    def weird(n: int) -> Any:
        """Returns something JSON cannot carry."""
        runs.hit("weird")
        return object()

    return box


def test_completed_then_replayed_byte_identical(tools: Toolbox, runs: Counter) -> None:
    """A completed call is stored; a second run replays the same bytes without running."""
    ex = Executor(tools, scope="conv-1")
    r = response(("c1", "transfer", {"amount": 5, "to": "bob"}))
    [first] = ex.run(r)
    [again] = ex.run(r)
    assert first.status == "completed" and again.status == "replayed"
    assert first.result_json is not None and again.result_json == first.result_json
    assert again.value == json.loads(first.result_json) == first.value
    assert runs["transfer"] == 1
    assert first.idempotency_key == again.idempotency_key == first.value["key"]


def test_context_carries_key_and_absolute_deadline(runs: Counter) -> None:
    """The tool receives the outcome's idempotency key and a monotonic deadline start+timeout."""
    box = Toolbox()
    seen: list[ToolContext] = []

    @box.tool(timeout=5.0)
    def probe(x: int, ctx: ToolContext) -> int:
        """Records its context."""
        seen.append(ctx)
        return x

    @box.tool
    def free(x: int, ctx: ToolContext) -> int:
        """No timeout of its own."""
        seen.append(ctx)
        return x

    before = time.monotonic()
    outcomes = Executor(box, scope="s").run(
        response(("a", "probe", {"x": 1}), ("b", "free", {"x": 2}))
    )
    after = time.monotonic()
    by_name = {c.tool_name: c for c in seen}
    assert by_name["probe"].idempotency_key == outcomes[0].idempotency_key
    deadline = by_name["probe"].deadline
    assert deadline is not None and before + 5.0 <= deadline <= after + 5.0
    default = by_name["free"].deadline  # no timeout of its own: the executor's default
    assert default is not None and before + DEFAULT_TIMEOUT <= default <= after + DEFAULT_TIMEOUT
    assert by_name["probe"].scope == "s" and by_name["probe"].call_id == "a"


def test_executor_timeout_is_the_default_for_tools_without_one() -> None:
    """``Executor(timeout=...)`` applies to tools that declare none."""
    box = Toolbox()
    seen: list[float | None] = []

    @box.tool
    def probe(x: int, ctx: ToolContext) -> int:
        """Records its deadline."""
        seen.append(ctx.deadline)
        return x

    start = time.monotonic()
    Executor(box, scope="s", timeout=2.0).run(response(("a", "probe", {"x": 1})))
    assert seen[0] is not None and start + 2.0 <= seen[0] <= time.monotonic() + 2.0


def test_failure_is_stored_and_replayed(tools: Toolbox, runs: Counter) -> None:
    """A tool raising a plain exception fails once; the failure is replayed, not re-run."""
    ex = Executor(tools, scope="s")
    r = response(("c", "explode", {"reason": "no funds"}))
    [first] = ex.run(r)
    [again] = ex.run(r)
    assert first.status == again.status == "failed"
    assert first.error == again.error == "ValueError: no funds"
    assert runs["explode"] == 1


def test_retryable_error_releases_then_reruns(tools: Toolbox, runs: Counter) -> None:
    """RetryableError fails the run and frees the call; the next run executes it again."""
    ex = Executor(tools, scope="s")
    r = response(("c", "flaky", {"n": 7}))
    [first] = ex.run(r)
    assert first.status == "failed" and first.error == "RetryableError: backend busy"
    [second] = ex.run(r)
    assert second.status == "completed" and second.value == 7
    [third] = ex.run(r)
    assert third.status == "replayed"
    assert runs["flaky"] == 2


def test_same_call_with_other_arguments_is_a_conflict(tools: Toolbox, runs: Counter) -> None:
    """The same call identity with different arguments neither runs nor replays."""
    ex = Executor(tools, scope="s")
    ex.run(response(("c", "transfer", {"amount": 5, "to": "bob"})))
    [clash] = ex.run(response(("c", "transfer", {"amount": 500, "to": "bob"})))
    assert clash.status == "conflict" and clash.value is None
    assert runs["transfer"] == 1


def test_call_held_by_another_worker_is_in_progress(tools: Toolbox, runs: Counter) -> None:
    """A call claimed by a live worker is reported in_progress and not run."""
    store = MemoryStore()
    args = {"amount": 5, "to": "bob"}
    key = call_key("s", "resp_1", "transfer", "c")
    assert store.claim(
        key, args_hash=arguments_hash(args), idempotency_key="x", owner="other",
        lease=60, retention=600, reclaim=False,
    ).acquired  # fmt: skip
    [o] = Executor(tools, store=store, scope="s").run(response(("c", "transfer", args)))
    assert o.status == "in_progress" and runs["transfer"] == 0


def test_rejected_call_skips_the_whole_response(tools: Toolbox, runs: Counter) -> None:
    """One invalid call makes it rejected and every other call of the response skipped."""
    r = response(
        ("a", "transfer", {"amount": 1, "to": "x"}),
        ("b", "no_such_tool", {}),
        ("c", "transfer", {"amount": "lots", "to": "x"}),
    )
    outcomes = Executor(tools, scope="s").run(r)
    assert [o.status for o in outcomes] == ["skipped", "rejected", "rejected"]
    assert all(o.idempotency_key is None for o in outcomes)
    assert "no_such_tool" in (outcomes[1].error or "")
    assert runs["transfer"] == 0


def test_run_on_rejection_runs_the_valid_calls(tools: Toolbox, runs: Counter) -> None:
    """With run_on_rejection=True the valid calls run and the invalid ones are rejected."""
    r = response(("a", "transfer", {"amount": 1, "to": "x"}), ("b", "no_such_tool", {}))
    outcomes = Executor(tools, scope="s", run_on_rejection=True).run(r)
    assert [o.status for o in outcomes] == ["completed", "rejected"]
    assert runs["transfer"] == 1


def test_arguments_outside_i_json_are_rejected(tools: Toolbox, runs: Counter) -> None:
    """Validated arguments that cannot be canonically hashed (2**60) are rejected, not run."""
    r = response(("a", "transfer", {"amount": 2**60, "to": "x"}), ("b", "lookup", {"q": "q"}))
    outcomes = Executor(tools, scope="s").run(r)
    assert [o.status for o in outcomes] == ["rejected", "skipped"]
    assert "I-JSON" in (outcomes[0].error or "")
    assert runs["transfer"] == runs["lookup"] == 0


def test_sync_tool_timeout_keeps_the_call_claimed_until_its_late_result(
    tools: Toolbox, runs: Counter
) -> None:
    """A thread tool past its timeout is timed_out; its call stays in_progress while it
    runs, and its late result is recorded and replayed once it ends."""
    store = MemoryStore()
    ex = Executor(tools, store=store, scope="s")
    r = response(("c", "stuck", {"seconds": 0.6}))
    started = time.monotonic()
    [o] = ex.run(r)
    assert time.monotonic() - started < 0.55  # returned at the timeout, not at the tool's end
    assert o.status == "timed_out" and o.result_json is None
    assert [call.call_id for call in ex.runaways()] == ["c"]
    [meanwhile] = ex.run(r)
    assert meanwhile.status == "in_progress" and runs["stuck"] == 1
    time.sleep(0.65)  # the thread finishes in the background; the keeper records it
    record = store.get(call_key("s", "resp_1", "stuck", "c"))
    assert record is not None and record.status == "completed" and record.result == '"late"'
    [again] = ex.run(r)
    assert (again.status, again.value) == ("replayed", "late") and runs["stuck"] == 1
    assert ex.runaways() == []


def test_idempotent_tool_timeout_frees_the_call(runs: Counter) -> None:
    """A timed-out idempotent=True tool is not left unknown: the next run repeats it."""
    box = Toolbox()

    @box.tool(idempotent=True, timeout=0.1)
    def fetch(slow: bool) -> str:
        """A read that is slow the first time."""
        runs.hit("fetch")
        if runs["fetch"] == 1:
            time.sleep(0.3)
        return "data"

    ex = Executor(box, scope="s")
    r = response(("c", "fetch", {"slow": True}))
    [first] = ex.run(r)
    [second] = ex.run(r)
    assert first.status == "timed_out"
    assert second.status == "completed" and second.value == "data" and runs["fetch"] == 2


def test_async_tool_in_sync_executor_is_cancelled_at_timeout(tools: Toolbox, runs: Counter) -> None:
    """An async tool run by Executor is cancelled at its deadline and recorded unknown."""
    [o] = Executor(tools, scope="s").run(response(("c", "astuck", {"seconds": 5})))
    assert o.status == "timed_out"
    for _ in range(100):
        if runs["astuck-cancelled"]:
            break
        time.sleep(0.01)
    assert runs["astuck-cancelled"] == 1


def test_concurrency_is_bounded(runs: Counter) -> None:
    """At most max_concurrency tools run at once, and calls do run in parallel."""
    box = Toolbox()
    lock = threading.Lock()
    active = [0]
    peak = [0]

    target = [0]

    @box.tool
    def busy(i: int) -> int:
        """Holds its slot until ``target`` tools run at once (or a second passes)."""
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        give_up = time.monotonic() + 1.0
        while peak[0] < target[0] and time.monotonic() < give_up:
            time.sleep(0.002)
        with lock:
            active[0] -= 1
        return i

    calls = [(f"c{i}", "busy", {"i": i}) for i in range(6)]
    target[0] = 2
    outcomes = Executor(box, scope="a", max_concurrency=2).run(response(*calls))
    assert [o.value for o in outcomes] == list(range(6)) and peak[0] == 2
    peak[0], target[0] = 0, 6
    Executor(box, scope="b", max_concurrency=8).run(response(*calls))
    assert peak[0] == 6


def test_outcomes_follow_call_order(tools: Toolbox) -> None:
    """Outcomes come back in call order even when later calls finish first."""
    r = response(("a", "nap", {"seconds": 0.1}), ("b", "nap", {"seconds": 0.0}))
    assert [o.call_id for o in Executor(tools, scope="s").run(r)] == ["a", "b"]


def test_heartbeat_keeps_a_long_tool_alive(runs: Counter) -> None:
    """Heartbeats extend the lease while a tool outlives it; other workers see in_progress."""
    box = Toolbox()
    started, go = threading.Event(), threading.Event()

    @box.tool
    def hold(x: int) -> int:
        """Blocks until released."""
        runs.hit("hold")
        started.set()
        go.wait(5)
        return x

    clock = Clock()
    store = MemoryStore(clock=clock)
    ex = Executor(box, store=store, scope="s", lease=30, heartbeat_interval=0.01)
    r = response(("c", "hold", {"x": 1}))
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.extend(ex.run(r)))
    worker.start()
    assert started.wait(5)
    key = call_key("s", "resp_1", "hold", "c")
    for _ in range(3):  # 3 x 20 s: twice the first lease, alive only through heartbeats
        clock.now += 20
        deadline = time.monotonic() + 5
        while True:  # wait for a heartbeat at the new store time
            record = store.get(key)
            assert record is not None and record.lease_expires_at is not None
            if record.lease_expires_at >= clock.now + 30 or time.monotonic() > deadline:
                break
            time.sleep(0.005)
    [seen] = Executor(box, store=store, scope="s").run(r)
    go.set()
    worker.join(5)
    assert seen.status == "in_progress"
    assert result[0].status == "completed" and runs["hold"] == 1


def test_lost_lease_makes_the_outcome_unknown(runs: Counter) -> None:
    """When another worker takes over an expired lease, the heartbeat fails: unknown."""
    box = Toolbox()
    started, go = threading.Event(), threading.Event()

    @box.tool
    def hold(x: int) -> int:
        """Blocks until released."""
        runs.hit("hold")
        started.set()
        go.wait(5)
        return x

    clock = Clock()
    store = MemoryStore(clock=clock)
    ex = Executor(box, store=store, scope="s", lease=10, heartbeat_interval=0.02)
    r = response(("c", "hold", {"x": 1}))
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.extend(ex.run(r)))
    worker.start()
    assert started.wait(5)
    key = call_key("s", "resp_1", "hold", "c")
    while True:  # jump past the lease until a claim beats the worker's heartbeat
        clock.now += 60
        seen = store.claim(
            key, args_hash=arguments_hash({"x": 1}), idempotency_key="k", owner="other",
            lease=10, retention=600, reclaim=False,
        )  # fmt: skip
        if seen.record.status == "unknown":
            break
    worker.join(5)
    go.set()
    assert result[0].status == "unknown" and "lease" in (result[0].error or "")
    [later] = Executor(box, store=store, scope="s").run(r)
    assert later.status == "unknown" and runs["hold"] == 1


def test_expired_claim_of_idempotent_tool_is_rerun(tools: Toolbox, runs: Counter) -> None:
    """A crashed worker's expired claim is re-run for idempotent=True tools only."""
    clock = Clock()
    store = MemoryStore(clock=clock)
    for name, args in (("lookup", {"q": "a"}), ("transfer", {"amount": 1, "to": "x"})):
        store.claim(
            call_key("s", "resp_1", name, "c"), args_hash=arguments_hash(args),
            idempotency_key="k", owner="crashed", lease=5, retention=600, reclaim=False,
        )  # fmt: skip
    clock.now += 10
    ex = Executor(tools, store=store, scope="s")
    [read] = ex.run(response(("c", "lookup", {"q": "a"})))
    [write] = ex.run(response(("c", "transfer", {"amount": 1, "to": "x"})))
    assert read.status == "completed" and read.value == "A" and runs["lookup"] == 1
    assert write.status == "unknown" and runs["transfer"] == 0


def test_unserialisable_result_is_in_doubt_not_failed(tools: Toolbox, runs: Counter) -> None:
    """A return value JSON cannot carry: the tool ran, so the call is unknown, never failed."""
    store = MemoryStore()
    ex = Executor(tools, store=store, scope="s")
    [o] = ex.run(response(("c", "weird", {"n": 1})))
    assert o.status == "unknown" and o.result_json is None and not o.replayed
    assert o.error is not None and o.error.startswith("the tool ran, but its return value")
    assert "could not be stored" in o.error and "TypeError" in o.error
    assert type(o.value) is object  # the in-process caller still gets the value itself
    record = store.get(call_key("s", "resp_1", "weird", "c"))
    assert record is not None and record.status == "unknown" and record.error == o.error
    [again] = ex.run(response(("c", "weird", {"n": 1})))
    assert again.status == "unknown" and again.replayed and runs["weird"] == 1


def test_response_id_separates_reused_call_ids(tools: Toolbox, runs: Counter) -> None:
    """``call_0`` in a new response is a new call; repeated ids in one response run apart."""
    ex = Executor(tools, scope="s")
    args = {"amount": 1, "to": "x"}
    ex.run(response(("call_0", "transfer", args), response_id="r1"))
    [o] = ex.run(response(("call_0", "transfer", args), response_id="r2"))
    assert o.status == "completed" and runs["transfer"] == 2
    twice = ex.run(response(("d", "transfer", args), ("d", "transfer", args), response_id="r3"))
    assert [t.status for t in twice] == ["completed", "completed"]
    assert twice[0].idempotency_key != twice[1].idempotency_key


def test_sqlite_replays_across_executors_and_restarts(
    tools: Toolbox, runs: Counter, tmp_path: Path
) -> None:
    """A result stored in SQLite is replayed by a fresh store and executor (cold start)."""
    r = response(("c", "transfer", {"amount": 3, "to": "y"}))
    first_store = SQLiteStore(tmp_path / "calls.db")
    [first] = Executor(tools, store=first_store, scope="s").run(r)
    first_store.close()
    second_store = SQLiteStore(tmp_path / "calls.db")
    [again] = Executor(tools, store=second_store, scope="s").run(r)
    second_store.close()
    assert first.status == "completed" and again.status == "replayed"
    assert again.result_json == first.result_json and runs["transfer"] == 1


def test_retention_and_purge(tools: Toolbox, runs: Counter) -> None:
    """Past its retention a record is purged and the call may run again (documented)."""
    clock = Clock()
    store = MemoryStore(clock=clock)
    ex = Executor(tools, store=store, scope="s", lease=1, retention=100)
    r = response(("c", "transfer", {"amount": 3, "to": "y"}))
    ex.run(r)
    assert ex.purge() == 0
    clock.now += 101
    assert ex.purge() == 1
    [o] = ex.run(r)
    assert o.status == "completed" and runs["transfer"] == 2


def test_keyboard_interrupt_is_reraised_and_records_finalised(
    runs: Counter, python_sigint: None
) -> None:
    """Ctrl-C during run is re-raised after the running call's record is set unknown."""
    box = Toolbox()
    store = MemoryStore()

    release = threading.Event()
    finished = threading.Event()

    @box.tool
    def interrupting(x: int) -> int:
        """Interrupts the main thread, then keeps working until released."""
        runs.hit("interrupting")
        _thread.interrupt_main()
        release.wait(5)
        finished.set()
        return x

    r = response(("c", "interrupting", {"x": 1}))
    with pytest.raises(KeyboardInterrupt):
        Executor(box, store=store, scope="s").run(r)
    record = store.get(call_key("s", "resp_1", "interrupting", "c"))
    assert record is not None and record.status == "unknown"
    assert "cancelled" in (record.error or "")
    release.set()  # the abandoned thread returns now; its value must not be stored
    assert finished.wait(5)
    time.sleep(0.05)
    [later] = Executor(box, store=store, scope="s").run(r)
    assert later.status == "unknown" and runs["interrupting"] == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"scope": 3},
        {"scope": "s", "timeout": 0},
        {"scope": "s", "timeout": "1"},
        {"scope": "s", "max_concurrency": 0},
        {"scope": "s", "max_concurrency": 1.5},
        {"scope": "s", "lease": -1},
        {"scope": "s", "lease": 1, "heartbeat_interval": 2},
        {"scope": "s", "lease": 10, "retention": 5},
        {"scope": "s", "store": object()},
        {"scope": "s", "store": "toolwire.db"},
    ],
)
def test_bad_settings_are_refused(tools: Toolbox, kwargs: dict[str, Any]) -> None:
    """Nonsensical executor settings raise SettingsError (a ToolwireError)."""
    with pytest.raises(SettingsError) as info:
        Executor(tools, **kwargs)
    assert isinstance(info.value, ToolwireError)
    with pytest.raises(SettingsError):
        AsyncExecutor(tools, **kwargs)


def test_a_toolbox_is_required() -> None:
    """Passing something other than a Toolbox raises SettingsError at construction."""
    with pytest.raises(SettingsError):
        Executor({"transfer": print}, scope="s")  # type: ignore[arg-type]


def test_run_refuses_what_is_not_a_response(tools: Toolbox) -> None:
    """``run`` of a non-Response raises a typed toolwire error, never an AttributeError."""
    with pytest.raises(ToolwireError):
        Executor(tools, scope="s").run({"tool_calls": []})  # type: ignore[arg-type]


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_replay_both_sided(backend: str, tmp_path: Path, runs: Counter) -> None:
    """1,000 identical replays return the stored bytes, 1,000 divergent ones conflict."""
    box = Toolbox()

    @box.tool
    def pay(n: int, note: str) -> dict[str, Any]:
        """A side effect with a result worth replaying."""
        runs.hit("pay")
        return {"n": n, "note": note, "f": n / 7, "list": [n, None, True]}

    def open_store() -> Any:
        return MemoryStore() if backend == "memory" else SQLiteStore(tmp_path / "t8.db")

    store = open_store()
    same = response(*((f"c{i}", "pay", {"n": i, "note": "é\u2028"}) for i in range(100)))
    first = Executor(box, store=store, scope="t8").run(same)
    assert [o.status for o in first] == ["completed"] * 100
    stored = [o.result_json for o in first]
    if backend == "sqlite":  # replay from a cold store, as after a restart
        store.close()
        store = open_store()
    ex = Executor(box, store=store, scope="t8")
    replays = [o for _ in range(10) for o in ex.run(same)]
    assert [o.status for o in replays] == ["replayed"] * 1000
    assert [o.result_json for o in replays] == stored * 10
    assert [o.value for o in replays] == [o.value for o in first] * 10
    divergent = [
        o
        for k in range(10)
        for o in ex.run(
            response(*((f"c{i}", "pay", {"n": i, "note": f"other {k}"}) for i in range(100)))
        )
    ]
    assert [o.status for o in divergent] == ["conflict"] * 1000
    assert runs["pay"] == 100
    store.close()


def test_sqlite_connections_do_not_grow_with_runs(tools: Toolbox, tmp_path: Path) -> None:
    """Many runs (each with fresh worker threads) reuse a bounded pool of SQLite connections."""
    store = SQLiteStore(tmp_path / "pool.db")
    ex = Executor(tools, store=store, scope="s", max_concurrency=4)
    for i in range(30):
        ex.run(response(*((f"c{i}-{j}", "lookup", {"q": str(j)}) for j in range(4))))
    assert len(store._idle) <= 4 + 1  # peak concurrency (+ the start-up connection)
    store.close()


def test_async_tool_whose_loop_closes_at_the_deadline_keeps_every_outcome() -> None:
    """Regression: an async tool returning just before its deadline, whose value took past
    it to serialise, made run() raise 'Event loop is closed' and lose every outcome."""
    box = Toolbox()

    @box.tool(timeout=0.3)
    async def bulky(n: int) -> list[list[int]]:
        """Returns quickly a value that takes a long time to turn into JSON."""
        await asyncio.sleep(0.05)
        return [list(range(1000))] * n

    @box.tool
    def quick(x: int) -> int:
        """Returns at once."""
        return x

    store = MemoryStore()
    outcomes = Executor(box, store=store, scope="s", cancel_grace=0.1).run(
        response(("a", "bulky", {"n": 3000}), ("b", "quick", {"x": 1}))
    )
    assert [o.call_id for o in outcomes] == ["a", "b"]
    assert outcomes[0].status in ("completed", "timed_out") and outcomes[1].status == "completed"
    record = store.get(call_key("s", "resp_1", "bulky", "a"))
    assert record is not None
    assert record.status == ("completed" if outcomes[0].status == "completed" else "unknown")
    # Let the abandoned serialisation finish, so later tests do not share its CPU.
    asyncio.run_coroutine_threadsafe(asyncio.sleep(0), background_loop()).result(timeout=30)
