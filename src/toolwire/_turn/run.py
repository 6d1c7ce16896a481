"""``run_turn`` and ``arun_turn``: one model turn, from the provider's stream to the messages
of the next request, in one call.

No tool runs unless the stream ended properly and nothing in it was invalid; each call runs
at most once per key; ``Turn.messages`` is always consistent; the source is closed on every
way out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from .._core.events import StreamEvent
from .._core.json_safe import read
from .._core.outcome import Outcome
from .._core.recording import Recording
from .._core.response import Response, Usage
from .._errors import SettingsError, UsageError
from .._execution.executor import AsyncExecutor, Executor
from .._providers._messages import turn_messages
from .._streaming.drivers import FIRST_EVENT_TIMEOUT, IDLE_TIMEOUT, AsyncStreamHandle, StreamHandle
from .._tools.toolbox import Toolbox
from ..accounting.pricing import Prices
from .early_abort import AbortWatch, EarlyAbort, continuation
from .identity import needs_identity, turn_identity
from .turn_dicts import turn_from_dict, turn_to_dict

__all__ = ["Turn", "arun_turn", "run_turn"]

logger = logging.getLogger("toolwire.turn")

_STREAM_LIKE = ("__iter__", "__aiter__", "__next__", "__enter__", "__aenter__", "__await__")

OnEvent = Callable[[StreamEvent], object]


@dataclass(frozen=True, slots=True, kw_only=True)
class _TurnSettings:
    """The keyword arguments :func:`run_turn` and :func:`arun_turn` share, as given (their
    signatures state each one with its default)."""

    format: str
    early_abort: bool
    first_event_timeout: float | None
    idle_timeout: float | None
    total_timeout: float | None
    on_event: OnEvent | None
    turn: str | None
    prices: Prices | None
    output: Any
    output_tool: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One model turn, done: what ``run_turn`` / ``arun_turn`` return.

    Fields:

    - ``response``: the finished :class:`Response`; after an early abort, the response as
      far as it was kept (what arrived, the offending call, the other complete calls;
      ``raw_finish_reason`` is ``None``);
    - ``outcomes``: one :class:`Outcome` per call of ``response``, in call order;
    - ``messages``: the assistant turn and the tool results in the provider's own message
      format, ready to append to the conversation (``messages += turn.messages``); every
      tool result answers a call the assistant turn carries;
    - ``usage``: the usage of the stream as the drivers report it (``None`` when none was
      reported);
    - ``done``: ``True`` when the model asked for no tool (no calls, no rejected calls) and
      did not pause (``response.paused``):
      the conversation's answer is ``response.text``;
    - ``aborted``: why the turn stopped reading early (:class:`EarlyAbort`), or ``None``;
    - ``identity``: the turn identity the calls were keyed with (``turn=`` of
      ``executor.run``), or ``None`` when the response's own identity sufficed;
    - ``output``: the validated structured output (``run_turn(..., output=...)``), else
      ``None``.
    """

    response: Response
    outcomes: list[Outcome]
    messages: list[dict[str, Any]]
    usage: Usage | None
    done: bool
    aborted: EarlyAbort | None = None
    identity: str | None = None
    output: Any = None

    def to_dict(self) -> dict[str, Any]:
        """This turn as a JSON-safe, versioned dict (``Turn.from_dict`` reads it back
        equal; structured output and non-JSON tool values are kept as their JSON form).
        Bytes are not encoded (they would come back as text, which a provider taking raw
        bytes, such as Bedrock's image blocks, would misread): a turn holding any raises
        ``UsageError`` naming where they are."""
        return turn_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        """The turn :meth:`to_dict` wrote; ``UsageError`` for anything else."""
        return read(lambda given: turn_from_dict(cls, given), data, "Turn")


def _is_factory(source: Any) -> bool:
    """Whether ``source`` is a callable that makes the request, not a stream itself."""
    return callable(source) and not any(hasattr(source, name) for name in _STREAM_LIKE)


# ------------------------------------------------------------------------- commands


@dataclass(frozen=True, slots=True)
class _Enter:
    """Enter the stream handle (``__enter__`` / ``__aenter__``): makes the request of an
    SDK manager or an un-awaited call. Sends back nothing."""

    handle: Any


@dataclass(frozen=True, slots=True)
class _ReadBody:
    """Read the body of an httpx response with an error status (``read`` / ``aread``),
    ignoring any failure, so that the error raised says why."""

    http: Any


@dataclass(frozen=True, slots=True)
class _Exit:
    """Leave the stream handle (``__exit__`` / ``__aexit__``) after ``exc`` (or none)."""

    handle: Any
    exc: BaseException | None


@dataclass(frozen=True, slots=True)
class _Iterate:
    """Start iterating the handle; send back its (async) iterator."""

    handle: Any


@dataclass(frozen=True, slots=True)
class _Next:
    """Take the next event of ``events``; send back the event or ``_END``."""

    events: Any


@dataclass(frozen=True, slots=True)
class _Execute:
    """Run the calls of ``response`` with the executor under ``identity``; send back the
    outcomes."""

    executor: Any
    response: Response
    identity: str | None


_Command = _Enter | _ReadBody | _Exit | _Iterate | _Next | _Execute
_END = object()
"""The reply to ``_Next`` when the stream has no more events."""


class _TurnRun:
    """Everything both turn functions share: the settings, checked once, and the command
    machine (:meth:`_flow`, in the style of :mod:`toolwire._streaming.flow`) that makes every
    decision. The drivers iterate it for commands, perform each with plain calls or
    awaits inside ``with steps.answer():`` and set ``steps.reply``; the turn is in
    ``steps.result`` at the end."""

    result: Turn

    def __init__(
        self,
        handle_type: type[StreamHandle] | type[AsyncStreamHandle],
        source: Any,
        tools: Toolbox | None,
        executor: Any,
        executor_type: type[Any],
        settings: _TurnSettings,
    ) -> None:
        tools = _checked_tools(tools, executor, executor_type)
        _check_settings(settings)
        early_abort = settings.early_abort
        on_event = settings.on_event
        turn = settings.turn
        self.factory = _is_factory(source)
        self.source = source
        self.tools: Toolbox = tools
        self.executor = executor
        self.on_event = on_event
        self.turn = turn
        # A response with a rejected call runs none of its calls unless the executor says
        # otherwise; then the other calls could run, and the response is read to its end.
        self.early_abort = early_abort and not executor.run_on_rejection
        self.json_events = self.early_abort or on_event is not None
        self.watch: AbortWatch | None = None
        self._handle_type = handle_type
        wire = settings.format
        if isinstance(source, Recording) and wire == "auto":
            wire = source.format  # replayed in the format it was read in
        self._stream_options: dict[str, Any] = {
            "format": wire,
            "first_event_timeout": settings.first_event_timeout,
            "idle_timeout": settings.idle_timeout,
            "total_timeout": settings.total_timeout,
            "prices": settings.prices,
            "output": settings.output,
            "output_tool": settings.output_tool,
            "json_events": self.json_events,
            "tools": tools,
            "early_abort": self.early_abort,
        }
        self.reply: Any = None
        self._error: BaseException | None = None

    # ------------------------------------------------------------ driving the machine

    def __iter__(self) -> Iterator[_Command]:
        """The commands of the turn, each answered (``reply`` or an exception caught by
        :meth:`answer`) before the next; ``result`` is set when they end."""
        flow = self._flow()
        try:
            command = next(flow)
            while True:
                yield command
                error, reply = self._error, self.reply
                self._error = self.reply = None
                command = flow.throw(error) if error is not None else flow.send(reply)
        except StopIteration as done:
            self.result = done.value

    def answer(self) -> _TurnRun:
        """The block that performs a command: what it raises is thrown into the flow."""
        return self

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> bool:
        self._error = exc
        return True

    def _flow(self) -> Generator[_Command, Any, Turn]:
        """Request, read with early abort, execute, build the turn."""
        made = self.make()
        try:
            handle = self._handle_type(made, **self._stream_options)
        except SettingsError as exc:
            raise _turn_words(exc) from None
        yield _Enter(handle)  # makes the request of an SDK manager: may fail
        failed = _http_error(handle.http_response)
        if failed is not None:  # an httpx response: its error body is not a stream
            yield _ReadBody(failed)
            yield _Exit(handle, None)
            failed.raise_for_status()
        stop = False
        try:
            step = _Next((yield _Iterate(handle)))
            while (event := (yield step)) is not _END:
                if self.stop(event):
                    stop = self.stopped(handle)
                    if stop:
                        break
        except GeneratorExit:
            raise  # the driver is gone: nothing can be performed any more
        except BaseException as exc:
            yield _Exit(handle, exc)
            raise
        yield _Exit(handle, None)
        if stop:
            return self.aborted(handle)
        response, identity = self.prepare(handle)
        outcomes = yield _Execute(self.executor, response, identity)
        return self.finish(handle, response, outcomes, identity)

    # ------------------------------------------------------------------ the decisions

    def make(self) -> Any:
        """The source to read (the callable's result, or the source itself)."""
        self.watch = AbortWatch(self.tools) if self.early_abort else None
        return self.source() if self.factory else self.source

    def stop(self, event: StreamEvent) -> bool:
        """Hand ``event`` to ``on_event``; whether the turn stops reading here."""
        if self.on_event is not None:
            self.on_event(event)
        return self.watch is not None and self.watch.see(event) is not None

    def stopped(self, handle: StreamHandle | AsyncStreamHandle) -> bool:
        """At an abort verdict, before leaving: ``False`` when the stream had already
        finished properly (its own end wins); raises a ``StreamError`` it ended with."""
        if handle.error is not None:
            raise handle.error
        try:
            finished = handle.response
        except UsageError:
            # not ended yet: stop here, and say so, so that logs and traces record an
            # early abort rather than a cut
            verdict = self.watch.verdict if self.watch is not None else None
            handle._early_abort(verdict.kind if verdict is not None else "early abort")
            return True
        return finished is None

    def prepare(self, handle: StreamHandle | AsyncStreamHandle) -> tuple[Response, str | None]:
        """The finished response and the turn identity to key its calls with."""
        response = handle.response  # raises the stream's StreamError
        http = handle.http_response
        identity = turn_identity(response, self.turn, getattr(http, "request", None))
        if identity is None and response.response_id is None and isinstance(self.source, Recording):
            identity = self.source.request_identity  # the live source's, kept by record()
        if identity is None and needs_identity(response):
            raise SettingsError(
                "this response has no response id, no timestamp and synthesised call ids, "
                "and its source does not expose the request that produced it, so nothing "
                "tells this turn from another (nothing was run). Pass run_turn(..., turn=...) "
                "with a string naming the request: a turn counter of the conversation or a "
                "digest of the messages sent; the same value when the same request is made "
                "again"
            )
        return response, identity

    def finish(
        self,
        handle: StreamHandle | AsyncStreamHandle,
        response: Response,
        outcomes: list[Outcome],
        identity: str | None,
    ) -> Turn:
        """The turn of a response that ended properly."""
        assert response.format is not None
        return Turn(
            response=response,
            outcomes=outcomes,
            messages=turn_messages(response, outcomes, response.format),
            usage=handle.usage,
            done=not response.tool_calls and not response.rejected and not response.paused,
            identity=identity,
            output=response.output,
        )

    def aborted(self, handle: StreamHandle | AsyncStreamHandle) -> Turn:
        """The turn of a response stopped early: the continuation, nothing run."""
        watch = self.watch
        assert watch is not None and watch.verdict is not None
        partial = handle.partial
        abort = dataclasses.replace(watch.verdict, partial=partial)  # the verdict, now with it
        response, outcomes = continuation(partial, abort, self.tools)
        assert partial.format is not None
        logger.info(
            "stopped reading the response early at call %s (%s): %s",
            abort.call_id,
            abort.name,
            abort.kind,
        )
        return Turn(
            response=response,
            outcomes=outcomes,
            messages=turn_messages(response, outcomes, partial.format),
            usage=handle.usage,
            done=False,
            aborted=abort,
        )


def _turn_words(exc: SettingsError) -> SettingsError:
    """The driver's refusal of a source of the wrong kind, naming the turn functions."""
    text = str(exc)
    renamed = text.replace("toolwire.astream()", "toolwire.arun_turn()").replace(
        "toolwire.stream()", "toolwire.run_turn()"
    )
    return exc if renamed == text else SettingsError(renamed)


def _http_error(http: Any) -> Any:
    """The httpx response under a stream if it has an error status, else ``None``."""
    status = getattr(http, "status_code", None)
    if isinstance(status, int) and status >= 400 and hasattr(http, "raise_for_status"):
        return http
    return None


def _perform(command: _Command) -> Any:
    """Perform a turn command with plain calls."""
    if type(command) is _Next:
        return next(command.events, _END)
    if isinstance(command, _Iterate):
        return iter(command.handle)
    if isinstance(command, _Enter):
        command.handle.__enter__()
    elif isinstance(command, _Exit):
        exc = command.exc
        command.handle.__exit__(None if exc is None else type(exc), exc, _traceback(exc))
    elif isinstance(command, _ReadBody):
        with contextlib.suppress(Exception):
            command.http.read()
    elif isinstance(command, _Execute):
        return command.executor.run(command.response, turn=command.identity)
    return None


async def _aperform(command: _Command) -> Any:
    """Perform a turn command with awaits."""
    if type(command) is _Next:
        try:
            return await command.events.__anext__()
        except StopAsyncIteration:
            return _END
    if isinstance(command, _Iterate):
        return command.handle.__aiter__()
    if isinstance(command, _Enter):
        await command.handle.__aenter__()
    elif isinstance(command, _Exit):
        exc = command.exc
        await command.handle.__aexit__(None if exc is None else type(exc), exc, _traceback(exc))
    elif isinstance(command, _ReadBody):
        with contextlib.suppress(Exception):
            await command.http.aread()
    elif isinstance(command, _Execute):
        return await command.executor.run(command.response, turn=command.identity)
    return None


def _names(executor_type: type[Any]) -> tuple[str, str]:
    """The turn function of ``executor_type`` and its twin of the other driver."""
    if executor_type is AsyncExecutor:
        return "arun_turn", "run_turn"
    return "run_turn", "arun_turn"


def _checked_tools(tools: Toolbox | None, executor: Any, executor_type: type[Any]) -> Toolbox:
    """The toolbox the turn validates with: the executor's own, which ``tools`` (when
    given) must be; :class:`UsageError` for an executor of the wrong kind."""
    mine, other = _names(executor_type)
    if tools is not None and not isinstance(tools, Toolbox):
        raise UsageError(f"tools must be a toolwire.Toolbox, not {type(tools).__name__}")
    if not isinstance(executor, executor_type):
        hint = (
            f"{mine}() takes a toolwire.{executor_type.__name__}; "
            f"for a {type(executor).__name__} use {other}()"
            if isinstance(executor, (Executor, AsyncExecutor))
            else f"executor must be a toolwire.{executor_type.__name__}"
        )
        raise UsageError(f"{hint}, not {type(executor).__name__}")
    own: Toolbox = executor.toolbox
    if tools is None:
        return own  # the executor runs, and so validates with, its own
    if own is not tools:
        raise SettingsError(
            f"the executor runs the tools of another Toolbox: pass only the executor, "
            f"{mine}(source, executor=executor), or build it on these tools, "
            f"{executor_type.__name__}(tools, ...)"
        )
    return tools


def _check_settings(settings: _TurnSettings) -> None:
    """:class:`UsageError` for an ``on_event``, ``turn`` or ``early_abort`` of the wrong kind."""
    on_event, turn, early_abort = settings.on_event, settings.turn, settings.early_abort
    if on_event is not None and not callable(on_event):
        raise UsageError(f"on_event must be a callable taking an event, not {on_event!r}")
    if turn is not None and (not isinstance(turn, str) or not turn):
        raise UsageError(f"turn must be a non-empty str or None, not {turn!r}")
    if not isinstance(early_abort, bool):
        raise UsageError(f"early_abort must be True or False, not {early_abort!r}")


def _traceback(exc: BaseException | None) -> TracebackType | None:
    return None if exc is None else exc.__traceback__


def run_turn(
    source: Any,
    tools: Toolbox | None = None,
    *,
    executor: Executor,
    format: str = "auto",
    early_abort: bool = True,
    first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
    idle_timeout: float | None = IDLE_TIMEOUT,
    total_timeout: float | None = None,
    on_event: OnEvent | None = None,
    turn: str | None = None,
    prices: Prices | None = None,
    output: Any = None,
    output_tool: str | None = None,
) -> Turn:
    """Run one model turn: stream, assemble, validate, execute, and build the messages of
    the next request. Returns a :class:`Turn`.

    ``source`` is what a streaming call returned (anything ``toolwire.stream`` accepts:
    ``client.chat.completions.create(..., stream=True)``, ``client.messages.stream(...)``
    entered or not, ``client.responses.create(..., stream=True)``, google-genai's
    ``generate_content_stream(...)``, boto3's ``converse_stream(...)``, an
    ``httpx.Response``, an iterable), or a zero-argument callable that makes that call
    (``lambda: client.chat.completions.create(...)``), called once. ``executor`` is an
    :class:`Executor`; its toolbox validates and runs the calls. ``tools`` may be left out
    (``run_turn(source, executor=executor)``); given, it must be the executor's own
    toolbox, else :class:`SettingsError`. The other keyword arguments are optional.

    - The stream is read under the drivers' deadlines (``first_event_timeout``,
      ``idle_timeout``, ``total_timeout``; defaults 600 s, 120 s, none) and in ``format``
      (``"auto"``: detected). ``on_event`` receives every event as it arrives.
    - A stream that did not end properly raises its :class:`StreamError`
      (``StreamAborted``, ``StreamTimeout``, ``TokenLimitExceeded``, ``ProviderError``...)
      with ``.partial``; nothing ran. HTTP errors of the request itself (429, 500...) are
      raised as the SDK's own exceptions (``openai.RateLimitError``...; an
      ``httpx.Response`` with an error status as ``httpx.HTTPStatusError``, its body
      read). Nothing is retried here: the SDK clients retry a request that failed before
      its body began (``max_retries=``), and a stream that began is never made again
      behind the caller's back (the model generated, and billed, part of an answer).
    - ``early_abort`` (default ``True``): as soon as a call can never be valid (an unknown
      tool, arguments that stop being JSON, a completed value that violates the schema)
      reading stops, the source is closed and the turn ends with ``turn.aborted`` set and
      messages that tell the model what was wrong; nothing runs. Off when the executor
      has ``run_on_rejection=True`` (the other calls could run).
    - Calls are keyed across turns by the response's identity; for a response without a
      response id, by the request's (a digest of its body, where the source exposes it),
      or by ``turn`` when given (see docs/idempotency.md).

    ``prices`` (a :class:`~toolwire.accounting.Prices` table) prices ``turn.usage`` as ``stream()``
    does; an early abort is logged and traced as ``early_abort``.

    ``output`` (a pydantic model, a type or a JSON Schema) parses the text channel as
    structured output, as ``stream()`` does: ``turn.output`` is the validated value, the
    events given to ``on_event`` include typed :class:`OutputPreview` events (and argument
    events offer ``typed_preview``), and output that can never be valid ends the stream
    early with its ``OutputError``. ``output_tool`` names a forced tool whose arguments are
    the output (the Anthropic and Bedrock pattern); that call is not executed.

    Bad arguments raise :class:`UsageError`.
    """
    settings = _TurnSettings(
        format=format,
        early_abort=early_abort,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
        on_event=on_event,
        turn=turn,
        prices=prices,
        output=output,
        output_tool=output_tool,
    )
    steps = _TurnRun(StreamHandle, source, tools, executor, Executor, settings)
    for command in steps:
        with steps.answer():
            steps.reply = _perform(command)
    return steps.result


async def arun_turn(
    source: Any,
    tools: Toolbox | None = None,
    *,
    executor: AsyncExecutor,
    format: str = "auto",
    early_abort: bool = True,
    first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
    idle_timeout: float | None = IDLE_TIMEOUT,
    total_timeout: float | None = None,
    on_event: OnEvent | None = None,
    turn: str | None = None,
    prices: Prices | None = None,
    output: Any = None,
    output_tool: str | None = None,
) -> Turn:
    """The asyncio twin of :func:`run_turn`: ``turn = await toolwire.arun_turn(...)``.

    ``source`` is what an async streaming call returned, awaited or not
    (``client.chat.completions.create(..., stream=True)`` of an ``AsyncOpenAI``,
    ``client.messages.stream(...)`` of an ``AsyncAnthropic``, an ``httpx.Response`` of an
    ``AsyncClient``, an async iterable: anything ``toolwire.astream`` accepts), or a
    zero-argument callable returning one; ``executor`` is an :class:`AsyncExecutor`. The
    rest is :func:`run_turn`'s; a caller's ``CancelledError`` is re-raised after the
    source was closed.
    """
    settings = _TurnSettings(
        format=format,
        early_abort=early_abort,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
        on_event=on_event,
        turn=turn,
        prices=prices,
        output=output,
        output_tool=output_tool,
    )
    steps = _TurnRun(AsyncStreamHandle, source, tools, executor, AsyncExecutor, settings)
    for command in steps:
        with steps.answer():
            steps.reply = await _aperform(command)
    return steps.result
