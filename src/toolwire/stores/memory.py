"""``MemoryStore``: the in-process store, a dict of immutable records behind one lock.

Exactly one of any number of concurrent claims is acquired; no clock jump can end a lease
or expire a record early. Nothing survives the process. O(1) per operation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .._errors import StoreError
from . import _local as local
from ._clock import ClockReading, StoreClock
from ._protocol import Record
from ._requests import RecordsRequest, Request, T
from ._shells import SyncShell

__all__ = ["MemoryStore"]


class _DictTable:
    """The :class:`~toolwire.stores._local.Table` of a ``MemoryStore``: its dict and its
    clock (used with the store's lock held). ``load`` and ``now`` are the dict's and the
    clock's own bound methods, so the hot steps add no Python frame of their own."""

    __slots__ = ("load", "now", "records")

    def __init__(self, records: dict[str, Record], clock: StoreClock) -> None:
        self.records = records
        self.load = records.get
        self.now = clock.now

    def save(self, record: Record) -> None:
        self.records[record.key] = record

    def delete(self, key: str) -> None:
        del self.records[key]

    def select(self, request: RecordsRequest) -> list[Record]:
        found = [r for r in self.records.values() if request.matches(r)]
        found.sort(key=lambda r: (r.created_at, r.key), reverse=request.newest_first)
        return found[: request.limit]

    def delete_expired(self, now: float) -> int:
        old = [key for key, record in self.records.items() if record.expires_at <= now]
        for key in old:
            del self.records[key]
        return len(old)


class MemoryStore(SyncShell):
    """A thread-safe in-process :class:`~toolwire.stores.AdminStore` (one lock, one dict).

    ``clock`` returns seconds (or a :class:`~toolwire.stores.ClockReading`); tests
    pass a controllable one to move past leases and expiry. By default the store keeps a
    jump-free clock of its own. Records vanish with the process.
    """

    def __init__(
        self, *, clock: Callable[[], float] | Callable[[], ClockReading] | None = None
    ) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}
        self._table = _DictTable(self._records, StoreClock(clock))
        self._closed = False

    def _perform(self, request: Request[T]) -> T:
        operation = local.OPERATIONS[type(request)]
        with self._lock:
            if self._closed:
                raise StoreError("the store is closed")
            result: T = operation(self._table, request)
            return result

    def close(self) -> None:
        """Drop every record; later operations raise :class:`~toolwire.StoreError`."""
        with self._lock:
            self._closed = True
            self._records.clear()
