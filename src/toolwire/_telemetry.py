"""Logs, spans and metrics: one record per streamed response and per tool execution.

A log record per stream (``toolwire.stream``); with OpenTelemetry configured by the
application, spans and metrics with the GenAI semantic conventions (see
``docs/observability.md``). Nothing per event; a failure inside telemetry is logged and
swallowed, never raised.
"""

from __future__ import annotations

import importlib.metadata
import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Generic, TypeVar

from ._errors import ContentFiltered, StreamAborted, StreamError, StreamTimeout, TokenLimitExceeded

if TYPE_CHECKING:
    from ._core.outcome import Outcome
    from ._core.response import Partial, Response, Usage

__all__: list[str] = []

_T = TypeVar("_T")

logger = logging.getLogger("toolwire.stream")
# An application that set up no logging sees nothing on stderr (Python's last-resort
# handler is for libraries that forgot this); one that configured logging sees it all.
logging.getLogger("toolwire").addHandler(logging.NullHandler())

OUTCOMES: Final = (
    "completed",
    "aborted",
    "early_abort",
    "timed_out",
    "token_limit",
    "filtered",
    "error",
)
"""How a stream can end, as logged (``outcome``) and traced (``toolwire.outcome``,
``error.type``)."""

TOOL_ERRORS: Final = frozenset({"failed", "rejected", "timed_out", "unknown", "conflict"})
"""Tool statuses that are errors (``error.type`` on the ``execute_tool`` span)."""

# gen_ai.provider.name by wire format: the conventions' well-known values where one applies
# (an OpenAI-compatible server is reported as openai, the format it speaks).
PROVIDERS: Final = {
    "openai-chat": "openai",
    "openai-responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gcp.gen_ai",
    "bedrock-converse": "aws.bedrock",
    "ollama": "ollama",
    "cohere": "cohere",
}

# The conventions' advisory bucket boundaries.
_TOKEN_BUCKETS = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
_DURATION_BUCKETS = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
_NAME = "toolwire"
_MAX_PROVIDERS = 8  # remembered tracer / meter providers
_MESSAGE_LIMIT = 500  # characters of an error message put on a span's status


def _version() -> str:
    """The installed distribution's version (what the tracer and meter are named with)."""
    try:
        return importlib.metadata.version("toolwire")
    except importlib.metadata.PackageNotFoundError:  # a source tree run without installing
        return "0+unknown"


# --------------------------------------------------------------- finding the providers


class _Instruments:
    """The two histograms of one meter provider."""

    __slots__ = ("duration", "tokens")

    def __init__(self, meter: Any) -> None:
        try:
            self.tokens = meter.create_histogram(
                "gen_ai.client.token.usage",
                unit="{token}",
                description="Number of input and output tokens used.",
                explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
            )
            self.duration = meter.create_histogram(
                "gen_ai.client.operation.duration",
                unit="s",
                description="GenAI operation duration.",
                explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
            )
        except TypeError:  # an API older than the bucket advisory
            self.tokens = meter.create_histogram("gen_ai.client.token.usage", unit="{token}")
            self.duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")


_lock = threading.Lock()
_override: tuple[Any, Any] | None = None  # (tracer provider, meter provider), tests only


@contextmanager
def providers(tracer_provider: Any = None, meter_provider: Any = None) -> Iterator[None]:
    """Use these providers instead of the global ones while the block runs (for tests that
    must not set process-wide providers); ``None`` turns that signal off."""
    global _override
    previous = _override
    _override = (tracer_provider, meter_provider)
    try:
        yield
    finally:
        _override = previous


class _Signal(Generic[_T]):
    """One OpenTelemetry signal (traces, metrics): where its provider is found, and what
    toolwire builds from a provider (a tracer, the histograms), built once per provider."""

    __slots__ = ("_api", "_build", "_built", "_getter", "_index", "_stand_in")

    def __init__(
        self,
        index: int,
        api: str,
        getter: str,
        stand_in: Callable[[Any, Any], bool],
        build: Callable[[Any], _T],
    ) -> None:
        self._index = index  # the provider's place in _override
        self._api = api  # the API module, used only when the application imported it
        self._getter = getter  # the API's function that returns the global provider
        self._stand_in = stand_in  # (API module, provider): the API's "not configured"
        self._build = build
        self._built: dict[int, tuple[Any, _T]] = {}  # id(provider) -> (provider, built)

    def get(self) -> _T | None:
        """What was built for the configured provider, or ``None`` (not configured)."""
        if _override is not None:
            provider = _override[self._index]
        else:
            api = sys.modules.get(self._api)
            if api is None:
                return None
            provider = getattr(api, self._getter)()
            if self._stand_in(api, provider):
                return None
        if provider is None:
            return None
        built = self._built
        found = built.get(id(provider))
        if found is None or found[0] is not provider:
            made = self._build(provider)
            with _lock:
                if len(built) >= _MAX_PROVIDERS:
                    built.clear()  # providers replaced again and again (tests): keep few
                built[id(provider)] = found = (provider, made)
        return found[1]


_tracer = _Signal(
    index=0,
    api="opentelemetry.trace",
    getter="get_tracer_provider",
    stand_in=lambda trace, provider: isinstance(
        provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)
    ),
    build=lambda provider: provider.get_tracer(_NAME, _version()),
).get
"""The tracer of the configured tracer provider, or ``None`` (not configured)."""

_instruments = _Signal(
    index=1,
    api="opentelemetry.metrics",
    getter="get_meter_provider",
    # the API's stand-ins until an SDK provider is set
    stand_in=lambda metrics, provider: (
        type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider")
    ),
    build=lambda provider: _Instruments(provider.get_meter(_NAME, _version())),
).get
"""The histograms of the configured meter provider, or ``None`` (not configured)."""


def _span_kind(name: str) -> Any:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # an overriding provider without the API imported: not possible
        return None
    return getattr(trace.SpanKind, name)


def _set_error(span: Any, description: str) -> None:
    trace = sys.modules.get("opentelemetry.trace")
    if trace is not None:
        span.set_status(trace.Status(trace.StatusCode.ERROR, description[:_MESSAGE_LIMIT]))


def _usage_attributes(usage: Usage | None, attributes: dict[str, Any]) -> None:
    if usage is None:
        return
    for key, value in (
        ("gen_ai.usage.input_tokens", usage.all_input_tokens),
        ("gen_ai.usage.output_tokens", usage.all_output_tokens),
        ("gen_ai.usage.cache_read.input_tokens", usage.cache_read_tokens),
        ("gen_ai.usage.cache_creation.input_tokens", usage.cache_write_tokens),
        ("gen_ai.usage.reasoning.output_tokens", usage.reasoning_tokens),
    ):
        if value is not None:
            attributes[key] = value
    attributes["toolwire.usage.estimated"] = usage.estimated
    if usage.estimated:
        attributes["toolwire.usage.estimated_tokens"] = usage.estimated_tokens
        if usage.estimate_method is not None:
            attributes["toolwire.usage.estimate_method"] = usage.estimate_method
    if usage.cost is not None:
        attributes["toolwire.cost"] = usage.cost.total
        attributes["toolwire.cost.currency"] = usage.cost.currency


# --------------------------------------------------------------------------- streams


def stream_outcome(error: StreamError | None, early: bool) -> str:
    """The outcome name of a stream that ended with ``error`` (``None``: completed)."""
    if error is None:
        return "completed"
    if isinstance(error, StreamTimeout):
        return "timed_out"
    if isinstance(error, TokenLimitExceeded):
        return "token_limit"
    if isinstance(error, ContentFiltered):
        return "filtered"
    if isinstance(error, StreamAborted):
        return "early_abort" if early else "aborted"
    return "error"


def _finish_reason(response: Response | None, error: StreamError | None) -> str | None:
    if response is not None:
        return response.finish_reason
    if isinstance(error, TokenLimitExceeded):
        return "length"
    if isinstance(error, ContentFiltered):
        return "content_filter"
    partial = error.partial if error is not None else None
    return partial.raw_finish_reason if partial is not None else None


class StreamObserver:
    """Watches one stream from its opening to its end (never per event)."""

    __slots__ = ("_early", "_ended", "_span", "_start")

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._early: str | None = None
        self._ended = False
        self._span: Any = None
        try:
            tracer = _tracer()
            if tracer is not None:
                self._span = tracer.start_span(
                    "chat",
                    kind=_span_kind("CLIENT"),
                    attributes={"gen_ai.operation.name": "chat"},
                )
        except Exception:  # observing never breaks a stream
            logger.exception("toolwire could not start a span for a stream")

    def early_abort(self, reason: str) -> None:
        """Mark the stream as stopped early on purpose (``run_turn``'s early abort)."""
        self._early = reason

    def end(self, response: Response | None, error: StreamError | None) -> None:
        """Record the end: the log record, the span's attributes and end, the metrics."""
        if self._ended:
            return
        self._ended = True
        try:
            self._record(response, error)
        except Exception:
            logger.exception("toolwire could not record a stream's telemetry")

    def _record(self, response: Response | None, error: StreamError | None) -> None:
        end = _StreamEnd.of(response, error, self._early, time.monotonic() - self._start)
        _log_stream(end)
        span = self._span
        if span is not None:
            if end.model is not None:
                span.update_name(f"chat {end.model}")
            span.set_attributes(end.span_attributes())
            if error is not None:
                _set_error(span, str(error))
            span.end()
        instruments = _instruments()
        if instruments is not None:
            end.record_metrics(instruments)


@dataclass(frozen=True, slots=True)
class _StreamEnd:
    """How one stream ended, as its log record, span and metrics tell it."""

    outcome: str
    error: StreamError | None
    early: str | None
    provider: str
    finish: str | None
    duration: float
    # from the response, else the partial one of the error (``None`` without either)
    usage: Usage | None
    model: str | None
    format: str | None
    response_id: str | None

    @classmethod
    def of(
        cls,
        response: Response | None,
        error: StreamError | None,
        early: str | None,
        duration: float,
    ) -> _StreamEnd:
        """The end of a stream that gave ``response`` or failed with ``error``."""
        found: Response | Partial | None = response
        if found is None and error is not None:
            found = error.partial
        if found is None:
            usage, model, fmt, response_id = None, None, None, None
        else:
            usage, model, fmt = found.usage, found.model, found.format
            response_id = found.response_id
        return cls(
            outcome=stream_outcome(error, early is not None),
            error=error,
            early=early,
            provider=PROVIDERS.get(fmt or "", fmt or "unknown"),
            finish=_finish_reason(response, error),
            duration=duration,
            usage=usage,
            model=model,
            format=fmt,
            response_id=response_id,
        )

    def span_attributes(self) -> dict[str, Any]:
        """The attributes the stream's span ends with."""
        attributes: dict[str, Any] = {
            "gen_ai.provider.name": self.provider,
            "toolwire.outcome": self.outcome,
        }
        optional = (
            ("toolwire.wire_format", self.format),
            ("gen_ai.request.model", self.model),
            ("gen_ai.response.model", self.model),
            ("gen_ai.response.id", self.response_id),
            ("gen_ai.response.finish_reasons", None if self.finish is None else (self.finish,)),
        )
        attributes.update((key, value) for key, value in optional if value is not None)
        _usage_attributes(self.usage, attributes)
        if self.error is not None:
            attributes["error.type"] = self.outcome
            attributes["toolwire.error"] = type(self.error).__name__
            if self.early is not None:
                attributes["toolwire.early_abort"] = self.early
        return attributes

    def record_metrics(self, instruments: Any) -> None:
        """Record the stream's duration and its input and output tokens."""
        common: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": self.provider,
        }
        if self.model is not None:
            common["gen_ai.request.model"] = self.model
            common["gen_ai.response.model"] = self.model
        timing = dict(common)
        if self.error is not None:
            timing["error.type"] = self.outcome
        instruments.duration.record(self.duration, timing)
        usage = self.usage
        if usage is None:
            return
        if usage.all_input_tokens is not None:
            instruments.tokens.record(
                usage.all_input_tokens, {**common, "gen_ai.token.type": "input"}
            )
        if usage.all_output_tokens is not None:
            points = {**common, "gen_ai.token.type": "output"}
            if usage.estimated:
                points["toolwire.usage.estimated"] = True
            instruments.tokens.record(usage.all_output_tokens, points)


def _usage_log_fields(usage: Usage | None) -> dict[str, Any]:
    """The usage fields of a stream's log record (``None``s and no estimate without one)."""
    if usage is None:
        return {
            "input_tokens": None,
            "output_tokens": None,
            "usage_estimated": False,
            "estimated_tokens": 0,
            "cost": None,
            "currency": None,
        }
    cost = usage.cost
    return {
        "input_tokens": usage.all_input_tokens,
        "output_tokens": usage.all_output_tokens,
        "usage_estimated": usage.estimated,
        "estimated_tokens": usage.estimated_tokens,
        "cost": cost.total if cost is not None else None,
        "currency": cost.currency if cost else None,
    }


def _log_stream(end: _StreamEnd) -> None:
    outcome, error = end.outcome, end.error
    level = logging.DEBUG if outcome == "completed" else logging.INFO
    if not logger.isEnabledFor(level):
        return
    fields: dict[str, Any] = {
        "outcome": outcome,
        "model": end.model,
        "response_id": end.response_id,
        "wire_format": end.format,
        "provider": end.provider,
        "finish_reason": end.finish,
        **_usage_log_fields(end.usage),
        "duration": end.duration,
        "error_type": type(error).__name__ if error is not None else None,
    }
    if error is None:
        logger.log(
            level,
            "stream completed: model %s, response %s, %s tokens in, %s out",
            fields["model"], fields["response_id"], fields["input_tokens"],
            fields["output_tokens"], extra=fields,
        )  # fmt: skip
        return
    logger.log(
        level, "stream %s: model %s, response %s: %s",
        outcome, fields["model"], fields["response_id"], error, extra=fields,
    )  # fmt: skip


# ------------------------------------------------------------------------ tool calls


class ToolObserver:
    """Watches one tool call's execution: a span from its start to its outcome."""

    __slots__ = ("_span", "_start")

    def __init__(self, name: str, call_id: str, idempotency_key: str | None) -> None:
        self._start = time.monotonic()
        self._span: Any = None
        try:
            tracer = _tracer()
            if tracer is not None:
                attributes: dict[str, Any] = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.type": "function",
                }
                if idempotency_key is not None:
                    attributes["toolwire.idempotency_key"] = idempotency_key
                self._span = tracer.start_span(
                    f"execute_tool {name}", kind=_span_kind("INTERNAL"), attributes=attributes
                )
        except Exception:
            logger.exception("toolwire could not start a span for a tool call")

    def current(self) -> Any:
        """A context manager making this call's span the current one (for the tool's own
        spans, where the tool runs in the caller's context); a no-op without a span."""
        span = self._span
        trace = sys.modules.get("opentelemetry.trace")
        if span is None or trace is None:
            return nullcontext()
        return trace.use_span(span, end_on_exit=False)

    def end(self, outcome: Outcome | None, raised: BaseException | None = None) -> None:
        """Record the call's outcome (``None``: interrupted before it had one)."""
        try:
            self._record(outcome, raised)
        except Exception:
            logger.exception("toolwire could not record a tool call's telemetry")

    def _record(self, outcome: Outcome | None, raised: BaseException | None) -> None:
        status = outcome.status if outcome is not None else "unknown"
        span = self._span
        if span is not None:
            self._span = None
            attributes: dict[str, Any] = {"toolwire.tool.status": status}
            if outcome is not None:
                attributes["toolwire.tool.replayed"] = outcome.replayed
                if outcome.idempotency_key is not None:
                    attributes["toolwire.idempotency_key"] = outcome.idempotency_key
            if status in TOOL_ERRORS:
                attributes["error.type"] = status
            span.set_attributes(attributes)
            if raised is not None and isinstance(raised, Exception):
                span.record_exception(raised)
            if status in TOOL_ERRORS:
                error = outcome.error if outcome is not None and outcome.error else status
                _set_error(span, error)
            span.end()
        instruments = _instruments()
        if instruments is not None:
            points: dict[str, Any] = {"gen_ai.operation.name": "execute_tool"}
            if status in TOOL_ERRORS:
                points["error.type"] = status
            instruments.duration.record(time.monotonic() - self._start, points)


def tool_observer(name: str, call_id: str, idempotency_key: str | None) -> ToolObserver | None:
    """An observer for one call, or ``None`` when no tracer or meter is configured (the
    executor then skips every telemetry step for the call)."""
    if _tracer() is None and _instruments() is None:
        return None
    return ToolObserver(name, call_id, idempotency_key)


def decided_tool(outcome: Outcome) -> None:
    """Record a call decided without running (rejected, skipped): a span of no length."""
    observer = tool_observer(outcome.name, outcome.call_id, outcome.idempotency_key)
    if observer is not None:
        observer.end(outcome)
