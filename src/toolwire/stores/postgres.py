"""PostgreSQL stores (psycopg 3): ``PostgresStore`` (threads) and ``AsyncPostgresStore`` (asyncio).

Strategy. One row per call key in one table (``toolwire_calls`` by default, created with
``CREATE TABLE IF NOT EXISTS``). Every decision is a single arbitrated write by the server,
never a read followed by a write:

- ``claim`` is one ``INSERT … ON CONFLICT (key) DO UPDATE … WHERE <takeover conditions>
  RETURNING …`` inside a transaction. The insert wins for a new key; on a conflict the
  ``WHERE`` admits exactly the two takeovers the Protocol allows (the record is past its
  retention, or it is ``in_progress`` with the same arguments and an expired lease) and
  the ``SET`` decides, in the same step, between a takeover (``reclaim``: new owner,
  fence + 1) and the ``unknown`` verdict (fence + 1, no owner). PostgreSQL locks the
  conflicting row even when the ``WHERE`` rejects the update, so the ``SELECT`` that
  follows in the same transaction reports exactly the record the decision saw.
- every later transition is ``UPDATE``/``DELETE … WHERE key = %s AND owner = %s AND
  fence = %s AND status = 'in_progress'`` and the record is within its retention: a
  fenced-out worker changes nothing and gets ``False``.
- time is the server's: ``clock_timestamp()`` is read once per statement, as seconds since
  the epoch (``double precision``); client clocks never enter a decision.
- retention: a row whose ``expires_at`` has passed counts as absent for every operation;
  ``purge()`` deletes such rows.
- ``result`` and ``error`` are stored as UTF-8 ``bytea`` (with ``surrogatepass``), so every
  Python string, including NUL characters and lone surrogates, comes back byte-identical.

Connections: a small pool of at most ``max_connections`` psycopg connections, opened on
demand, each used by one operation at a time (``psycopg_pool`` is not required). A
connection that fails is discarded and the next operation opens a new one; the failed
operation itself is not retried (a lost reply leaves its effect unknown, so it raises
``StoreError`` and the executor fails closed). Every driver failure surfaces as
``toolwire.StoreError`` with the driver's exception chained.

Start-up: the table and its index are created under a transaction-scoped advisory lock, so
workers that start together on a fresh database do not trip over PostgreSQL's catalog race
on concurrent ``CREATE TABLE IF NOT EXISTS``. Self-test (G10): the store claims a fresh
probe key twice and requires exactly one acquisition, then releases it; a server or proxy
that does not enforce the conditional write makes the constructor (or, for the async
store, the first operation) raise ``StoreError``.

Guaranteed: of any number of concurrent claims of one key, across threads, processes and
machines sharing the database, exactly one is acquired. Not guaranteed: anything after the
retention has passed, and anything a transaction-pooling proxy that reorders statements
breaks (the self-test catches the obvious cases). Each operation is O(1) statements on a
primary-key index (O(log n) in the table size); ``purge`` is one ``DELETE`` through the
``expires_at`` index.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType
from typing import Any

try:
    import psycopg
    from psycopg import sql
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "toolwire.stores.postgres needs psycopg 3; install it with pip install 'toolwire[postgres]'"
    ) from exc

from .._errors import StoreError, StoreSettingsError
from . import _checks as checks
from ._protocol import Claim, FinalStatus, Record, Status

__all__ = ["AsyncPostgresStore", "PostgresStore"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_LEASE_LOST = "lease expired while in progress; the tool may have run"
_COLUMNS = (
    "key, args_hash, idempotency_key, status, owner, fence, lease_expires_at, "
    "result, error, created_at, expires_at"
)
_NOW = "extract(epoch FROM clock_timestamp())::double precision"


# --------------------------------------------------------------------------- statements


class _Statements:
    """The SQL of one table, composed once with the table name quoted as an identifier."""

    __slots__ = (
        "claim",
        "create",
        "create_lock",
        "finish",
        "get",
        "heartbeat",
        "purge",
        "release",
        "select_locked",
    )

    def __init__(self, table: str) -> None:
        parts = table.split(".")
        if not 1 <= len(parts) <= 2 or not all(_NAME.fullmatch(part) for part in parts):
            raise StoreError(
                f"invalid table name {table!r}: use an identifier, optionally schema-qualified"
            )
        ident = sql.Identifier(*parts)
        index = sql.Identifier(f"{parts[-1]}_expires_at_idx")

        def q(text: str) -> sql.Composed:
            return sql.SQL(text).format(t=ident, idx=index)

        self.create = [
            q(
                "CREATE TABLE IF NOT EXISTS {t} ("
                " key text PRIMARY KEY,"
                " args_hash text NOT NULL,"
                " idempotency_key text NOT NULL,"
                " status text NOT NULL CHECK (status IN"
                "  ('in_progress', 'completed', 'failed', 'unknown')),"
                " owner text,"
                " fence bigint NOT NULL,"
                " lease_expires_at double precision,"
                " result bytea,"
                " error bytea,"
                " created_at double precision NOT NULL,"
                " expires_at double precision NOT NULL)"
            ),
            q("CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"),
        ]
        # Concurrent CREATE TABLE IF NOT EXISTS of one new table can fail with a unique
        # violation in the catalog; workers starting together serialise on this lock.
        self.create_lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext(%(table)s))")
        # ``excluded.created_at`` is the one reading of the server clock for the whole
        # statement; "fresh" = the old record is past its retention (counts as absent),
        # "take" = the caller gets the call (fresh, or an expired lease with reclaim).
        fresh = "c.expires_at <= excluded.created_at"
        take = f"({fresh} OR %(reclaim)s)"
        self.claim = q(
            "INSERT INTO {t} AS c (" + _COLUMNS + ") "
            "SELECT %(key)s, %(args_hash)s, %(idempotency_key)s, 'in_progress', %(owner)s, 1,"
            " n.now + %(lease)s, NULL, NULL, n.now, n.now + %(retention)s"
            " FROM (SELECT " + _NOW + " AS now) AS n "
            "ON CONFLICT (key) DO UPDATE SET"
            " args_hash = excluded.args_hash,"
            f" idempotency_key = CASE WHEN {take} THEN excluded.idempotency_key"
            " ELSE c.idempotency_key END,"
            f" status = CASE WHEN {take} THEN 'in_progress' ELSE 'unknown' END,"
            f" owner = CASE WHEN {take} THEN excluded.owner ELSE NULL END,"
            " fence = c.fence + 1,"
            f" lease_expires_at = CASE WHEN {take} THEN excluded.lease_expires_at"
            " ELSE NULL END,"
            " result = NULL,"
            f" error = CASE WHEN {take} THEN NULL ELSE %(lease_lost)s END,"
            f" created_at = CASE WHEN {fresh} THEN excluded.created_at ELSE c.created_at END,"
            f" expires_at = CASE WHEN {take} THEN greatest(c.expires_at, excluded.expires_at)"
            " ELSE c.expires_at END"
            f" WHERE {fresh} OR (c.args_hash = excluded.args_hash"
            " AND c.status = 'in_progress' AND c.lease_expires_at <= excluded.created_at)"
            " RETURNING " + _COLUMNS
        )
        self.select_locked = q("SELECT " + _COLUMNS + " FROM {t} WHERE key = %(key)s")
        held = (
            " WHERE key = %(key)s AND owner = %(owner)s AND fence = %(fence)s"
            " AND status = 'in_progress' AND expires_at > "
        )
        self.heartbeat = q(
            "UPDATE {t} SET lease_expires_at = n.now + %(lease)s"
            " FROM (SELECT " + _NOW + " AS now) AS n" + held + "n.now"
        )
        self.finish = q(
            "UPDATE {t} SET status = %(status)s, result = %(result)s, error = %(error)s,"
            " lease_expires_at = NULL" + held + _NOW
        )
        self.release = q("DELETE FROM {t}" + held + _NOW)
        self.get = q(
            "SELECT " + _COLUMNS + " FROM {t} WHERE key = %(key)s AND expires_at > " + _NOW
        )
        self.purge = q("DELETE FROM {t} WHERE expires_at <= " + _NOW)


# ------------------------------------------------------------------------- validation


def _optional_text(name: str, value: object) -> bytes | None:
    """A result or error string encoded for storage (``None`` stays ``None``)."""
    text = checks.text_or_none(name, value)
    return None if text is None else text.encode("utf-8", "surrogatepass")


def _claim_params(
    key: object,
    args_hash: object,
    idempotency_key: object,
    owner: object,
    lease: object,
    retention: object,
    reclaim: object,
) -> dict[str, Any]:
    """The checked parameters of a claim statement."""
    return {
        "key": checks.identifier("key", key),
        "args_hash": checks.identifier("args_hash", args_hash),
        "idempotency_key": checks.identifier("idempotency_key", idempotency_key),
        "owner": checks.identifier("owner", owner),
        "lease": checks.seconds("lease", lease),
        "retention": checks.seconds("retention", retention),
        "reclaim": checks.flag("reclaim", reclaim),
        "lease_lost": _LEASE_LOST.encode(),
    }


def _held_params(key: object, owner: object, fence: object) -> dict[str, Any]:
    """The checked owner/fence parameters of a fenced transition."""
    return {
        "key": checks.identifier("key", key),
        "owner": checks.identifier("owner", owner),
        "fence": checks.fence(fence),
    }


def _finish_params(
    key: object, owner: object, fence: object, status: object, result: object, error: object
) -> dict[str, Any]:
    """The checked parameters of a ``finish`` statement."""
    params = _held_params(key, owner, fence)
    params["status"] = checks.final_status(status)
    params["result"] = _optional_text("result", result)
    params["error"] = _optional_text("error", error)
    return params


# ---------------------------------------------------------------------------- decoding


def _decode_optional(value: object) -> str | None:
    """A stored ``bytea`` back to the exact string that was stored."""
    if value is None:
        return None
    if isinstance(value, memoryview):
        value = value.tobytes()
    if not isinstance(value, bytes):
        raise StoreError(f"unexpected reply from PostgreSQL: {type(value).__name__} for text")
    return value.decode("utf-8", "surrogatepass")


def _float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreError(f"unexpected reply from PostgreSQL: {value!r} for a time")
    return float(value)


def _record(row: Sequence[Any] | None) -> Record:
    """A row of the eleven record columns as a :class:`Record`; ``StoreError`` if malformed."""
    if row is None or len(row) != 11:
        raise StoreError(f"unexpected reply from PostgreSQL: {row!r}")
    (key, args_hash, idem, status, owner, fence, lease_at, result, error, created, expires) = row
    if (
        not isinstance(key, str)
        or not isinstance(args_hash, str)
        or not isinstance(idem, str)
        or status not in checks.STATUSES
        or not (owner is None or isinstance(owner, str))
        or isinstance(fence, bool)
        or not isinstance(fence, int)
    ):
        raise StoreError(f"unexpected reply from PostgreSQL: {row!r}")
    state: Status = status
    return Record(
        key=key,
        args_hash=args_hash,
        idempotency_key=idem,
        status=state,
        owner=owner,
        fence=fence,
        lease_expires_at=None if lease_at is None else _float(lease_at),
        result=_decode_optional(result),
        error=_decode_optional(error),
        created_at=_float(created),
        expires_at=_float(expires),
    )


# ------------------------------------------------------------------------------ sync


class PostgresStore:
    """The :class:`~toolwire.stores.Store` Protocol on PostgreSQL, safe to share between threads.

    ``dsn`` is a libpq connection string or URL. ``table`` (optionally ``schema.table``) is
    created if missing. At most ``max_connections`` connections are open at once, each
    opened with ``connect_timeout`` seconds; ``connect_kwargs`` go to
    ``psycopg.connect``. With ``self_test`` (the default) the constructor checks that the
    server enforces conditional writes and raises ``StoreError`` if it does not.
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "toolwire_calls",
        max_connections: int = 4,
        connect_timeout: float = 10.0,
        self_test: bool = True,
        connect_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(dsn, str):
            raise StoreSettingsError(f"dsn must be a string, got {type(dsn).__name__}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise StoreSettingsError(f"max_connections must be an int, got {max_connections!r}")
        if max_connections < 1:
            raise StoreSettingsError(f"max_connections must be at least 1, got {max_connections}")
        self._dsn = dsn
        self._sql = _Statements(table)
        self._timeout = checks.seconds("connect_timeout", connect_timeout)
        self._kwargs = dict(connect_kwargs or {})
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(max_connections)
        self._closed = False
        try:
            with self._connection() as conn, conn.transaction():
                conn.execute(self._sql.create_lock, {"table": table})
                for statement in self._sql.create:
                    conn.execute(statement)
            if self_test:
                self._self_test()
        except BaseException:
            self.close()
            raise

    # -- connections

    def _connect(self) -> psycopg.Connection[Any]:
        try:
            return psycopg.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(1, math.ceil(self._timeout)),
                **self._kwargs,
            )
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {exc}") from exc

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A connection of the pool for one operation; a failed one is discarded."""
        if self._closed:
            raise StoreError("the store is closed")
        if not self._slots.acquire(timeout=self._timeout + 30):
            raise StoreError("timed out waiting for a free PostgreSQL connection")
        conn: psycopg.Connection[Any] | None = None
        try:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                conn = self._connect()
            try:
                yield conn
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"PostgreSQL operation failed: {exc}") from exc
        finally:
            if conn is not None:
                self._give_back(conn)
            self._slots.release()

    def _give_back(self, conn: psycopg.Connection[Any]) -> None:
        healthy = (
            not conn.closed
            and not conn.broken
            and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        with self._lock:
            if healthy and not self._closed:
                self._idle.append(conn)
                return
        with contextlib.suppress(Exception):  # a connection being thrown away may fail to close
            conn.close()

    def _self_test(self) -> None:
        checks.self_test(self.claim, self.release, "the database")

    # -- the Protocol

    def claim(
        self,
        key: str,
        *,
        args_hash: str,
        idempotency_key: str,
        owner: str,
        lease: float,
        retention: float,
        reclaim: bool,
    ) -> Claim:
        """Atomically claim ``key`` for ``owner`` (see :meth:`toolwire.stores.Store.claim`)."""
        params = _claim_params(key, args_hash, idempotency_key, owner, lease, retention, reclaim)
        with self._connection() as conn, conn.transaction():
            row = conn.execute(self._sql.claim, params).fetchone()
            if row is not None:
                record = _record(row)
                return Claim(acquired=record.status == "in_progress", record=record)
            # The conflicting row is locked by the INSERT above until commit.
            row = conn.execute(self._sql.select_locked, params).fetchone()
            return Claim(acquired=False, record=_record(row))

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` if ``owner``/``fence`` still hold the call."""
        params = _held_params(key, owner, fence)
        params["lease"] = checks.seconds("lease", lease)
        with self._connection() as conn:
            return conn.execute(self._sql.heartbeat, params).rowcount == 1

    def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: FinalStatus,
        result: str | None,
        error: str | None,
    ) -> bool:
        """Record the outcome if ``owner``/``fence`` still hold the call; ``False`` if not."""
        params = _finish_params(key, owner, fence, status, result, error)
        with self._connection() as conn:
            return conn.execute(self._sql.finish, params).rowcount == 1

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim if ``owner``/``fence`` still hold it."""
        params = _held_params(key, owner, fence)
        with self._connection() as conn:
            return conn.execute(self._sql.release, params).rowcount == 1

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` (also when past its retention)."""
        params = {"key": checks.identifier("key", key)}
        with self._connection() as conn:
            row = conn.execute(self._sql.get, params).fetchone()
        return None if row is None else _record(row)

    def purge(self) -> int:
        """Delete every record past its retention; return how many."""
        with self._connection() as conn:
            return max(0, conn.execute(self._sql.purge).rowcount)

    def close(self) -> None:
        """Close every pooled connection; later operations raise ``StoreError``."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):  # closing is best effort
                conn.close()

    def __enter__(self) -> PostgresStore:
        """Use the store as a context manager that closes it on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()


# ----------------------------------------------------------------------------- async


class AsyncPostgresStore:
    """The :class:`~toolwire.stores.AsyncStore` Protocol on PostgreSQL, for asyncio.

    Same options and semantics as :class:`PostgresStore`. Connections, the table and the
    self-test are set up on first use (or by ``await store.open()`` / ``async with``), in
    the event loop that uses the store; use one store per event loop.
    """

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "toolwire_calls",
        max_connections: int = 4,
        connect_timeout: float = 10.0,
        self_test: bool = True,
        connect_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(dsn, str):
            raise StoreSettingsError(f"dsn must be a string, got {type(dsn).__name__}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int):
            raise StoreSettingsError(f"max_connections must be an int, got {max_connections!r}")
        if max_connections < 1:
            raise StoreSettingsError(f"max_connections must be at least 1, got {max_connections}")
        self._dsn = dsn
        self._sql = _Statements(table)
        self._timeout = checks.seconds("connect_timeout", connect_timeout)
        self._kwargs = dict(connect_kwargs or {})
        self._table = table
        self._self_test_wanted = self_test
        self._max = max_connections
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._slots: asyncio.Semaphore | None = None
        self._opening: asyncio.Lock | None = None
        self._ready = False
        self._closed = False

    async def open(self) -> None:
        """Create the table and run the self-test now instead of on first use."""
        if self._ready:
            return
        if self._closed:
            raise StoreError("the store is closed")
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._ready:
                return
            async with self._raw_connection() as conn, conn.transaction():
                await conn.execute(self._sql.create_lock, {"table": self._table})
                for statement in self._sql.create:
                    await conn.execute(statement)
            self._ready = True
            if self._self_test_wanted:
                try:
                    await self._self_test()
                except BaseException:
                    self._ready = False
                    raise

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        try:
            return await psycopg.AsyncConnection.connect(
                self._dsn,
                autocommit=True,
                connect_timeout=max(1, math.ceil(self._timeout)),
                **self._kwargs,
            )
        except Exception as exc:
            raise StoreError(f"cannot connect to PostgreSQL: {exc}") from exc

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """A ready connection (the store opened first) for one operation."""
        if not self._ready:
            await self.open()
        async with self._raw_connection() as conn:
            yield conn

    @asynccontextmanager
    async def _raw_connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self._closed:
            raise StoreError("the store is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max)
        slots = self._slots
        try:
            await asyncio.wait_for(slots.acquire(), timeout=self._timeout + 30)
        except asyncio.TimeoutError as exc:
            raise StoreError("timed out waiting for a free PostgreSQL connection") from exc
        conn: psycopg.AsyncConnection[Any] | None = None
        try:
            conn = self._idle.pop() if self._idle else await self._connect()
            try:
                yield conn
            except StoreError:
                raise
            except Exception as exc:
                raise StoreError(f"PostgreSQL operation failed: {exc}") from exc
        finally:
            if conn is not None:
                await self._give_back(conn)
            slots.release()

    async def _give_back(self, conn: psycopg.AsyncConnection[Any]) -> None:
        healthy = (
            not conn.closed
            and not conn.broken
            and conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        )
        if healthy and not self._closed:
            self._idle.append(conn)
            return
        with contextlib.suppress(Exception):  # a connection being thrown away may fail to close
            await conn.close()

    async def _self_test(self) -> None:
        await checks.aself_test(self.claim, self.release, "the database")

    async def claim(
        self,
        key: str,
        *,
        args_hash: str,
        idempotency_key: str,
        owner: str,
        lease: float,
        retention: float,
        reclaim: bool,
    ) -> Claim:
        """Atomically claim ``key`` for ``owner`` (see :meth:`toolwire.stores.Store.claim`)."""
        params = _claim_params(key, args_hash, idempotency_key, owner, lease, retention, reclaim)
        async with self._connection() as conn, conn.transaction():
            cursor = await conn.execute(self._sql.claim, params)
            row = await cursor.fetchone()
            if row is not None:
                record = _record(row)
                return Claim(acquired=record.status == "in_progress", record=record)
            # The conflicting row is locked by the INSERT above until commit.
            cursor = await conn.execute(self._sql.select_locked, params)
            return Claim(acquired=False, record=_record(await cursor.fetchone()))

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` if ``owner``/``fence`` still hold the call."""
        params = _held_params(key, owner, fence)
        params["lease"] = checks.seconds("lease", lease)
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql.heartbeat, params)
            return cursor.rowcount == 1

    async def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: FinalStatus,
        result: str | None,
        error: str | None,
    ) -> bool:
        """Record the outcome if ``owner``/``fence`` still hold the call; ``False`` if not."""
        params = _finish_params(key, owner, fence, status, result, error)
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql.finish, params)
            return cursor.rowcount == 1

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim if ``owner``/``fence`` still hold it."""
        params = _held_params(key, owner, fence)
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql.release, params)
            return cursor.rowcount == 1

    async def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` (also when past its retention)."""
        params = {"key": checks.identifier("key", key)}
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql.get, params)
            row = await cursor.fetchone()
        return None if row is None else _record(row)

    async def purge(self) -> int:
        """Delete every record past its retention; return how many."""
        async with self._connection() as conn:
            cursor = await conn.execute(self._sql.purge)
            return max(0, cursor.rowcount)

    async def aclose(self) -> None:
        """Close every pooled connection; later operations raise ``StoreError``."""
        self._closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(Exception):  # closing is best effort
                await conn.close()

    async def __aenter__(self) -> AsyncPostgresStore:
        """Open the store (table, self-test) for ``async with``; closed on exit."""
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        await self.aclose()
