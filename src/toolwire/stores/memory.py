"""``MemoryStore``: the in-process store, and the claim rules every store applies.

Strategy. One dict of immutable :class:`Record` values behind one lock: every operation
reads, decides and writes under the lock, so each is atomic with respect to every other
thread. The decisions themselves are pure functions of (record, arguments, now)
(:func:`claim_transition`, :func:`holds`), shared with :mod:`toolwire.stores.sqlite`, which
applies them inside a ``BEGIN IMMEDIATE`` transaction; this module is therefore also the
reference model of the store contract.

Guaranteed: exactly one of any number of concurrent claims of a key is acquired; every
write after the claim is accepted only while ``owner`` and ``fence`` still hold an
``in_progress`` record within retention; records past retention count as absent; results
are kept as the exact ``str`` given. Not guaranteed: anything across processes or a
restart (use :class:`~toolwire.SQLiteStore`). Each operation is O(1); ``purge`` is O(n).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace

from .._errors import StoreError
from . import _checks as checks
from ._protocol import Claim, FinalStatus, Record

# claim_transition and holds are shared with stores.sqlite, not public API.
__all__ = ["MemoryStore"]

LEASE_EXPIRED = "the lease expired while the tool may have been running"


def claim_transition(
    existing: Record | None,
    *,
    key: str,
    args_hash: str,
    idempotency_key: str,
    owner: str,
    lease: float,
    retention: float,
    reclaim: bool,
    now: float,
) -> tuple[Claim, Record | None]:
    """Decide a claim: the ``Claim`` to return and the record to write (``None``: no write).

    The rules of :meth:`Store.claim`: absent or retired records are replaced by a fresh
    ``in_progress`` claim with the next fence; another ``args_hash`` is a conflict; an
    ``in_progress`` record past its lease is taken over with ``reclaim`` and otherwise
    turned ``unknown`` (fence + 1) in the same step; anything else is reported unchanged.
    """
    if existing is None or existing.expires_at <= now:
        fence = 1 if existing is None else existing.fence + 1
        record = Record(
            key=key,
            args_hash=args_hash,
            idempotency_key=idempotency_key,
            status="in_progress",
            owner=owner,
            fence=fence,
            lease_expires_at=now + lease,
            result=None,
            error=None,
            created_at=now,
            expires_at=now + retention,
        )
        return Claim(acquired=True, record=record), record
    if existing.args_hash != args_hash:
        return Claim(acquired=False, record=existing), None
    lease_over = existing.lease_expires_at is not None and existing.lease_expires_at <= now
    if existing.status == "in_progress" and lease_over:
        if reclaim:
            record = replace(
                existing,
                owner=owner,
                fence=existing.fence + 1,
                lease_expires_at=now + lease,
                expires_at=max(existing.expires_at, now + retention),
            )
            return Claim(acquired=True, record=record), record
        record = replace(
            existing,
            status="unknown",
            owner=None,
            fence=existing.fence + 1,
            lease_expires_at=None,
            error=LEASE_EXPIRED,
        )
        return Claim(acquired=False, record=record), record
    return Claim(acquired=False, record=existing), None


def holds(record: Record | None, *, owner: str, fence: int, now: float) -> bool:
    """Whether ``owner`` with ``fence`` still holds ``record`` (the fence check of writes)."""
    return (
        record is not None
        and record.expires_at > now
        and record.status == "in_progress"
        and record.owner == owner
        and record.fence == fence
    )


class MemoryStore:
    """A thread-safe in-process :class:`~toolwire.stores.Store` (one lock, one dict).

    ``clock`` returns seconds since the epoch (``time.time`` by default); tests pass a
    controllable one to move past leases and retention. Records vanish with the process.
    """

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

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
        with self._lock:
            self._check_open()
            claim, record = claim_transition(
                self._records.get(key),
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
                self._records[key] = record
            return claim

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` while ``owner``/``fence`` hold the call."""
        checks.held_arguments(key, owner, fence)
        checks.seconds("lease", lease)
        with self._lock:
            self._check_open()
            now = self._clock()
            record = self._records.get(key)
            if record is None or not holds(record, owner=owner, fence=fence, now=now):
                return False
            self._records[key] = replace(record, lease_expires_at=now + lease)
            return True

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
        with self._lock:
            self._check_open()
            record = self._records.get(key)
            if record is None or not holds(record, owner=owner, fence=fence, now=self._clock()):
                return False
            self._records[key] = replace(
                record, status=status, result=result, error=error, lease_expires_at=None
            )
            return True

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim while ``owner``/``fence`` hold it (the tool asked for a retry)."""
        checks.held_arguments(key, owner, fence)
        with self._lock:
            self._check_open()
            record = self._records.get(key)
            if not holds(record, owner=owner, fence=fence, now=self._clock()):
                return False
            del self._records[key]
            return True

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` when absent or past retention."""
        checks.identifier("key", key)
        with self._lock:
            self._check_open()
            record = self._records.get(key)
            if record is None or record.expires_at <= self._clock():
                return None
            return record

    def purge(self) -> int:
        """Delete every record past its retention; return how many were deleted."""
        with self._lock:
            self._check_open()
            now = self._clock()
            old = [k for k, r in self._records.items() if r.expires_at <= now]
            for k in old:
                del self._records[k]
            return len(old)

    def close(self) -> None:
        """Drop every record; later operations raise :class:`~toolwire.StoreError`."""
        with self._lock:
            self._closed = True
            self._records.clear()
