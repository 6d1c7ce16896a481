"""The sans-IO life of one live stream: a generator of commands, run by two small drivers.

Every decision (enter, open, read until an instant, emit, close) is made here once; the
source is closed on every way out. O(1) commands per item.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

from .._core.events import StreamEvent, UsageReported
from .._core.response import Partial, Response
from .._errors import ProviderError, SettingsError, StreamAborted, StreamError, StreamTimeout
from .._output.assembler import StreamAssembler
from .deadlines import Deadline, StreamDeadlines
from .sources import Enterable, Mode, Readable, recognise

__all__ = [
    "END",
    "LATE",
    "Close",
    "Command",
    "Emit",
    "Enter",
    "Item",
    "Open",
    "Read",
    "StreamFlow",
]

_BYTES = (bytes, bytearray, memoryview)


# ------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class Enter:
    """Enter ``obj`` (``__enter__``, ``__aenter__``, or ``await`` when ``awaitable``); send
    back what it gives."""

    obj: Any
    awaitable: bool


@dataclass(frozen=True, slots=True)
class Open:
    """Start reading ``source``; send back the clock's reading (the stream's start)."""

    source: Readable


@dataclass(slots=True)  # not frozen: built once per item, and frozen costs a setattr a field
class Read:
    """Take the next item, waiting no later than the instant ``until`` (``None``: no
    limit); send back an :class:`Item`, ``END`` or ``LATE``."""

    until: float | None


@dataclass(slots=True)  # not frozen: built once per item, and frozen costs a setattr a field
class Emit:
    """Hand ``events`` to the caller; send back the instant the caller asked for more."""

    events: list[StreamEvent]


@dataclass(frozen=True, slots=True)
class Close:
    """Stop reading; close ``source.close`` (if any), then exit the entered managers in
    ``exits`` (innermost first). Send back ``None``; a failing close is the driver's to
    keep, never raised."""

    exits: tuple[Any, ...]
    source: Readable | None


Command = Enter | Open | Read | Emit | Close


@dataclass(slots=True)  # not frozen: built once per item, and frozen costs a setattr a field
class Item:
    """What a ``Read`` took: the item and the instant it was taken."""

    value: Any
    at: float


class _Signal:
    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return self._name


END = _Signal("END")
"""The reply to a ``Read`` when the source is exhausted."""
LATE = _Signal("LATE")
"""The reply to a ``Read`` when its ``until`` passed before an item came."""


# ------------------------------------------------------------------------- the flow


@dataclass(slots=True, eq=False)
class StreamFlow:
    """The lifecycle of one stream: the assembler, the deadlines and the outcome.

    :meth:`run` is the generator the drivers run; :attr:`response`, :attr:`error` and
    :meth:`partial` tell the outcome at any time.
    """

    _source: Enterable | Readable
    assembler: StreamAssembler
    _limits: dict[str, float | None]
    _mode: Mode
    response: Response | None = field(default=None, init=False)
    error: StreamError | None = field(default=None, init=False)
    http: Any = field(default=None, init=False)  # the httpx response under the source, once opened
    tap: Any = field(default=None, init=False)  # called with every item read (toolwire.record)

    @property
    def ended(self) -> bool:
        """Whether the stream has its outcome (a response or an error)."""
        return self.response is not None or self.error is not None

    def partial(self) -> Partial:
        """What has arrived so far (usage included)."""
        return self.assembler.partial()

    def run(self) -> Generator[Command, Any, Response]:
        """Yield the commands of the whole stream; return its ``Response``."""
        exits: list[Any] = []
        source: Readable | None = None
        try:
            found = self._source
            while isinstance(found, Enterable):
                inner = yield Enter(found.obj, found.awaitable)
                if not found.awaitable:
                    exits.insert(0, found.obj)
                found = recognise(inner, self._mode, entered=not found.awaitable)
            source = found
            self.http = source.http
            try:
                start = yield Open(source)
            except Exception as exc:
                raise SettingsError(f"the source could not be iterated: {exc}") from exc
            yield from self._read(StreamDeadlines(**self._limits, start=start), start)
        except GeneratorExit:
            raise  # the driver is gone: nothing can be performed any more
        except StreamError as exc:
            self._fail(exc)
            yield Close(tuple(exits), source)
            raise
        except BaseException as exc:
            self._fail(StreamAborted(f"the stream was closed before it ended: {_why(exc)}"))
            yield Close(tuple(exits), source)
            raise
        yield Close(tuple(exits), source)
        assert self.response is not None
        return self.response

    def _read(self, deadlines: StreamDeadlines, now: float) -> Generator[Command, Any, None]:
        """Read items until the end of the source, emitting their events."""
        assembler = self.assembler
        while True:
            total = deadlines.total_expired(now)
            if total is not None:
                raise self._timeout(total)
            try:
                reply = yield Read(deadlines.until(now))
            except Exception as exc:
                raise self._source_failure(exc) from exc
            if type(reply) is Item:
                value = reply.value
                if self.tap is not None:
                    self.tap(value)
                if isinstance(value, _BYTES):
                    # the assembler copies bytearray and memoryview into bytes itself
                    events = assembler.feed_bytes(value)  # type: ignore[arg-type]
                else:
                    events = assembler.feed(value)
                if not events:
                    now = reply.at
                    continue
                if not deadlines.content and any(type(e) is not UsageReported for e in events):
                    deadlines.content_arrived()
                now = yield Emit(events)
            elif reply is LATE:
                deadline = deadlines.wait(now)
                assert deadline is not None
                raise self._timeout(deadline)
            else:
                yield from self._end()
                return

    def _end(self) -> Generator[Command, Any, None]:
        """The source is exhausted: record the outcome, emit the last events, raise the
        error after them."""
        events = self.assembler.feed_eof()
        try:
            self.response = self.assembler.close()
        except StreamError as exc:
            self._fail(exc)
        if events:
            yield Emit(events)
        if self.error is not None:
            raise self.error

    def _timeout(self, deadline: Deadline) -> StreamTimeout:
        return StreamTimeout(_timeout_message(deadline), self.partial(), kind=deadline.kind)

    def _source_failure(self, exc: Exception) -> StreamError:
        """The ``StreamError`` for an exception the source raised while it was read."""
        partial = self.partial()
        if isinstance(exc, StreamError):
            return exc
        error = _provider_error(exc)
        if error is not None:
            return ProviderError(f"the stream carried an error: {exc}", partial, error=error)
        text = f"reading the stream failed: {type(exc).__name__}: {exc}".rstrip(": ")
        return StreamAborted(text, partial)

    def _fail(self, error: StreamError) -> None:
        if error.partial is None:
            error.partial = self.partial()
        if not self.ended:
            self.error = error


def _provider_error(exc: Exception) -> Any:
    """The provider's error body, when ``exc`` is an SDK's report of an error event in the
    stream: openai's and anthropic's ``APIError.body``, botocore's ``EventStreamError``
    (``response["Error"]``), google-genai's ``APIError.details``; else ``None``."""
    body = getattr(exc, "body", None)
    if body is not None:
        return body
    response = getattr(exc, "response", None)
    if isinstance(response, dict) and "Error" in response:
        return response["Error"]
    details = getattr(exc, "details", None)
    if isinstance(details, dict):
        return details.get("error", details)
    return None


def _timeout_message(deadline: Deadline) -> str:
    if deadline.kind == "first_event":
        return (
            f"no content arrived within {deadline.limit:g} s of the start of the stream "
            "(first_event_timeout)"
        )
    if deadline.kind == "idle":
        return f"nothing arrived for {deadline.limit:g} s while waiting (idle_timeout)"
    return f"the stream did not end within {deadline.limit:g} s (total_timeout)"


def _why(exc: BaseException) -> str:
    text = str(exc)
    return text if text else type(exc).__name__
