"""``SQLiteStore``: the single-machine store, safe across threads and processes.

Each write runs in one ``BEGIN IMMEDIATE`` transaction, so two connections never both see
"absent"; a claim is on disk before the tool runs. Not safe on network file systems.
O(log n) per operation.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from .._errors import StoreError
from . import _local as local
from ._clock import ClockMark, ClockReading, advance, reader
from ._protocol import Record
from ._requests import RecordsRequest, Request, T
from ._shells import SyncShell

__all__ = ["SQLiteStore"]

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS toolwire_calls (
    key TEXT PRIMARY KEY,
    args_hash TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT,
    fence INTEGER NOT NULL,
    lease_expires_at REAL,
    result TEXT,
    error TEXT,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    retention REAL,
    scope TEXT,
    turn TEXT,
    tool_name TEXT,
    call_id TEXT,
    updated_at REAL)""",
    "CREATE INDEX IF NOT EXISTS toolwire_calls_expires ON toolwire_calls (expires_at)",
    """CREATE TABLE IF NOT EXISTS toolwire_clock (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    now REAL NOT NULL,
    domain TEXT NOT NULL,
    elapsed REAL NOT NULL)""",
)
# Columns a file written by an earlier version lacks, added in place when it is opened
# (its old rows read as None there).
_ADDED = (
    ("retention", "REAL"),
    ("scope", "TEXT"),
    ("turn", "TEXT"),
    ("tool_name", "TEXT"),
    ("call_id", "TEXT"),
    ("updated_at", "REAL"),
)
_INDEXES = ("CREATE INDEX IF NOT EXISTS toolwire_calls_call_id ON toolwire_calls (call_id)",)
_COLUMNS = (
    "key, args_hash, idempotency_key, status, owner, fence, lease_expires_at, result, "
    "error, created_at, expires_at, retention, scope, turn, tool_name, call_id, updated_at"
)
_NAMES = tuple(_COLUMNS.split(", "))
_SAVE = f"INSERT OR REPLACE INTO toolwire_calls ({_COLUMNS}) VALUES ({', '.join('?' * 17)})"
# A record read in this transaction is written back in place (a REPLACE would delete the
# row and insert it again, touching both indexes).
_UPDATE = (
    "UPDATE toolwire_calls SET args_hash = ?, idempotency_key = ?, status = ?, owner = ?,"
    " fence = ?, lease_expires_at = ?, result = ?, error = ?, created_at = ?,"
    " expires_at = ?, retention = ?, updated_at = ? WHERE key = ?"
)
_SELECT = f"SELECT {_COLUMNS} FROM toolwire_calls"
# The record of a key and the clock's mark in one statement (always one row: NULLs for
# what is absent); the mark is what a later now() of the same transaction advances.
_LOAD = (
    "SELECT k.now, k.domain, k.elapsed, "
    + ", ".join(f"c.{column}" for column in _NAMES)
    + " FROM (SELECT 1) LEFT JOIN toolwire_clock AS k ON k.id = 1"
    " LEFT JOIN toolwire_calls AS c ON c.key = ?"
)
_MARK = "SELECT now, domain, elapsed FROM toolwire_clock"
_NEW_MARK = "INSERT INTO toolwire_clock (id, now, domain, elapsed) VALUES (1, ?, ?, ?)"
_SET_MARK = "UPDATE toolwire_clock SET now = ?, domain = ?, elapsed = ? WHERE id = 1"


def _text_in(value: str | None) -> str | bytes | None:
    """Text as SQLite can hold it: lone surrogates (valid in JSON text) go in as a BLOB."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "surrogatepass")
    return value


def _text_out(value: str | bytes | None) -> str | None:
    """The exact ``str`` that :func:`_text_in` stored."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return value


def _rest(r: Record) -> tuple[Any, ...]:
    return r.expires_at, r.retention, r.scope, r.turn, r.tool_name, r.call_id, r.updated_at


def _record(row: Sequence[Any]) -> Record:
    """A row of :data:`_COLUMNS` as a :class:`Record`, its texts as :func:`_text_in` got them."""
    values = dict(zip(_NAMES, row, strict=False))
    values["result"] = _text_out(values["result"])
    values["error"] = _text_out(values["error"])
    return Record(**values)


class _Table:
    """The :class:`~toolwire.stores._local.Table` of one SQLite connection, inside the
    operation's transaction (one object per operation).

    ``load`` reads the clock's mark with the record (the write lock is held from
    ``BEGIN IMMEDIATE`` on, so the mark cannot change before ``now`` advances it), and
    ``save`` updates in place a record it loaded: a claim or a finish is one read and two
    writes (the record, the clock) inside its transaction.
    """

    __slots__ = ("_db", "_loaded", "_mark", "_marked", "_read")

    def __init__(self, db: sqlite3.Connection, read: Callable[[], ClockReading]) -> None:
        self._db = db
        self._read = read
        self._mark: ClockMark | None = None
        self._marked = False  # whether _mark is what the file holds (None: no mark yet)
        self._loaded: str | None = None  # the key of a record load() found

    def load(self, key: str) -> Record | None:
        row = self._db.execute(_LOAD, (key,)).fetchone()
        self._mark = None if row[0] is None else ClockMark(row[0], row[1], row[2])
        self._marked = True
        if row[3] is None:
            return None
        self._loaded = key
        return _record(row[3:])

    def save(self, r: Record) -> None:
        result, error = _text_in(r.result), _text_in(r.error)
        if r.key == self._loaded:
            self._db.execute(
                _UPDATE,
                (
                    r.args_hash,
                    r.idempotency_key,
                    r.status,
                    r.owner,
                    r.fence,
                    r.lease_expires_at,
                    result,
                    error,
                    r.created_at,
                    r.expires_at,
                    r.retention,
                    r.updated_at,
                    r.key,
                ),
            )
            return
        row = (r.key, r.args_hash, r.idempotency_key, r.status, r.owner, r.fence)
        self._db.execute(_SAVE, (*row, r.lease_expires_at, result, error, r.created_at, *_rest(r)))

    def delete(self, key: str) -> None:
        self._db.execute("DELETE FROM toolwire_calls WHERE key = ?", (key,))
        if key == self._loaded:
            self._loaded = None

    def select(self, request: RecordsRequest) -> list[Record]:
        filters = request.filters()
        tests = [f"{name} {'>=' if name == 'created_at' else '='} ?" for name, _ in filters]
        where = f"WHERE {' AND '.join(tests)} " if tests else ""
        order = "DESC" if request.newest_first else "ASC"
        sql = f"{_SELECT} {where}ORDER BY created_at {order}, key {order} LIMIT ?"
        params = (*(value for _, value in filters), request.limit)
        return [_record(row) for row in self._db.execute(sql, params)]

    def delete_expired(self, now: float) -> int:
        sql = "DELETE FROM toolwire_calls WHERE expires_at <= ?"
        return self._db.execute(sql, (now,)).rowcount

    def now(self) -> float:
        """Advance the clock kept in the file and return the store time (write lock held)."""
        if not self._marked:
            row = self._db.execute(_MARK).fetchone()
            self._mark = None if row is None else ClockMark(*row)
        old = self._mark
        mark = advance(old, self._read())
        self._db.execute(
            _NEW_MARK if old is None else _SET_MARK, (mark.now, mark.domain, mark.elapsed)
        )
        self._mark, self._marked = mark, True
        return mark.now


class SQLiteStore(SyncShell):
    """An :class:`~toolwire.stores.AdminStore` in one SQLite file, for threads and processes.

    ``path`` is the database file (created with its schema if missing); ``clock`` returns
    seconds (or a :class:`~toolwire.stores.ClockReading`) and is for tests: by
    default the store keeps the jump-free clock described in the module notes.
    ``busy_timeout`` bounds how long an operation waits for another writer.
    ``durable=False`` trades ``synchronous=FULL`` for ``NORMAL``: commits still survive a
    crash of any process, but the last ones may be lost on power failure (a lost claim
    could let a call run twice after a reboot). Raises :class:`~toolwire.StoreError` when
    the database cannot be opened or fails its conditional-write self-test.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] | Callable[[], ClockReading] | None = None,
        busy_timeout: float = 30.0,
        durable: bool = True,
    ) -> None:
        self._path = os.fspath(path)
        self._synchronous = "FULL" if durable else "NORMAL"
        self._read = reader(clock)
        self._busy_timeout = busy_timeout
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        # A store dropped without close() closes its idle connections when it is collected
        # (Python 3.13's sqlite3 warns about a connection collected open).
        weakref.finalize(self, _close_connections, self._idle)
        try:
            with self._connection() as db, self._transaction(db):
                for statement in _SCHEMA:
                    db.execute(statement)
                columns = {row[1] for row in db.execute("PRAGMA table_info(toolwire_calls)")}
                for column, kind in _ADDED:
                    if column not in columns:  # a file written by an earlier version
                        db.execute(f"ALTER TABLE toolwire_calls ADD COLUMN {column} {kind}")
                for statement in _INDEXES:
                    db.execute(statement)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot set up SQLite database {self._path!r}: {exc}") from exc
        self._self_test(f"the SQLite file {self._path!r}")

    # ------------------------------------------------------------------ connections

    def _open_connection(self) -> sqlite3.Connection:
        try:
            db = sqlite3.connect(
                self._path,
                timeout=self._busy_timeout,
                isolation_level=None,  # we issue BEGIN IMMEDIATE ourselves
                check_same_thread=False,  # pooled: used by one thread at a time, any thread
            )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open SQLite database {self._path!r}: {exc}") from exc
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            mode = db.execute("PRAGMA journal_mode = WAL").fetchone()
            db.execute(f"PRAGMA synchronous = {self._synchronous}")
        except sqlite3.Error as exc:
            db.close()
            raise StoreError(f"cannot set up SQLite database {self._path!r}: {exc}") from exc
        if mode is None or str(mode[0]).lower() not in {"wal", "memory"}:
            db.close()
            raise StoreError(f"SQLite database {self._path!r} refused WAL mode")
        return db

    @contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """Check a connection out of the pool for one operation.

        The pool grows to the peak number of concurrent operations and no further; threads
        come and go (each ``Executor.run`` has its own) without leaking connections.
        """
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            db = self._idle.pop() if self._idle else None
        if db is None:
            db = self._open_connection()
        try:
            yield db
        finally:
            with self._lock:
                keep = not self._closed
                if keep:
                    self._idle.append(db)
            if not keep:
                with suppress(sqlite3.Error):
                    db.close()

    @contextmanager
    def _transaction(self, db: sqlite3.Connection) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` (the write lock, before any read) ... ``COMMIT``."""
        try:
            db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store busy or unavailable: {exc}") from exc
        try:
            yield
        except BaseException:
            with suppress(sqlite3.Error):  # the original error is the one worth reporting
                db.execute("ROLLBACK")
            raise
        try:
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            with suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            raise StoreError(f"SQLite commit failed: {exc}") from exc

    def _perform(self, request: Request[T]) -> T:
        operation = local.OPERATIONS[type(request)]
        try:
            with self._connection() as db:
                table = _Table(db, self._read)
                if isinstance(request, local.READS):
                    result: T = operation(table, request)
                    return result
                with self._transaction(db):
                    result = operation(table, request)
                return result
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise StoreError(f"SQLite operation failed: {exc}") from exc

    def close(self) -> None:
        """Close the pooled connections (busy ones as they come back); later operations
        raise ``StoreError``."""
        with self._lock:
            self._closed = True
            connections = self._idle[:]
            self._idle.clear()
        _close_connections(connections)


def _close_connections(connections: list[sqlite3.Connection]) -> None:
    """Close ``connections`` (best effort: nothing is pending outside a transaction)."""
    for db in connections:
        with suppress(sqlite3.Error):
            db.close()
