"""``MemoryStore``: the in-process store.

Strategy. One dict of immutable :class:`~toolwire.stores.Record` values behind one lock;
every operation runs its flow (:mod:`toolwire.stores._local`, shared with SQLite) under
the lock, so each is atomic with respect to every other thread.

Time is a jump-free clock (:mod:`toolwire.stores._clock`): the wall clock read once, then
advanced by ``CLOCK_BOOTTIME`` (Linux) or ``time.monotonic``; setting the system clock
changes nothing for a running store, so no clock jump can expire a lease early or make
``purge`` delete a record early.

Guaranteed: exactly one of any number of concurrent claims of a key is acquired; every
write after the claim is accepted only while ``owner`` and ``fence`` still hold an
``in_progress`` record; results are kept as the exact ``str`` given; records stay until
``purge`` deletes those past their expiry. Not guaranteed: anything across processes or a
restart (use :class:`~toolwire.SQLiteStore`). Each operation is O(1); ``purge`` is O(n);
``records`` is O(n log n).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .._errors import StoreError
from . import _local as local
from ._clock import ClockMark, ClockReading, advance, reader
from ._protocol import Record
from ._requests import Request, T
from ._shells import SyncShell, run_flow

__all__ = ["MemoryStore"]


class MemoryStore(SyncShell):
    """A thread-safe in-process :class:`~toolwire.stores.AdminStore` (one lock, one dict).

    ``clock`` returns seconds (or a :class:`~toolwire.stores._clock.ClockReading`); tests
    pass a controllable one to move past leases and expiry. By default the store keeps a
    jump-free clock of its own. Records vanish with the process.
    """

    def __init__(
        self, *, clock: Callable[[], float] | Callable[[], ClockReading] | None = None
    ) -> None:
        self._read = reader(clock)
        self._mark: ClockMark | None = None
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._closed = False

    def _perform(self, request: Request[T]) -> T:
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            result: T = run_flow(local.flow(request), self._step)
            return result

    def _step(self, action: Any) -> Any:
        """One step of a flow, on the dict (called with the lock held)."""
        if action is local.NOW:
            self._mark = advance(self._mark, self._read())
            return self._mark.now
        if isinstance(action, local.Load):
            return self._records.get(action.key)
        if isinstance(action, local.Save):
            self._records[action.record.key] = action.record
            return None
        if isinstance(action, local.Delete):
            del self._records[action.key]
            return None
        if isinstance(action, local.Select):
            found = [r for r in self._records.values() if action.status in (None, r.status)]
            found.sort(key=lambda r: (r.created_at, r.key), reverse=action.newest_first)
            return found[: action.limit]
        assert isinstance(action, local.DeleteExpired)
        old = [key for key, record in self._records.items() if record.expires_at <= action.now]
        for key in old:
            del self._records[key]
        return len(old)

    def close(self) -> None:
        """Drop every record; later operations raise :class:`~toolwire.StoreError`."""
        with self._lock:
            self._closed = True
            self._records.clear()
