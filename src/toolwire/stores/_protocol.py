"""The store Protocol: the few atomic, fenced operations the executor needs.

A record is kept per *call key* (scope, provider response id, tool name, call id); it
remembers the SHA-256 of the call's canonical arguments so that the same call identity
seen with other arguments is a conflict, never a replay.

Every operation after ``claim`` is conditional on ``owner`` **and** ``fence``: a worker
that was paused past its lease, and whose call was since claimed again (fence + 1) or
declared ``unknown``, gets ``False`` from every write and changes nothing.

Time is the store's: ``lease`` and ``retention`` are durations in seconds, measured by the
store's own clock (an injectable ``clock`` for the in-process stores, the server's clock
for PostgreSQL and Redis), so that workers with skewed clocks agree.

Guarantees a store must give (the contract test suite checks each on every backend):

- ``claim`` is one atomic decision: of any number of concurrent claims of one key exactly
  one is ``acquired``.
- An expired ``in_progress`` record is taken over (fence + 1) only with ``reclaim=True``
  (tools declared safe to repeat); otherwise the same atomic step turns it ``unknown``.
- A record past its retention counts as absent.
- Nothing is lost: a finished record keeps its ``result`` text byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

Status = Literal["in_progress", "completed", "failed", "unknown"]
FinalStatus = Literal["completed", "failed", "unknown"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """What a store holds for one call key.

    ``result`` is the JSON text of a completed tool's return value, stored as given;
    ``error`` the message of a failed (or unknown) call. Times are the store clock's, in
    seconds since the epoch.
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


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """The result of ``claim``: ``acquired`` when the caller now owns the call with
    ``record.fence``; otherwise ``record`` is the existing record to report on."""

    acquired: bool
    record: Record


@runtime_checkable
class Store(Protocol):
    """A synchronous store. Implementations must be safe to share between threads."""

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
        """Atomically claim ``key`` for ``owner``.

        - no record, or one past its retention: insert ``in_progress`` with the next
          fence (1, or the old fence + 1) and ``acquired=True``;
        - a record with another ``args_hash``: not acquired (the caller reports a
          conflict), record unchanged;
        - ``in_progress`` past its lease: with ``reclaim`` take it over (new owner,
          fence + 1, acquired); without, set it ``unknown`` (fence + 1, no owner) and
          return that, not acquired;
        - anything else: not acquired, record unchanged.
        """
        ...

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` if ``owner``/``fence`` still hold it."""
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
        """Record the outcome if ``owner``/``fence`` still hold the call; ``False`` if not."""
        ...

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim (the tool raised ``RetryableError``) if still held."""
        ...

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` (also when past its retention)."""
        ...

    def purge(self) -> int:
        """Delete every record past its retention; return how many."""
        ...

    def close(self) -> None:
        """Release connections; the store is unusable afterwards."""
        ...


@runtime_checkable
class AsyncStore(Protocol):
    """The asyncio twin of :class:`Store`, with the same semantics."""

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
        """See :meth:`Store.claim`."""
        ...

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """See :meth:`Store.heartbeat`."""
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
        """See :meth:`Store.finish`."""
        ...

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        """See :meth:`Store.release`."""
        ...

    async def get(self, key: str) -> Record | None:
        """See :meth:`Store.get`."""
        ...

    async def purge(self) -> int:
        """See :meth:`Store.purge`."""
        ...

    async def aclose(self) -> None:
        """See :meth:`Store.close`."""
        ...
