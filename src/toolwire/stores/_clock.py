"""Store time for the in-process stores: a clock that wall-clock jumps cannot move.

The problem. ``MemoryStore`` and ``SQLiteStore`` have no server to ask the time; each
process has a wall clock (``time.time``) that NTP, an operator or a bad RTC can move by
hours, in either direction. A store that judged leases and expiry by it would turn live
calls ``unknown`` after a forward jump, keep dead ones ``in_progress`` after a backward
one, and -- the harmful part -- let ``purge`` delete records early once the clock runs
ahead, so that a retry could run a finished call again.

The rules (sans-IO: readings come in, a new :class:`ClockMark` goes out):

1. Store time never goes back. It is kept as a *mark*: the store time at the last
   reading, with the clock *domain* and the *elapsed* reading it was taken at.
2. Within one domain, store time advances by elapsed time only. A domain is a span in
   which one jump-free clock is comparable between readings: on Linux a boot of the host
   (the kernel's ``boot_id``, and ``CLOCK_BOOTTIME``, which counts suspend and which every
   process of the host shares); elsewhere one process (``time.monotonic``).
3. Only when the domain changes (after a reboot; on other systems, when another process
   writes to a SQLite file) is the wall clock consulted, and then only forward:
   ``max(mark, wall)``.

What a jump can do, then: none within a domain. Across a domain change, a wall clock
that is behind changes nothing (rule 1); one that is ahead moves store time forward once,
which can end leases early (claims then turn the calls ``unknown``, never run them; after
a reboot their owners are gone anyway) and lets a later ``purge`` delete records early.
Claims never treat a record as absent because of time (see
:mod:`toolwire.stores._protocol`), so no clock alone can run a call twice; an early
``purge`` after a wrong wall clock at a domain change is the one residual risk, stated in
the SQLite store's notes. Time spent with no process reading the clock (a store file
left alone within one boot) counts on Linux through ``CLOCK_BOOTTIME``.

A clock given by a caller (tests, simulations) is a function returning seconds: it is
taken as both wall and jump-free clock of one domain, so store time follows it exactly
while it moves forward and stands still if it goes back. A function returning a
:class:`ClockReading` controls the three parts separately (to test the rules above).
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
