"""One contract suite for every store: memory, SQLite, PostgreSQL and Redis, sync and async.

Each test states one rule of :mod:`toolwire.stores._protocol` and runs it on every backend.
Async stores are driven through a small synchronous facade that owns one event loop, so the
rule is written once; concurrency is real on both sides (threads behind a barrier for sync
stores, ``asyncio.gather`` over a connection pool for async ones).

Time: the in-process stores get a fake clock that the tests move; PostgreSQL and Redis use
their servers' clocks, so their tests use short leases and retentions (0.2 s) and sleep.
PostgreSQL and Redis run as throwaway servers (``tests/servers.py``); they skip where the
binaries are missing and fail under ``CI=true``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servers
from servers import free_port
from toolwire import (
    AsyncExecutor,
    Executor,
    Response,
    StoreError,
    StoreSettingsError,
    Toolbox,
    ToolCall,
)
from toolwire.stores import AsyncStore, Claim, Record, Store

# The throwaway servers, registered as fixtures of this module.
postgres_dsn = servers.postgres_dsn
redis_url = servers.redis_url

LONG = 600.0  # a lease or retention that never runs out during a test
SHORT = 0.2  # a lease or retention the test waits out
RETAIN = 3600.0
SRC = Path(__file__).resolve().parents[1] / "src"


# ------------------------------------------------------------------------- the facade


class FakeClock:
    """A clock the tests move by hand (for the in-process stores)."""

    def __init__(self) -> None:
        self.now = time.time()
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def advance(self, seconds: float) -> None:
        with self._lock:
            self.now += seconds


class Facade:
    """A synchronous view of any store; async stores run on a loop owned by the facade."""

    def __init__(self, store: Any, is_async: bool) -> None:
        self.store = store
        self.is_async = is_async
        self._loop = asyncio.new_event_loop() if is_async else None

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self.store, name)
        if self._loop is None:
            return method(*args, **kwargs)
        return self._loop.run_until_complete(method(*args, **kwargs))

    def claim(self, key: str, *, owner: str, args_hash: str = "h1", **kw: Any) -> Claim:
        options: dict[str, Any] = {
            "idempotency_key": f"idem-{key}-{args_hash}",
            "lease": LONG,
            "retention": RETAIN,
            "reclaim": False,
        }
        options.update(kw)
        claim: Claim = self._call("claim", key, args_hash=args_hash, owner=owner, **options)
        return claim

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float = LONG) -> bool:
        return bool(self._call("heartbeat", key, owner=owner, fence=fence, lease=lease))

    def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: str = "completed",
        result: str | None = '{"ok": true}',
        error: str | None = None,
    ) -> bool:
        return bool(
            self._call(
                "finish", key, owner=owner, fence=fence, status=status, result=result, error=error
            )
        )

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        return bool(self._call("release", key, owner=owner, fence=fence))

    def get(self, key: str) -> Record | None:
        record: Record | None = self._call("get", key)
        return record

    def purge(self) -> int:
        count: int = self._call("purge")
        return count

    def raw(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """Call a store method with arbitrary (possibly bad) arguments."""
        return self._call(name, *args, **kwargs)

    def raw_await(self, awaitable: Any) -> Any:
        """Run a coroutine on the facade's loop (async stores only)."""
        assert self._loop is not None
        return self._loop.run_until_complete(awaitable)

    def race(self, key: str, owners: list[str], *, reclaim: bool = False) -> list[Claim]:
        """Claim ``key`` once per owner, all at the same moment."""
        if self._loop is None:
            barrier = threading.Barrier(len(owners))
            results: dict[str, Claim] = {}
            errors: list[BaseException] = []

            def worker(owner: str) -> None:
                try:
                    barrier.wait()
                    results[owner] = self.claim(key, owner=owner, reclaim=reclaim)
                except BaseException as exc:  # reported by the main thread
                    errors.append(exc)

            threads = [threading.Thread(target=worker, args=(owner,)) for owner in owners]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if errors:
                raise errors[0]
            return [results[owner] for owner in owners]

        async def gather() -> list[Claim]:
            claims = [
                self.store.claim(
                    key,
                    args_hash="h1",
                    idempotency_key=f"idem-{key}-h1",
                    owner=owner,
                    lease=LONG,
                    retention=RETAIN,
                    reclaim=reclaim,
                )
                for owner in owners
            ]
            return list(await asyncio.gather(*claims))

        return self._loop.run_until_complete(gather())

    def close(self) -> None:
        if self._loop is None:
            self.store.close()
            return
        try:
            self._loop.run_until_complete(self.store.aclose())
        finally:
            self._loop.close()


@dataclass
class Backend:
    """One store implementation: how to open it on a namespace and how time passes."""

    name: str
    opener: Callable[[str], Facade]
    clock: FakeClock | None = None
    persistent: bool = True
    opened: list[Facade] = field(default_factory=list)
    # Move every stored time of a namespace back by some seconds: for a server store that
    # is the same as its clock jumping forward, without waiting.
    backdate: Callable[[str, float], None] | None = None

    def open(self, namespace: str) -> Facade:
        facade = self.opener(namespace)
        self.opened.append(facade)
        return facade

    def wait(self, seconds: float) -> None:
        """Let ``seconds`` pass on the store's clock."""
        if self.clock is not None:
            self.clock.advance(seconds)
        else:
            time.sleep(seconds)

    def jump(self, namespace: str, seconds: float) -> None:
        """Jump ``seconds`` ahead on the store's clock (fake clock, or backdated records)."""
        if self.clock is not None:
            self.clock.advance(seconds)
        else:
            assert self.backdate is not None
            self.backdate(namespace, seconds)

    def close(self, facade: Facade) -> None:
        """Close one opened store now."""
        self.opened.remove(facade)
        facade.close()


BACKENDS = [
    "memory",
    "sqlite",
    *(
        pytest.param(name, marks=pytest.mark.server)
        for name in ["postgres", "postgres-async", "redis", "redis-async"]
    ),
]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    """Every store backend in turn, with a fresh namespace per test."""
    name: str = request.param
    if name == "memory":
        from toolwire.stores.memory import MemoryStore

        clock = FakeClock()
        shared: dict[str, MemoryStore] = {}

        def open_memory(namespace: str) -> Facade:
            # A memory store does not survive a restart: reopening gives the same object.
            store = shared.setdefault(namespace, MemoryStore(clock=clock))
            return Facade(store, is_async=False)

        result = Backend(name, open_memory, clock=clock, persistent=False)
    elif name == "sqlite":
        from toolwire.stores.sqlite import SQLiteStore

        clock = FakeClock()
        result = Backend(
            name,
            lambda ns: Facade(SQLiteStore(str(tmp_path / f"{ns}.db"), clock=clock), False),
            clock=clock,
        )
    elif name.startswith("postgres"):
        from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

        dsn = request.getfixturevalue("postgres_dsn")
        if name.endswith("async"):
            result = Backend(
                name, lambda ns: Facade(AsyncPostgresStore(dsn, table=ns), is_async=True)
            )
        else:
            result = Backend(name, lambda ns: Facade(PostgresStore(dsn, table=ns), False))
        result.backdate = lambda ns, seconds: _backdate_postgres(dsn, ns, seconds)
    else:
        from toolwire.stores.redis import AsyncRedisStore, RedisStore

        url = request.getfixturevalue("redis_url")
        if name.endswith("async"):
            result = Backend(
                name, lambda ns: Facade(AsyncRedisStore(url, prefix=f"{ns}:"), is_async=True)
            )
        else:
            result = Backend(name, lambda ns: Facade(RedisStore(url, prefix=f"{ns}:"), False))
        result.backdate = lambda ns, seconds: _backdate_redis(url, ns, seconds)
    try:
        yield result
    finally:
        for facade in result.opened:
            facade.close()


def _backdate_postgres(dsn: str, table: str, seconds: float) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()
        if not exists or not exists[0]:
            return  # an async store creates its table on first use: nothing to move yet
        conn.execute(
            f"UPDATE {table} SET created_at = created_at - %(s)s,"
            " expires_at = expires_at - %(s)s, lease_expires_at = lease_expires_at - %(s)s",
            {"s": seconds},
        )


_BACKDATE_LUA = """
for _, k in ipairs(KEYS) do
  for _, f in ipairs({'created_at', 'expires_at', 'lease_expires_at'}) do
    if redis.call('HEXISTS', k, f) == 1 then
      redis.call('HINCRBY', k, f, -tonumber(ARGV[1]))
    end
  end
end
"""


def _backdate_redis(url: str, prefix: str, seconds: float) -> None:
    import redis as redis_py

    client = redis_py.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}:*"))
        if keys:
            client.eval(_BACKDATE_LUA, len(keys), *keys, round(seconds * 1_000_000))
    finally:
        client.close()


@pytest.fixture
def store(backend: Backend) -> Facade:
    """A store of the current backend on a namespace of its own."""
    return backend.open(namespace())


def namespace() -> str:
    """A fresh table name / key prefix / file name."""
    return f"t_{uuid.uuid4().hex[:16]}"


def new_key() -> str:
    return f"call-{uuid.uuid4().hex}"


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
    assert record.expires_at - record.created_at == pytest.approx(RETAIN, abs=1e-3)
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
    assert replace(after, lease_expires_at=record.lease_expires_at) == record


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
    assert record.error  # says why the outcome is in doubt
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


# ------------------------------------------------------------------------ retention


def test_retention_expiry_counts_as_absent_and_purge_counts(backend: Backend) -> None:
    """Records past retention read as absent; purge deletes exactly those and counts them."""
    store = backend.open(namespace())
    old = [new_key() for _ in range(3)]
    for key in old:
        store.claim(key, owner="w1", retention=SHORT, lease=SHORT)
    store.finish(old[0], owner="w1", fence=1)
    kept = new_key()
    store.claim(kept, owner="w1")
    backend.wait(SHORT * 1.5)
    assert [store.get(key) for key in old] == [None, None, None]
    assert store.get(kept) is not None
    assert store.purge() == 3
    assert store.purge() == 0
    assert store.get(kept) is not None


def test_claim_after_retention_starts_over_with_the_next_fence(
    backend: Backend, store: Facade
) -> None:
    """A key past its retention is claimable again, by anyone, with the old fence + 1."""
    key = new_key()
    store.claim(key, owner="w1", retention=SHORT, lease=SHORT)
    store.finish(key, owner="w1", fence=1)
    backend.wait(SHORT * 1.5)
    claim = store.claim(key, owner="w2", args_hash="h2", retention=RETAIN)
    assert claim.acquired
    record = claim.record
    assert (record.owner, record.fence, record.args_hash, record.status) == (
        "w2",
        2,
        "h2",
        "in_progress",
    )
    assert record.result is None and record.error is None
    assert record.expires_at - record.created_at == pytest.approx(RETAIN, abs=1e-3)


def test_writes_after_retention_are_refused(backend: Backend, store: Facade) -> None:
    """Once its record is past retention the owner's heartbeat, finish and release fail."""
    key = new_key()
    store.claim(key, owner="w1", retention=SHORT)
    backend.wait(SHORT * 1.5)
    assert not store.heartbeat(key, owner="w1", fence=1)
    assert not store.finish(key, owner="w1", fence=1)
    assert not store.release(key, owner="w1", fence=1)


# -------------------------------------------------------------------------- results


RESULTS = [
    "",
    '{"text": "héllo wörld ✓ 日本語 🎉"}',
    '{"n": 123456789012345678901234567890, "f": 1e400, "g": -0.0}',
    '{"s": "\\u0000\\ud83d\\ude00"}',
    "x" * 1_000_000,
    "tab\there\r\nnewline and NUL \x00 control characters",
    "  leading and trailing spaces  ",
]


def test_finish_keeps_result_text_byte_for_byte(store: Facade) -> None:
    """Results (non-ASCII, big numbers, long text, control characters) come back identical."""
    for text in RESULTS:
        key = new_key()
        store.claim(key, owner="w1")
        assert store.finish(key, owner="w1", fence=1, result=text, error=text[:100])
        record = store.get(key)
        assert record is not None
        assert record.result == text and record.error == text[:100]
        assert type(record.result) is str


def test_finish_keeps_lone_surrogates(store: Facade) -> None:
    """Results and errors with lone surrogates read back identical, without an encoding error.

    ``json.dumps(..., ensure_ascii=False)`` writes lone surrogates into JSON text as is.
    """
    text = '{"s": "lone \udc80 and \ud83d halves"}'
    key = new_key()
    store.claim(key, owner="w1")
    assert store.finish(key, owner="w1", fence=1, result=text, error=text)
    record = store.get(key)
    assert record is not None and (record.result, record.error) == (text, text)


def test_result_round_trip_property(store: Facade) -> None:
    """Any Python text stored as a result or error reads back exactly (Hypothesis)."""

    @settings(max_examples=40, database=None)
    @given(result=st.text(), error=st.none() | st.text(max_size=50))
    def check(result: str, error: str | None) -> None:
        key = new_key()
        store.claim(key, owner="w1")
        assert store.finish(key, owner="w1", fence=1, result=result, error=error)
        record = store.get(key)
        assert record is not None
        assert (record.result, record.error) == (result, error)

    check()


# Every backend but memory, which keeps nothing across a restart by design.
PERSISTENT = [b for b in BACKENDS if b != "memory"]


@pytest.mark.parametrize("backend", PERSISTENT, indirect=True)
def test_replay_after_restart(backend: Backend) -> None:
    """A new store object on the same database returns the stored outcome and refuses claims."""
    assert backend.persistent
    ns = namespace()
    first = backend.open(ns)
    key = new_key()
    first.claim(key, owner="w1")
    first.finish(key, owner="w1", fence=1, result='{"balance": 10}')
    stored = first.get(key)
    first.close()
    backend.opened.remove(first)
    second = backend.open(ns)
    assert second.get(key) == stored
    claim = second.claim(key, owner="w2")
    assert not claim.acquired and claim.record == stored


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
    """Sync stores are ``Store``s and async ones ``AsyncStore``s (runtime Protocol check)."""
    if store.is_async:
        assert isinstance(store.store, AsyncStore) and not isinstance(store.store, Store)
    else:
        assert isinstance(store.store, Store) and not isinstance(store.store, AsyncStore)


def test_executor_runs_once_then_replays(store: Facade) -> None:
    """The real (Async)Executor on each backend: a tool runs once; a rerun replays its result."""
    runs: list[int] = []
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> dict[str, Any]:
        """Pay an amount."""
        runs.append(amount)
        return {"paid": amount, "note": "déjà vu ✓", "big": 2**70}

    response = Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(id="call_1", name="pay", arguments={"amount": 5}, raw_arguments="", index=0)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=f"resp-{uuid.uuid4().hex}",
        model=None,
    )
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


class TimedModel:
    """The Protocol's rules with time (seconds on the model clock): the reference answers."""

    def __init__(self) -> None:
        self.now = 0.0
        self.records: dict[str, dict[str, Any]] = {}
        # (owner, fence) of the latest acquisition per key, to aim writes at: the holder's,
        # or a stale holder's once the call has moved on.
        self.last_holder: dict[str, tuple[str, int]] = {}

    def _live(self, key: str) -> dict[str, Any] | None:
        record = self.records.get(key)
        return record if record is not None and record["expires"] > self.now else None

    def claim(
        self, key: str, owner: str, args_hash: str, lease: float, retention: float, reclaim: bool
    ) -> bool:
        record = self.records.get(key)
        now = self.now
        if record is None or record["expires"] <= now:
            fence = 1 if record is None else record["fence"] + 1
            self.records[key] = {
                "args_hash": args_hash,
                "status": "in_progress",
                "owner": owner,
                "fence": fence,
                "lease": now + lease,
                "result": None,
                "expires": now + retention,
            }
            return True
        if record["args_hash"] != args_hash:
            return False
        if record["status"] == "in_progress" and record["lease"] <= now:
            record["fence"] += 1
            if reclaim:
                record.update(owner=owner, lease=now + lease)
                record["expires"] = max(record["expires"], now + retention)
                return True
            record.update(status="unknown", owner=None, lease=None)
        return False

    def holds(self, key: str, owner: str, fence: int) -> bool:
        record = self._live(key)
        return (
            record is not None
            and record["status"] == "in_progress"
            and (record["owner"], record["fence"]) == (owner, fence)
        )

    def view(self, key: str) -> tuple[Any, ...] | None:
        record = self._live(key)
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


def test_timed_operation_sequences_match_the_model(backend: Backend) -> None:
    """Random claims, fenced writes, clock jumps and purges give the timed model's answers.

    This is the stale-owner scenario at scale: owners whose lease ran out while "paused",
    takeovers, unknown verdicts, retention expiry and purges, checked after every step.
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
                            model.records[key]["lease"] = model.now + lease
                    elif op == "finish":
                        result = f"{owner}:{fence}:{status}"
                        got = store.finish(
                            key, owner=owner, fence=fence, status=status, result=result
                        )
                        assert got == allowed
                        if allowed:
                            model.records[key].update(status=status, result=result, lease=None)
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


# ----------------------------------------------------------------------- bad input


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("claim", ("k",), {"lease": 0}),
    ("claim", ("k",), {"lease": -1.0}),
    ("claim", ("k",), {"lease": float("nan")}),
    ("claim", ("k",), {"lease": "10"}),
    ("claim", ("k",), {"retention": 0}),
    ("claim", ("k",), {"retention": None}),
    ("claim", ("k",), {"lease": True}),
    ("finish", ("k",), {"status": "in_progress"}),
    ("finish", ("k",), {"status": "done"}),
    ("finish", ("k",), {"result": b"bytes"}),
    ("finish", ("k",), {"result": {"a": 1}}),
    ("finish", ("k",), {"error": 42}),
]


@pytest.mark.parametrize(("method", "args", "bad"), BAD_CALLS)
def test_bad_arguments_raise_store_settings_error(
    store: Facade, method: str, args: tuple[Any, ...], bad: dict[str, Any]
) -> None:
    """Arguments outside the Protocol raise StoreSettingsError before anything is written."""
    key = new_key()
    if method == "claim":
        kwargs: dict[str, Any] = {
            "args_hash": "h1",
            "idempotency_key": "i",
            "owner": "w1",
            "lease": LONG,
            "retention": RETAIN,
            "reclaim": False,
        }
    else:
        store.claim(key, owner="w1")
        kwargs = {"owner": "w1", "fence": 1, "status": "completed", "result": "r", "error": None}
    kwargs.update(bad)
    before = store.get(key)
    with pytest.raises(StoreSettingsError):
        store.raw(method, key, **kwargs)
    assert store.get(key) == before


def test_closed_store_raises_store_error(backend: Backend) -> None:
    """Every operation on a closed store raises StoreError."""
    facade = backend.open(namespace())
    facade.claim(new_key(), owner="w1")
    if facade.is_async:
        facade._loop.run_until_complete(facade.store.aclose())  # type: ignore[union-attr]
    else:
        facade.store.close()
    with pytest.raises(StoreError):
        facade.claim(new_key(), owner="w1")
    with pytest.raises(StoreError):
        facade.get(new_key())
    with pytest.raises(StoreError):
        facade.purge()


# ===================================================== PostgreSQL and Redis specifics


SERVER_BACKENDS = ["postgres", "postgres-async", "redis", "redis-async"]


def _run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )


def test_import_toolwire_pulls_neither_psycopg_nor_redis() -> None:
    """``import toolwire`` and ``import toolwire.stores`` load neither driver."""
    done = _run_python(
        "import sys, toolwire, toolwire.stores\n"
        "from toolwire.stores import Store, AsyncStore, Record, Claim\n"
        "bad = [m for m in ('psycopg', 'redis') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    ("module", "driver", "extra"),
    [("postgres", "psycopg", "postgres"), ("redis", "redis", "redis")],
)
def test_missing_driver_names_the_extra(module: str, driver: str, extra: str) -> None:
    """Importing a server store without its driver raises ImportError naming the extra."""
    done = _run_python(
        f"import sys\nsys.modules[{driver!r}] = None\n"
        "try:\n"
        f"    import toolwire.stores.{module}\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    raise SystemExit('imported without the driver')\n"
    )
    assert done.returncode == 0, done.stderr
    assert f"toolwire[{extra}]" in done.stdout


def _open_server_store(kind: str, target: str, **options: Any) -> Facade:
    if kind.startswith("postgres"):
        from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

        if kind.endswith("async"):
            return Facade(AsyncPostgresStore(target, **options), is_async=True)
        return Facade(PostgresStore(target, **options), is_async=False)
    from toolwire.stores.redis import AsyncRedisStore, RedisStore

    if kind.endswith("async"):
        return Facade(AsyncRedisStore(target, **options), is_async=True)
    return Facade(RedisStore(target, **options), is_async=False)


@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_unreachable_server_raises_store_error(kind: str, tmp_path: Path) -> None:
    """A server that is not there gives StoreError with the driver's error chained."""
    port = free_port()
    if kind.startswith("postgres"):
        target = f"host=127.0.0.1 port={port} user=postgres dbname=postgres connect_timeout=2"
    else:
        target = f"redis://127.0.0.1:{port}/0"
    with pytest.raises(StoreError) as info:
        option = "connect_timeout" if kind.startswith("postgres") else "socket_timeout"
        facade = _open_server_store(kind, target, **{option: 2})
        try:
            facade.claim(new_key(), owner="w1")
        finally:
            facade.close()
    assert info.value.__cause__ is not None


@pytest.mark.server
@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_self_test_refuses_a_store_without_conditional_writes(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """The start-up probe fails closed when a second claim of one key is also acquired."""
    target = request.getfixturevalue("postgres_dsn" if "postgres" in kind else "redis_url")
    from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore
    from toolwire.stores.redis import AsyncRedisStore, RedisStore

    # The method each store's self-test claims through; the fake makes every claim "win",
    # as a proxy or replica that ignores the conditional write would.
    cls, method = {
        "postgres": (PostgresStore, "claim"),
        "postgres-async": (AsyncPostgresStore, "claim"),
        "redis": (RedisStore, "claim"),
        "redis-async": (AsyncRedisStore, "_do_claim"),
    }[kind]
    original = getattr(cls, method)

    def always_acquired(claim: Claim) -> Claim:
        return Claim(acquired=True, record=replace(claim.record, owner="someone-else"))

    async def async_wrapped(self: Any, *args: Any, **kwargs: Any) -> Claim:
        return always_acquired(await original(self, *args, **kwargs))

    def sync_wrapped(self: Any, *args: Any, **kwargs: Any) -> Claim:
        return always_acquired(original(self, *args, **kwargs))

    wrapped = async_wrapped if kind.endswith("async") else sync_wrapped
    broken: Any = type("Broken", (cls,), {method: wrapped})
    options = {"table": namespace()} if "postgres" in kind else {"prefix": namespace()}
    if not kind.endswith("async"):
        with pytest.raises(StoreError, match="conditional writes"):
            broken(target, **options)
        return
    store = broken(target, **options)
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(StoreError, match="conditional writes"):
            loop.run_until_complete(store.get("k"))
        loop.run_until_complete(store.aclose())
    finally:
        loop.close()


def test_postgres_rejects_bad_table_names() -> None:
    """A table name that is not an identifier is refused before any connection."""
    from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

    for bad in ["", "a b", 'x"; DROP TABLE y; --', "a.b.c", "1abc"]:
        with pytest.raises(StoreError, match="table name"):
            PostgresStore("host=/nonexistent", table=bad)
        with pytest.raises(StoreError, match="table name"):
            AsyncPostgresStore("host=/nonexistent", table=bad)


@pytest.mark.server
def test_postgres_table_with_a_foreign_schema_raises_store_error(postgres_dsn: str) -> None:
    """An existing table of another shape makes the store fail with StoreError, not a crash."""
    import psycopg

    table = namespace()
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {table} (key text PRIMARY KEY, other int)")
    from toolwire.stores.postgres import PostgresStore

    with pytest.raises(StoreError):
        PostgresStore(postgres_dsn, table=table)


@pytest.mark.server
def test_postgres_reconnects_after_the_server_drops_connections(postgres_dsn: str) -> None:
    """A killed connection fails one operation with StoreError; the next one reconnects."""
    import psycopg

    from toolwire.stores.postgres import PostgresStore

    app = f"toolwire-test-{uuid.uuid4().hex[:8]}"
    with PostgresStore(
        postgres_dsn,
        table=namespace(),
        max_connections=1,
        connect_kwargs={"application_name": app},
    ) as store:
        key = new_key()
        store.claim(
            key,
            args_hash="h",
            idempotency_key="i",
            owner="w1",
            lease=LONG,
            retention=RETAIN,
            reclaim=False,
        )
        with psycopg.connect(postgres_dsn, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                (app,),
            )
        with pytest.raises(StoreError) as info:
            store.get(key)
        assert isinstance(info.value.__cause__, psycopg.Error)
        record = store.get(key)
        assert record is not None and record.owner == "w1"


@pytest.mark.server
def test_redis_reconnects_after_the_server_drops_connections(redis_url: str) -> None:
    """A killed Redis connection fails at most one operation; the store keeps working."""
    import redis as redis_py

    from toolwire.stores.redis import RedisStore

    with RedisStore(redis_url, prefix=f"{namespace()}:") as store:
        key = new_key()
        store.claim(
            key,
            args_hash="h",
            idempotency_key="i",
            owner="w1",
            lease=LONG,
            retention=RETAIN,
            reclaim=False,
        )
        admin = redis_py.Redis.from_url(redis_url)
        admin.execute_command("CLIENT", "KILL", "SKIPME", "yes", "TYPE", "normal")
        admin.close()
        try:
            store.get(key)
        except StoreError as exc:
            assert exc.__cause__ is not None
        record = store.get(key)
        assert record is not None and record.owner == "w1"


@pytest.mark.server
@pytest.mark.parametrize("kind", ["redis", "redis-async"])
def test_redis_foreign_data_under_the_prefix_raises_store_error(kind: str, redis_url: str) -> None:
    """A non-hash or a malformed hash at a call key gives StoreError, never a crash."""
    import redis as redis_py

    prefix = f"{namespace()}:"
    admin = redis_py.Redis.from_url(redis_url)
    admin.set(f"{prefix}string", "not a hash")
    admin.hset(f"{prefix}broken", mapping={"status": "completed", "expires_at": "9" * 17})
    admin.hset(f"{prefix}weird", mapping={"status": "dancing", "expires_at": "9" * 17})
    admin.close()
    facade = _open_server_store(kind, redis_url, prefix=prefix)
    try:
        with pytest.raises(StoreError):
            facade.claim("string", owner="w1")
        with pytest.raises(StoreError):
            facade.get("string")
        with pytest.raises(StoreError, match="unexpected reply"):
            facade.get("broken")
        with pytest.raises(StoreError, match="unexpected reply"):
            facade.get("weird")
        assert facade.purge() == 0  # foreign keys are never deleted
    finally:
        facade.close()


@pytest.mark.server
def test_redis_records_expire_by_themselves(redis_url: str) -> None:
    """Redis deletes a record expire_grace after its retention, without purge."""
    import redis as redis_py

    from toolwire.stores.redis import RedisStore

    prefix = f"{namespace()}:"
    with RedisStore(redis_url, prefix=prefix, expire_grace=0.1) as store:
        key = new_key()
        store.claim(
            key,
            args_hash="h",
            idempotency_key="i",
            owner="w1",
            lease=SHORT,
            retention=SHORT,
            reclaim=False,
        )
        admin = redis_py.Redis.from_url(redis_url)
        try:
            ttl = admin.pttl(f"{prefix}{key}")
            assert 0 < ttl <= (SHORT + 0.1) * 1000 + 50
            time.sleep(SHORT + 0.3)
            assert admin.exists(f"{prefix}{key}") == 0
        finally:
            admin.close()


# Wrong types and malformed values: every backend refuses them alike, with
# StoreSettingsError, a caller mistake rather than an outage.
WRONG_TYPES: list[tuple[str, dict[str, Any]]] = [
    ("claim", {"key": 42}),
    ("claim", {"owner": None}),
    ("claim", {"args_hash": b"h"}),
    ("claim", {"key": ""}),
    ("claim", {"key": "lone \udc80 surrogate"}),
    ("claim", {"reclaim": "yes"}),
    ("claim", {"lease": float("inf")}),
    ("claim", {"retention": 0}),
    ("heartbeat", {"fence": "1"}),
    ("heartbeat", {"fence": True}),
    ("heartbeat", {"fence": 0}),
    ("heartbeat", {"lease": -1.0}),
    ("release", {"owner": 7}),
    ("get", {"key": None}),
]


def _call_with(facade: Facade, method: str, bad: dict[str, Any]) -> None:
    """Call ``method`` with valid arguments overridden by ``bad``; expect a usage error."""
    arguments: dict[str, Any] = {
        "claim": {
            "key": "k",
            "args_hash": "h",
            "idempotency_key": "i",
            "owner": "w1",
            "lease": LONG,
            "retention": RETAIN,
            "reclaim": False,
        },
        "heartbeat": {"key": "k", "owner": "w1", "fence": 1, "lease": LONG},
        "release": {"key": "k", "owner": "w1", "fence": 1},
        "get": {"key": "k"},
    }[method]
    arguments.update(bad)
    key = arguments.pop("key")
    with pytest.raises(StoreSettingsError):
        facade.raw(method, key, **arguments)


@pytest.mark.parametrize(("method", "bad"), WRONG_TYPES)
def test_wrong_argument_types_raise_store_settings_error(
    store: Facade, method: str, bad: dict[str, Any]
) -> None:
    """Arguments of the wrong type raise StoreSettingsError, never a driver or Python error."""
    _call_with(store, method, bad)


@pytest.mark.server
def test_postgres_nul_in_a_key_raises_store_error(postgres_dsn: str) -> None:
    """A key PostgreSQL cannot store (NUL) is a StoreError with the driver error chained."""
    from toolwire.stores.postgres import PostgresStore

    with PostgresStore(postgres_dsn, table=namespace()) as store:
        with pytest.raises(StoreError) as info:
            store.get("a\x00b")
        assert info.value.__cause__ is not None


@pytest.mark.server
@pytest.mark.parametrize("kind", SERVER_BACKENDS)
def test_server_stores_use_the_server_clock(
    kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client clock that is days off changes nothing: times come from the server."""
    target = request.getfixturevalue("postgres_dsn" if "postgres" in kind else "redis_url")
    option = {"table": namespace()} if "postgres" in kind else {"prefix": f"{namespace()}:"}
    real_now = time.time()
    monkeypatch.setattr(time, "time", lambda: real_now - 5 * 86400.0)
    facade = _open_server_store(kind, target, **option)
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


@pytest.mark.server
@pytest.mark.parametrize("kind", ["postgres", "postgres-async"])
def test_postgres_stores_started_together_create_one_table(kind: str, postgres_dsn: str) -> None:
    """Eight stores opened at once on a new table all start (no catalog race) and share it."""
    table = namespace()
    barrier = threading.Barrier(8)
    facades: list[Facade] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def start() -> None:
        try:
            barrier.wait()
            facade = _open_server_store(kind, postgres_dsn, table=table)
            facade.get("warm-up")  # an async store creates its table on first use
            with lock:
                facades.append(facade)
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert errors == []
        key = new_key()
        assert facades[0].claim(key, owner="w1").acquired
        assert not facades[-1].claim(key, owner="w2").acquired
    finally:
        for facade in facades:
            facade.close()


@pytest.mark.server
@pytest.mark.parametrize("kind", ["postgres-async", "redis-async"])
def test_async_stores_survive_cancelled_operations(
    kind: str, request: pytest.FixtureRequest
) -> None:
    """Operations cancelled mid-flight leak no connection; the store keeps working after."""
    target = request.getfixturevalue("postgres_dsn" if "postgres" in kind else "redis_url")
    option = {"table": namespace()} if "postgres" in kind else {"prefix": f"{namespace()}:"}
    facade = _open_server_store(kind, target, **option)
    store = facade.store

    async def scenario() -> None:
        await store.get("warm-up")
        for delay in (0.0, 0.0005, 0.001, 0.002, 0.005):
            tasks = [
                asyncio.ensure_future(
                    store.claim(
                        new_key(),
                        args_hash="h",
                        idempotency_key="i",
                        owner="w1",
                        lease=LONG,
                        retention=RETAIN,
                        reclaim=False,
                    )
                )
                for _ in range(12)
            ]
            await asyncio.sleep(delay)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        # Every connection slot came back: a burst of concurrent operations completes.
        key = new_key()
        claims = await asyncio.wait_for(
            asyncio.gather(
                *(
                    store.claim(
                        key,
                        args_hash="h",
                        idempotency_key="i",
                        owner=f"w{i}",
                        lease=LONG,
                        retention=RETAIN,
                        reclaim=False,
                    )
                    for i in range(8)
                )
            ),
            timeout=20,
        )
        assert sum(claim.acquired for claim in claims) == 1

    try:
        facade.raw_await(scenario())
    finally:
        facade.close()
