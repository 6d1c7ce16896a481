"""The operations of the in-process stores: the transitions of :mod:`toolwire.stores._protocol`
applied to a local table of records.

``MemoryStore`` and ``SQLiteStore`` run these same functions, so they give the same answers.
O(1) table steps per operation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from . import _requests as requests
from ._protocol import (
    Claim,
    Record,
    claim_transition,
    heartbeat_transition,
    holds,
    settle_transition,
)


class Table(Protocol):
    """The steps an operation performs on a store's records (within its atomic step)."""

    def now(self) -> float:
        """The store time, in seconds (advancing the store's clock)."""
        ...

    def load(self, key: str, /) -> Record | None:
        """The record of ``key``, or ``None`` when there is none."""
        ...

    def save(self, record: Record, /) -> None:
        """Write ``record`` (insert, or replace the record of its key)."""
        ...

    def delete(self, key: str, /) -> None:
        """Delete the record of ``key`` (which exists)."""
        ...

    def select(self, request: requests.RecordsRequest, /) -> list[Record]:
        """The records that pass the filters of ``request`` by ``created_at`` then key, at
        most ``request.limit``, newest first or oldest first."""
        ...

    def delete_expired(self, now: float, /) -> int:
        """Delete every record with ``expires_at <= now``; return how many."""
        ...


def claim(table: Table, request: requests.ClaimRequest) -> Claim:
    """:meth:`toolwire.stores.Store.claim` on ``table``."""
    existing = table.load(request.key)
    # Only an absent or in_progress record is decided by time; a replay reads no clock
    # (and, on SQLite, writes nothing).
    timed = existing is None or existing.status == "in_progress"
    got, write = claim_transition(existing, request, table.now() if timed else 0.0)
    if write is not None:
        table.save(write)
    return got


def heartbeat(table: Table, request: requests.HeartbeatRequest) -> bool:
    """:meth:`toolwire.stores.Store.heartbeat` on ``table``."""
    record = table.load(request.key)
    if record is None or not holds(record, request.owner, request.fence):
        return False
    table.save(heartbeat_transition(record, request.lease, table.now()))
    return True


def finish(table: Table, request: requests.FinishRequest) -> bool:
    """:meth:`toolwire.stores.Store.finish` on ``table``."""
    record = table.load(request.key)
    if record is None or not holds(record, request.owner, request.fence):
        return False
    now = table.now()
    table.save(settle_transition(record, request.status, request.result, request.error, now))
    return True


def release(table: Table, request: requests.ReleaseRequest) -> bool:
    """:meth:`toolwire.stores.Store.release` on ``table``."""
    if not holds(table.load(request.key), request.owner, request.fence):
        return False
    table.delete(request.key)
    return True


def get(table: Table, request: requests.GetRequest) -> Record | None:
    """:meth:`toolwire.stores.Store.get` on ``table``."""
    return table.load(request.key)


def records(table: Table, request: requests.RecordsRequest) -> list[Record]:
    """:meth:`toolwire.stores.AdminStore.records` on ``table``."""
    return table.select(request)


def resolve(table: Table, request: requests.ResolveRequest) -> bool:
    """:meth:`toolwire.stores.AdminStore.resolve` on ``table``."""
    record = table.load(request.key)
    if record is None or record.status != "unknown":
        return False
    now = table.now()
    table.save(settle_transition(record, request.status, request.result, request.error, now))
    return True


def purge(table: Table, _request: requests.PurgeRequest) -> int:
    """:meth:`toolwire.stores.Store.purge` on ``table``."""
    return table.delete_expired(table.now())


OPERATIONS: dict[type[Any], Callable[[Table, Any], Any]] = {
    requests.ClaimRequest: claim,
    requests.HeartbeatRequest: heartbeat,
    requests.FinishRequest: finish,
    requests.ReleaseRequest: release,
    requests.GetRequest: get,
    requests.RecordsRequest: records,
    requests.ResolveRequest: resolve,
    requests.PurgeRequest: purge,
}

READS = (requests.GetRequest, requests.RecordsRequest)  # operations that never write
