"""The store contract, claims and fencing: one atomic claim, fenced writes, leases that run
out, racing claimants, and the executor on top, on every backend (sync and async).

See ``tests/store_backends.py`` for the facade and the backends; each test states one rule
of :mod:`toolwire.stores._protocol`.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_backends import (
    LONG,
    RETAIN,
    SHORT,
    Backend,
    Facade,
    backend,
    new_key,
    one_call_response,
    postgres_dsn,
    redis_url,
    store,
)
from toolwire import AsyncExecutor, Executor, Toolbox
from toolwire.stores import LEASE_LOST, AdminStore, AsyncAdminStore, AsyncStore, Store

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


# ------------------------------------------------------------------------------ claim


def test_first_claim_is_acquired_with_fence_one(store: Facade) -> None:
    """The first claim of a key is acquired, fence 1, in_progress, with lease and retention."""
    key = new_key()
    claim = store.claim(key, owner="w1", idempotency_key="idem-1")
    record = claim.record
    assert claim.acquired
    assert (record.key, record.status, record.owner, record.fence) == (key, "in_progress", "w1", 1)
    assert (record.args_hash, record.idempotency_key) == ("h1", "idem-1")
    assert record.result is None and record.error is None
    assert record.lease_expires_at is not None
    assert record.lease_expires_at - record.created_at == pytest.approx(LONG, abs=1e-3)
    # Kept a retention past its lease; the retention is remembered for later renewals.
    assert record.expires_at - record.created_at == pytest.approx(LONG + RETAIN, abs=1e-3)
    assert record.retention == pytest.approx(RETAIN)
    assert abs(record.created_at - time.time()) < 60  # the store clock is a real epoch time
    assert store.get(key) == record


def test_second_claim_is_refused_and_reports_the_record(store: Facade) -> None:
    """A second claim of a held key is not acquired and returns the record unchanged."""
    key = new_key()
    first = store.claim(key, owner="w1")
    second = store.claim(key, owner="w2")
    assert not second.acquired
    assert second.record == first.record == store.get(key)


def test_other_arguments_do_not_acquire_and_leave_the_record(store: Facade) -> None:
    """Same key with another args_hash: not acquired, record unchanged (a conflict)."""
    key = new_key()
    first = store.claim(key, owner="w1")
    store.finish(key, owner="w1", fence=1)
    done = store.get(key)
    other = store.claim(key, owner="w2", args_hash="h2", reclaim=True)
    assert not other.acquired
    assert other.record == done == store.get(key)
    assert other.record.args_hash == first.record.args_hash == "h1"


def test_completed_record_is_replayed_not_reclaimed(backend: Backend, store: Facade) -> None:
    """A completed call is never taken over, even after its lease would have run out."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    assert store.finish(key, owner="w1", fence=1, result='{"n": 1}')
    backend.wait(SHORT * 1.5)
    again = store.claim(key, owner="w2", reclaim=True)
    assert not again.acquired
    assert (again.record.status, again.record.result, again.record.fence) == (
        "completed",
        '{"n": 1}',
        1,
    )


def test_live_lease_is_not_taken_over_even_with_reclaim(store: Facade) -> None:
    """An in_progress record within its lease stays with its owner whatever reclaim says."""
    key = new_key()
    first = store.claim(key, owner="w1")
    second = store.claim(key, owner="w2", reclaim=True)
    assert not second.acquired
    assert second.record == first.record


# -------------------------------------------------------------------- fenced writes


def test_heartbeat_needs_the_owner_and_fence(store: Facade) -> None:
    """heartbeat succeeds only for the holder (owner and fence) and moves the lease forward."""
    key = new_key()
    record = store.claim(key, owner="w1", lease=60.0).record
    assert not store.heartbeat(key, owner="w2", fence=1)
    assert not store.heartbeat(key, owner="w1", fence=2)
    assert not store.heartbeat(new_key(), owner="w1", fence=1)
    assert store.get(key) == record
    assert store.heartbeat(key, owner="w1", fence=1, lease=LONG)
    after = store.get(key)
    assert after is not None and after.lease_expires_at is not None
    assert record.lease_expires_at is not None
    assert after.lease_expires_at > record.lease_expires_at
    assert after.expires_at >= after.lease_expires_at + RETAIN - 1e-3  # renewed with it
    assert (
        replace(after, lease_expires_at=record.lease_expires_at, expires_at=record.expires_at)
        == record
    )


def test_finish_needs_the_owner_and_fence(store: Facade) -> None:
    """finish is refused for a wrong owner or fence and accepted once for the holder."""
    key = new_key()
    store.claim(key, owner="w1")
    assert not store.finish(key, owner="w2", fence=1)
    assert not store.finish(key, owner="w1", fence=2)
    assert not store.finish(new_key(), owner="w1", fence=1)
    record = store.get(key)
    assert record is not None and record.status == "in_progress"
    assert store.finish(key, owner="w1", fence=1, status="failed", result=None, error="boom")
    done = store.get(key)
    assert done is not None
    assert (done.status, done.result, done.error, done.fence) == ("failed", None, "boom", 1)
    # A finished call is no longer held: a second finish or a heartbeat changes nothing.
    assert not store.finish(key, owner="w1", fence=1, result="other")
    assert not store.heartbeat(key, owner="w1", fence=1)
    assert not store.release(key, owner="w1", fence=1)
    assert store.get(key) == done


@pytest.mark.parametrize("status", ["completed", "failed", "unknown"])
def test_finish_records_every_final_status(store: Facade, status: str) -> None:
    """Each final status is stored as given, with its result and error."""
    key = new_key()
    store.claim(key, owner="w1")
    assert store.finish(key, owner="w1", fence=1, status=status, result="[1]", error="e")
    record = store.get(key)
    assert record is not None
    assert (record.status, record.result, record.error) == (status, "[1]", "e")


def test_release_needs_the_owner_and_fence_and_frees_the_key(store: Facade) -> None:
    """release deletes only the holder's claim; the key can then be claimed afresh."""
    key = new_key()
    record = store.claim(key, owner="w1").record
    assert not store.release(key, owner="w2", fence=1)
    assert not store.release(key, owner="w1", fence=2)
    assert store.get(key) == record
    assert store.release(key, owner="w1", fence=1)
    assert store.get(key) is None
    assert not store.release(key, owner="w1", fence=1)
    again = store.claim(key, owner="w2")
    assert again.acquired and again.record.owner == "w2" and again.record.fence == 1


# ------------------------------------------------------------------- expired leases


def test_expired_lease_without_reclaim_becomes_unknown(backend: Backend, store: Facade) -> None:
    """An expired lease claimed with reclaim=False turns unknown with fence + 1, no owner."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    backend.wait(SHORT * 1.5)
    claim = store.claim(key, owner="w2", reclaim=False)
    assert not claim.acquired
    record = claim.record
    assert (record.status, record.owner, record.fence) == ("unknown", None, 2)
    assert record.error == LEASE_LOST  # the same words on every backend reach the model
    assert store.get(key) == record
    # The old owner is fenced out of every write.
    assert not store.heartbeat(key, owner="w1", fence=1)
    assert not store.finish(key, owner="w1", fence=1)
    assert not store.release(key, owner="w1", fence=1)
    # And the verdict sticks: nobody acquires an unknown call.
    later = store.claim(key, owner="w3", reclaim=True)
    assert not later.acquired and later.record == record


def test_expired_lease_with_reclaim_is_taken_over(backend: Backend, store: Facade) -> None:
    """With reclaim=True an expired lease goes to the new owner with fence + 1."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    backend.wait(SHORT * 1.5)
    claim = store.claim(key, owner="w2", reclaim=True)
    assert claim.acquired
    assert (claim.record.status, claim.record.owner, claim.record.fence) == (
        "in_progress",
        "w2",
        2,
    )
    # Every write of the paused first owner is refused...
    assert not store.heartbeat(key, owner="w1", fence=1)
    assert not store.finish(key, owner="w1", fence=1, result="stale")
    assert not store.release(key, owner="w1", fence=1)
    assert store.get(key) == claim.record
    # ... and the new owner's are accepted.
    assert store.heartbeat(key, owner="w2", fence=2)
    assert store.finish(key, owner="w2", fence=2, result="fresh")
    record = store.get(key)
    assert record is not None and (record.status, record.result) == ("completed", "fresh")


def test_expired_lease_of_other_arguments_is_a_conflict(backend: Backend, store: Facade) -> None:
    """Other arguments never take over, even an expired lease: not acquired, unchanged."""
    key = new_key()
    record = store.claim(key, owner="w1", lease=SHORT).record
    backend.wait(SHORT * 1.5)
    claim = store.claim(key, owner="w2", args_hash="h2", reclaim=True)
    assert not claim.acquired and claim.record == record


def test_heartbeat_keeps_a_lease_alive(backend: Backend, store: Facade) -> None:
    """A heartbeat before expiry keeps the call with its owner past the first lease."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    assert store.heartbeat(key, owner="w1", fence=1, lease=LONG)
    backend.wait(SHORT * 1.5)
    claim = store.claim(key, owner="w2", reclaim=True)
    assert not claim.acquired and claim.record.owner == "w1"


# ---------------------------------------------------------------------- concurrency


def test_concurrent_claims_acquire_exactly_once(store: Facade) -> None:
    """Of 8 simultaneous claims of one key exactly one is acquired, for 15 keys in a row."""
    owners = [f"w{i}" for i in range(8)]
    for _ in range(15):
        key = new_key()
        claims = store.race(key, owners)
        winners = [claim for claim in claims if claim.acquired]
        assert len(winners) == 1
        winner = winners[0].record
        assert all(claim.record.owner == winner.owner for claim in claims)
        assert store.get(key) == winner


def test_concurrent_takeovers_of_an_expired_lease(backend: Backend, store: Facade) -> None:
    """Racing claims of one expired lease: one takeover (reclaim) or one verdict (no reclaim).

    With reclaim exactly one claimant wins with fence 2; without, the record turns
    ``unknown`` exactly once (fence 2, not one increment per claimant) and nobody wins.
    """
    owners = [f"w{i}" for i in range(6)]
    keys = {True: new_key(), False: new_key()}
    for key in keys.values():
        store.claim(key, owner="paused", lease=SHORT)
    backend.wait(SHORT * 1.5)
    for reclaim, key in keys.items():
        claims = store.race(key, owners, reclaim=reclaim)
        winners = [claim for claim in claims if claim.acquired]
        record = store.get(key)
        assert record is not None and record.fence == 2
        if reclaim:
            assert len(winners) == 1 and record == winners[0].record
            assert record.owner in owners and record.status == "in_progress"
        else:
            assert winners == []
            assert (record.status, record.owner) == ("unknown", None)
            assert all(claim.record == record for claim in claims)


# ------------------------------------------------------------------ the executors


def test_store_satisfies_its_protocol(store: Facade) -> None:
    """Sync stores are (Admin)``Store``s, async ones (Admin)``AsyncStore``s (runtime check)."""
    if store.is_async:
        assert isinstance(store.store, AsyncAdminStore) and isinstance(store.store, AsyncStore)
        assert not isinstance(store.store, Store)
    else:
        assert isinstance(store.store, AdminStore) and isinstance(store.store, Store)
        assert not isinstance(store.store, AsyncStore)


def test_lease_lost_text_is_the_same_on_every_backend(backend: Backend, store: Facade) -> None:
    """The unknown verdict and the texts the executor reports are identical everywhere."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    backend.wait(SHORT * 1.5)
    verdict = store.claim(key, owner="w2").record
    assert verdict.error == LEASE_LOST
    assert LEASE_LOST == (
        "the lease expired while the tool may have been running; its effect is in doubt"
    )


def test_executor_runs_once_then_replays(store: Facade) -> None:
    """The real (Async)Executor on each backend: a tool runs once; a rerun replays its result."""
    runs: list[int] = []
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> dict[str, Any]:
        """Pay an amount."""
        runs.append(amount)
        return {"paid": amount, "note": "déjà vu ✓", "big": 2**70}

    response = one_call_response("pay", {"amount": 5}, "call_1")
    outcomes = []
    for _ in range(2):
        if store.is_async:
            executor = AsyncExecutor(tools, store=store.store, scope="contract")
            outcomes.append(store.raw_await(executor.run(response))[0])
        else:
            outcomes.append(Executor(tools, store=store.store, scope="contract").run(response)[0])
    first, second = outcomes
    assert runs == [5]
    assert (first.status, second.status) == ("completed", "replayed")
    assert second.value == first.value == {"paid": 5, "note": "déjà vu ✓", "big": 2**70}
    assert second.result_json == first.result_json


# ------------------------------------------------------------------ model property


class Model:
    """The Protocol's rules without time: what every store must answer (reference)."""

    def __init__(self) -> None:
        self.records: dict[str, tuple[str, str, str | None, int, str | None]] = {}

    def claim(self, key: str, owner: str, args_hash: str) -> bool:
        if key not in self.records:
            self.records[key] = (args_hash, "in_progress", owner, 1, None)
            return True
        return False

    def holds(self, key: str, owner: str, fence: int) -> bool:
        record = self.records.get(key)
        return record is not None and record[1:4] == ("in_progress", owner, fence)

    def finish(self, key: str, owner: str, fence: int, status: str, result: str) -> bool:
        if not self.holds(key, owner, fence):
            return False
        args_hash, _, _, _, _ = self.records[key]
        self.records[key] = (args_hash, status, owner, fence, result)
        return True

    def release(self, key: str, owner: str, fence: int) -> bool:
        if not self.holds(key, owner, fence):
            return False
        del self.records[key]
        return True


OPERATION = st.tuples(
    st.sampled_from(["claim", "heartbeat", "finish", "release", "get"]),
    st.integers(0, 2),  # key
    st.sampled_from(["a", "b", "c"]),  # owner
    st.integers(1, 2),  # fence
    st.sampled_from(["h1", "h2"]),  # args hash
    st.sampled_from(["completed", "failed", "unknown"]),
)


def test_random_operation_sequences_match_the_model(store: Facade) -> None:
    """Random sequences of claims and fenced writes give exactly the model's answers."""

    @settings(max_examples=25, database=None)
    @given(st.lists(OPERATION, max_size=25))
    def check(operations: list[tuple[str, int, str, int, str, str]]) -> None:
        model = Model()
        run = uuid.uuid4().hex
        for op, k, owner, fence, args_hash, status in operations:
            key = f"{run}-{k}"
            if op == "claim":
                claim = store.claim(key, owner=owner, args_hash=args_hash)
                assert claim.acquired == model.claim(key, owner, args_hash)
            elif op == "heartbeat":
                expected = model.holds(key, owner, fence)
                assert store.heartbeat(key, owner=owner, fence=fence) == expected
            elif op == "finish":
                result = f"{owner}:{fence}"
                expected = model.finish(key, owner, fence, status, result)
                got = store.finish(key, owner=owner, fence=fence, status=status, result=result)
                assert got == expected
            elif op == "release":
                assert store.release(key, owner=owner, fence=fence) == model.release(
                    key, owner, fence
                )
            record = store.get(key)
            want = model.records.get(key)
            if want is None:
                assert record is None
            else:
                assert record is not None
                got_fields = (
                    record.args_hash,
                    record.status,
                    record.owner,
                    record.fence,
                    record.result,
                )
                assert got_fields == want

    check()
