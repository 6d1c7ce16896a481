"""The store Protocol: the few atomic, fenced operations the executor needs, and the rules
every backend applies to them.

Every write after ``claim`` is fenced by ``owner`` and ``fence``; a record that may have run
is never treated as absent; expiry never moves back. The transitions are pure functions of
(record, request, now).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ._requests import ClaimRequest

Status = Literal["in_progress", "completed", "failed", "unknown"]
FinalStatus = Literal["completed", "failed", "unknown"]
ResolvedStatus = Literal["completed", "failed"]

# The texts a store writes into records; they reach the model through the executor's
# outcomes, so every backend writes exactly these (a contract test compares them).
LEASE_LOST = "the lease expired while the tool may have been running; its effect is in doubt"


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """What a store holds for one call key.

    ``result`` is the JSON text of a completed tool's return value, stored as given;
    ``error`` the message of a failed (or unknown) call. Times are the store clock's, in
    seconds (since the epoch for every store but one given a clock of another origin).
    ``expires_at`` is the earliest time ``purge`` may delete the record; ``retention`` the
    seconds each write keeps it for (``None`` where a record was built without one).

    What an operator looks a call up by, written by the executor at claim (``None`` in a
    record written by an earlier version, or claimed by a caller that did not give them):
    ``scope`` (the executor's), ``turn`` (``run(response, turn=...)``), ``tool_name``,
    ``call_id`` (the provider's tool call id). ``args_hash`` is the arguments digest.
    ``updated_at`` is the store time of the last change of state: the claim, a takeover, the
    call turning ``unknown``, its finish or resolution (a heartbeat only extends the lease);
    ``None`` in an older record.
    """

    key: str
    args_hash: str
    idempotency_key: str
    status: Status
    owner: str | None
    fence: int
    lease_expires_at: float | None
    result: str | None
    error: str | None
    created_at: float
    expires_at: float
    retention: float | None = None
    scope: str | None = None
    turn: str | None = None
    tool_name: str | None = None
    call_id: str | None = None
    updated_at: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """The result of ``claim``: ``acquired`` when the caller now owns the call with
    ``record.fence``; otherwise ``record`` is the existing record to report on."""

    acquired: bool
    record: Record


@runtime_checkable
class Store(Protocol):
    """A synchronous store. Implementations must be safe to share between threads.

    Every argument after ``key`` is keyword-only. ``owner`` names the claiming worker
    (unique per attempt) and ``fence`` the claim it holds; ``lease`` and ``retention`` are
    seconds. A backend refuses an argument outside its type or range with
    :class:`~toolwire.SettingsError` before any read or write.
    """

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
        scope: str | None = None,
        turn: str | None = None,
        tool_name: str | None = None,
        call_id: str | None = None,
    ) -> Claim:
        """Atomically claim ``key`` for ``owner``; of concurrent claims exactly one wins.

        ``args_hash`` is the SHA-256 of the canonical arguments; ``idempotency_key`` the
        key handed to the tool; ``lease`` how long the claim holds without a heartbeat;
        ``retention`` how long the record is kept after each write; ``reclaim`` whether a
        lease that ran out may be taken over (tools declared safe to repeat) instead of
        turning ``unknown``. ``scope``, ``turn``, ``tool_name`` and ``call_id`` are
        written into a fresh record for the operator (:class:`Record`).

        - no record: insert ``in_progress`` with fence 1 and ``acquired=True``;
        - a record with another ``args_hash``: not acquired (a conflict), record unchanged;
        - ``in_progress`` past its lease: with ``reclaim`` take it over (new owner,
          fence + 1, acquired); without, set it ``unknown`` (fence + 1, no owner,
          ``error`` = :data:`LEASE_LOST`) and return that, not acquired;
        - anything else (a live lease, a finished or ``unknown`` record, however old):
          not acquired, record unchanged. A record is never treated as absent because of
          its age; only ``purge`` removes old records.
        """
        ...

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """While ``owner``/``fence`` hold the call, extend the lease to now + ``lease`` and
        the expiry to at least now + ``lease`` + retention; ``False`` if not held."""
        ...

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
        """Record the outcome (``status``, the ``result`` JSON text and the ``error`` text,
        stored exactly) and renew the expiry to at least now + retention while
        ``owner``/``fence`` hold the call; ``False`` if not."""
        ...

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim (the tool raised ``RetryableError``) if still held."""
        ...

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` when there is none. A record past its
        expiry is returned until ``purge`` deletes it: ``get`` does not judge time."""
        ...

    def purge(self) -> int:
        """Delete every record past its expiry; return how many."""
        ...

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class AsyncStore(Protocol):
    """The asyncio form of :class:`Store`: the same operations, arguments and semantics,
    as coroutines, and ``aclose`` for ``close``."""

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
        scope: str | None = None,
        turn: str | None = None,
        tool_name: str | None = None,
        call_id: str | None = None,
    ) -> Claim:
        """:meth:`Store.claim`."""
        ...

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """:meth:`Store.heartbeat`."""
        ...

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
        """:meth:`Store.finish`."""
        ...

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        """:meth:`Store.release`."""
        ...

    async def get(self, key: str) -> Record | None:
        """:meth:`Store.get`."""
        ...

    async def purge(self) -> int:
        """:meth:`Store.purge`."""
        ...

    async def aclose(self) -> None:
        """:meth:`Store.close`."""
        ...


@runtime_checkable
class AdminStore(Store, Protocol):
    """A :class:`Store` with the operator's operations (the ``toolwire store`` command);
    every toolwire store is one. The executor needs only :class:`Store`."""

    def records(
        self,
        *,
        status: Status | None = None,
        tool_name: str | None = None,
        call_id: str | None = None,
        scope: str | None = None,
        idempotency_key: str | None = None,
        since: float | None = None,
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[Record]:
        """Records, optionally of one ``status``, ordered by ``created_at`` (then key),
        oldest first unless ``newest_first``, at most ``limit`` of them.

        Each of ``tool_name``, ``call_id``, ``scope``, ``idempotency_key`` keeps only the
        records with exactly that value; ``since`` only those created at or after that
        store time."""
        ...

    def resolve(
        self,
        key: str,
        *,
        status: ResolvedStatus,
        result: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Settle an ``unknown`` record by hand (an operator who checked the effect): set
        ``status`` with ``result``/``error`` and renew the expiry. ``False``, and nothing
        changed, when the record is absent or not ``unknown``.

        ``"completed"`` needs its ``result`` (JSON text, replayed to later runs),
        ``"failed"`` its ``error``."""
        ...


@runtime_checkable
class AsyncAdminStore(AsyncStore, Protocol):
    """The asyncio form of :class:`AdminStore`."""

    async def records(
        self,
        *,
        status: Status | None = None,
        tool_name: str | None = None,
        call_id: str | None = None,
        scope: str | None = None,
        idempotency_key: str | None = None,
        since: float | None = None,
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[Record]:
        """:meth:`AdminStore.records`."""
        ...

    async def resolve(
        self,
        key: str,
        *,
        status: ResolvedStatus,
        result: str | None = None,
        error: str | None = None,
    ) -> bool:
        """:meth:`AdminStore.resolve`."""
        ...


# ------------------------------------------------------------------- the transitions


def fresh_record(
    request: ClaimRequest, *, lease_expires_at: float, created_at: float, expires_at: float
) -> Record:
    """The record a claim of an absent key writes: the request's, ``in_progress`` with
    fence 1 and no result, at the given times (the store's own clock or its server's)."""
    return Record(
        key=request.key,
        args_hash=request.args_hash,
        idempotency_key=request.idempotency_key,
        status="in_progress",
        owner=request.owner,
        fence=1,
        lease_expires_at=lease_expires_at,
        result=None,
        error=None,
        created_at=created_at,
        expires_at=expires_at,
        retention=request.retention,
        scope=request.scope,
        turn=request.turn,
        tool_name=request.tool_name,
        call_id=request.call_id,
        updated_at=created_at,
    )


def claim_transition(
    existing: Record | None, request: ClaimRequest, now: float
) -> tuple[Claim, Record | None]:
    """Decide a claim: the ``Claim`` to return and the record to write (``None``: no write).

    The rules of :meth:`Store.claim`, applied to what is stored, whatever its age.
    """
    if existing is None:
        record = fresh_record(
            request,
            lease_expires_at=now + request.lease,
            created_at=now,
            expires_at=now + request.lease + request.retention,
        )
        return Claim(acquired=True, record=record), record
    if existing.args_hash != request.args_hash or not lease_over(existing, now):
        return Claim(acquired=False, record=existing), None
    retention = max(existing.retention or 0.0, request.retention)
    if request.reclaim:
        record = replace(
            existing,
            idempotency_key=request.idempotency_key,
            owner=request.owner,
            fence=existing.fence + 1,
            lease_expires_at=now + request.lease,
            expires_at=max(existing.expires_at, now + request.lease + retention),
            retention=retention,
            updated_at=now,
        )
        return Claim(acquired=True, record=record), record
    record = replace(
        existing,
        status="unknown",
        owner=None,
        fence=existing.fence + 1,
        lease_expires_at=None,
        error=LEASE_LOST,
        expires_at=max(existing.expires_at, now + retention),
        retention=retention,
        updated_at=now,
    )
    return Claim(acquired=False, record=record), record


def lease_over(record: Record, now: float) -> bool:
    """Whether ``record`` is ``in_progress`` with a lease that has run out at ``now``."""
    return (
        record.status == "in_progress"
        and record.lease_expires_at is not None
        and record.lease_expires_at <= now
    )


def holds(record: Record | None, owner: str, fence: int) -> bool:
    """Whether ``owner`` with ``fence`` still holds ``record`` (the fence check of writes).

    Neither the lease nor the expiry is judged here: a holder whose lease ran out still
    holds the call until another claim turns it ``unknown`` or takes it over (fence + 1).
    """
    return (
        record is not None
        and record.status == "in_progress"
        and record.owner == owner
        and record.fence == fence
    )


def heartbeat_transition(record: Record, lease: float, now: float) -> Record:
    """``record`` with its lease extended to now + ``lease`` and its expiry renewed."""
    return _with(
        record,
        status=record.status,
        lease_expires_at=now + lease,
        result=record.result,
        error=record.error,
        expires_at=max(record.expires_at, now + lease + (record.retention or 0.0)),
        updated_at=record.updated_at,
    )


def settle_transition(
    record: Record, status: FinalStatus, result: str | None, error: str | None, now: float
) -> Record:
    """``record`` finished (or resolved) with ``status``, its texts and a renewed expiry."""
    return _with(
        record,
        status=status,
        lease_expires_at=None,
        result=result,
        error=error,
        expires_at=max(record.expires_at, now + (record.retention or 0.0)),
        updated_at=now,
    )


def _with(
    record: Record,
    *,
    status: Status,
    lease_expires_at: float | None,
    result: str | None,
    error: str | None,
    expires_at: float,
    updated_at: float | None,
) -> Record:
    """``record`` with the fields a fenced write changes (``dataclasses.replace`` costs
    several times more, on the path of every call)."""
    return Record(
        key=record.key,
        args_hash=record.args_hash,
        idempotency_key=record.idempotency_key,
        status=status,
        owner=record.owner,
        fence=record.fence,
        lease_expires_at=lease_expires_at,
        result=result,
        error=error,
        created_at=record.created_at,
        expires_at=expires_at,
        retention=record.retention,
        scope=record.scope,
        turn=record.turn,
        tool_name=record.tool_name,
        call_id=record.call_id,
        updated_at=updated_at,
    )
