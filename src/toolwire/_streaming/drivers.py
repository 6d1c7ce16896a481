"""``stream()`` and ``astream()``: drive a live provider stream through a ``StreamAssembler``
under deadlines, and close it on every way out.

Both perform the commands of :mod:`toolwire._streaming.flow`. The source is closed exactly
once; a failed stream raises its ``StreamError`` after the last events. O(1) per item
besides the assembler's work.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Literal

from .._core.events import StreamEvent
from .._core.response import Partial, Response, Usage
from .._errors import SettingsError, StreamError, UsageError
from .._output.assembler import StreamAssembler
from .._telemetry import StreamObserver
from ..accounting.pricing import Prices
from .async_reading import AsyncReader, close_async, run_shielded
from .flow import Close, Command, Emit, Enter, Open, Read, StreamFlow
from .sources import Mode, recognise
from .sync_reading import InlineReader, make_reader

__all__ = [
    "AsyncStreamHandle",
    "StreamHandle",
    "astream",
    "stream",
]

FIRST_EVENT_TIMEOUT = 600.0
"""Default seconds to wait for a stream's first content (the SDKs' own read timeout)."""
IDLE_TIMEOUT = 120.0
"""Default seconds each wait for the next item may last once content flows."""
_CLOSE_GRACE = 2.0  # seconds the async driver gives the source to close

_ASKED = object()  # the reply to Emit: the instant the caller asks for more, taken then


class _Left(BaseException):
    """Thrown into the flow when the caller leaves its ``with`` block before the end."""


def _check_timeout(name: str, value: object) -> float | None:
    """``value`` as seconds: ``None`` (no limit) or a finite number > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(
            f"{name} must be a number of seconds or None, not {type(value).__name__}"
        )
    seconds = float(value)
    # NaN fails both comparisons, so it is refused too
    if not (0 < seconds < float("inf")):
        raise SettingsError(f"{name} must be a finite number of seconds > 0, not {value!r}")
    return seconds


class _Handle:
    """What both handles share: the settings, the flow, its replies, the events and the
    outcome. Subclasses say which driver they are (``_mode``) and how to perform a
    command."""

    _mode: Mode

    def __init__(
        self,
        source: Any,
        *,
        format: str = "auto",
        first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
        idle_timeout: float | None = IDLE_TIMEOUT,
        total_timeout: float | None = None,
        prices: Prices | None = None,
        json_events: bool = True,
        output: Any = None,
        output_tool: str | None = None,
        tools: Any = None,
        early_abort: bool = False,
    ) -> None:
        limits = {
            "first_event_timeout": _check_timeout("first_event_timeout", first_event_timeout),
            "idle_timeout": _check_timeout("idle_timeout", idle_timeout),
            "total_timeout": _check_timeout("total_timeout", total_timeout),
        }
        if not isinstance(format, str):
            raise SettingsError(f"format must be a string, not {type(format).__name__}")
        assembler = StreamAssembler(
            format=format,
            prices=prices,
            json_events=json_events,
            output=output,
            output_tool=output_tool,
            tools=tools,
            early_abort=early_abort,
        )
        self._flow = StreamFlow(recognise(source, self._mode), assembler, limits, self._mode)
        self._limited = any(value is not None for value in limits.values())
        self._steps = self._flow.run()
        self._state: Literal["new", "open", "closed"] = "new"
        self._iterated = False
        self._exhausted = False  # the flow ended while the caller iterated (not left early)
        self._pending: deque[StreamEvent] = deque()
        self._held: Command | None = None  # the first Read, performed on the first next()
        self._reply: Any = None
        self._throw: BaseException | None = None
        self.close_error: BaseException | None = None
        """An exception that closing the source raised (kept, never raised)."""
        self._observer: StreamObserver | None = None  # from the opening to the end
        self._early: str | None = None

    # -------------------------------------------------------------- running the flow

    def _resume(self) -> Command | None:
        """The flow's next command, or ``None`` once it returned; raises what it raises."""
        held = self._held
        if held is not None:
            self._held = None
            return held
        if self._state == "closed":
            return None
        throw, reply = self._throw, self._reply
        self._throw = self._reply = None
        try:
            if throw is not None:
                return self._steps.throw(throw)
            return self._steps.send(time.monotonic() if reply is _ASKED else reply)
        except _Left:
            self._state = "closed"
            self._observed()
            return None
        except StopIteration:
            self._state, self._exhausted = "closed", True
            self._observed()
            return None
        except BaseException:
            self._state, self._exhausted = "closed", True
            self._observed()
            raise

    def _opened(self) -> float:
        """The stream opens: its clock starts, and so does its telemetry."""
        self._observer = StreamObserver()
        if self._early is not None:
            self._observer.early_abort(self._early)
        return time.monotonic()

    def _observed(self) -> None:
        """The flow ended (once): log, trace and measure how."""
        observer = self._observer
        if observer is not None:
            observer.end(self._flow.response, self._flow.error)

    def _early_abort(self, reason: str) -> None:
        """Say that the caller stops this stream early on purpose (``run_turn``'s early
        abort): leaving the block then ends it as ``StreamAborted`` with ``reason``, and
        logs and traces it as ``early_abort`` rather than ``aborted``."""
        self._early = reason
        if self._observer is not None:
            self._observer.early_abort(reason)

    def _next_command(self, *, opening: bool = False) -> Command | None:
        """The next command to perform; ``None`` when an event is ready, the flow ended,
        or (``opening``) the flow waits for the caller's first read."""
        while not self._pending:
            command = self._resume()
            if command is None:
                return None
            if type(command) is Emit:
                self._pending.extend(command.events)
                self._reply = _ASKED
            elif opening and type(command) is Read:
                self._held = command
                return None
            else:
                return command
        return None

    def _begin(self) -> None:
        if self._state != "new":
            raise UsageError("a stream can be entered only once")
        self._state = "open"

    def _leave(self, exc_type: object) -> bool:
        """The caller left its block: have the flow record an early end and close (the
        commands that follow do). ``False`` when the flow had ended already."""
        if self._state == "closed":
            return False
        why = "the caller left its `with` block"
        if self._early is not None:
            why = f"stopped early: {self._early}"
        elif isinstance(exc_type, type):
            why = f"{why} with {exc_type.__name__}"
        self._pending.clear()  # events the caller will never take
        self._held = self._reply = None
        self._throw = _Left(why)
        return True

    def _start_iteration(self) -> None:
        if self._iterated:
            raise UsageError("a stream can be iterated only once")
        self._check_iteration(starting=True)
        self._iterated = True

    def _check_iteration(self, *, starting: bool = False) -> None:
        """Refuse iteration outside the block and ``next()`` before the iteration started;
        ``next()`` after the end just ends again."""
        if self._exhausted and not starting:
            return
        if self._state == "new":
            raise UsageError("use the stream inside its `with` block")
        if self._state == "closed":
            raise UsageError("the stream is closed: it ended or its `with` block was left")
        if not starting and not self._iterated:
            raise UsageError("iterate the stream with a for loop over it")

    def _event(self, end: type[Exception]) -> StreamEvent:
        """The next event, or ``end`` (``StopIteration``...) raised once there is none."""
        if self._pending:
            return self._pending.popleft()
        raise end

    # ---------------------------------------------------------------------- outcome

    @property
    def error(self) -> StreamError | None:
        """The ``StreamError`` the stream ended with (``None`` while it runs or if it
        ended properly). A stream left before its end ends with ``StreamAborted``."""
        return self._flow.error

    @property
    def response(self) -> Response:
        """The finished :class:`Response`; raises the stream's ``StreamError`` if it failed,
        and :class:`UsageError` if it has not ended yet."""
        flow = self._flow
        if self._state == "new":
            raise UsageError("use the stream inside its `with` block first")
        if flow.error is not None:
            raise flow.error
        if flow.response is None:
            raise UsageError("the stream has not ended yet: iterate it to its end")
        return flow.response

    @property
    def partial(self) -> Partial:
        """What has arrived so far: text, calls with their raw arguments, usage."""
        return self._flow.partial()

    @property
    def usage(self) -> Usage | None:
        """The usage the provider reported so far, even when the stream failed."""
        return self.partial.usage

    @property
    def http_response(self) -> Any:
        """The ``httpx.Response`` the stream is read from, once the source is open, where
        the source exposes it (the ``openai`` and ``anthropic`` SDK streams and managers,
        an ``httpx.Response`` or ``client.stream(...)``); ``None`` for other sources.
        ``run_turn`` reads its status and digests its request's body into the turn's
        identity."""
        return self._flow.http

    @property
    def output_preview(self) -> Any:
        """The structured output's typed preview so far (``output=``; ``MISSING`` before
        anything can be shown)."""
        return self._flow.assembler.output_preview


# ------------------------------------------------------------------- the sync driver


class StreamHandle(_Handle):
    """Drive a live stream: ``with toolwire.stream(source) as s: for event in s: ...``.

    ``toolwire.stream`` is this class. After the loop, :attr:`response` is the
    :class:`Response` (or raises the ``StreamError``); :attr:`partial` and :attr:`usage`
    tell what arrived at any time. The handle is entered once and iterated once.

    ``source`` is what a provider call returned: ``client.chat.completions.create(...,
    stream=True)``, ``client.responses.create(..., stream=True)``,
    ``client.messages.create(..., stream=True)``, an SDK's stream manager
    (``client.chat.completions.stream(...)``, ``client.responses.stream(...)``,
    ``client.messages.stream(...)``, entered or not: the driver enters and exits it),
    google-genai's ``generate_content_stream(...)``, boto3's ``converse_stream(...)``
    response, an ``httpx.Response`` opened with ``stream=True`` (or ``client.stream(...)``),
    or any iterable of payloads (dicts, SDK objects, JSON strings, ``"[DONE]"``) or of
    ``bytes``. ``format`` names the wire format (``"auto"``: decided from the first
    payload); ``json_events=False`` makes the assembler preview-only (see
    :class:`StreamAssembler`): argument events then carry no JSON events.

    Structured output: ``output`` (a pydantic model, a type or a JSON Schema dict),
    ``output_tool``, ``tools`` and ``early_abort`` are the :class:`StreamAssembler`'s
    (passed on with ``prices`` and ``json_events``, with the same defaults): the
    events then include :class:`OutputPreview` (typed previews), ``response.output`` is
    the validated value, and with ``early_abort=True`` an output that can never be valid
    ends the stream at once (the source is closed) with its ``OutputError``.

    Timeouts are seconds, or ``None`` for no limit; each raises :class:`StreamTimeout`
    with its ``kind``:

    * ``first_event_timeout`` (default 600): from the start until the first content
      (text, reasoning, a tool call, the finish). Bookkeeping events and keep-alives do
      not count, so a reasoning model may think for minutes. Kind ``"first_event"``.
    * ``idle_timeout`` (default 120): once content flows, how long each wait for the next
      item (any bytes or payload, keep-alives included) may last. Time your loop body takes
      is not counted. Kind ``"idle"``.
    * ``total_timeout`` (default ``None``): the whole stream, your loop body included.
      Kind ``"total"``.

    The clock starts when the ``with`` block is entered, once the response is in hand:
    the time an SDK spends before that (connecting and waiting for the headers, also when
    the driver enters a manager) is bounded by the SDK's own timeout. The source is closed
    on every way out. Bad settings and sources that cannot be streamed raise
    :class:`SettingsError` here, naming the call that works.

    Usage: :attr:`usage` (and every error's ``partial.usage``) holds what the provider
    reported plus an estimate, flagged, of the output it did not cover; closing the stream
    does not stop the provider's meter. ``prices`` (a
    :class:`~toolwire.accounting.Prices` table) sets ``usage.cost``. Each stream ends with
    one record on the ``toolwire.stream`` logger and, when the application configured
    OpenTelemetry, a ``chat {model}`` span and the GenAI metrics (see
    docs/observability.md).
    """

    _mode = "sync"
    _reader: InlineReader | None = None

    @property
    def worker_alive(self) -> bool:
        """Whether a worker thread of this stream still runs (only sources that may block
        and hide their socket get one; ``False`` once closed, unless the source ignored
        ``close()`` while blocked)."""
        return self._reader is not None and self._reader.worker_alive

    def __enter__(self) -> StreamHandle:
        self._begin()
        self._run(opening=True)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._leave(exc_info[0]):
            self._run()

    def __iter__(self) -> StreamHandle:
        self._start_iteration()
        return self

    def __next__(self) -> StreamEvent:
        pending = self._pending
        if pending:  # only ever filled while the caller iterates inside the block
            return pending.popleft()
        self._check_iteration()
        self._run()
        return self._event(StopIteration)

    def _run(self, *, opening: bool = False) -> None:
        """Perform the flow's commands until an event is ready or the flow ended."""
        while (command := self._next_command(opening=opening)) is not None:
            try:
                self._reply = self._do(command)
            except BaseException as exc:  # thrown into the flow, which closes and re-raises
                self._throw = exc

    def _do(self, command: Command) -> Any:
        if isinstance(command, Read):
            assert self._reader is not None
            return self._reader.read(command.until)
        if isinstance(command, Close):
            self._close(command)
        elif isinstance(command, Open):
            self._reader = make_reader(command.source, limited=self._limited)
            return self._opened()
        elif isinstance(command, Enter):
            return command.obj.__enter__()
        return None

    def _close(self, command: Close) -> None:
        target = None if command.source is None else command.source.close
        reader = self._reader or InlineReader(iter(()), None)
        error = reader.close(target)
        for manager in command.exits:
            try:
                manager.__exit__(None, None, None)
            except Exception as exc:  # never masks the error that made us close
                error = error or exc
        self.close_error = error


stream = StreamHandle


# ------------------------------------------------------------------ the async driver


class AsyncStreamHandle(_Handle):
    """Drive a live async stream: ``async with toolwire.astream(source) as s: async for
    event in s: ...``.

    ``toolwire.astream`` is this class. ``source`` is what an async provider call returned:
    the SDKs' ``AsyncStream`` (awaited or not: ``astream(client.chat.completions.create(...,
    stream=True))`` awaits it), their async stream managers (``client.messages.stream(...)``,
    ``client.chat.completions.stream(...)``, ``client.responses.stream(...)``, entered or
    not), google-genai's ``await client.aio.models.generate_content_stream(...)``, an
    ``httpx.Response`` of an ``AsyncClient`` opened with ``stream=True`` (or
    ``client.stream(...)``), or any async iterable of payloads or of ``bytes``. The
    timeouts, their defaults (600 s to the first content, 120 s idle, no total), the
    outcome and the closing are as for :class:`StreamHandle` (``toolwire.stream``); a
    ``CancelledError`` of the caller is always re-raised, after the source was closed.
    """

    _mode = "async"
    _reader: AsyncReader | None = None

    async def __aenter__(self) -> AsyncStreamHandle:
        self._begin()
        await self._run(opening=True)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._leave(exc_info[0]):
            await self._run()

    def __aiter__(self) -> AsyncStreamHandle:
        self._start_iteration()
        return self

    async def __anext__(self) -> StreamEvent:
        pending = self._pending
        if pending:  # only ever filled while the caller iterates inside the block
            return pending.popleft()
        self._check_iteration()
        await self._run()
        return self._event(StopAsyncIteration)

    async def _run(self, *, opening: bool = False) -> None:
        """Perform the flow's commands until an event is ready or the flow ended."""
        while (command := self._next_command(opening=opening)) is not None:
            try:
                self._reply = await self._do(command)
            except BaseException as exc:  # thrown into the flow, which closes and re-raises
                self._throw = exc

    async def _do(self, command: Command) -> Any:
        if isinstance(command, Read):
            assert self._reader is not None
            return await self._reader.read(command.until)
        if isinstance(command, Close):
            await run_shielded(lambda: self._close(command), _CLOSE_GRACE)
        elif isinstance(command, Open):
            self._reader = AsyncReader(command.source)
            return self._opened()
        elif isinstance(command, Enter):
            obj = command.obj
            return await (obj if command.awaitable else obj.__aenter__())
        return None

    async def _close(self, command: Close) -> None:
        target = None if command.source is None else command.source.close
        reader = self._reader
        error = await (reader.close(target) if reader is not None else close_async(target))
        for manager in command.exits:
            try:
                await manager.__aexit__(None, None, None)
            except Exception as exc:  # never masks the error that made us close
                error = error or exc
        self.close_error = error


astream = AsyncStreamHandle
