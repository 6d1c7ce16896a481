"""The flows of the in-process stores: the transitions of
:mod:`toolwire.stores._protocol` applied to a local table of records.

``MemoryStore`` (a dict behind a lock) and ``SQLiteStore`` (a table inside one
``BEGIN IMMEDIATE`` transaction) run exactly these flows; each flow reads the record,
decides with a pure transition and writes the result, and the store makes the whole flow
one atomic step (the lock, or SQLite's write lock taken before the read). The steps a
flow yields are the few a table needs: :data:`NOW` (the store time), :class:`Load`,
:class:`Save`, :class:`Delete`, :class:`Select` and :class:`DeleteExpired`.

Guaranteed by construction: both stores give the same answer to every request, and both
follow the reference transitions exactly. Each flow is O(1) steps; ``records`` and
``purge`` are one step each, whose cost is the table's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

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
from ._shells import Flow

NOW = object()  # the step that asks for the store time, in seconds


@dataclass(frozen=True, slots=True)
class Load:
    """Read the record of ``key`` (``None`` when there is none)."""

    key: str


@dataclass(frozen=True, slots=True)
class Save:
    """Write ``record`` (insert, or replace the record of its key)."""

    record: Record


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete the record of ``key``."""

    key: str


@dataclass(frozen=True, slots=True)
class Select:
    """The records of ``status`` (any when ``None``) by ``created_at`` then key, at most
    ``limit``, newest first or oldest first."""

    status: Status | None
    newest_first: bool
    limit: int


@dataclass(frozen=True, slots=True)
class DeleteExpired:
    """Delete every record with ``expires_at <= now``; reply how many."""

    now: float


def _claim(request: requests.ClaimRequest) -> Flow[Claim]:
    existing = yield Load(request.key)
    # Only an absent or in_progress record is decided by time; a replay reads no clock
    # (and, on SQLite, writes nothing).
    timed = existing is None or existing.status == "in_progress"
    now = (yield NOW) if timed else 0.0
    claim, write = claim_transition(existing, request, now)
    if write is not None:
        yield Save(write)
    return claim


def _heartbeat(request: requests.HeartbeatRequest) -> Flow[bool]:
    record = yield Load(request.key)
    if not holds(record, request.owner, request.fence):
        return False
    yield Save(heartbeat_transition(record, request.lease, (yield NOW)))
    return True


def _finish(request: requests.FinishRequest) -> Flow[bool]:
    record = yield Load(request.key)
    if not holds(record, request.owner, request.fence):
        return False
    now = yield NOW
    yield Save(settle_transition(record, request.status, request.result, request.error, now))
    return True


def _release(request: requests.ReleaseRequest) -> Flow[bool]:
    if not holds((yield Load(request.key)), request.owner, request.fence):
        return False
    yield Delete(request.key)
    return True


def _get(request: requests.GetRequest) -> Flow[Record | None]:
    record: Record | None = yield Load(request.key)
    return record


def _records(request: requests.RecordsRequest) -> Flow[list[Record]]:
    found: list[Record] = yield Select(request.status, request.newest_first, request.limit)
    return found


def _resolve(request: requests.ResolveRequest) -> Flow[bool]:
    record = yield Load(request.key)
    if record is None or record.status != "unknown":
        return False
    now = yield NOW
    yield Save(settle_transition(record, request.status, request.result, request.error, now))
    return True


def _purge(_request: requests.PurgeRequest) -> Flow[int]:
    deleted: int = yield DeleteExpired((yield NOW))
    return deleted


_FLOWS: dict[type[Any], Callable[[Any], Flow[Any]]] = {
    requests.ClaimRequest: _claim,
    requests.HeartbeatRequest: _heartbeat,
    requests.FinishRequest: _finish,
    requests.ReleaseRequest: _release,
    requests.GetRequest: _get,
    requests.RecordsRequest: _records,
    requests.ResolveRequest: _resolve,
    requests.PurgeRequest: _purge,
}

READS = (requests.GetRequest, requests.RecordsRequest)  # flows that never write


def flow(request: requests.Request[Any]) -> Flow[Any]:
    """The flow that serves ``request`` on a local table."""
    return _FLOWS[type(request)](request)
