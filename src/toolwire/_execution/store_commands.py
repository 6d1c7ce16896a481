"""Performing the flows' store commands on a store: spelled out for a ``Store`` (or an
``AsyncStore``, awaited), and in batches on a worker thread for a sync store under asyncio.

Each command is performed once; a batch wakes the event loop once. O(1) per command.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any

from .._errors import StoreError
from ..stores._protocol import AsyncStore, Store
from .decisions import ClaimCall, Command, FinishCall, Heartbeat, ReleaseCall
from .workers import pool

__all__ = ["StoreLane", "perform_async_store", "perform_store"]


def perform_store(store: Store | AsyncStore, command: Command) -> Any:
    """Call the store method that performs a store command, spelled out (no dict and no
    lookup by name on the path of every call): the answer of a :class:`Store`, an awaitable
    of an :class:`AsyncStore` (:func:`perform_async_store` awaits it)."""
    if isinstance(command, ClaimCall):
        return store.claim(
            command.key,
            args_hash=command.args_hash,
            idempotency_key=command.idempotency_key,
            owner=command.owner,
            lease=command.lease,
            retention=command.retention,
            reclaim=command.reclaim,
            scope=command.scope,
            turn=command.turn,
            tool_name=command.tool_name,
            call_id=command.call_id,
        )
    if isinstance(command, FinishCall):
        return store.finish(
            command.key,
            owner=command.owner,
            fence=command.fence,
            status=command.status,
            result=command.result,
            error=command.error,
        )
    if isinstance(command, Heartbeat):
        return store.heartbeat(
            command.key, owner=command.owner, fence=command.fence, lease=command.lease
        )
    if isinstance(command, ReleaseCall):
        return store.release(command.key, owner=command.owner, fence=command.fence)
    raise AssertionError(f"not a store command: {command!r}")  # pragma: no cover


async def perform_async_store(store: AsyncStore, command: Command) -> Any:
    """Perform one store command on an ``AsyncStore``."""
    return await perform_store(store, command)


class StoreLane:
    """The sync-store commands of one ``AsyncExecutor`` run, performed on a worker thread
    in batches: commands queued while a batch runs go together in the next one, and each
    batch wakes the event loop once."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self._store = store
        self._loop = loop
        self._queue: list[tuple[Command, asyncio.Future[Any]]] = []
        self._busy = False

    def submit(self, command: Command) -> asyncio.Future[Any]:
        """The command's result, as a future of the loop."""
        future: asyncio.Future[Any] = self._loop.create_future()
        self._queue.append((command, future))
        if not self._busy:
            self._busy = True
            self._dispatch()
        return future

    def _dispatch(self) -> None:
        batch, self._queue = self._queue, []
        try:
            pool().submit(lambda: self._perform(batch))
        except Exception as exc:  # no thread could be started: nothing was performed
            self._busy = False
            for _command, future in batch:
                future.set_exception(StoreError(f"no thread to call the store on: {exc}"))

    def _perform(self, batch: list[tuple[Command, asyncio.Future[Any]]]) -> None:
        results: list[tuple[bool, Any]] = []
        for command, _future in batch:
            try:
                results.append((True, perform_store(self._store, command)))
            except Exception as exc:
                results.append((False, exc))
            except BaseException as exc:  # keep a worker's KeyboardInterrupt off the loop
                results.append((False, StoreError(f"the store call was interrupted: {exc!r}")))
        with suppress(RuntimeError):  # the loop has closed: nobody waits any more
            self._loop.call_soon_threadsafe(self._deliver, batch, results)

    def _deliver(
        self, batch: list[tuple[Command, asyncio.Future[Any]]], results: list[tuple[bool, Any]]
    ) -> None:
        for (_command, future), (ok, value) in zip(batch, results, strict=True):
            if future.done():
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)
        if self._queue:
            self._dispatch()
        else:
            self._busy = False
