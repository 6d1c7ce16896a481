"""Per-call store cost: toolwire's stores against the same round trips made directly with
each driver, the floor an executed call cannot go below.

One *call* is what the executor does for a tool that runs: ``claim`` a fresh key, then
``finish`` it as the holder. For each store the same number of calls is made with the
raw driver, doing the same round trips with the least work that still decides something:

* memory: a dict behind a lock (insert a tuple if absent, then replace it);
* SQLite (``sqlite3``, the same file settings: WAL, ``synchronous=FULL``, a busy
  timeout): ``BEGIN IMMEDIATE; INSERT OR IGNORE; COMMIT`` then ``BEGIN IMMEDIATE;
  UPDATE … WHERE key AND owner AND fence; COMMIT``: two write transactions, two fsyncs;
* PostgreSQL (``psycopg``, one autocommit connection): ``INSERT … ON CONFLICT DO NOTHING``
  then a fenced ``UPDATE``: two round trips;
* Redis (``redis-py``): ``SET … NX PX`` then ``SET … XX PX``: two round trips.

Ratios are toolwire time / driver time (1.0 = no overhead over the floor). Each cell is
the best of three passes after a warm-up. PostgreSQL and Redis are throwaway servers
started here (``tests/servers.py``; PostgreSQL with ``fsync=off``) unless
``TOOLWIRE_BENCH_POSTGRES`` (a DSN) or ``TOOLWIRE_BENCH_REDIS`` (a URL) name servers to
use; a server that cannot start is reported and skipped.

``python -m benchmarks stores [--quick]``.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolwire import MemoryStore, SQLiteStore

QUICK = "--quick" in sys.argv or os.environ.get("TOOLWIRE_BENCH_QUICK") == "1"
CALLS = {"memory": 20_000, "sqlite": 300, "postgres": 1_000, "redis": 2_000}
if QUICK:
    CALLS = {name: max(100, count // 5) for name, count in CALLS.items()}
LEASE, RETENTION = 60.0, 3600.0

Calls = Callable[[int], None]  # makes n calls with fresh keys


def _best(make: Calls, count: int) -> float:
    """Seconds per call: the best of three passes of ``count`` calls after a warm-up."""
    make(max(10, count // 20))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        make(count)
        best = min(best, time.perf_counter() - start)
    return best / count


def _keys(count: int) -> Iterator[str]:
    run = uuid.uuid4().hex
    return (f"{run}-{i}" for i in range(count))


def _store_calls(store: Any) -> Calls:
    """Executed calls through a toolwire store."""

    def make(count: int) -> None:
        for key in _keys(count):
            claim = store.claim(
                key, args_hash="h", idempotency_key=key, owner="w",
                lease=LEASE, retention=RETENTION, reclaim=False,
            )  # fmt: skip
            store.finish(key, owner="w", fence=claim.record.fence, status="completed",
                         result='{"ok": true}', error=None)  # fmt: skip

    return make


# ------------------------------------------------------------------ the driver floors


def _memory_floor() -> Calls:
    records: dict[str, tuple[Any, ...]] = {}
    lock = threading.Lock()

    def make(count: int) -> None:
        for key in _keys(count):
            with lock:
                if key not in records:
                    records[key] = ("h", "in_progress", "w", 1, None)
            with lock:
                if records[key][2:4] == ("w", 1):
                    records[key] = ("h", "completed", "w", 1, '{"ok": true}')

    return make


def _sqlite_floor(path: Path) -> Calls:
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute(
        "CREATE TABLE calls (key TEXT PRIMARY KEY, args_hash TEXT, status TEXT, owner TEXT,"
        " fence INTEGER, result TEXT, expires_at REAL)"
    )

    def make(count: int) -> None:
        for key in _keys(count):
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "INSERT OR IGNORE INTO calls VALUES (?, 'h', 'in_progress', 'w', 1, NULL, ?)",
                (key, time.time() + RETENTION),
            )
            db.execute("COMMIT")
            db.execute("BEGIN IMMEDIATE")
            db.execute(
                "UPDATE calls SET status = 'completed', result = ? WHERE key = ? AND owner = 'w'"
                " AND fence = 1 AND status = 'in_progress'",
                ('{"ok": true}', key),
            )
            db.execute("COMMIT")

    return make


def _postgres_floor(dsn: str) -> tuple[Calls, Callable[[], None]]:
    import psycopg

    conn = psycopg.connect(dsn, autocommit=True)
    table = f"bench_floor_{uuid.uuid4().hex[:8]}"
    conn.execute(
        f"CREATE TABLE {table} (key text PRIMARY KEY, args_hash text, status text, owner text,"
        " fence bigint, result bytea, expires_at double precision)"
    )
    insert = (
        f"INSERT INTO {table} VALUES (%s, 'h', 'in_progress', 'w', 1, NULL,"
        " extract(epoch FROM clock_timestamp()) + 3600) ON CONFLICT (key) DO NOTHING"
    )
    update = (
        f"UPDATE {table} SET status = 'completed', result = %s WHERE key = %s AND owner = 'w'"
        " AND fence = 1 AND status = 'in_progress'"
    )

    def make(count: int) -> None:
        for key in _keys(count):
            conn.execute(insert, (key,))
            conn.execute(update, (b'{"ok": true}', key))

    return make, conn.close


def _redis_floor(url: str) -> tuple[Calls, Callable[[], None]]:
    import redis

    client = redis.Redis.from_url(url)
    ms = int(RETENTION * 1000)

    def make(count: int) -> None:
        for key in _keys(count):
            client.set(f"bench-floor:{key}", b"in_progress:w:1", nx=True, px=ms)
            client.set(f"bench-floor:{key}", b'completed:{"ok": true}', xx=True, px=ms)

    return make, client.close


# ---------------------------------------------------------------------------- servers


@contextlib.contextmanager
def _server(kind: str) -> Iterator[str | None]:
    """A DSN/URL from the environment, or a throwaway server; ``None`` if neither."""
    given = os.environ.get(f"TOOLWIRE_BENCH_{kind.upper()}")
    if given:
        yield given
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    try:
        import servers

        start = servers.postgres_server if kind == "postgres" else servers.redis_server
        with start() as target:
            yield target
    except Exception as exc:  # reported, and that row skipped
        print(f"  {kind}: no server ({str(exc).splitlines()[0][:120]})")
        yield None


# ------------------------------------------------------------------------------- main


def measure() -> list[tuple[str, float, float, str]]:
    """(store, toolwire s/call, driver s/call, round trips) for every store reachable."""
    rows: list[tuple[str, float, float, str]] = []
    memory = MemoryStore()
    rows.append(("memory", _best(_store_calls(memory), CALLS["memory"]),
                 _best(_memory_floor(), CALLS["memory"]), "0"))  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "toolwire.db")
        ours = _best(_store_calls(store), CALLS["sqlite"])
        store.close()
        floor = _best(_sqlite_floor(Path(tmp) / "floor.db"), CALLS["sqlite"])
        rows.append(("sqlite", ours, floor, "2 commits"))
    for kind in ("postgres", "redis"):
        with _server(kind) as target:
            if target is not None:
                rows.append(_server_row(kind, target))
    return rows


def _server_row(kind: str, target: str) -> tuple[str, float, float, str]:
    """The row of a server store: toolwire's store, then the driver floor."""
    store: Any
    if kind == "postgres":
        from toolwire.stores.postgres import PostgresStore

        store = PostgresStore(target, table=f"bench_{uuid.uuid4().hex[:8]}")
        make, close = _postgres_floor(target)
    else:
        from toolwire.stores.redis import RedisStore

        store = RedisStore(target, prefix=f"bench-{uuid.uuid4().hex[:8]}:")
        make, close = _redis_floor(target)
    try:
        ours = _best(_store_calls(store), CALLS[kind])
        floor = _best(make, CALLS[kind])
    finally:
        store.close()
        close()
    return kind, ours, floor, "2"


def main() -> None:
    """Print per-call costs and ratios against the driver floors."""
    print("stores: one executed call = claim + finish (µs per call, best of 3)")
    rows = measure()
    print(f"  {'store':<10}{'toolwire':>12}{'driver':>12}{'ratio':>8}  round trips")
    for name, ours, floor, trips in rows:
        print(f"  {name:<10}{ours * 1e6:>12.1f}{floor * 1e6:>12.1f}{ours / floor:>8.2f}  {trips}")


if __name__ == "__main__":
    main()
