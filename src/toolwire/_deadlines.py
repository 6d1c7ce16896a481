"""The deadlines of one live stream, as a sans-IO clockwork: it is told ``now``, never reads it.

Strategy: every limit is turned into an **absolute** instant on the caller's monotonic
clock the moment it starts to run, so waiting in several steps, retrying a wait after a
spurious wake-up or spending time in the caller's loop body never stretches a budget.

* ``total_timeout`` runs from ``start`` and bounds the whole stream.
* Before the first item, ``first_event_timeout`` (or, when it is ``None``, ``idle_timeout``)
  runs from ``start``; when it passes the timeout is of kind ``"first_event"``: nothing
  at all arrived.
* After an item, ``idle_timeout`` runs from the moment that item was taken, so the next
  one must come within it (kind ``"idle"``).

The deadline in force is the earliest of the two that apply; when both fall on the same
instant ``"total"`` wins, since it is the caller's overall budget. A deadline has passed
when ``now >= at``. What counts as an item is the driver's business (one payload, or one
read of bytes): this module only counts instants.

Limits are taken as given (``None`` or seconds > 0): the drivers validate what callers
pass before building this. Guarantees: ``current`` and ``expired`` are pure functions of
the instants given so far; ``remaining`` is never negative. Not guaranteed:
anything about real time (the driver waits; this module only says until when).
Complexity: O(1) per call, O(1) memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Deadline", "StreamDeadlines", "TimeoutKind"]

TimeoutKind = Literal["first_event", "idle", "total"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Deadline:
    """A deadline: the absolute instant ``at`` (on the clock that supplied the instants),
    the kind of timeout it makes, the limit in seconds and the name of its setting."""

    at: float
    kind: TimeoutKind
    limit: float
    setting: str


class StreamDeadlines:
    """The first-event, idle and total deadlines of one stream (sans-IO).

    Create it with the limits and the ``start`` instant; call :meth:`arrived` with the
    instant each item was taken; ask :meth:`current`, :meth:`remaining` or
    :meth:`expired` with the present instant.
    """

    __slots__ = ("_arrivals", "_first", "_first_setting", "_idle", "_last", "_total")

    def __init__(
        self,
        *,
        first_event_timeout: float | None,
        idle_timeout: float | None,
        total_timeout: float | None,
        start: float,
    ) -> None:
        first = first_event_timeout
        self._idle = idle_timeout
        total = total_timeout
        # without a first-event limit, the idle limit also bounds the wait for the first item
        if first is None:
            first, self._first_setting = self._idle, "idle_timeout"
        else:
            self._first_setting = "first_event_timeout"
        self._first: Deadline | None = (
            None
            if first is None
            else Deadline(
                at=start + first, kind="first_event", limit=first, setting=self._first_setting
            )
        )
        self._total: Deadline | None = (
            None
            if total is None
            else Deadline(at=start + total, kind="total", limit=total, setting="total_timeout")
        )
        self._last: float | None = None
        self._arrivals = 0

    @property
    def arrivals(self) -> int:
        """How many items arrived so far."""
        return self._arrivals

    @property
    def limited(self) -> bool:
        """Whether any limit is set at all (a driver needs no timer otherwise)."""
        return self._first is not None or self._idle is not None or self._total is not None

    def arrived(self, now: float) -> None:
        """An item was taken at ``now``: the idle deadline restarts from there."""
        self._arrivals += 1
        self._last = now

    def current(self) -> Deadline | None:
        """The deadline in force (the earliest that applies), or ``None`` without limits."""
        if self._last is None:
            waiting = self._first
        elif self._idle is None:
            waiting = None
        else:
            waiting = Deadline(
                at=self._last + self._idle, kind="idle", limit=self._idle, setting="idle_timeout"
            )
        total = self._total
        if waiting is None:
            return total
        if total is None or waiting.at < total.at:
            return waiting
        return total  # a tie goes to the overall budget

    def remaining(self, now: float) -> float | None:
        """Seconds from ``now`` to the deadline in force (``0.0`` once it passed), or
        ``None`` when no limit applies."""
        deadline = self.current()
        if deadline is None:
            return None
        return max(0.0, deadline.at - now)

    def expired(self, now: float) -> Deadline | None:
        """The deadline in force if it has passed at ``now``, else ``None``."""
        deadline = self.current()
        if deadline is not None and now >= deadline.at:
            return deadline
        return None

    def total_expired(self, now: float) -> Deadline | None:
        """The total deadline if it has passed at ``now`` (checked even when an item is
        ready: the overall budget binds the caller's own pace too), else ``None``."""
        total = self._total
        if total is not None and now >= total.at:
            return total
        return None
