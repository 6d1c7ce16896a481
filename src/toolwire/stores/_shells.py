"""The Protocol's methods, written once for every synchronous and once for every asyncio store.

A server backend supplies a sans-IO flow of I/O steps and how one step is performed.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Generator
from typing import TYPE_CHECKING, Any, TypeVar

from .._errors import StoreError
from . import _requests as requests
from ._protocol import Claim, FinalStatus, Record, ResolvedStatus, Status

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")
Flow = Generator[Any, Any, T]


def run_flow(flow: Flow[T], step: Callable[[Any], Any]) -> T:
    """Drive ``flow`` to its end, performing each step it yields with ``step``."""
    reply = None
    while True:
        try:
            reply = step(flow.send(reply))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


async def arun_flow(flow: Flow[T], step: Callable[[Any], Awaitable[Any]]) -> T:
    """:func:`run_flow` with an asyncio ``step``."""
    reply = None
    while True:
        try:
            action = flow.send(reply)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        reply = await step(action)


class SyncShell(ABC):
    """The :class:`~toolwire.stores.Store` methods for every synchronous backend."""

    @abstractmethod
    def _perform(self, request: requests.Request[T]) -> T:
        """Perform one checked request (the backend's part)."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; later operations raise :class:`~toolwire.StoreError`."""

    def _self_test(self, behind: str) -> None:
        """Fail closed unless the backend enforces conditional writes."""
        run_flow(requests.probe(behind), self._perform)

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
        """Atomically claim ``key`` (:meth:`toolwire.stores.Store.claim`)."""
        request = requests.claim(
            key,
            args_hash,
            idempotency_key,
            owner,
            lease,
            retention,
            reclaim,
            scope,
            turn,
            tool_name,
            call_id,
        )
        return self._perform(request)

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend a held lease (:meth:`toolwire.stores.Store.heartbeat`)."""
        return self._perform(requests.heartbeat(key, owner, fence, lease))

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
        """Record a held call's outcome (:meth:`toolwire.stores.Store.finish`)."""
        return self._perform(requests.finish(key, owner, fence, status, result, error))

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete a held claim (:meth:`toolwire.stores.Store.release`)."""
        return self._perform(requests.release(key, owner, fence))

    def get(self, key: str) -> Record | None:
        """The record for ``key`` (:meth:`toolwire.stores.Store.get`)."""
        return self._perform(requests.get(key))

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
        """List records (:meth:`toolwire.stores.AdminStore.records`)."""
        request = requests.records(
            status, tool_name, call_id, scope, idempotency_key, since, newest_first, limit
        )
        return self._perform(request)

    def resolve(
        self,
        key: str,
        *,
        status: ResolvedStatus,
        result: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Settle an ``unknown`` call by hand (:meth:`toolwire.stores.AdminStore.resolve`)."""
        return self._perform(requests.resolve(key, status, result, error))

    def purge(self) -> int:
        """Delete the records past their expiry (:meth:`toolwire.stores.Store.purge`)."""
        return self._perform(requests.PurgeRequest())

    def __enter__(self) -> Self:
        """Use the store as a context manager that closes it on exit."""
        return self

    def __exit__(self, *exc_info: object) -> None:
        """Close the store (whatever ended the block)."""
        self.close()


class AsyncShell(ABC):
    """The :class:`~toolwire.stores.AsyncStore` methods for every asyncio backend."""

    _self_test_wanted: bool = True
    _behind: str = "the server"
    _ready: bool = False
    _closed: bool = False
    _opening: asyncio.Lock | None = None

    @abstractmethod
    async def _setup(self) -> None:
        """Prepare the backend (pool, schema) in the running event loop."""

    @abstractmethod
    async def _execute(self, request: requests.Request[T]) -> T:
        """Perform one checked request on the prepared backend."""

    @abstractmethod
    async def aclose(self) -> None:
        """Release connections; later operations raise :class:`~toolwire.StoreError`."""

    async def open(self) -> None:
        """Set up the store and run the self-test now instead of on first use."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._ready:
            return
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._ready:
                return
            await self._setup()
            if self._self_test_wanted:
                await arun_flow(requests.probe(self._behind), self._execute)
            self._ready = True

    async def _perform(self, request: requests.Request[T]) -> T:
        if self._closed:
            raise StoreError("the store is closed")
        if not self._ready:
            await self.open()
        return await self._execute(request)

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
        """Atomically claim ``key`` (:meth:`toolwire.stores.Store.claim`)."""
        request = requests.claim(
            key,
            args_hash,
            idempotency_key,
            owner,
            lease,
            retention,
            reclaim,
            scope,
            turn,
            tool_name,
            call_id,
        )
        return await self._perform(request)

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend a held lease (:meth:`toolwire.stores.Store.heartbeat`)."""
        return await self._perform(requests.heartbeat(key, owner, fence, lease))

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
        """Record a held call's outcome (:meth:`toolwire.stores.Store.finish`)."""
        return await self._perform(requests.finish(key, owner, fence, status, result, error))

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete a held claim (:meth:`toolwire.stores.Store.release`)."""
        return await self._perform(requests.release(key, owner, fence))

    async def get(self, key: str) -> Record | None:
        """The record for ``key`` (:meth:`toolwire.stores.Store.get`)."""
        return await self._perform(requests.get(key))

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
        """List records (:meth:`toolwire.stores.AdminStore.records`)."""
        request = requests.records(
            status, tool_name, call_id, scope, idempotency_key, since, newest_first, limit
        )
        return await self._perform(request)

    async def resolve(
        self,
        key: str,
        *,
        status: ResolvedStatus,
        result: str | None = None,
        error: str | None = None,
    ) -> bool:
        """Settle an ``unknown`` call by hand (:meth:`toolwire.stores.AdminStore.resolve`)."""
        return await self._perform(requests.resolve(key, status, result, error))

    async def purge(self) -> int:
        """Delete the records past their expiry (:meth:`toolwire.stores.Store.purge`)."""
        return await self._perform(requests.PurgeRequest())

    async def __aenter__(self) -> Self:
        """Open the store (set-up, self-test) for ``async with``; closed on exit."""
        await self.open()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """Close the store (whatever ended the block)."""
        await self.aclose()
