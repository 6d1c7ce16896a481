"""The store contract, server specifics: PostgreSQL and Redis connections, set-up,
self-test, foreign data, drivers that are missing, and round trips per call.

See ``tests/store_backends.py`` for the facade; the servers are throwaway instances
(``tests/servers.py``).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from servers import free_port
from store_backends import (
    LONG,
    RETAIN,
    SERVER_BACKENDS,
    SHORT,
    Facade,
    namespace,
    new_key,
    open_server_store,
    postgres_dsn,
    redis_url,
)
from toolwire import SettingsError, StoreError
from toolwire.stores import Claim

__all__ = ["postgres_dsn", "redis_url"]  # fixtures used here

SRC = Path(__file__).resolve().parents[2] / "src"


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
        facade = open_server_store(kind, target, **{option: 2})
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

    # Every store performs its requests through one method (``_perform`` for sync stores,
    # ``_execute`` for async ones); the fake makes every claim "win", as a proxy or replica
    # that ignores the conditional write would.
    cls, method = {
        "postgres": (PostgresStore, "_perform"),
        "postgres-async": (AsyncPostgresStore, "_execute"),
        "redis": (RedisStore, "_perform"),
        "redis-async": (AsyncRedisStore, "_execute"),
    }[kind]
    original = getattr(cls, method)

    def always_acquired(reply: Any) -> Any:
        if isinstance(reply, Claim):
            return Claim(acquired=True, record=replace(reply.record, owner="someone-else"))
        return reply

    async def async_wrapped(self: Any, request: Any) -> Any:
        return always_acquired(await original(self, request))

    def sync_wrapped(self: Any, request: Any) -> Any:
        return always_acquired(original(self, request))

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
    """A table name that is not an identifier is a caller mistake, refused before any
    connection."""
    from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore

    for bad in ["", "a b", 'x"; DROP TABLE y; --', "a.b.c", "1abc"]:
        with pytest.raises(SettingsError, match="table name"):
            PostgresStore("host=/nonexistent", table=bad)
        with pytest.raises(SettingsError, match="table name"):
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
        Facade(store, is_async=False).claim(key, owner="w1", lease=LONG, retention=RETAIN)
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
        Facade(store, is_async=False).claim(key, owner="w1", lease=LONG, retention=RETAIN)
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
    facade = open_server_store(kind, redis_url, prefix=prefix)
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
    """Redis deletes a record expire_grace after its expiry (lease + retention), by itself."""
    import redis as redis_py

    from toolwire.stores.redis import RedisStore

    prefix = f"{namespace()}:"
    with RedisStore(redis_url, prefix=prefix, expire_grace=0.1) as store:
        key = new_key()
        Facade(store, is_async=False).claim(key, owner="w1", lease=SHORT, retention=SHORT)
        admin = redis_py.Redis.from_url(redis_url)
        try:
            ttl = admin.pttl(f"{prefix}{key}")
            assert 0 < ttl <= (2 * SHORT + 0.1) * 1000 + 50
            time.sleep(2 * SHORT + 0.3)
            assert admin.exists(f"{prefix}{key}") == 0
        finally:
            admin.close()


@pytest.mark.server
def test_postgres_nul_in_a_key_raises_store_error(postgres_dsn: str) -> None:
    """A key PostgreSQL cannot store (NUL) is a StoreError with the driver error chained."""
    from toolwire.stores.postgres import PostgresStore

    with PostgresStore(postgres_dsn, table=namespace()) as store:
        with pytest.raises(StoreError) as info:
            store.get("a\x00b")
        assert info.value.__cause__ is not None


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
            facade = open_server_store(kind, postgres_dsn, table=table)
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
    facade = open_server_store(kind, target, **option)
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
