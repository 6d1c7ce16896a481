"""``SQLiteStore``: the single-machine store, safe across threads and processes.

Strategy. One table, one row per call key. Every read-decide-write (claim) runs in a
``BEGIN IMMEDIATE`` transaction, which takes SQLite's write lock before reading, so two
connections (threads or processes) can never both see "absent" and both insert: that is
the whole of the at-most-once argument on one host. The decision is the same pure
function the in-memory store uses (:func:`toolwire.stores.memory.claim_transition`).
Every write after the claim is one fenced statement (``... WHERE key=? AND owner=? AND
fence=? AND status='in_progress'``) whose row count says whether it was accepted.

The database runs in WAL mode with ``synchronous=FULL`` by default (a claim is on disk
before the tool runs, even across power loss) and a busy timeout. Connections live in a
small pool: each operation checks one out, so no connection is ever used by two threads
at once, and the pool never grows beyond the peak number of concurrent operations. At
start-up the store creates its schema if missing and runs a self-test: it claims a probe
key twice and requires exactly one acquisition, and requires a write with a stale fence
to be refused; otherwise it raises :class:`~toolwire.StoreError` (fail closed).

Not guaranteed: safety on network file systems (SQLite's locking is unreliable there) or
across machines. Each operation is O(log n) in the number of records; ``purge`` is
O(expired log n) through an index on ``expires_at``.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import Any

from .._errors import StoreError
from . import _checks as checks
from ._protocol import Claim, FinalStatus, Record
from .memory import (
    claim_transition,
)

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolwire_calls (
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
    expires_at REAL NOT NULL
)
"""
_INDEX = "CREATE INDEX IF NOT EXISTS toolwire_calls_expires ON toolwire_calls (expires_at)"
_COLUMNS = (
    "key, args_hash, idempotency_key, status, owner, fence, lease_expires_at, result, "
    "error, created_at, expires_at"
)
_HELD = "key = ? AND owner = ? AND fence = ? AND status = 'in_progress' AND expires_at > ?"


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


def _record(row: tuple[Any, ...]) -> Record:
    return Record(
        key=row[0],
        args_hash=row[1],
        idempotency_key=row[2],
        status=row[3],
        owner=row[4],
        fence=row[5],
        lease_expires_at=row[6],
        result=_text_out(row[7]),
        error=_text_out(row[8]),
        created_at=row[9],
        expires_at=row[10],
    )


class SQLiteStore:
    """A :class:`~toolwire.stores.Store` in one SQLite file, shared by threads and processes.

    ``path`` is the database file (created with its schema if missing); ``clock`` returns
    seconds since the epoch and is injectable for tests; ``busy_timeout`` bounds how long
    an operation waits for another writer. ``durable=False`` trades ``synchronous=FULL``
    for ``NORMAL``: commits still survive a crash of any process, but the last ones may
    be lost on power failure (a lost claim could let a call run twice after a reboot).
    Raises :class:`~toolwire.StoreError` when the database cannot be opened or fails its
    conditional-write self-test.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        busy_timeout: float = 30.0,
        durable: bool = True,
    ) -> None:
        self._path = os.fspath(path)
        self._synchronous = "FULL" if durable else "NORMAL"
        self._clock = clock
        self._busy_timeout = busy_timeout
        self._idle: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._closed = False
        with self._transaction() as db:
            db.execute(_SCHEMA)
            db.execute(_INDEX)
        self._self_test()

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
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._connection() as db:
            try:
                db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise StoreError(f"SQLite store busy or unavailable: {exc}") from exc
            try:
                yield db
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

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        try:
            with self._transaction() as db:
                return db.execute(sql, params).rowcount
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise StoreError(f"SQLite write failed: {exc}") from exc

    def _self_test(self) -> None:
        """Fail closed unless claims are exclusive and stale fences are refused (G10)."""
        probe = f"toolwire-self-test/{uuid.uuid4()}"
        try:
            first = self.claim(
                probe,
                args_hash="probe",
                idempotency_key=probe,
                owner="a",
                lease=60.0,
                retention=60.0,
                reclaim=False,
            )
            second = self.claim(
                probe,
                args_hash="probe",
                idempotency_key=probe,
                owner="b",
                lease=60.0,
                retention=60.0,
                reclaim=False,
            )
            fence = first.record.fence
            stale = self.finish(
                probe, owner="a", fence=fence + 1, status="completed", result="1", error=None
            )
            acquisitions = int(first.acquired) + int(second.acquired)
        finally:
            self._write("DELETE FROM toolwire_calls WHERE key = ?", (probe,))
        if acquisitions != 1 or stale:
            raise StoreError(
                f"SQLite store at {self._path!r} does not enforce conditional writes "
                f"({acquisitions} acquisitions of one probe key, stale write accepted: {stale})"
            )

    # ------------------------------------------------------------------ the Protocol

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
        """Atomically claim ``key`` for ``owner`` (see :meth:`Store.claim`)."""
        checks.claim_arguments(key, args_hash, idempotency_key, owner, lease, retention, reclaim)
        try:
            with self._transaction() as db:
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM toolwire_calls WHERE key = ?", (key,)
                ).fetchone()
                claim, record = claim_transition(
                    None if row is None else _record(row),
                    key=key,
                    args_hash=args_hash,
                    idempotency_key=idempotency_key,
                    owner=owner,
                    lease=lease,
                    retention=retention,
                    reclaim=reclaim,
                    now=self._clock(),
                )
                if record is not None:
                    db.execute(
                        f"INSERT OR REPLACE INTO toolwire_calls ({_COLUMNS}) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            record.key,
                            record.args_hash,
                            record.idempotency_key,
                            record.status,
                            record.owner,
                            record.fence,
                            record.lease_expires_at,
                            _text_in(record.result),
                            _text_in(record.error),
                            record.created_at,
                            record.expires_at,
                        ),
                    )
                return claim
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise StoreError(f"SQLite claim failed: {exc}") from exc

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` while ``owner``/``fence`` hold the call."""
        checks.held_arguments(key, owner, fence)
        checks.seconds("lease", lease)
        now = self._clock()
        sql = f"UPDATE toolwire_calls SET lease_expires_at = ? WHERE {_HELD}"
        return self._write(sql, (now + lease, key, owner, fence, now)) == 1

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
        """Record the final outcome while ``owner``/``fence`` hold the call."""
        checks.finish_arguments(key, owner, fence, status, result, error)
        sql = (
            "UPDATE toolwire_calls SET status = ?, result = ?, error = ?, "
            f"lease_expires_at = NULL WHERE {_HELD}"
        )
        params = (status, _text_in(result), _text_in(error), key, owner, fence, self._clock())
        return self._write(sql, params) == 1

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim while ``owner``/``fence`` hold it (the tool asked for a retry)."""
        checks.held_arguments(key, owner, fence)
        sql = f"DELETE FROM toolwire_calls WHERE {_HELD}"
        return self._write(sql, (key, owner, fence, self._clock())) == 1

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` when absent or past retention."""
        checks.identifier("key", key)
        try:
            with self._connection() as db:
                row = db.execute(
                    f"SELECT {_COLUMNS} FROM toolwire_calls WHERE key = ? AND expires_at > ?",
                    (key, self._clock()),
                ).fetchone()
        except (sqlite3.Error, UnicodeEncodeError) as exc:
            raise StoreError(f"SQLite read failed: {exc}") from exc
        return None if row is None else _record(row)

    def purge(self) -> int:
        """Delete every record past its retention; return how many were deleted."""
        return self._write("DELETE FROM toolwire_calls WHERE expires_at <= ?", (self._clock(),))

    def close(self) -> None:
        """Close the pooled connections (busy ones as they come back); later operations
        raise ``StoreError``."""
        with self._lock:
            self._closed = True
            connections, self._idle = self._idle, []
        for db in connections:
            with suppress(sqlite3.Error):  # best effort: nothing is pending outside a transaction
                db.close()
