"""The shared set-up of the store contract suite: every backend behind one facade.

Each ``tests/stores/test_store_*.py`` module states rules of :mod:`toolwire.stores._protocol` and
runs them on every backend: memory, SQLite, PostgreSQL and Redis, sync and async. Async
stores are driven through a small synchronous facade that owns one event loop, so a rule
is written once; concurrency is real on both sides (threads behind a barrier for sync
stores, ``asyncio.gather`` over a connection pool for async ones).

Time: the in-process stores get a fake clock that the tests move; PostgreSQL and Redis use
their servers' clocks, so their tests use short leases (0.2 s) and sleep, or move stored
times back ("backdate"), which for a server store is the same as its clock jumping
forward. PostgreSQL and Redis run as throwaway servers (``tests/servers.py``); they skip
where the binaries are missing and fail under ``CI=true``.

A test module registers the fixtures by importing them:
``from store_backends import backend, postgres_dsn, redis_url, store``.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import servers
from toolwire import Response, ToolCall
from toolwire.stores import Claim, Record

# The throwaway servers, registered as fixtures of the importing module.
postgres_dsn = servers.postgres_dsn
redis_url = servers.redis_url

LONG = 600.0  # a lease or retention that never runs out during a test
SHORT = 0.2  # a lease or retention the test waits out
RETAIN = 3600.0
SERVER_BACKENDS = ["postgres", "postgres-async", "redis", "redis-async"]


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

    def records(self, **options: Any) -> list[Record]:
        found: list[Record] = self._call("records", **options)
        return found

    def resolve(self, key: str, **options: Any) -> bool:
        return bool(self._call("resolve", key, **options))

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
    *(pytest.param(name, marks=pytest.mark.server) for name in SERVER_BACKENDS),
]
# Every backend but memory, which keeps nothing across a restart by design.
PERSISTENT = [b for b in BACKENDS if b != "memory"]


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
    else:
        target = request.getfixturevalue("postgres_dsn" if "postgres" in name else "redis_url")
        result = Backend(name, lambda ns: open_server_store(name, target, ns))
        if name.startswith("postgres"):
            result.backdate = lambda ns, seconds: _backdate_postgres(target, ns, seconds)
        else:
            result.backdate = lambda ns, seconds: _backdate_redis(target, ns, seconds)
    try:
        yield result
    finally:
        for facade in result.opened:
            facade.close()


def open_server_store(
    kind: str, target: str, namespace: str | None = None, **options: Any
) -> Facade:
    """A PostgreSQL or Redis store of ``kind`` (``postgres``, ``redis-async``...) on
    ``namespace`` (a table, or a key prefix), behind a facade."""
    if namespace is not None:
        options.setdefault(
            *(("table", namespace) if "postgres" in kind else ("prefix", f"{namespace}:"))
        )
    if kind.startswith("postgres"):
        from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

        if kind.endswith("async"):
            return Facade(AsyncPostgresStore(target, **options), is_async=True)
        return Facade(PostgresStore(target, **options), is_async=False)
    from toolwire.stores.redis import AsyncRedisStore, RedisStore

    if kind.endswith("async"):
        return Facade(AsyncRedisStore(target, **options), is_async=True)
    return Facade(RedisStore(target, **options), is_async=False)


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
    """A fresh call key."""
    return f"call-{uuid.uuid4().hex}"


def one_call_response(name: str, arguments: dict[str, Any], call_id: str = "c1") -> Response:
    """A finished response with one call of ``name`` (a fresh response id each time)."""
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments="", index=0)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=f"resp-{uuid.uuid4().hex}",
        model=None,
    )
