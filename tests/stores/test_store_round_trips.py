"""Round trips per call: what one executed call (claim + finish) costs each store on the
wire, counted where the bytes go, not by reading the code.

- PostgreSQL: libpq's protocol trace of the store's one pooled connection; a round trip is
  a message after which the client waits for the server (``Sync`` in the extended
  protocol, ``Query`` in the simple one).
- Redis: the server's ``INFO commandstats``, counting the commands a client can send
  (scripts called by ``EVALSHA``, ``SCAN``, ``SCRIPT LOAD``); redis-py does not pipeline
  them, so one command is one round trip.
- SQLite: the statements and commits each connection runs (``set_trace_callback``); they
  are in-process calls, and a commit is what reaches the disk (one fsync each).
- Memory: none.

The figures are printed (``-s``) and checked: 2 round trips per call on both servers,
sync and async, and 2 transactions on SQLite.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import pytest

from store_backends import LONG, RETAIN, namespace, postgres_dsn, redis_url
from toolwire import SQLiteStore

__all__ = ["postgres_dsn", "redis_url"]  # fixtures used here

CALLS = 50


def _call(i: int) -> tuple[str, dict[str, Any]]:
    key = f"rt-{i}"
    return key, {
        "args_hash": "h",
        "idempotency_key": key,
        "owner": "w",
        "lease": LONG,
        "retention": RETAIN,
        "reclaim": False,
    }


def _calls(store: Any, start: int, count: int) -> None:
    """``count`` executed calls: claim, then finish as the holder."""
    for i in range(start, start + count):
        key, options = _call(i)
        claim = store.claim(key, **options)
        assert claim.acquired
        assert store.finish(key, owner="w", fence=1, status="completed", result="1", error=None)


async def _acalls(store: Any, start: int, count: int) -> None:
    for i in range(start, start + count):
        key, options = _call(i)
        claim = await store.claim(key, **options)
        assert claim.acquired
        done = await store.finish(
            key, owner="w", fence=1, status="completed", result="1", error=None
        )
        assert done


def _wire_round_trips(trace: str) -> int:
    """Messages the client sent that wait for the server's answer, in a libpq trace."""
    count = 0
    for line in trace.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0] == "F" and parts[2].split(" ")[0] in ("Sync", "Query"):
            count += 1
    return count


@pytest.mark.server
@pytest.mark.parametrize("kind", ["postgres", "postgres-async"])
def test_postgres_call_costs_two_round_trips(kind: str, postgres_dsn: str) -> None:
    """One claim + one finish: 2 round trips on the wire (one autocommit statement each)."""
    import psycopg

    from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

    options = {"table": namespace(), "max_connections": 1}
    with tempfile.TemporaryFile("w+") as sink:

        def start_trace(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
            conn.pgconn.trace(sink.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS)

        if kind == "postgres":
            with PostgresStore(postgres_dsn, **options) as store:
                _calls(store, 0, 10)  # warm up: statements prepared, pool filled
                with store._pool.connection() as conn:
                    start_trace(conn)
                _calls(store, 10, CALLS)
                with store._pool.connection() as conn:
                    conn.pgconn.untrace()
        else:

            async def scenario() -> None:
                async with AsyncPostgresStore(postgres_dsn, **options) as store:
                    await _acalls(store, 0, 10)
                    assert store._pool is not None
                    async with store._pool.connection() as conn:
                        start_trace(conn)
                    await _acalls(store, 10, CALLS)
                    async with store._pool.connection() as conn:
                        conn.pgconn.untrace()

            asyncio.run(scenario())
        sink.seek(0)
        trips = _wire_round_trips(sink.read())
    print(f"{kind}: {trips / CALLS:.2f} round trips per call (claim + finish)")
    assert trips == 2 * CALLS


def _redis_sent(url: str) -> int:
    """Commands clients have sent a Redis server so far (of the kinds a store sends)."""
    import redis as redis_py

    client = redis_py.Redis.from_url(url)
    try:
        stats = client.info("commandstats")
    finally:
        client.close()
    kinds = ("cmdstat_evalsha", "cmdstat_eval", "cmdstat_scan", "cmdstat_script")
    return sum(int(stats[name]["calls"]) for name in kinds if name in stats)


@pytest.mark.server
@pytest.mark.parametrize("kind", ["redis", "redis-async"])
def test_redis_call_costs_two_round_trips(kind: str, redis_url: str) -> None:
    """One claim + one finish: 2 commands, each one script run (EVALSHA)."""
    from toolwire.stores.redis import AsyncRedisStore, RedisStore

    prefix = f"{namespace()}:"
    if kind == "redis":
        with RedisStore(redis_url, prefix=prefix) as store:
            _calls(store, 0, 10)
            before = _redis_sent(redis_url)
            _calls(store, 10, CALLS)
            sent = _redis_sent(redis_url) - before
    else:

        async def scenario() -> int:
            async with AsyncRedisStore(redis_url, prefix=prefix) as store:
                await _acalls(store, 0, 10)
                before = _redis_sent(redis_url)
                await _acalls(store, 10, CALLS)
                return _redis_sent(redis_url) - before

        sent = asyncio.run(scenario())
    print(f"{kind}: {sent / CALLS:.2f} round trips per call (claim + finish)")
    assert sent == 2 * CALLS


def test_sqlite_call_costs_two_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One claim + one finish: 2 write transactions (2 commits, one fsync each)."""
    statements: list[str] = []
    original = SQLiteStore._open_connection

    def traced(self: SQLiteStore) -> sqlite3.Connection:
        db = original(self)
        db.set_trace_callback(statements.append)
        return db

    monkeypatch.setattr(SQLiteStore, "_open_connection", traced)
    with SQLiteStore(tmp_path / "rt.db") as store:
        _calls(store, 0, 10)
        statements.clear()
        _calls(store, 10, CALLS)
    commits = sum(1 for s in statements if s.strip().upper() == "COMMIT")
    per_call = len(statements) / CALLS
    print(f"sqlite: {commits / CALLS:.0f} commits, {per_call:.0f} statements per call")
    assert commits == 2 * CALLS
    assert len(statements) <= 12 * CALLS
    assert os.path.exists(tmp_path / "rt.db")


@pytest.mark.server
def test_postgres_default_pool_does_not_throttle_the_executor(postgres_dsn: str) -> None:
    """The default pool holds at least the executor's default concurrency (8 calls), and
    8 concurrent claims each get a connection without waiting for another to finish."""
    import threading

    from toolwire.stores.postgres import DEFAULT_MAX_CONNECTIONS, PostgresStore

    workers = 8  # Executor(max_concurrency=8), the default
    assert workers <= DEFAULT_MAX_CONNECTIONS
    with PostgresStore(postgres_dsn, table=namespace()) as store:
        assert store._pool.max_size == DEFAULT_MAX_CONNECTIONS
        barrier = threading.Barrier(workers)
        held: list[Any] = []

        def hold() -> None:
            # Every worker holds a connection at once: a smaller pool would block here.
            with store._pool.connection(timeout=10) as conn:
                held.append(conn)
                barrier.wait(timeout=10)

        threads = [threading.Thread(target=hold) for _ in range(workers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len({id(conn) for conn in held}) == workers
