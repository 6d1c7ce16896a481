"""The operations of the in-process stores: the transitions of
:mod:`toolwire.stores._protocol` applied to a local table of records.

``MemoryStore`` (a dict behind a lock) and ``SQLiteStore`` (a table inside one
``BEGIN IMMEDIATE`` transaction) run exactly these functions; each reads the record,
decides with a pure transition and writes the result, and the store makes the whole
operation one atomic step (the lock, or SQLite's write lock taken before the read). A
:class:`Table` is the little a function needs from its store: ``now`` (the store time),
``load``, ``save``, ``delete``, ``select`` and ``delete_expired``.

Why plain functions over a table rather than generator flows (as the server stores use,
:mod:`toolwire.stores._shells`): a flow lets one sans-IO decision serve a sync and an
async driver, and the in-process stores have only a sync one, whose every step is a call
into the process anyway. Driving a generator and dispatching its steps by type cost more
than a whole ``MemoryStore`` claim otherwise does; a direct call keeps the decisions in
one place (here and the transitions) at a fraction of that.

Guaranteed by construction: both stores give the same answer to every request, and both
follow the reference transitions exactly. Each operation is O(1) table steps; ``records``
and ``purge`` are one step each, whose cost is the table's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from . import _requests as requests
from ._protocol import (
    Claim,
    Record,
    Status,
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

    def select(self, status: Status | None, newest_first: bool, limit: int, /) -> list[Record]:
        """The records of ``status`` (any when ``None``) by ``created_at`` then key, at most
        ``limit``, newest first or oldest first."""
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
    return table.select(request.status, request.newest_first, request.limit)


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
