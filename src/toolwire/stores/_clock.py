"""Store time for the in-process stores: a clock that wall-clock jumps cannot move.

Store time never goes back and, within one clock domain (a boot on Linux, a process
elsewhere), advances by elapsed time only. Sans-IO: readings in, a new mark out.
"""

from __future__ import annotations

import functools
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["ClockMark", "ClockReading", "StoreClock", "advance", "reader", "system_reading"]


@dataclass(frozen=True, slots=True)
class ClockReading:
    """One reading of the host's clocks: the wall clock (seconds since the epoch), the
    domain the jump-free clock belongs to, and that clock's reading (seconds)."""

    wall: float
    domain: str
    elapsed: float


@dataclass(frozen=True, slots=True)
class ClockMark:
    """Store time ``now`` as of a reading of ``domain``'s jump-free clock ``elapsed``."""

    now: float
    domain: str
    elapsed: float


def advance(mark: ClockMark | None, reading: ClockReading) -> ClockMark:
    """The store time after ``reading``, given the last ``mark`` (rules 1-3). O(1)."""
    if mark is None:
        return ClockMark(reading.wall, reading.domain, reading.elapsed)
    if mark.domain == reading.domain:
        step = max(0.0, reading.elapsed - mark.elapsed)
        return ClockMark(mark.now + step, mark.domain, max(mark.elapsed, reading.elapsed))
    return ClockMark(max(mark.now, reading.wall), reading.domain, reading.elapsed)


def _host_domain() -> tuple[str, Callable[[], float]]:
    """The domain of this process's jump-free clock, and that clock."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
    except OSError:
        boot = ""
    if boot and boottime is not None:
        return f"boot:{boot}", functools.partial(time.clock_gettime, boottime)
    # No host-wide jump-free clock we can name: one process is the domain.
    return f"process:{os.getpid()}:{uuid.uuid4().hex}", time.monotonic


_DOMAIN, _ELAPSED = _host_domain()


def system_reading() -> ClockReading:
    """A reading of this host's clocks."""
    return ClockReading(time.time(), _DOMAIN, _ELAPSED())


def reader(
    clock: Callable[[], float] | Callable[[], ClockReading] | None,
) -> Callable[[], ClockReading]:
    """The reading function for a store's ``clock`` option (``None``: the host's)."""
    if clock is None:
        return system_reading
    given = clock
    domain = f"given:{id(given)}"

    def read() -> ClockReading:
        value = given()
        if isinstance(value, ClockReading):
            return value
        seconds = float(value)
        return ClockReading(seconds, domain, seconds)

    return read


class StoreClock:
    """The store time of one in-process store that keeps its mark in memory
    (``MemoryStore``): :func:`advance` applied to one reading per :meth:`now`.

    With the host's clocks the domain is this process's for its whole life (it is read
    once, at import), so after the first reading only rule 2 can apply: store time moves
    by what the jump-free clock moved, never back. :meth:`now` then reads that clock
    alone, with no reading or mark object built, which gives exactly :func:`advance`'s
    answer for a fraction of its cost. A clock given by the caller goes through
    :func:`advance` as it is. Not thread-safe: the store calls it under its lock.
    """

    __slots__ = ("_elapsed", "_mark", "_now", "_read", "_started")

    def __init__(
        self, clock: Callable[[], float] | Callable[[], ClockReading] | None = None
    ) -> None:
        self._read = None if clock is None else reader(clock)
        self._mark: ClockMark | None = None
        self._started = False  # the host's clocks read once yet
        self._now = 0.0
        self._elapsed = 0.0

    def now(self) -> float:
        """The store time now (rules 1-3), in seconds."""
        if self._read is not None:
            mark = self._mark = advance(self._mark, self._read())
            return mark.now
        if not self._started:  # the first reading: the wall clock, once (rule 3)
            first = system_reading()
            self._now, self._elapsed, self._started = first.wall, first.elapsed, True
            return self._now
        elapsed = _ELAPSED()
        if elapsed > self._elapsed:  # rule 2; a clock that went back moves nothing (rule 1)
            self._now += elapsed - self._elapsed
            self._elapsed = elapsed
        return self._now
