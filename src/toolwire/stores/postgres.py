"""PostgreSQL stores (psycopg 3): ``PostgresStore`` (threads) and ``AsyncPostgresStore`` (asyncio).

Every decision is one statement arbitrated by the server, on the server's clock: of any
number of concurrent claims of a key, across machines, exactly one is acquired. One round
trip per operation; O(log n) through the primary key.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

try:
    import psycopg
    from psycopg import sql
    from psycopg_pool import AsyncConnectionPool, ConnectionPool
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "toolwire.stores.postgres needs psycopg 3 and psycopg-pool; install them with "
        "pip install 'toolwire[postgres]'"
    ) from exc

from .._errors import SettingsError, StoreError
from . import _requests as requests
from ._protocol import LEASE_LOST, Claim, Record, Status, fresh_record
from ._requests import Request, T
from ._shells import AsyncShell, Flow, SyncShell, arun_flow, run_flow

__all__ = ["DEFAULT_MAX_CONNECTIONS", "AsyncPostgresStore", "PostgresStore"]

DEFAULT_MAX_CONNECTIONS = 10
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_COLUMNS = (
    "key, args_hash, idempotency_key, status, owner, fence, lease_expires_at, "
    "result, error, created_at, expires_at, retention, scope, turn, tool_name, call_id, "
    "updated_at"
)
_WIDTH = 17  # the record columns; the claim's two flags follow them
_FILTERS = ("status", "tool_name", "call_id", "scope", "idempotency_key")
_NOW = "extract(epoch FROM clock_timestamp())::double precision"
_CLAIM_ATTEMPTS = 5  # a claim that keeps racing with deletions (release, purge) gives up


# --------------------------------------------------------------------------- statements


# A statement as composed (``sql.Composed``), or rendered to the bytes psycopg sends.
Statement = sql.SQL | sql.Composed | bytes


class Statements:
    """The SQL of one table, composed once with the table name quoted as an identifier,
    and rendered to bytes once a connection can quote it (:meth:`render`): psycopg would
    otherwise join a composed statement's parts again at every execution."""

    insert: Statement
    claim: Statement
    get: Statement
    heartbeat: Statement
    finish: Statement
    resolve: Statement
    release: Statement
    purge: Statement
    records: dict[bool, Statement]

    def __init__(self, table: str) -> None:
        parts = table.split(".")
        if not 1 <= len(parts) <= 2 or not all(_NAME.fullmatch(part) for part in parts):
            raise SettingsError(
                f"invalid table name {table!r}: use an identifier, optionally schema-qualified"
            )
        ident = sql.Identifier(*parts)
        index = sql.Identifier(f"{parts[-1]}_expires_at_idx")

        def q(text: str) -> sql.Composed:
            return sql.SQL(text).format(t=ident, idx=index)

        self.table = table
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
                " expires_at double precision NOT NULL,"
                " retention double precision NOT NULL DEFAULT 0,"
                " scope text, turn text, tool_name text, call_id text,"
                " updated_at double precision)"
            ),
            # A table of an earlier version gains the columns (old rows: retention 0, the
            # identity and updated_at NULL).
            q(
                "ALTER TABLE {t} ADD COLUMN IF NOT EXISTS"
                " retention double precision NOT NULL DEFAULT 0,"
                " ADD COLUMN IF NOT EXISTS scope text,"
                " ADD COLUMN IF NOT EXISTS turn text,"
                " ADD COLUMN IF NOT EXISTS tool_name text,"
                " ADD COLUMN IF NOT EXISTS call_id text,"
                " ADD COLUMN IF NOT EXISTS updated_at double precision"
            ),
            q("CREATE INDEX IF NOT EXISTS {idx} ON {t} (expires_at)"),
            sql.SQL("CREATE INDEX IF NOT EXISTS {cidx} ON {t} (call_id)").format(
                t=ident, cidx=sql.Identifier(f"{parts[-1]}_call_id_idx")
            ),
        ]
        # Concurrent CREATE TABLE IF NOT EXISTS of one new table can fail with a unique
        # violation in the catalog; workers starting together serialise on this lock.
        self.create_lock = sql.SQL("SELECT pg_advisory_xact_lock(hashtext(%(table)s))")
        # A fresh key: one plain insert decides (the common case, see the module notes).
        self.insert = q(
            "INSERT INTO {t} (" + _COLUMNS + ") "
            "SELECT %(key)s, %(args_hash)s, %(idempotency_key)s, 'in_progress', %(owner)s, 1,"
            " n.now + %(lease)s, NULL, NULL, n.now, n.now + %(lease)s + %(retention)s,"
            " %(retention)s, %(scope)s, %(turn)s, %(tool_name)s, %(call_id)s, n.now"
            " FROM (SELECT " + _NOW + " AS now) AS n "
            "ON CONFLICT (key) DO NOTHING RETURNING lease_expires_at, created_at, expires_at"
        )
        # ``excluded.created_at`` is the statement's one reading of the server clock.
        take = "%(reclaim)s"
        keep = "greatest(c.retention, excluded.retention)"
        self.claim = q(
            "WITH n AS (SELECT " + _NOW + " AS now), ins AS ("
            "INSERT INTO {t} AS c (" + _COLUMNS + ") "
            "SELECT %(key)s, %(args_hash)s, %(idempotency_key)s, 'in_progress', %(owner)s, 1,"
            " n.now + %(lease)s, NULL, NULL, n.now, n.now + %(lease)s + %(retention)s,"
            " %(retention)s, %(scope)s, %(turn)s, %(tool_name)s, %(call_id)s, n.now FROM n "
            "ON CONFLICT (key) DO UPDATE SET"
            f" idempotency_key = CASE WHEN {take} THEN excluded.idempotency_key"
            " ELSE c.idempotency_key END,"
            f" status = CASE WHEN {take} THEN 'in_progress' ELSE 'unknown' END,"
            f" owner = CASE WHEN {take} THEN excluded.owner ELSE NULL END,"
            " fence = c.fence + 1,"
            f" lease_expires_at = CASE WHEN {take} THEN excluded.lease_expires_at ELSE NULL END,"
            f" error = CASE WHEN {take} THEN c.error ELSE %(lease_lost)s END,"
            f" retention = {keep}, updated_at = excluded.created_at,"
            f" expires_at = greatest(c.expires_at, excluded.created_at + {keep}"
            f" + CASE WHEN {take} THEN %(lease)s ELSE 0 END)"
            " WHERE c.args_hash = excluded.args_hash AND c.status = 'in_progress'"
            " AND c.lease_expires_at <= excluded.created_at"
            " RETURNING " + _COLUMNS + ", c.status = 'in_progress', true) "
            "SELECT * FROM ins UNION ALL SELECT " + _COLUMNS + ", false, false FROM {t}"
            " WHERE key = %(key)s AND NOT EXISTS (SELECT FROM ins)"
        )
        self.get = q("SELECT " + _COLUMNS + " FROM {t} WHERE key = %(key)s")
        held = (
            " WHERE key = %(key)s AND owner = %(owner)s AND fence = %(fence)s"
            " AND status = 'in_progress'"
        )
        now = " FROM (SELECT " + _NOW + " AS now) AS n"
        self.heartbeat = q(
            "UPDATE {t} SET lease_expires_at = n.now + %(lease)s,"
            " expires_at = greatest(expires_at, n.now + %(lease)s + retention)" + now + held
        )
        settle = (
            "UPDATE {t} SET status = %(status)s, result = %(result)s, error = %(error)s,"
            " lease_expires_at = NULL, expires_at = greatest(expires_at, n.now + retention),"
            " updated_at = n.now" + now
        )
        self.finish = q(settle + held)
        self.resolve = q(settle + " WHERE key = %(key)s AND status = 'unknown'")
        self.release = q("DELETE FROM {t}" + held)
        tests = " AND ".join(
            f"(%({name})s::text IS NULL OR {name} = %({name})s)" for name in _FILTERS
        )
        listing = (
            "SELECT " + _COLUMNS + " FROM {t} WHERE " + tests + " AND (%(since)s::double"
            " precision IS NULL OR created_at >= %(since)s)"
            " ORDER BY created_at {order}, key {order} LIMIT %(limit)s"
        )
        self.records = {
            newest: sql.SQL(listing).format(t=ident, order=sql.SQL("DESC" if newest else "ASC"))
            for newest in (False, True)
        }
        self.purge = q("DELETE FROM {t} WHERE expires_at <= " + _NOW)

    def render(self, context: Any) -> None:
        """Turn the per-call statements into the bytes that ``context`` (a connection)
        would send for them (idempotent)."""
        for name in (
            "insert",
            "claim",
            "get",
            "heartbeat",
            "finish",
            "resolve",
            "release",
            "purge",
        ):
            statement = getattr(self, name)
            if not isinstance(statement, bytes):
                setattr(self, name, statement.as_bytes(context))
        self.records = {
            newest: statement if isinstance(statement, bytes) else statement.as_bytes(context)
            for newest, statement in self.records.items()
        }


@dataclass(frozen=True, slots=True)
class Query:
    """One statement for a connection to run; the reply is ``(rowcount, rows)``, the rows
    fetched only for a statement that ``returns_rows`` (known from the SQL: asking the
    cursor for its ``description`` builds a column object per column, fourteen for the
    claim)."""

    statement: Statement
    params: dict[str, Any] | None = None
    returns_rows: bool = False


Reply = tuple[int, list[tuple[Any, ...]]]


# ---------------------------------------------------------------------------- decoding


def _text_in(value: str | None) -> bytes | None:
    """A result or error as stored: UTF-8 bytes that keep lone surrogates."""
    return None if value is None else value.encode("utf-8", "surrogatepass")


def _text_out(value: object) -> str | None:
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
    """A row of the record columns (and any flags after them) as a :class:`Record`."""
    if row is None or len(row) < _WIDTH:
        raise StoreError(f"unexpected reply from PostgreSQL: {row!r}")
    key, args_hash, idem, status, owner, fence, lease_at, result, error, created, expires = row[:11]
    if not _record_typed(row):
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
        result=_text_out(result),
        error=_text_out(error),
        created_at=_float(created),
        expires_at=_float(expires),
        retention=_float(row[11]),
        scope=row[12],
        turn=row[13],
        tool_name=row[14],
        call_id=row[15],
        updated_at=None if row[16] is None else _float(row[16]),
    )


def _record_typed(row: Sequence[Any]) -> bool:
    """Whether a row's identity, status, owner, fence and labels have their types."""
    owner, fence = row[4], row[5]
    return (
        all(isinstance(text, str) for text in row[:3])  # key, args_hash, idempotency_key
        and row[3] in requests.STATUSES
        and isinstance(fence, int)
        and not isinstance(fence, bool)
        and all(text is None or isinstance(text, str) for text in (owner, *row[12:16]))
    )


# ------------------------------------------------------------------------------- flows


def _claim(s: Statements, r: requests.ClaimRequest) -> Flow[Claim]:
    params = {
        "key": r.key,
        "args_hash": r.args_hash,
        "idempotency_key": r.idempotency_key,
        "owner": r.owner,
        "lease": r.lease,
        "retention": r.retention,
        "reclaim": r.reclaim,
        "lease_lost": LEASE_LOST.encode(),
        "scope": r.scope,
        "turn": r.turn,
        "tool_name": r.tool_name,
        "call_id": r.call_id,
    }
    _count, rows = yield Query(s.insert, params, returns_rows=True)
    if rows:  # a fresh key, inserted: the record is the request's, at the server's times
        lease_at, created, expires = rows[0]
        record = fresh_record(
            r,
            lease_expires_at=_float(lease_at),
            created_at=_float(created),
            expires_at=_float(expires),
        )
        return Claim(acquired=True, record=record)
    # The key exists: the full statement decides, on what it holds now.
    for _attempt in range(_CLAIM_ATTEMPTS):
        _count, rows = yield Query(s.claim, params, returns_rows=True)
        if rows and (rows[0][_WIDTH + 1] is True or rows[0][3] != "in_progress"):
            return Claim(acquired=rows[0][_WIDTH] is True, record=_record(rows[0]))
        # An in_progress row read by the fallback SELECT comes from the statement's
        # snapshot; when a racing claim settled it meanwhile (its takeover or unknown
        # verdict), the conflict check saw the newer row and left it alone, but the
        # snapshot still shows the old one. Finished rows never change, so only an
        # in_progress one is read again, with a fresh snapshot.
        # (No row at all: it was committed by another transaction after this statement's
        # snapshot, and the server already refused the takeover.) Read what it holds now.
        _count, rows = yield Query(s.get, {"key": r.key}, returns_rows=True)
        if rows:
            return Claim(acquired=False, record=_record(rows[0]))
    raise StoreError(f"claim of {r.key!r} kept racing with deletions; giving up")


def _held(r: requests.HeartbeatRequest | requests.ReleaseRequest) -> dict[str, Any]:
    return {"key": r.key, "owner": r.owner, "fence": r.fence}


def _write(query: Query) -> Flow[bool]:
    reply: Reply = yield query
    return reply[0] == 1


def flow(s: Statements, request: Request[Any]) -> Flow[Any]:
    """The statements that serve ``request`` on the table of ``s``, as a flow of
    :class:`Query` steps whose replies are ``(rowcount, rows)``."""
    r: Any = request
    if isinstance(r, requests.ClaimRequest):
        return _claim(s, r)
    if isinstance(r, requests.HeartbeatRequest):
        return _write(Query(s.heartbeat, {**_held(r), "lease": r.lease}))
    if isinstance(r, (requests.FinishRequest, requests.ResolveRequest)):
        params = {
            "key": r.key,
            "status": r.status,
            "result": _text_in(r.result),
            "error": _text_in(r.error),
        }
        if isinstance(r, requests.ResolveRequest):
            return _write(Query(s.resolve, params))
        return _write(Query(s.finish, {**params, "owner": r.owner, "fence": r.fence}))
    if isinstance(r, requests.ReleaseRequest):
        return _write(Query(s.release, _held(r)))
    return _read(s, r)


def _read(s: Statements, r: Any) -> Flow[Any]:
    if isinstance(r, requests.GetRequest):
        _count, rows = yield Query(s.get, {"key": r.key}, returns_rows=True)
        return _record(rows[0]) if rows else None
    if isinstance(r, requests.RecordsRequest):
        params = {name: getattr(r, name) for name in _FILTERS}
        params.update(since=r.since, limit=r.limit)
        _count, rows = yield Query(s.records[r.newest_first], params, returns_rows=True)
        return [_record(row) for row in rows]
    assert isinstance(r, requests.PurgeRequest)
    count, _rows = yield Query(s.purge)
    return max(0, count)


# ------------------------------------------------------------------------------ stores


@contextlib.contextmanager
def _failures() -> Iterator[None]:
    """Driver and pool failures as ``StoreError`` (with the cause chained)."""
    try:
        yield
    except (StoreError, SettingsError):
        raise
    except Exception as exc:
        raise StoreError(f"PostgreSQL operation failed: {exc}") from exc


@dataclass(frozen=True, slots=True)
class _Settings:
    """The checked options shared by both stores."""

    dsn: str
    statements: Statements
    max_connections: int
    connect_timeout: float
    kwargs: dict[str, Any]

    @classmethod
    def check(
        cls,
        dsn: object,
        table: object,
        max_connections: object,
        connect_timeout: object,
        connect_kwargs: dict[str, Any] | None,
    ) -> _Settings:
        if not isinstance(dsn, str):
            raise SettingsError(f"dsn must be a string, got {type(dsn).__name__}")
        if not isinstance(table, str):
            raise SettingsError(f"table must be a string, got {type(table).__name__}")
        timeout = requests.seconds("connect_timeout", connect_timeout)
        kwargs = {"autocommit": True, "connect_timeout": max(1, math.ceil(timeout))}
        return cls(
            dsn=dsn,
            statements=Statements(table),
            max_connections=requests.count("max_connections", max_connections, low=1, high=10_000),
            connect_timeout=timeout,
            kwargs={**kwargs, **(connect_kwargs or {})},
        )

    def pool_options(self, configure: Any) -> dict[str, Any]:
        """Keyword arguments of ``psycopg_pool``'s pools."""
        return {
            "configure": configure,
            "kwargs": self.kwargs,
            "min_size": 1,
            "max_size": self.max_connections,
            "open": False,
            # How long an operation waits for a free connection before StoreError.
            "timeout": self.connect_timeout + 30,
            "name": f"toolwire:{self.statements.table}",
        }


# Every statement is a primary-key lookup: a generic plan is as good as a custom one, and
# without this PostgreSQL re-plans the claim statement on every call (most of the claim's
# cost). Servers before 12 lack the setting; they just keep re-planning.
_GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"


def _configure(conn: psycopg.Connection[Any]) -> None:
    with contextlib.suppress(psycopg.Error):
        conn.execute(_GENERIC_PLANS)


async def _aconfigure(conn: psycopg.AsyncConnection[Any]) -> None:
    with contextlib.suppress(psycopg.Error):
        await conn.execute(_GENERIC_PLANS)


def _run(conn: psycopg.Connection[Any], query: Query) -> Reply:
    cursor = conn.execute(query.statement, query.params)
    return cursor.rowcount, cursor.fetchall() if query.returns_rows else []


async def _arun(conn: psycopg.AsyncConnection[Any], query: Query) -> Reply:
    cursor = await conn.execute(query.statement, query.params)
    return cursor.rowcount, await cursor.fetchall() if query.returns_rows else []


class _Options:
    """The constructor both stores share: checks every option, then ``_start``s."""

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "toolwire_calls",
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: float = 10.0,
        self_test: bool = True,
        connect_kwargs: dict[str, Any] | None = None,
    ) -> None:
        self._settings = _Settings.check(
            dsn, table, max_connections, connect_timeout, connect_kwargs
        )
        self._sql = self._settings.statements
        self._self_test_wanted = self_test
        self._behind = "the database"
        self._start()

    def _start(self) -> None:
        """Open the store now (sync) or prepare to open it on first use (async)."""
        raise NotImplementedError


def _setup(s: Statements) -> Flow[None]:
    """Create the table and its index (run in one transaction)."""
    yield Query(s.create_lock, {"table": s.table})
    for statement in s.create:
        yield Query(statement)


class PostgresStore(_Options, SyncShell):
    """The :class:`~toolwire.stores.AdminStore` Protocol on PostgreSQL, safe to share
    between threads.

    ``dsn`` is a libpq connection string or URL. ``table`` (optionally ``schema.table``) is
    created if missing. At most ``max_connections`` connections are open at once (default
    :data:`DEFAULT_MAX_CONNECTIONS`), each opened within ``connect_timeout`` seconds;
    ``connect_kwargs`` go to ``psycopg.connect``. With ``self_test`` (the default) the
    constructor checks that the server enforces conditional writes and raises
    ``StoreError`` if it does not.
    """

    def _start(self) -> None:
        self._closed = False
        settings = self._settings
        options = settings.pool_options(_configure)
        self._pool: ConnectionPool[Any] = ConnectionPool(settings.dsn, **options)
        try:
            with _failures():
                self._pool.open(wait=True, timeout=settings.connect_timeout)
                with self._pool.connection() as conn, conn.transaction():
                    run_flow(_setup(self._sql), lambda query: _run(conn, query))
                    self._sql.render(conn)
            if self._self_test_wanted:
                self._self_test(self._behind)
        except BaseException:
            self.close()
            raise

    def _perform(self, request: Request[T]) -> T:
        if self._closed:
            raise StoreError("the store is closed")
        # getconn/putconn rather than pool.connection(): the same check-out and return
        # (putconn rolls back or discards a connection left in a transaction or broken),
        # without the context managers' generator frames and the connection's own
        # ``with`` block, whose commit is a no-op in autocommit but still a wait cycle.
        try:
            conn = self._pool.getconn()
            try:
                result: T = run_flow(flow(self._sql, request), partial(_run, conn))
            finally:
                self._pool.putconn(conn)
        except (StoreError, SettingsError):
            raise
        except Exception as exc:
            raise StoreError(f"PostgreSQL operation failed: {exc}") from exc
        return result

    def close(self) -> None:
        """Close the pool; later operations raise ``StoreError``."""
        self._closed = True
        with contextlib.suppress(Exception):  # closing is best effort
            self._pool.close()


class AsyncPostgresStore(_Options, AsyncShell):
    """The :class:`~toolwire.stores.AsyncAdminStore` Protocol on PostgreSQL, for asyncio.

    Same options and semantics as :class:`PostgresStore`. The pool, the table and the
    self-test are set up on first use (or by ``await store.open()`` / ``async with``), in
    the event loop that uses the store; use one store per event loop.
    """

    def _start(self) -> None:
        self._pool: AsyncConnectionPool[Any] | None = None

    async def _setup(self) -> None:
        settings = self._settings
        with _failures():
            if self._pool is None:
                options = settings.pool_options(_aconfigure)
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(settings.dsn, **options)
                try:
                    await pool.open(wait=True, timeout=settings.connect_timeout)
                except BaseException:
                    await pool.close()  # the next open() starts afresh
                    raise
                self._pool = pool
            async with self._pool.connection() as conn, conn.transaction():
                await arun_flow(_setup(self._sql), lambda query: _arun(conn, query))
                self._sql.render(conn)

    async def _execute(self, request: Request[T]) -> T:
        if self._closed or self._pool is None:
            raise StoreError("the store is closed")
        pool = self._pool
        try:  # getconn/putconn: see PostgresStore._perform
            conn = await pool.getconn()
            try:
                result: T = await arun_flow(flow(self._sql, request), partial(_arun, conn))
            finally:
                await pool.putconn(conn)
        except (StoreError, SettingsError):
            raise
        except Exception as exc:
            raise StoreError(f"PostgreSQL operation failed: {exc}") from exc
        return result

    async def aclose(self) -> None:
        """Close the pool; later operations raise ``StoreError``."""
        self._closed = True
        if self._pool is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                await self._pool.close()
