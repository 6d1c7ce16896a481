"""The store contract, retention and clocks: records are never absent because of their
age, every write renews the expiry, only ``purge`` removes old records, and no clock jump
makes a call run twice; on every backend (sync and async) where it applies.

See ``tests/store_backends.py`` for the facade and the backends.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_backends import (
    LONG,
    RETAIN,
    SERVER_BACKENDS,
    SHORT,
    Backend,
    Facade,
    backend,
    namespace,
    new_key,
    open_server_store,
    postgres_dsn,
    redis_url,
    store,
)
from toolwire import MemoryStore, SQLiteStore
from toolwire.stores import LEASE_LOST, ClockReading, _clock

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


# ------------------------------------------------------------- calls longer than retention


def test_a_call_longer_than_its_retention_never_runs_twice(backend: Backend, store: Facade) -> None:
    """Lease 0.3 s, heartbeats every 0.1 s, retention 0.5 s, a 1.5 s tool, a second claim at
    0.8 s: not acquired; after the finish (completed or unknown) a retry is not acquired.

    The schedule of the issue, driving the store calls the executor makes; before every
    write renewed the expiry, the second claim saw an expired record and ran the call again.
    """
    lease, retention, step = 0.3, 0.5, 0.05
    done, doubt = new_key(), new_key()
    for key in (done, doubt):
        assert store.claim(key, owner="A", lease=lease, retention=retention).acquired
    elapsed, next_beat, second, beats = 0.0, 0.1, {}, []
    while elapsed < 1.5 - 1e-9:
        backend.wait(step)
        elapsed += step
        if elapsed >= next_beat - 1e-9:
            beats += [
                store.heartbeat(key, owner="A", fence=1, lease=lease) for key in (done, doubt)
            ]
            next_beat += 0.1
        if elapsed >= 0.8 - 1e-9 and not second:
            second = {
                key: store.claim(key, owner="B", lease=lease, retention=retention)
                for key in (done, doubt)
            }
    for claim in second.values():
        assert not claim.acquired  # a second execution
        assert (claim.record.status, claim.record.owner) == ("in_progress", "A")
    assert all(beats) and len(beats) >= 28
    assert store.finish(done, owner="A", fence=1, result='"done"')
    assert store.finish(doubt, owner="A", fence=1, status="unknown", result=None, error="late")
    assert store.purge() == 0  # the finish renewed both expiries to now + retention
    for key, status in ((done, "completed"), (doubt, "unknown")):
        retry = store.claim(key, owner="C", lease=lease, retention=retention)
        assert not retry.acquired and retry.record.status == status


def test_every_write_renews_the_expiry(backend: Backend, store: Facade) -> None:
    """Claim, heartbeat, finish and the unknown verdict each push expires_at forward."""
    key, other = new_key(), new_key()
    first = store.claim(key, owner="w1", lease=100.0, retention=300.0).record
    assert first.expires_at == pytest.approx(first.created_at + 400.0, abs=1e-3)
    backend.wait(50.0 if backend.clock is not None else 0.05)
    assert store.heartbeat(key, owner="w1", fence=1, lease=100.0)
    beat = store.get(key)
    assert beat is not None and beat.lease_expires_at is not None
    assert beat.expires_at == pytest.approx(beat.lease_expires_at + 300.0, abs=1e-3)
    assert beat.expires_at > first.expires_at
    assert store.finish(key, owner="w1", fence=1)
    done = store.get(key)
    assert done is not None and done.expires_at >= beat.expires_at  # never moved back
    store.claim(other, owner="w1", lease=SHORT, retention=300.0)
    backend.wait(SHORT * 1.5)
    verdict = store.claim(other, owner="w2", retention=600.0).record
    assert verdict.status == "unknown" and verdict.error == LEASE_LOST
    # The verdict keeps the record the larger retention asked for, from now.
    assert verdict.retention == pytest.approx(600.0)
    assert verdict.expires_at >= verdict.created_at + SHORT * 1.5 + 600.0 - 1e-3


# ------------------------------------------------------------------------- expiry


def test_records_stay_until_purged_and_purge_counts(backend: Backend) -> None:
    """Past its expiry a record is still there (get, claim replay) until purge deletes it;
    purge deletes exactly the expired records and counts them."""
    store = backend.open(namespace())
    old = [new_key() for _ in range(3)]
    for key in old:
        store.claim(key, owner="w1", retention=SHORT, lease=SHORT)
    store.finish(old[0], owner="w1", fence=1)
    kept = new_key()
    store.claim(kept, owner="w1")
    backend.wait(SHORT * 2.5)
    assert all(store.get(key) is not None for key in old)
    again = store.claim(old[0], owner="w2", reclaim=True)
    assert not again.acquired and again.record.status == "completed"
    assert store.purge() == 3
    assert store.purge() == 0
    assert [store.get(key) for key in old] == [None, None, None]
    assert store.get(kept) is not None
    # Purged, a key starts over: fence 1, any arguments.
    fresh = store.claim(old[0], owner="w3", args_hash="h2")
    assert fresh.acquired and (fresh.record.fence, fresh.record.args_hash) == (1, "h2")


def test_finished_record_far_past_its_expiry_is_replayed(backend: Backend) -> None:
    """A clock 10^6 s ahead (fake clock, or backdated server records) makes no claim
    acquire a finished or unknown call: time alone never makes a record absent."""
    ns = namespace()
    store = backend.open(ns)
    done, doubt, held = new_key(), new_key(), new_key()
    for key in (done, doubt, held):
        store.claim(key, owner="w1", lease=SHORT, retention=SHORT)
    store.finish(done, owner="w1", fence=1, result='"r"')
    store.finish(doubt, owner="w1", fence=1, status="unknown", result=None, error="e")
    backend.jump(ns, 1e6)
    for key, status in ((done, "completed"), (doubt, "unknown"), (held, "unknown")):
        claim = store.claim(key, owner="w2", reclaim=False)
        assert not claim.acquired and claim.record.status == status, key
    assert store.heartbeat(held, owner="w1", fence=1) is False  # fenced out by the verdict


def test_a_holder_past_its_lease_keeps_the_call_until_someone_claims(
    backend: Backend, store: Facade
) -> None:
    """Neither the lease nor the expiry fences the holder out: only another claim does."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT, retention=SHORT)
    backend.wait(SHORT * 3)
    assert store.heartbeat(key, owner="w1", fence=1, lease=LONG)
    assert store.finish(key, owner="w1", fence=1, result='"late but held"')
    record = store.get(key)
    assert record is not None and record.status == "completed"


# ------------------------------------------------------------------- the timed model


class TimedModel:
    """The Protocol's rules with time (seconds on the model clock): the reference answers."""

    def __init__(self) -> None:
        self.now = 0.0
        self.records: dict[str, dict[str, Any]] = {}
        # (owner, fence) of the latest acquisition per key, to aim writes at: the holder's,
        # or a stale holder's once the call has moved on.
        self.last_holder: dict[str, tuple[str, int]] = {}

    def claim(
        self, key: str, owner: str, args_hash: str, lease: float, retention: float, reclaim: bool
    ) -> bool:
        record = self.records.get(key)
        now = self.now
        if record is None:
            self.records[key] = {
                "args_hash": args_hash,
                "status": "in_progress",
                "owner": owner,
                "fence": 1,
                "lease": now + lease,
                "result": None,
                "expires": now + lease + retention,
                "retention": retention,
            }
            return True
        if record["args_hash"] != args_hash:
            return False
        if record["status"] == "in_progress" and record["lease"] <= now:
            record["fence"] += 1
            keep = record["retention"] = max(record["retention"], retention)
            if reclaim:
                record.update(owner=owner, lease=now + lease)
                record["expires"] = max(record["expires"], now + lease + keep)
                return True
            record.update(status="unknown", owner=None, lease=None)
            record["expires"] = max(record["expires"], now + keep)
        return False

    def holds(self, key: str, owner: str, fence: int) -> bool:
        record = self.records.get(key)
        return (
            record is not None
            and record["status"] == "in_progress"
            and (record["owner"], record["fence"]) == (owner, fence)
        )

    def heartbeat(self, key: str, lease: float) -> None:
        record = self.records[key]
        record["lease"] = self.now + lease
        record["expires"] = max(record["expires"], self.now + lease + record["retention"])

    def finish(self, key: str, status: str, result: str) -> None:
        record = self.records[key]
        record.update(status=status, result=result, lease=None)
        record["expires"] = max(record["expires"], self.now + record["retention"])

    def view(self, key: str) -> tuple[Any, ...] | None:
        record = self.records.get(key)
        if record is None:
            return None
        fields = ("args_hash", "status", "owner", "fence", "result")
        return (*(record[name] for name in fields), record["lease"] is not None)

    def purge(self) -> int:
        old = [key for key, record in self.records.items() if record["expires"] <= self.now]
        for key in old:
            del self.records[key]
        return len(old)


# Durations are multiples of 50 s so that the few real milliseconds a server's clock moves
# during an example never decide a comparison; ties fall the same way on both sides
# (``<=`` means "over" for leases and retention alike).
_CLAIM_OP = st.tuples(
    st.just("claim"),
    st.integers(0, 1),  # key
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["h1", "h1", "h2"]),
    st.sampled_from([100.0, 1000.0]),  # lease
    st.sampled_from([300.0, 1500.0]),  # retention
    st.booleans(),  # reclaim
)
_WRITE_OP = st.tuples(
    st.sampled_from(["heartbeat", "finish", "finish", "release"]),
    st.integers(0, 1),  # key
    st.sampled_from(["a", "b", "c"]),
    st.integers(1, 3),  # fence
    st.sampled_from([100.0, 1000.0]),  # heartbeat lease
    st.sampled_from(["completed", "failed", "unknown"]),
    st.booleans(),  # aim: write as the key's current (or last) holder
)
TIMED_OPERATION = st.one_of(
    _CLAIM_OP,
    _CLAIM_OP,
    _WRITE_OP,
    _WRITE_OP,
    st.tuples(st.just("jump"), st.sampled_from([50.0, 100.0, 500.0, 1000.0, 2000.0])),
    st.tuples(st.just("purge")),
)


@pytest.mark.slow
def test_timed_operation_sequences_match_the_model(backend: Backend) -> None:
    """Random claims, fenced writes, clock jumps and purges give the timed model's answers.

    This is the stale-owner scenario at scale: owners whose lease ran out while "paused",
    takeovers, unknown verdicts, renewed expiries and purges, checked after every step.
    """

    @settings(max_examples=25, database=None)
    @given(st.lists(TIMED_OPERATION, min_size=5, max_size=40))
    def check(operations: list[tuple[Any, ...]]) -> None:
        ns = namespace()
        store = backend.open(ns)
        model = TimedModel()
        try:
            for operation in operations:
                op = operation[0]
                if op == "jump":
                    backend.jump(ns, operation[1])
                    model.now += operation[1]
                    continue
                if op == "purge":
                    assert store.purge() == model.purge()
                    continue
                key = f"k{operation[1]}"
                if op == "claim":
                    _, _, owner, args_hash, lease, retention, reclaim = operation
                    claim = store.claim(
                        key,
                        owner=owner,
                        args_hash=args_hash,
                        lease=lease,
                        retention=retention,
                        reclaim=reclaim,
                    )
                    expected = model.claim(key, owner, args_hash, lease, retention, reclaim)
                    assert claim.acquired == expected
                    if expected:
                        model.last_holder[key] = (owner, claim.record.fence)
                else:
                    _, _, owner, fence, lease, status, aim = operation
                    last = model.last_holder.get(key)
                    if aim and last is not None:
                        owner, fence = last
                    allowed = model.holds(key, owner, fence)
                    if op == "heartbeat":
                        assert store.heartbeat(key, owner=owner, fence=fence, lease=lease) == (
                            allowed
                        )
                        if allowed:
                            model.heartbeat(key, lease)
                    elif op == "finish":
                        result = f"{owner}:{fence}:{status}"
                        got = store.finish(
                            key, owner=owner, fence=fence, status=status, result=result
                        )
                        assert got == allowed
                        if allowed:
                            model.finish(key, status, result)
                    else:
                        assert store.release(key, owner=owner, fence=fence) == allowed
                        if allowed:
                            del model.records[key]
                record = store.get(key)
                seen = None
                if record is not None:
                    seen = (
                        record.args_hash,
                        record.status,
                        record.owner,
                        record.fence,
                        record.result,
                        record.lease_expires_at is not None,
                    )
                assert seen == model.view(key)
        finally:
            backend.close(store)

    check()


# --------------------------------------------------------------------------- clocks


DAY = 86400.0


class ScriptedClock:
    """The host's clocks, scripted: a wall clock the test sets anywhere, and the jump-free
    clock of one domain (a boot) that only moves forward with real elapsed time."""

    def __init__(self) -> None:
        self.wall = 1_700_000_000.0
        self.elapsed = 1000.0
        self.domain = "boot:one"

    def __call__(self) -> ClockReading:
        return ClockReading(self.wall, self.domain, self.elapsed)

    def tick(self, seconds: float) -> None:
        """Real time passes: both clocks move."""
        self.wall += seconds
        self.elapsed += seconds


def _open_local(kind: str, path: Path, clock: Any) -> Any:
    """A memory or SQLite store; ``clock=None`` leaves the store's default clocks."""
    options = {} if clock is None else {"clock": clock}
    if kind == "memory":
        return MemoryStore(**options)
    return SQLiteStore(path, durable=False, **options)


def _claim(store: Any, key: str, owner: str, **options: Any) -> Any:
    arguments = {
        "args_hash": "h",
        "idempotency_key": f"i-{key}",
        "lease": 60.0,
        "retention": 3600.0,
        "reclaim": False,
    }
    return store.claim(key, owner=owner, **{**arguments, **options})


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
@pytest.mark.parametrize("jump", [25 * 3600.0, -25 * 3600.0])
def test_wall_clock_jumps_change_nothing_in_process(
    kind: str, jump: float, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the default clocks, setting the system clock 25 h ahead or back neither ends a
    live lease nor lets purge delete a finished record: the call is replayed, never re-run."""
    store = _open_local(kind, tmp_path / "jump.db", None)
    _claim(store, "done", "w1", retention=3600.0)
    assert store.finish("done", owner="w1", fence=1, status="completed", result="1", error=None)
    before = _claim(store, "live", "w1").record
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + jump)
    assert store.purge() == 0
    replay = _claim(store, "done", "w2")
    assert not replay.acquired and replay.record.status == "completed"
    live = _claim(store, "live", "w2")
    assert not live.acquired and (live.record.status, live.record.owner) == ("in_progress", "w1")
    # Store time did not jump with the system clock (it moved by the real time elapsed).
    fresh = _claim(store, "fresh", "w1").record
    assert 0 <= fresh.created_at - before.created_at < 60
    store.close()


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_store_time_follows_the_jump_free_clock_whatever_the_wall_clock_does(
    kind: str, tmp_path: Path
) -> None:
    """Random wall-clock jumps (±48 h) between real ticks: purge deletes a record exactly
    when a retention of real time has passed since its last write, a lease ends exactly
    when its real time is up, and a finished call is never acquired again (Hypothesis)."""
    counter = iter(range(10**9))

    @settings(max_examples=30, database=None)
    @given(
        st.lists(
            st.one_of(
                st.tuples(st.just("tick"), st.sampled_from([10.0, 50.0, 100.0])),
                st.tuples(st.just("jump"), st.floats(-2 * DAY, 2 * DAY)),
                st.tuples(st.just("claim"), st.integers(0, 3)),
                st.tuples(st.just("finish"), st.integers(0, 3)),
                st.tuples(st.just("purge")),
            ),
            max_size=40,
        )
    )
    def check(operations: list[tuple[Any, ...]]) -> None:
        clock = ScriptedClock()
        store = _open_local(kind, tmp_path / f"{next(counter)}.db", clock)
        real = 0.0  # real seconds since the start: the model's clock
        # key -> (status, real time the lease ends, real time the record expires)
        written: dict[str, tuple[str, float, float]] = {}
        lease, retention = 100.0, 200.0
        try:
            for operation in operations:
                name = operation[0]
                if name == "tick":
                    clock.tick(operation[1])
                    real += operation[1]
                elif name == "jump":
                    clock.wall += operation[1]
                elif name == "purge":
                    expected = [key for key, state in written.items() if state[2] <= real]
                    assert store.purge() == len(expected)
                    for key in expected:
                        del written[key]
                else:
                    key = f"k{operation[1]}"
                    state = written.get(key)
                    if name == "claim":
                        claim = _claim(store, key, "w", lease=lease, retention=retention)
                        if state is None:
                            assert claim.acquired
                            written[key] = ("in_progress", real + lease, real + lease + retention)
                        elif state[0] == "in_progress" and state[1] <= real:
                            assert not claim.acquired and claim.record.status == "unknown"
                            written[key] = ("unknown", 0.0, max(state[2], real + retention))
                        else:
                            assert not claim.acquired and claim.record.status == state[0]
                    elif state is not None and state[0] == "in_progress":
                        done = store.finish(
                            key, owner="w", fence=1, status="completed", result="1", error=None
                        )
                        assert done
                        written[key] = ("completed", 0.0, max(state[2], real + retention))
        finally:
            store.close()

    check()


@settings(max_examples=50, database=None)
@given(
    st.floats(0.0, 2e9),
    st.lists(st.tuples(st.floats(-DAY, DAY), st.floats(-100.0, 100.0)), max_size=30),
)
def test_the_memory_store_clock_gives_advance_s_answer_with_the_host_clocks(
    wall: float, moves: list[tuple[float, float]]
) -> None:
    """MemoryStore's clock, which reads only the jump-free clock after its first reading,
    gives exactly the store times of the rules (``advance``) for any wall-clock jumps and
    any moves of the jump-free clock, backwards ones included."""
    readings = {"wall": wall, "elapsed": 1000.0}
    with (
        mock.patch.object(_clock, "_ELAPSED", lambda: readings["elapsed"]),
        mock.patch.object(_clock.time, "time", lambda: readings["wall"]),
    ):
        clock = _clock.StoreClock()
        mark = None
        for jump, step in [(0.0, 0.0), *moves]:
            readings["wall"] += jump
            readings["elapsed"] += step
            mark = _clock.advance(mark, _clock.system_reading())
            assert clock.now() == mark.now


def test_sqlite_store_time_is_kept_in_the_file_across_processes_and_reboots(
    tmp_path: Path,
) -> None:
    """Store objects on one file share its clock; after a reboot a wall clock that is behind
    moves store time nowhere (never back), and one that is ahead still replays calls."""
    clock = ScriptedClock()
    path = tmp_path / "clock.db"
    first = SQLiteStore(path, clock=clock, durable=False)
    _claim(first, "done", "w1", retention=DAY)
    first.finish("done", owner="w1", fence=1, status="completed", result="1", error=None)
    start = first.get("done")
    assert start is not None
    clock.tick(100.0)
    clock.wall -= 3 * DAY  # the wall clock goes back while "processes" run: ignored
    second = SQLiteStore(path, clock=clock, durable=False)  # another process, same boot
    t1 = _claim(second, "a", "w1").record.created_at
    assert t1 == pytest.approx(start.created_at + 100.0, abs=1e-6)
    second.close()
    first.close()
    # Reboot with the wall clock 3 days behind: store time stands, never goes back.
    clock.domain, clock.elapsed = "boot:two", 5.0
    rebooted = SQLiteStore(path, clock=clock, durable=False)
    assert rebooted.purge() == 0
    t2 = _claim(rebooted, "b", "w1").record.created_at
    assert t2 >= t1
    rebooted.close()
    # Reboot with the wall clock 3 days ahead: store time moves forward once (the
    # documented residual: purge may then delete early), but no claim re-runs a call.
    clock.domain, clock.wall = "boot:three", clock.wall + 6 * DAY
    ahead = SQLiteStore(path, clock=clock, durable=False)
    replay = _claim(ahead, "done", "w2")
    assert not replay.acquired and replay.record.status == "completed"
    lost = _claim(ahead, "a", "w2")  # the lease of a call from before the reboot: unknown
    assert not lost.acquired and lost.record.status == "unknown"
    ahead.close()


@pytest.mark.server
@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_server_stores_use_the_server_clock(
    kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client clock that is days off changes nothing: times come from the server."""
    target = request.getfixturevalue("postgres_dsn" if "postgres" in kind else "redis_url")
    real_now = time.time()
    monkeypatch.setattr(time, "time", lambda: real_now - 5 * DAY)
    facade = open_server_store(kind, target, namespace())
    try:
        record = facade.claim(new_key(), owner="w1", lease=SHORT).record
        monkeypatch.undo()
        assert abs(record.created_at - time.time()) < 60
        time.sleep(SHORT * 1.5)
        # The lease ran out by the server's clock, whatever the client's says.
        claim = facade.claim(record.key, owner="w2", reclaim=True)
        assert claim.acquired and claim.record.fence == 2
    finally:
        facade.close()


def test_retention_default_keeps_a_record_a_retention_past_its_lease(store: Facade) -> None:
    """A fresh claim is kept at least lease + retention: purge right away deletes nothing."""
    store.claim(new_key(), owner="w1", lease=LONG, retention=RETAIN)
    assert store.purge() == 0
