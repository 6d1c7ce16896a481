"""How ``stream()`` reads a sync source until an absolute instant, with the fewest threads.

Inline for in-memory sources, a shared socket watchdog where the socket is reachable, a
worker thread where it is hidden. A read returns by its instant even if the source stays
blocked. O(1) per item.
"""

from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time
import types
from collections import deque
from collections.abc import Iterator
from typing import Any

from .flow import END, LATE, Item
from .sources import Readable

__all__ = ["CAPACITY", "InlineReader", "ThreadReader", "WatchedReader", "make_reader"]

CAPACITY = 256  # items a worker reads ahead of the caller at most
_JOIN_GRACE = 0.25  # seconds the caller waits for a worker after closing
_ITEM, _END, _FAIL = 0, 1, 2

clock = time.monotonic


def make_reader(source: Readable, *, limited: bool) -> InlineReader:
    """The reader for ``source``: inline when it cannot block or nothing is limited,
    watched when its socket is reachable, else a worker thread."""
    target = source.items
    iterator: Iterator[Any] = iter(target.iter_bytes() if source.as_bytes else target)
    derived = iterator if iterator is not target else None
    if not limited or source.in_memory:
        return InlineReader(iterator, derived)
    sock = _socket_of(source.http)
    if sock is not None:
        return WatchedReader(iterator, derived, sock, source.http)
    return ThreadReader(iterator, derived)


def _socket_of(response: Any) -> socket.socket | None:
    """The socket under an httpx response (its ``network_stream`` extension), or ``None``."""
    if response is None:
        return None
    try:
        network = response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
    except Exception:
        return None
    return sock if isinstance(sock, socket.socket) else None


def _close_quietly(obj: Any) -> BaseException | None:
    """Call ``obj.close()`` if it has one; return what it raised."""
    close = getattr(obj, "close", None)
    if not callable(close):
        return None
    try:
        close()
    except Exception as exc:  # never masks the error that made us close
        return exc
    return None


class InlineReader:
    """Reads in the caller's thread; nothing bounds a blocked ``next()``."""

    def __init__(self, iterator: Iterator[Any], derived: Iterator[Any] | None) -> None:
        self._iterator = iterator
        self._derived = derived

    @property
    def worker_alive(self) -> bool:
        """Whether a worker thread of this stream still runs."""
        return False

    def read(self, until: float | None) -> Any:
        """The next :class:`Item`, or ``END``; the source's exceptions propagate."""
        try:
            return Item(next(self._iterator), clock())
        except StopIteration:
            return END

    def close(self, source: Any) -> BaseException | None:
        """Close the iterator we made, then ``source``; the first error, never raised."""
        first = _close_quietly(self._derived) if self._derived is not None else None
        error = _close_quietly(source) if source is not None else None
        return first or error


class WatchedReader(InlineReader):
    """Reads in the caller's thread; the watchdog shuts the socket down if a read
    outlives its instant, and the read is then reported ``LATE``."""

    def __init__(
        self,
        iterator: Iterator[Any],
        derived: Iterator[Any] | None,
        sock: socket.socket,
        response: Any,
    ) -> None:
        super().__init__(iterator, derived)
        self._watch = Watch(sock, response)

    def read(self, until: float | None) -> Any:
        """The next :class:`Item`, ``END``, or ``LATE`` once ``until`` passed."""
        watch = self._watch
        if until is not None:
            watch.begin(until)
        try:
            item = Item(next(self._iterator), clock())
        except StopIteration:
            return LATE if watch.fired else END
        except Exception:
            if watch.fired:
                return LATE  # the shut-down socket made the read fail
            raise
        finally:
            watch.reading = False
        return item

    def close(self, source: Any) -> BaseException | None:
        """Stop watching, then close as :class:`InlineReader` does."""
        self._watch.stop()
        return super().close(source)


# ------------------------------------------------------------------------ watchdog


class Watch:
    """The deadline of one stream's reads, kept by the process's :class:`Watchdog`.

    The reading thread sets ``until`` and ``reading`` without a lock (attribute stores are
    atomic); it takes the watchdog's lock only when a deadline moves earlier than the one
    scheduled, which happens about once per stream (the first-event deadline giving way to
    the idle one). The watchdog re-reads the fields when the scheduled instant comes and
    re-schedules itself at the current deadline if that moved later.
    """

    __slots__ = ("_response", "_scheduled", "_sock", "active", "fired", "reading", "until")

    def __init__(self, sock: socket.socket, response: Any) -> None:
        self._sock: socket.socket | None = sock
        self._response: Any = response
        self._scheduled = float("inf")  # the earliest instant the watchdog will look at us
        self.until = float("inf")
        self.reading = False
        self.fired = False
        self.active = True

    def begin(self, until: float) -> None:
        """A read begins that must end by ``until``."""
        # order matters: until, then reading, then the look at _scheduled (see _due)
        self.until = until
        self.reading = True
        if until < self._scheduled:
            watchdog().schedule(self, until)

    def stop(self) -> None:
        """The stream closed: never look again, and let go of the socket and response (the
        heap may keep this watch until its scheduled instant)."""
        self.active = False
        self.reading = False
        self._sock = self._response = None

    def due(self, now: float, dog: Watchdog) -> None:
        """The scheduled instant came (called by the watchdog, under its lock)."""
        self._scheduled = float("inf")
        if not self.active or not self.reading:
            return  # the next begin() schedules again
        until = self.until
        if until > now:
            dog.push(self, until)  # the deadline moved later while we slept
            return
        self.fired = True
        sock, response = self._sock, self._response
        try:
            if sock is not None and not response.is_closed:
                # a closed response's connection may serve another request by now
                sock.shutdown(socket.SHUT_RDWR)
        except Exception:
            pass  # the socket went away meanwhile: the read has ended anyway


class Watchdog:
    """One daemon thread that shuts down the sockets of reads that outlive their
    deadlines (a heap of instants; it sleeps until the earliest)."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._thread = threading.Thread(target=self._run, name="toolwire-deadlines", daemon=True)
        self._thread.start()

    def schedule(self, watch: Watch, at: float) -> None:
        """Look at ``watch`` at instant ``at`` (unless an earlier look is scheduled)."""
        with self._cond:
            if at < watch._scheduled:
                self.push(watch, at)

    def push(self, watch: Watch, at: float) -> None:
        """Schedule a look (the lock is held)."""
        watch._scheduled = at
        heapq.heappush(self._heap, (at, next(self._order), watch))
        if self._heap[0][2] is watch:
            self._cond.notify()

    def _run(self) -> None:
        cond, heap = self._cond, self._heap
        with cond:
            while True:
                if not heap:
                    cond.wait()
                    continue
                now = clock()
                at = heap[0][0]
                if at > now:
                    cond.wait(at - now)
                    continue
                # a stale entry (the deadline moved) is harmless: due() looks afresh
                heapq.heappop(heap)[2].due(now, self)


_dog: Watchdog | None = None
_dog_lock = threading.Lock()


def watchdog() -> Watchdog:
    """The process's watchdog, started on first use (and again in a forked child)."""
    global _dog
    dog = _dog
    if dog is None:
        with _dog_lock:
            if _dog is None:
                _dog = Watchdog()
            dog = _dog
    return dog


def _forget_watchdog() -> None:
    global _dog
    _dog = None  # a forked child has no watchdog thread: start a new one on first use


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_watchdog)


# ------------------------------------------------------------------- worker thread


class ThreadReader(InlineReader):
    """A daemon worker pulls the source into a bounded queue; the caller waits on the
    queue until the instant of each read."""

    def __init__(self, iterator: Iterator[Any], derived: Iterator[Any] | None) -> None:
        super().__init__(iterator, derived)
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[tuple[int, Any]] = deque()
        self._stopping = False
        self._busy = False  # the worker is inside next() on the source
        self._gone = False  # the worker left its loop
        self._deferred: Any = None  # what the worker closes on its way out
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="toolwire-stream", daemon=True)
        self._thread.start()

    @property
    def worker_alive(self) -> bool:
        """Whether the worker thread still runs."""
        return self._thread.is_alive()

    def _run(self) -> None:
        cond, queue = self._cond, self._queue
        try:
            while True:
                with cond:
                    while len(queue) >= CAPACITY and not self._stopping:
                        cond.wait()
                    if self._stopping:
                        return
                    self._busy = True
                entry: tuple[int, Any]
                try:
                    entry = (_ITEM, next(self._iterator))
                except StopIteration:
                    entry = (_END, None)
                except BaseException as exc:  # handed to the caller's thread, raised there
                    entry = (_FAIL, exc)
                with cond:
                    self._busy = False
                    if self._stopping:
                        return  # nobody will take it: the caller has gone
                    queue.append(entry)
                    cond.notify_all()
                    if entry[0] != _ITEM:
                        return
        finally:
            self._leave()

    def _leave(self) -> None:
        """The worker's way out: close the generator only it may close, and what the
        caller left to it."""
        derived = self._derived
        error = _close_quietly(derived) if isinstance(derived, types.GeneratorType) else None
        with self._cond:
            self._gone = True
            deferred, self._deferred = self._deferred, None
        if deferred is not None:
            error = _close_quietly(deferred) or error
        if error is not None and self._error is None:
            self._error = error

    def read(self, until: float | None) -> Any:
        """The next :class:`Item`, ``END``, or ``LATE`` once ``until`` passed; what the
        source raised is raised here."""
        cond, queue = self._cond, self._queue
        with cond:
            while not queue:
                if until is None:
                    cond.wait()
                    continue
                left = until - clock()
                if left <= 0:
                    return LATE
                cond.wait(left)
            kind, value = queue.popleft()
            if len(queue) == CAPACITY - 1:
                cond.notify_all()  # the worker may be waiting for room
        if kind == _ITEM:
            return Item(value, clock())
        if kind == _END:
            return END
        raise value

    def close(self, source: Any) -> BaseException | None:
        """Stop the worker and close ``source``: at once when the worker is idle; by the
        worker when its ``next()`` returns if ``source`` is the generator it executes;
        else in a short-lived thread, since closing may wait for the read in progress
        (boto3's urllib3 response holds its buffer's lock while reading). The caller
        waits ``_JOIN_GRACE`` seconds at most."""
        until = clock() + _JOIN_GRACE
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            busy = self._busy
            running = busy and isinstance(source, types.GeneratorType) and source.gi_running
            if running and not self._gone:
                self._deferred = source
                source = None
        error = None
        if source is not None and not busy:
            error = _close_quietly(source)
        elif source is not None:
            closer = threading.Thread(
                target=self._close_aside, args=(source,), name="toolwire-close", daemon=True
            )
            closer.start()
            closer.join(max(0.0, until - clock()))
        if not running:
            # closing the source ends a blocked read; a generator blocked in its own code
            # ends only when its next() returns: no use waiting for that
            self._thread.join(max(0.0, until - clock()))
        return self._error or error

    def _close_aside(self, source: Any) -> None:
        error = _close_quietly(source)
        if error is not None and self._error is None:
            self._error = error
