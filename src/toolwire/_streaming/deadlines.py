"""The deadlines of one live stream, as a sans-IO clockwork: it is told ``now``, never reads it.

Every answer is a pure function of the limits, ``start``, whether content arrived and
``now``. O(1) per call.
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


def _from(start: float, limit: float | None, kind: TimeoutKind, setting: str) -> Deadline | None:
    """The deadline ``limit`` seconds after ``start`` (``None`` without a limit)."""
    if limit is None:
        return None
    return Deadline(at=start + limit, kind=kind, limit=limit, setting=setting)


class StreamDeadlines:
    """The first-event, idle and total deadlines of one stream (sans-IO).

    Create it with the limits and the ``start`` instant; call :meth:`content_arrived` when
    the stream's first content arrives; ask :meth:`wait` for the deadline of each wait.
    """

    __slots__ = ("_content", "_first", "_idle", "_total")

    def __init__(
        self,
        *,
        first_event_timeout: float | None,
        idle_timeout: float | None,
        total_timeout: float | None,
        start: float,
    ) -> None:
        self._first = _from(start, first_event_timeout, "first_event", "first_event_timeout")
        self._idle = idle_timeout
        self._total = _from(start, total_timeout, "total", "total_timeout")
        self._content = False

    @property
    def content(self) -> bool:
        """Whether the stream's content began (the idle limit now applies)."""
        return self._content

    def content_arrived(self) -> None:
        """The first content arrived: from now on each wait is bounded by the idle limit."""
        self._content = True

    def wait(self, now: float) -> Deadline | None:
        """The deadline of a wait for the next item that begins at ``now`` (``None``: no
        limit applies)."""
        if not self._content:
            waiting = self._first
        elif self._idle is None:
            waiting = None
        else:
            idle = self._idle
            waiting = Deadline(at=now + idle, kind="idle", limit=idle, setting="idle_timeout")
        total = self._total
        if waiting is None:
            return total
        if total is None or waiting.at < total.at:
            return waiting
        return total  # a tie goes to the overall budget

    def until(self, now: float) -> float | None:
        """``wait(now).at`` without building the :class:`Deadline` (the hot path: drivers
        ask once per item, and need the deadline itself only when it passes)."""
        if not self._content:
            first = self._first
            at = None if first is None else first.at
        else:
            idle = self._idle
            at = None if idle is None else now + idle
        total = self._total
        if total is not None and (at is None or total.at <= at):
            return total.at
        return at

    def total_expired(self, now: float) -> Deadline | None:
        """The total deadline if it has passed at ``now`` (checked before every read, even
        when an item is ready: the overall budget binds the caller's own pace too)."""
        total = self._total
        if total is not None and now >= total.at:
            return total
        return None
