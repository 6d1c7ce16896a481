"""``stream()`` and ``astream()``: drive a live provider stream through a ``StreamAssembler``
under deadlines, and close it on every way out.

Strategy. One sans-IO core (:class:`_Core`) holds the assembler and the
:class:`~toolwire._deadlines.StreamDeadlines` and makes every decision: how long the driver
may wait, what an item, the end or a failure of the source becomes, which ``StreamError``
a stream ends with. The two drivers only know how to wait (the pattern of httpx's
``Auth.auth_flow`` with its two small drivers):

* ``stream()`` pulls the source in a daemon worker thread that hands items over through a
  bounded queue, and waits on that queue with the time the core allows, so a deadline
  holds even while the source blocks inside ``next()`` (a stalled HTTP read). Without any
  limit the source is pulled inline, with no thread.
* ``astream()`` pulls the source in a task of its own and waits on a future with a timer;
  the caller's task is never cancelled by toolwire, so a ``CancelledError`` it receives is
  always the caller's, and is always re-raised.

Each item is fed as it arrives: ``bytes``, ``bytearray`` and ``memoryview`` through
``feed_bytes``, anything else through ``feed``. An item counts as activity for the idle
deadline (a read of bytes, an SDK event, a payload); deadlines are absolute instants of
``time.monotonic()``.

Closing. On every way out (the end, a ``StreamError``, a timeout, an exception in the
caller's ``with`` body, ``break``, ``KeyboardInterrupt``, cancellation) the source is
closed exactly once, with ``aclose()`` or ``close()`` (an object with neither is left
alone), in a ``finally`` step that an error of ``close()`` itself never masks; the async
driver shields that step from a second cancellation and bounds it in time. To unblock a
read stalled in another thread, the socket under an httpx response (the source itself, or
an SDK stream's ``.response``) is shut down first: closing a socket does not wake a
thread blocked in ``recv`` on it, shutting it down does.

Guaranteed: the events are the assembler's, in order, whatever the source's chunking; a
failed stream raises its ``StreamError`` after the last events and keeps it in ``.error``
(``.response`` raises it again); usage that arrived is in ``.partial`` / ``.usage`` and in
every error's ``.partial``. Errors raised by the source are typed: an SDK's error event
(an exception with a ``body``) becomes ``ProviderError``, anything else ``StreamAborted``
(chained). Not guaranteed: a thread cannot be killed, so a source that ignores
``close()`` while blocked (a generator blocked in I/O we cannot reach) keeps its worker
thread until its ``next()`` returns; the caller is released at the deadline all the same.
Closing a stream stops reading; it is not a billing stop at the provider.

Cost: O(1) work per item besides the assembler's; one thread (sync, with limits) or one
task (async) per stream; at most ``_CAPACITY`` items read ahead.
"""

from __future__ import annotations

import asyncio
import inspect
import socket
import threading
import time
import types
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Literal

from ._assembler import StreamAssembler
from ._deadlines import Deadline, StreamDeadlines
from ._errors import (
    DriverSettingsError,
    DriverUsageError,
    ProviderError,
    StreamAborted,
    StreamError,
    StreamTimeout,
)
from ._events import StreamEvent
from ._response import Partial, Response, Usage

__all__ = [
    "AsyncStreamHandle",
    "StreamHandle",
    "astream",
    "stream",
]

_CAPACITY = 256  # items read ahead of the caller at most
_JOIN_GRACE = 0.25  # seconds the sync driver waits for its worker after closing
_CLOSE_GRACE = 2.0  # seconds the async driver gives the source to close

_ITEM, _END, _FAIL, _WAITED = 0, 1, 2, 3
_Entry = tuple[int, Any]

_BYTES = (bytes, bytearray, memoryview)


# ------------------------------------------------------------------ settings, sources


def _check_timeout(name: str, value: object) -> float | None:
    """``value`` as seconds: ``None`` (no limit) or a finite number > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DriverSettingsError(
            f"{name} must be a number of seconds or None, not {type(value).__name__}"
        )
    seconds = float(value)
    # NaN fails both comparisons, so it is refused too
    if not (0 < seconds < float("inf")):
        raise DriverSettingsError(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return seconds


def _refuse_single_value(source: Any) -> None:
    """A dict, string or bytes object is one payload, not a stream of them."""
    if isinstance(source, (dict, str, *_BYTES)):
        raise DriverSettingsError(
            f"the source is a single {type(source).__name__}, not a stream of them; "
            "pass an iterable of payloads (e.g. [payload]) or of bytes chunks"
        )


def _http_response(source: Any) -> Any:
    """The httpx(-like) response carrying ``source``: the source itself, or an SDK stream's
    ``.response``; ``None`` for anything else."""
    for candidate in (source, getattr(source, "response", None)):
        if isinstance(getattr(candidate, "extensions", None), Mapping) and hasattr(
            candidate, "is_closed"
        ):
            return candidate
    return None


def _body_only(source: Any, kind: str) -> bool:
    """Whether the body of an httpx response can only be read one way: ``kind`` is
    ``"async"`` (opened by an ``AsyncClient``) or ``"sync"`` (opened by a ``Client``)."""
    body = getattr(source, "stream", None)
    can_sync, can_async = hasattr(body, "__iter__"), hasattr(body, "__aiter__")
    return can_async and not can_sync if kind == "async" else can_sync and not can_async


def _sync_items(source: Any) -> Callable[[], Iterator[Any]]:
    """How to get an iterator of items from a sync ``source`` (checked now, called later)."""
    _refuse_single_value(source)
    if hasattr(source, "__iter__"):
        return lambda: iter(source)
    if callable(getattr(source, "iter_bytes", None)):
        if _body_only(source, "async"):
            raise DriverSettingsError(
                "the httpx response was opened by an AsyncClient; use toolwire.astream()"
            )
        return lambda: iter(source.iter_bytes())
    if hasattr(source, "__aiter__") or callable(getattr(source, "aiter_bytes", None)):
        raise DriverSettingsError(
            f"a {type(source).__name__} is an async source; use toolwire.astream()"
        )
    raise DriverSettingsError(
        f"cannot stream from a {type(source).__name__}: pass an SDK stream, an httpx "
        "response or an iterable of payloads or bytes"
    )


def _async_items(source: Any) -> Callable[[], AsyncIterator[Any]]:
    """How to get an async iterator of items from an async ``source``."""
    _refuse_single_value(source)
    if hasattr(source, "__aiter__"):
        return lambda: aiter(source)
    if callable(getattr(source, "aiter_bytes", None)) and not _body_only(source, "sync"):
        return lambda: aiter(source.aiter_bytes())
    if hasattr(source, "__iter__") or callable(getattr(source, "iter_bytes", None)):
        raise DriverSettingsError(
            f"a {type(source).__name__} is a sync source: it would block the event loop; "
            "use toolwire.stream(), or an async source"
        )
    raise DriverSettingsError(
        f"cannot stream from a {type(source).__name__}: pass an async SDK stream, an httpx "
        "response of an AsyncClient or an async iterable of payloads or bytes"
    )


def _abort_transport(response: Any) -> None:
    """Shut down the socket under an httpx response, so that a read blocked in another
    thread returns at once (``close()`` alone leaves it blocked). Best effort."""
    try:
        if response.is_closed:
            # closed means the connection may be back in the pool, serving another request
            return
        network = response.extensions.get("network_stream")
        sock = network.get_extra_info("socket") if network is not None else None
        if isinstance(sock, socket.socket):
            sock.shutdown(socket.SHUT_RDWR)
    except Exception:
        pass  # only a faster wake-up is lost; close() follows


# ------------------------------------------------------------------------- the core


def _timeout_message(deadline: Deadline) -> str:
    if deadline.kind == "first_event":
        return (
            f"nothing arrived within {deadline.limit:g} s of the start of the stream "
            f"({deadline.setting})"
        )
    if deadline.kind == "idle":
        return f"nothing arrived for {deadline.limit:g} s after the last item (idle_timeout)"
    return f"the stream did not end within {deadline.limit:g} s (total_timeout)"


def _source_failure(exc: BaseException, partial: Partial) -> StreamError:
    """The ``StreamError`` for an exception the source raised while it was read."""
    if isinstance(exc, StreamError):
        if exc.partial is None:
            exc.partial = partial
        return exc
    body = getattr(exc, "body", None)
    if body is not None:
        # what the openai and anthropic SDKs raise for an error event in the stream
        return ProviderError(f"the stream carried an error: {exc}", partial, error=body)
    return StreamAborted(
        f"reading the stream failed: {type(exc).__name__}: {exc}".rstrip(": "), partial
    )


class _Core:
    """The sans-IO lifecycle of one stream, shared by both drivers: it decides, they wait.

    Every method takes the present instant where time matters and never reads a clock.
    """

    __slots__ = ("assembler", "deadlines", "ended", "error", "response")

    def __init__(self, assembler: StreamAssembler, deadlines: StreamDeadlines) -> None:
        self.assembler = assembler
        self.deadlines = deadlines
        self.response: Response | None = None
        self.error: StreamError | None = None
        self.ended = False  # the stream has its outcome (response or error)

    def partial(self) -> Partial:
        """What has arrived so far (usage included)."""
        # the assembler's own snapshot: the same Partial its StreamErrors carry
        return self.assembler.partial()

    def budget(self, now: float) -> float | None:
        """Seconds the driver may wait for the next item (``0.0``: only take one that is
        ready). Raises the recorded ``StreamTimeout`` once the total budget is spent."""
        total = self.deadlines.total_expired(now)
        if total is not None:
            raise self.timed_out(total)
        return self.deadlines.remaining(now)

    def waited(self, now: float) -> None:
        """A wait ended with no item: raise the ``StreamTimeout`` if a deadline passed."""
        deadline = self.deadlines.expired(now)
        if deadline is not None:
            raise self.timed_out(deadline)

    def timed_out(self, deadline: Deadline) -> StreamTimeout:
        """Record and return the timeout for ``deadline``."""
        error = StreamTimeout(_timeout_message(deadline), self.partial(), kind=deadline.kind)
        self._fail(error)
        return error

    def item(self, item: Any, now: float) -> list[StreamEvent]:
        """Feed one item taken at ``now``; a ``StreamError`` is recorded and raised."""
        self.deadlines.arrived(now)
        try:
            if isinstance(item, _BYTES):
                # the assembler copies bytearray and memoryview into bytes itself
                return self.assembler.feed_bytes(item)  # type: ignore[arg-type]
            return self.assembler.feed(item)
        except StreamError as exc:
            self._fail(exc)
            raise

    def end(self) -> tuple[list[StreamEvent], StreamError | None]:
        """The source is exhausted: the last events, and the error to raise after them."""
        try:
            events = self.assembler.feed_eof()
        except StreamError as exc:
            self._fail(exc)
            return [], exc
        try:
            self.response = self.assembler.close()
        except StreamError as exc:
            self._fail(exc)
            return events, exc
        self.ended = True
        return events, None

    def source_failed(self, exc: BaseException) -> StreamError:
        """Record and return the ``StreamError`` for an exception the source raised."""
        error = _source_failure(exc, self.partial())
        self._fail(error)
        return error

    def abandon(self, why: str) -> None:
        """The stream is being closed before its end: record that as its error."""
        if not self.ended:
            self._fail(StreamAborted(f"the stream was closed before it ended: {why}"))

    def _fail(self, error: StreamError) -> None:
        if error.partial is None:
            error.partial = self.partial()
        if not self.ended:
            self.error = error
            self.ended = True


def _make_core(
    format: str,
    first_event_timeout: object,
    idle_timeout: object,
    total_timeout: object,
) -> tuple[StreamAssembler, dict[str, float | None]]:
    limits = {
        "first_event_timeout": _check_timeout("first_event_timeout", first_event_timeout),
        "idle_timeout": _check_timeout("idle_timeout", idle_timeout),
        "total_timeout": _check_timeout("total_timeout", total_timeout),
    }
    if not isinstance(format, str):
        raise DriverSettingsError(f"format must be a string, not {type(format).__name__}")
    return StreamAssembler(format=format), limits


class _HandleBase:
    """What both handles share: the outcome and the state checks."""

    _core: _Core | None
    _assembler: StreamAssembler
    _state: Literal["new", "open", "closed"]
    close_error: BaseException | None

    def _require_open(self) -> _Core:
        if self._state == "new":
            raise DriverUsageError("use the stream inside its `with` block")
        if self._state == "closed" or self._core is None:
            raise DriverUsageError("the stream is closed: it ended or its `with` block was left")
        return self._core

    @property
    def error(self) -> StreamError | None:
        """The ``StreamError`` the stream ended with (``None`` while it runs or if it
        ended properly). A stream left before its end ends with ``StreamAborted``."""
        return None if self._core is None else self._core.error

    @property
    def response(self) -> Response:
        """The finished :class:`Response`; raises the stream's ``StreamError`` if it failed,
        and :class:`DriverUsageError` if it has not ended yet."""
        core = self._core
        if core is None:
            raise DriverUsageError("use the stream inside its `with` block first")
        if core.error is not None:
            raise core.error
        if core.response is None:
            raise DriverUsageError("the stream has not ended yet: iterate it to its end")
        return core.response

    @property
    def partial(self) -> Partial:
        """What has arrived so far: text, calls with their raw arguments, usage."""
        if self._core is None:
            return self._assembler.partial()
        return self._core.partial()

    @property
    def usage(self) -> Usage | None:
        """The usage the provider reported so far, even when the stream failed."""
        return self.partial.usage


# ------------------------------------------------------------------- the sync driver


class _SyncCloser:
    """Closes the source exactly once, from whichever thread may do it.

    A generator that the worker is executing cannot be closed from another thread
    (``ValueError: generator already executing``), so its close is deferred to the worker,
    which performs it as soon as its ``next()`` returns.
    """

    def __init__(self, source: Any, derived: Iterator[Any] | None) -> None:
        self._source = source
        self._derived = derived
        self._lock = threading.Lock()
        self._closed = False
        self._deferred = False
        self._worker_gone = False
        self.error: BaseException | None = None

    def close(self) -> None:
        """Close the source now, unless it was closed already."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        close = getattr(self._source, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:  # never masks the error that made us close
                self.error = exc

    def close_soon(self, running: bool) -> None:
        """Close now, or (``running``: the worker is executing the generator) let the
        worker close it when its ``next()`` returns."""
        if running:
            with self._lock:
                if not self._worker_gone and not self._closed:
                    self._deferred = True
                    return
        self.close()

    def worker_exit(self) -> None:
        """Called by the worker on its way out: close what only it may close."""
        derived = self._derived
        if isinstance(derived, types.GeneratorType):
            try:
                derived.close()  # our own iterator over the source, e.g. an SDK's __iter__
            except Exception as exc:
                self.error = exc
        with self._lock:
            self._worker_gone = True
            deferred = self._deferred
        if deferred:
            self.close()


class _Pump:
    """A daemon thread that pulls the source into a bounded queue."""

    def __init__(self, items: Iterator[Any], closer: _SyncCloser) -> None:
        self._items = items
        self._closer = closer
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[_Entry] = deque()
        self._stopping = False
        self.busy = False  # inside next() on the source
        self._thread = threading.Thread(target=self._run, name="toolwire-stream", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        cond, queue = self._cond, self._queue
        try:
            while True:
                with cond:
                    while len(queue) >= _CAPACITY and not self._stopping:
                        cond.wait()
                    if self._stopping:
                        return
                    self.busy = True
                entry: _Entry
                try:
                    entry = (_ITEM, next(self._items))
                except StopIteration:
                    entry = (_END, None)
                except BaseException as exc:  # handed to the caller's thread, raised there
                    entry = (_FAIL, exc)
                with cond:
                    self.busy = False
                    if self._stopping:
                        return  # nobody will take it: the caller has gone
                    queue.append(entry)
                    cond.notify_all()
                    if entry[0] != _ITEM:
                        return
        finally:
            self._closer.worker_exit()

    def pull(self, timeout: float | None) -> _Entry:
        """The next entry, or ``(_WAITED, None)`` when ``timeout`` seconds passed first."""
        cond, queue = self._cond, self._queue
        with cond:
            if not queue:
                if timeout is None:
                    while not queue:
                        cond.wait()
                elif timeout > 0:
                    cond.wait(timeout)
                if not queue:
                    return (_WAITED, None)
            entry = queue.popleft()
            if len(queue) == _CAPACITY - 1:
                cond.notify_all()  # the worker may be waiting for room
            return entry

    def stop(self) -> bool:
        """Tell the worker to stop; return whether it is inside ``next()`` right now."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
            return self.busy

    def join(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the worker to end; whether it did."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def alive(self) -> bool:
        """Whether the worker thread is still running."""
        return self._thread.is_alive()


class StreamHandle(_HandleBase):
    """A live stream driven by :func:`stream`: a context manager, iterated once for its
    events. After the loop, :attr:`response` is the :class:`Response` (or raises the
    ``StreamError``); :attr:`partial` and :attr:`usage` tell what arrived at any time."""

    def __init__(
        self,
        source: Any,
        *,
        format: str = "auto",
        first_event_timeout: float | None = None,
        idle_timeout: float | None = 10,
        total_timeout: float | None = 60,
    ) -> None:
        self._items = _sync_items(source)
        self._assembler, self._limits = _make_core(
            format, first_event_timeout, idle_timeout, total_timeout
        )
        self._source = source
        self._http = _http_response(source)
        self._core = None
        self._state = "new"
        self._iterated = False
        self._exhausted = False
        self._pending: deque[StreamEvent] = deque()
        self._raise_at_end: StreamError | None = None
        self._iterator: Iterator[Any] | None = None
        self._pump: _Pump | None = None
        self._closer: _SyncCloser | None = None
        self.close_error = None
        """An exception that the source's ``close()`` raised (kept, never raised)."""

    @property
    def worker_alive(self) -> bool:
        """Whether the worker thread still runs (``False`` once closed, unless the source
        ignored ``close()`` while blocked)."""
        return self._pump is not None and self._pump.alive

    def __enter__(self) -> StreamHandle:
        if self._state != "new":
            raise DriverUsageError("a stream can be entered only once")
        start = time.monotonic()
        self._core = _Core(self._assembler, StreamDeadlines(**self._limits, start=start))
        self._state = "open"
        try:
            iterator = self._items()
        except Exception as exc:
            self._closer = _SyncCloser(self._source, None)
            self._shutdown("the source could not be iterated")
            raise DriverSettingsError(f"the source could not be iterated: {exc}") from exc
        self._iterator = iterator
        self._closer = _SyncCloser(self._source, None if iterator is self._source else iterator)
        if self._core.deadlines.limited:
            self._pump = _Pump(iterator, self._closer)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        why = "the caller left its `with` block"
        if exc_type is not None:
            why = f"{why} with {exc_type.__name__}"
        self._shutdown(why)

    def __iter__(self) -> StreamHandle:
        self._require_open()
        if self._iterated:
            raise DriverUsageError("a stream can be iterated only once")
        self._iterated = True
        return self

    def __next__(self) -> StreamEvent:
        if self._exhausted:
            raise StopIteration
        core = self._require_open()
        if not self._iterated:
            raise DriverUsageError("iterate the stream with `for event in stream`")
        if self._pending:
            return self._pending.popleft()
        error = self._raise_at_end
        if error is not None:
            self._raise_at_end = None
            self._exhausted = True
            self._shutdown("the stream failed")
            raise error
        if core.ended:
            self._exhausted = True
            self._shutdown("the stream ended")
            raise StopIteration
        try:
            self._advance(core)
        except BaseException:
            # a StreamError, or the caller's KeyboardInterrupt: close first, then raise
            self._shutdown("the stream failed")
            raise
        if self._pending:
            return self._pending.popleft()
        return self.__next__()  # the end, or the error to raise after the last events

    def _advance(self, core: _Core) -> None:
        """Pull until there are events to hand out or the stream has its outcome."""
        clock = time.monotonic
        pending = self._pending
        pump = self._pump
        iterator = self._iterator
        assert iterator is not None
        while not pending and not core.ended and self._raise_at_end is None:
            if pump is None:
                try:
                    entry: _Entry = (_ITEM, next(iterator))
                except StopIteration:
                    entry = (_END, None)
                except Exception as exc:
                    entry = (_FAIL, exc)
            else:
                entry = pump.pull(core.budget(clock()))
            kind, value = entry
            if kind == _ITEM:
                pending.extend(core.item(value, clock()))
            elif kind == _WAITED:
                core.waited(clock())
            elif kind == _END:
                events, error = core.end()
                pending.extend(events)
                self._raise_at_end = error
            elif isinstance(value, Exception):
                raise core.source_failed(value) from value
            else:
                raise value  # KeyboardInterrupt, SystemExit... from the source: as they are

    def _shutdown(self, why: str) -> None:
        """Record an early end, stop the worker and close the source (once)."""
        if self._state == "closed":
            return
        self._state = "closed"
        core = self._core
        if core is not None:
            core.abandon(why)
        closer = self._closer
        if closer is None:
            return
        pump = self._pump
        try:
            if pump is None:
                closer.worker_exit()  # the caller's thread is the worker here
                closer.close()
            else:
                busy = pump.stop()
                if busy and self._http is not None:
                    _abort_transport(self._http)
                source = self._source
                running = busy and isinstance(source, types.GeneratorType) and source.gi_running
                closer.close_soon(running)
                if not running:
                    # closing (or the shut-down socket) ends the read; a generator blocked
                    # in its own code ends only when its next() returns: no use waiting
                    pump.join(_JOIN_GRACE)
        finally:
            self.close_error = closer.error


def stream(
    source: Any,
    *,
    format: str = "auto",
    first_event_timeout: float | None = None,
    idle_timeout: float | None = 10,
    total_timeout: float | None = 60,
) -> StreamHandle:
    """Drive a live stream: ``with toolwire.stream(source) as s: for event in s: ...``.

    ``source`` is an OpenAI or Anthropic SDK stream, an ``httpx.Response`` opened with
    ``stream=True``, a Google genai stream, or any iterable of payloads (dicts, SDK objects,
    JSON strings, ``"[DONE]"``) or of ``bytes``. Timeouts are seconds or ``None``:
    ``first_event_timeout`` bounds the wait for the first item (``idle_timeout`` does when
    it is ``None``), ``idle_timeout`` the gap between two items, ``total_timeout`` the whole
    stream; each raises :class:`StreamTimeout` with its ``kind``. The clock starts when
    the ``with`` block is entered: the time an SDK spent before it returned the stream
    (connecting, waiting for the headers) is bounded by the SDK's own timeout. The source
    is closed on every way out. Bad settings raise :class:`DriverSettingsError` here.
    """
    return StreamHandle(
        source,
        format=format,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
    )


# ------------------------------------------------------------------ the async driver


class _AsyncPump:
    """A task that pulls the async source into a bounded queue."""

    def __init__(self, items: AsyncIterator[Any]) -> None:
        self._items = items
        self._queue: deque[_Entry] = deque()
        self._waiter: asyncio.Future[None] | None = None  # the caller, waiting for an item
        self._room: asyncio.Future[None] | None = None  # the pump, waiting for room
        self._loop = asyncio.get_running_loop()
        self.task = self._loop.create_task(self._run(), name="toolwire-astream")

    async def _run(self) -> None:
        queue = self._queue
        while True:
            if len(queue) >= _CAPACITY:
                room = self._room = self._loop.create_future()
                try:
                    await room
                finally:
                    self._room = None
            try:
                entry: _Entry = (_ITEM, await self._items.__anext__())
            except StopAsyncIteration:
                entry = (_END, None)
            except asyncio.CancelledError:
                raise  # only the driver cancels this task, when it stops reading
            except BaseException as exc:  # handed to the caller's task, raised there
                entry = (_FAIL, exc)
            queue.append(entry)
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            if entry[0] != _ITEM:
                return

    async def pull(self, timeout: float | None) -> _Entry:
        """The next entry, or ``(_WAITED, None)`` when ``timeout`` seconds passed first."""
        queue = self._queue
        if not queue:
            if timeout is not None and timeout <= 0:
                return (_WAITED, None)
            waiter = self._waiter = self._loop.create_future()
            timer = None if timeout is None else self._loop.call_later(timeout, _wake, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not queue:
                return (_WAITED, None)
        entry = queue.popleft()
        room = self._room
        if room is not None and not room.done():
            room.set_result(None)
        return entry


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def _bounded(awaitable: Any, grace: float) -> BaseException | None:
    """Run ``awaitable`` to its end, shielded from the caller's cancellation and bounded by
    ``grace`` seconds; return the exception it raised (never raise it). A cancellation of
    the caller that arrives meanwhile is re-raised once the step is over."""
    task = asyncio.ensure_future(awaitable)
    loop = asyncio.get_running_loop()
    until = loop.time() + grace
    cancelled = False
    while not task.done():
        left = until - loop.time()
        if left <= 0:
            task.cancel()  # a close that hangs is abandoned, not waited for forever
            break
        try:
            await asyncio.wait({task}, timeout=left)
        except asyncio.CancelledError:
            cancelled = True  # finish closing first
    if cancelled:
        raise asyncio.CancelledError
    if task.done() and not task.cancelled():
        error: BaseException | None = task.exception()
        return error
    return None


class AsyncStreamHandle(_HandleBase):
    """A live stream driven by :func:`astream`: an async context manager, iterated once
    with ``async for``. After the loop, :attr:`response` is the :class:`Response` (or
    raises the ``StreamError``); :attr:`partial` and :attr:`usage` tell what arrived."""

    def __init__(
        self,
        source: Any,
        *,
        format: str = "auto",
        first_event_timeout: float | None = None,
        idle_timeout: float | None = 10,
        total_timeout: float | None = 60,
    ) -> None:
        self._items = _async_items(source)
        self._assembler, self._limits = _make_core(
            format, first_event_timeout, idle_timeout, total_timeout
        )
        self._source = source
        self._core = None
        self._state = "new"
        self._iterated = False
        self._exhausted = False
        self._pending: deque[StreamEvent] = deque()
        self._raise_at_end: StreamError | None = None
        self._iterator: AsyncIterator[Any] | None = None
        self._pump: _AsyncPump | None = None
        self._closed_source = False
        self.close_error = None
        """An exception that the source's ``aclose()`` / ``close()`` raised (kept, never
        raised)."""

    async def __aenter__(self) -> AsyncStreamHandle:
        if self._state != "new":
            raise DriverUsageError("a stream can be entered only once")
        start = time.monotonic()
        self._core = _Core(self._assembler, StreamDeadlines(**self._limits, start=start))
        self._state = "open"
        try:
            self._iterator = self._items()
        except Exception as exc:
            await self._shutdown("the source could not be iterated")
            raise DriverSettingsError(f"the source could not be iterated: {exc}") from exc
        self._pump = _AsyncPump(self._iterator)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        why = "the caller left its `async with` block"
        if exc_type is not None:
            why = f"{why} with {exc_type.__name__}"
        await self._shutdown(why)

    def __aiter__(self) -> AsyncStreamHandle:
        self._require_open()
        if self._iterated:
            raise DriverUsageError("a stream can be iterated only once")
        self._iterated = True
        return self

    async def __anext__(self) -> StreamEvent:
        while True:
            if self._exhausted:
                raise StopAsyncIteration
            core = self._require_open()
            if not self._iterated:
                raise DriverUsageError("iterate the stream with `async for event in stream`")
            if self._pending:
                return self._pending.popleft()
            error = self._raise_at_end
            if error is not None:
                self._raise_at_end = None
                self._exhausted = True
                await self._shutdown("the stream failed")
                raise error
            if core.ended:
                self._exhausted = True
                await self._shutdown("the stream ended")
                raise StopAsyncIteration
            try:
                await self._advance(core)
            except BaseException:
                # a StreamError, or the caller's cancellation: close first, then re-raise
                await self._shutdown("the stream failed")
                raise

    async def _advance(self, core: _Core) -> None:
        """Pull until there are events to hand out or the stream has its outcome."""
        clock = time.monotonic
        pending = self._pending
        pump = self._pump
        assert pump is not None
        while not pending and not core.ended and self._raise_at_end is None:
            kind, value = await pump.pull(core.budget(clock()))
            if kind == _ITEM:
                pending.extend(core.item(value, clock()))
            elif kind == _WAITED:
                core.waited(clock())
            elif kind == _END:
                events, error = core.end()
                pending.extend(events)
                self._raise_at_end = error
            elif isinstance(value, Exception):
                raise core.source_failed(value) from value
            else:
                raise value

    async def _shutdown(self, why: str) -> None:
        """Record an early end, stop the pump and close the source (once, shielded)."""
        if self._state == "closed":
            return
        self._state = "closed"
        core = self._core
        if core is not None:
            core.abandon(why)
        error = await _bounded(self._close_all(), _CLOSE_GRACE)
        if error is not None and self.close_error is None:
            self.close_error = error

    async def _close_all(self) -> None:
        pump = self._pump
        if pump is not None and not pump.task.done():
            # cancelling the read unblocks it; the source's own cleanup runs in that task
            pump.task.cancel()
            await asyncio.wait({pump.task}, timeout=_CLOSE_GRACE / 2)
        iterator = self._iterator
        if iterator is not None and iterator is not self._source:
            closer = getattr(iterator, "aclose", None)
            if isinstance(iterator, types.AsyncGeneratorType) and callable(closer):
                try:
                    await closer()  # our own iterator over the source (aiter_bytes...)
                except Exception as exc:
                    self.close_error = exc
        await self._close_source()

    async def _close_source(self) -> None:
        if self._closed_source:
            return
        self._closed_source = True
        source = self._source
        close = getattr(source, "aclose", None)
        if not callable(close):
            close = getattr(source, "close", None)
        if not callable(close):
            return
        try:
            result = close()
            if inspect.isawaitable(result):
                await result
        except Exception as exc:  # never masks the error that made us close
            self.close_error = exc


def astream(
    source: Any,
    *,
    format: str = "auto",
    first_event_timeout: float | None = None,
    idle_timeout: float | None = 10,
    total_timeout: float | None = 60,
) -> AsyncStreamHandle:
    """Drive a live async stream: ``async with toolwire.astream(source) as s: async for
    event in s: ...``.

    ``source`` is an OpenAI or Anthropic ``AsyncStream``, an ``httpx.Response`` of an
    ``AsyncClient`` opened with ``stream=True``, a Google genai async stream, or any async
    iterable of payloads or of ``bytes``. Timeouts and closing as for :func:`stream`; a
    ``CancelledError`` of the caller is always re-raised, after the source was closed.
    """
    return AsyncStreamHandle(
        source,
        format=format,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
    )
