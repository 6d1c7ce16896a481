"""The core assembler: one streamed response, fed payload by payload, finished strictly.

Sans-IO. Tool-call fragments are correlated here for every format (by id, then index
hint, then the latest open call); ``close()`` returns a ``Response`` only for a stream
that ended properly with every call ended and complete, else raises a ``StreamError``
with a ``Partial``. Linear in the size of the stream.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any, cast

from .._errors import (
    ContentFiltered,
    JSONDuplicateKeyError,
    JSONSyntaxError,
    OutputRefused,
    ProviderError,
    StreamAborted,
    StreamError,
    StreamFormatError,
    StreamLimitExceeded,
    TokenLimitExceeded,
    ToolwireError,
    UsageError,
)
from . import events as _events
from . import response as _response
from .deltas import (
    Adapter,
    CallDelta,
    ErrorDelta,
    FinishDelta,
    Fragment,
    MetaDelta,
    PartDelta,
    RefusalPart,
    UsageDelta,
)
from .events import (
    JSONEvent,
    ReasoningDelta,
    StreamEvent,
    StringAppended,
    TextDelta,
    ToolCallArguments,
    UsageReported,
    ValueStarted,
)
from .framing import DONE, FrameDecoder
from .json_types import json_equal
from .partial_json import PartialJSONParser, snapshot_outdated
from .pricing import Prices, check_prices
from .providers import Provider, detect, provider
from .response import Partial, Response, Usage
from .usage_estimate import estimate_output

__all__ = ["Assembler"]

DEFAULT_MAX_TOOL_CALLS = 128
DEFAULT_MAX_ARGUMENT_CHARS = 8 * 1024 * 1024
DEFAULT_MAX_TEXT_CHARS = 32 * 1024 * 1024
DEFAULT_MAX_ID_CHARS = 1024
DEFAULT_MAX_USAGE_FIELDS = 256

# Only ends that the adapter recognised as normal finalise a response. An unrecognised finish
# reason ("other") fails closed: a provider that invents a new way to say "cut short" must
# not get its calls executed.
_OK_KINDS = frozenset({"stop", "tool_calls"})
_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


class CallState(enum.Enum):
    """Where one tool call is in its life."""

    PENDING = "pending"  # opened by a nameless fragment; events wait for the name
    OPEN = "open"  # named; fragments stream into its parser
    ENDED = "ended"  # the provider said its arguments are complete
    REJECTED = "rejected"  # can never be valid; later fragments kept as raw text only


class CallEvent(enum.Enum):
    """What can happen to a call."""

    NAME = "name"
    ARGS = "args"
    END = "end"
    REJECT = "reject"


_S, _E = CallState, CallEvent
# (state, event) -> next state. Anything missing is a broken stream, not a guess.
_TRANSITIONS: dict[tuple[CallState, CallEvent], CallState] = {
    (_S.PENDING, _E.NAME): _S.OPEN,
    (_S.PENDING, _E.ARGS): _S.PENDING,
    (_S.PENDING, _E.END): _S.ENDED,
    (_S.PENDING, _E.REJECT): _S.REJECTED,
    (_S.OPEN, _E.ARGS): _S.OPEN,
    (_S.OPEN, _E.END): _S.ENDED,
    (_S.OPEN, _E.REJECT): _S.REJECTED,
    (_S.ENDED, _E.END): _S.ENDED,
    (_S.ENDED, _E.NAME): _S.ENDED,
    (_S.ENDED, _E.REJECT): _S.REJECTED,
    (_S.REJECTED, _E.NAME): _S.REJECTED,
    (_S.REJECTED, _E.ARGS): _S.REJECTED,
    (_S.REJECTED, _E.END): _S.REJECTED,
}


_OPEN = CallState.OPEN
_SLICE = 8 * 1024  # bytes framed at a time by feed_bytes()


def _slices(data: bytes) -> list[bytes]:
    return [data[i : i + _SLICE] for i in range(0, len(data), _SLICE)]


_new = object.__new__


# The slot descriptors' own setters: a frozen dataclass refuses setattr, and calling the
# descriptor directly costs less than object.__setattr__ (no lookup by name).
_Setter = Callable[[object, Any], None]
(
    _set_key,
    _set_delta,
    _set_json_events,
    _set_preview,
    _set_id,
    _set_name,
    _set_changed,
    _set_typed,
) = (
    cast(_Setter, ToolCallArguments.__dict__[name].__set__)
    for name in (
        "key",
        "delta",
        "json_events",
        "_preview",
        "id",
        "name",
        "preview_changed",
        "_typed",
    )
)


def _arguments_event(
    call: _Call, delta: str, json_events: tuple[JSONEvent, ...]
) -> ToolCallArguments:
    """``ToolCallArguments(...)`` for ``call`` without the frozen dataclass ``__init__``.

    One event per fragment is the hot path of a big call; setting the slots through their
    descriptors makes the same frozen instance in a third of the ``__init__``'s time.
    The common fragment of a long string is one ``StringAppended``: a change, decided
    first.
    """
    if not call.events:
        changed = snapshot_outdated(call.parser)
    elif len(json_events) == 1 and type(json_events[0]) is StringAppended:
        changed = True
    else:
        changed = _changes_preview(json_events)
    ev = _new(ToolCallArguments)
    _set_key(ev, call.key)
    _set_delta(ev, delta)
    _set_json_events(ev, json_events)
    _set_preview(ev, call.snapshot)
    _set_id(ev, call.shown_id)
    _set_name(ev, call.name or "")
    _set_changed(ev, changed)
    _set_typed(ev, None)
    return ev


_SHOWN_AT_START = frozenset({"object", "array", "string"})
_SHOWN_BEFORE_END = (str, dict, list)


def _same_value(value: Any, text: str) -> bool:
    """Whether ``text`` is JSON for the same value as ``value`` (JSON equality)."""
    try:
        other = json.loads(text)
    except (ValueError, RecursionError):
        return False
    return json_equal(value, other)


def _changes_preview(json_events: tuple[JSONEvent, ...]) -> bool:
    """Whether a fragment's JSON events change the preview: a container or string that
    opens, string text, or a number or literal that completes (strings and containers are
    shown from their start, so their completion shows nothing new)."""
    for ev in json_events:
        kind = type(ev)
        if kind is StringAppended:
            return True
        if kind is ValueStarted:
            if ev.kind in _SHOWN_AT_START:  # type: ignore[union-attr]
                return True
        elif type(ev.value) not in _SHOWN_BEFORE_END:  # type: ignore[union-attr]
            return True
    return False


class _Call:
    """Everything known about one call while the stream runs."""

    __slots__ = (
        "chars",
        "duplicate",
        "ended_sent",
        "events",
        "explicit",
        "got_end",
        "hint",
        "id",
        "key",
        "metadata",
        "name",
        "offset",
        "parser",
        "parts",
        "pending",
        "reason",
        "ref",
        "shown_id",
        "snapshot",
        "state",
        "synth",
    )

    def __init__(self, key: int, hint: int | None, json_events: bool = True) -> None:
        self.key = key
        self.hint = hint
        self.id: str | None = None
        self.ref: str | None = None
        self.name: str | None = None
        self.synth: str | None = None
        self.shown_id = ""  # the id ToolCallStarted announced, repeated on each fragment
        self.state = CallState.PENDING
        # a repeated key is rejected: the preview shows its first value, json.loads the last
        self.parser = PartialJSONParser(events=json_events, reject_duplicates=True)
        # the preview of every ToolCallArguments: one bound method, not one per event
        self.snapshot: Callable[[], Any] = self.parser.snapshot
        self.events = json_events
        self.parts: list[str] = []
        self.chars = 0
        self.pending: list[StreamEvent] | None = []  # None once the call was announced
        self.metadata: dict[str, Any] = {}
        self.reason: str | None = None
        self.offset: int | None = None
        self.duplicate: tuple[str | int, ...] | None = None  # a repeated key's path
        self.ended_sent = False
        self.explicit = False  # opened by the format's own start: it must get its own end
        self.got_end = False  # the provider ended this call (even if it was rejected later)

    def move(self, event: CallEvent, payload: Any) -> None:
        nxt = _TRANSITIONS.get((self.state, event))
        if nxt is None:
            raise StreamFormatError(
                f"tool call {self.key}: {event.value!r} is not allowed in state "
                f"{self.state.value!r}",
                payload=payload,
            )
        self.state = nxt

    def raw(self) -> str:
        if len(self.parts) > 1:
            self.parts = ["".join(self.parts)]
        return self.parts[0] if self.parts else ""


class Assembler:
    """Assemble one streamed response from provider payloads (sans-IO).

    ``format`` is ``"auto"`` (decided from the first payload) or a wire format name:
    ``"openai-chat"`` (alias ``"openai"``; every OpenAI-compatible server),
    ``"openai-responses"``, ``"anthropic"``, ``"gemini"``, ``"bedrock-converse"``,
    ``"ollama"`` or ``"cohere"``; an unknown name raises :class:`UnknownFormat` naming the
    closest ones. ``choice`` picks the choice of an ``n > 1`` OpenAI chat stream (the
    candidate of a Gemini one).

    Limits, each raising :class:`StreamLimitExceeded` (with ``.limit`` naming it, ``.value``
    its setting and ``.partial``) when a stream exceeds it, so that a hostile stream costs
    bounded memory: ``max_tool_calls`` (default 128) calls; ``max_argument_chars`` (default
    8 MiB) characters of arguments per call; ``max_text_chars`` (default 32 MiB)
    characters of text plus reasoning; ``max_id_chars`` (default 1024) characters in any
    one identifier: a call id or correlation id, a tool name, the response id, the model
    name or the creation timestamp; ``max_usage_fields`` (default 256) distinct top-level
    members of the merged ``Usage.raw``.

    ``json_events=False`` makes each call's parser preview-only
    (``PartialJSONParser(events=False)``): ``ToolCallArguments.json_events`` is ``()``,
    and the preview, the final arguments and every other event are unchanged. It saves
    building a JSON event per value for consumers that only read previews or the final
    response (about a third of the assembly time on argument-heavy streams).

    ``prices`` (a :class:`~toolwire.accounting.Prices` table, default none) sets ``usage.cost`` on
    the response and on every error's partial. The usage there is always set: what the
    provider reported, plus an estimate (``usage.estimated``) of output that arrived
    after its last report, or of all output when it reported none (see
    :class:`~toolwire.Usage`).
    """

    __slots__ = (
        "_adapter",
        "_by_index",
        "_by_ref",
        "_calls",
        "_choice",
        "_closed",
        "_created",
        "_error",
        "_failed",
        "_fast",
        "_fast_object",
        "_fast_start",
        "_finish",
        "_framer",
        "_json_events",
        "_latest",
        "_mark_due",
        "_max_args",
        "_max_calls",
        "_max_id",
        "_max_text",
        "_max_usage",
        "_model",
        "_parts",
        "_prices",
        "_reasoning",
        "_refusal",
        "_response_id",
        "_result",
        "_text",
        "_text_chars",
        "_usage",
        "_usage_mark",
        "format",
    )

    def __init__(
        self,
        format: str = "auto",
        *,
        choice: int = 0,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        max_id_chars: int = DEFAULT_MAX_ID_CHARS,
        max_usage_fields: int = DEFAULT_MAX_USAGE_FIELDS,
        prices: Prices | None = None,
        json_events: bool = True,
    ) -> None:
        if not isinstance(json_events, bool):
            raise UsageError(f"json_events must be True or False, not {json_events!r}")
        self._json_events = json_events
        self.format: str | None = None
        """The wire format's canonical name: as given (an alias resolved), or detected from
        the first payload (``None`` before)."""
        self._adapter: Adapter | None = None
        self._fast: Callable[[dict[str, Any]], Fragment | None] | None = None
        self._fast_object: Callable[[Any], Fragment | None] | None = None
        self._fast_start: bool | None = None
        self._choice = choice
        if format != "auto":
            self._use(provider(format))
        self._max_calls = max_tool_calls
        self._max_args = max_argument_chars
        self._max_text = max_text_chars
        self._max_id = max_id_chars
        self._max_usage = max_usage_fields
        self._framer: FrameDecoder | None = None
        self._calls: list[_Call] = []
        self._by_ref: dict[str, _Call] = {}
        self._by_index: dict[int, _Call] = {}
        self._latest: _Call | None = None  # most recent call not ended
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._text_chars = 0
        # the output in order: [kind, first text chunk or call key, data]
        self._parts: list[list[Any]] = []
        self._usage: Usage | None = None
        # where the content stood after the last payload that reported output tokens:
        # (text chunks, reasoning chunks, argument characters of each call)
        self._usage_mark: tuple[int, int, tuple[int, ...]] | None = None
        self._mark_due = False
        self._prices = check_prices(prices)
        self._finish: FinishDelta | None = None
        self._error: ErrorDelta | None = None
        self._response_id: str | None = None
        self._model: str | None = None
        self._created: str | None = None
        self._failed: StreamError | None = None
        self._closed = False
        self._result: Response | None = None
        self._refusal: list[str] = []

    def _use(self, entry: Provider) -> None:
        adapter = entry.adapter(self._choice)
        self._adapter = adapter
        self.format = entry.name
        self._fast = getattr(adapter, "fragment", None)
        self._fast_object = getattr(adapter, "object_fragment", None)
        self._fast_start = getattr(adapter, "fragment_start", None)

    # ------------------------------------------------------------------ feeding

    def feed(self, payload: Any, *, event: str | None = None) -> list[StreamEvent]:
        """Apply one provider payload; return the events it produced.

        ``payload`` is a decoded dict, an SDK event object (anything with
        ``model_dump()``; the argument fragments of the ``openai`` and ``anthropic`` SDKs'
        event types are read by attribute access instead), a JSON string, or
        ``"[DONE]"``. ``event`` is the SSE event name it arrived under, if any (an
        ``error`` event is an error payload).
        """
        return self._feed(payload, event)

    def feed_bytes(self, data: bytes) -> list[StreamEvent]:
        """Apply raw response bytes (SSE, NDJSON or a JSON array), split anywhere."""
        return self._feed_bytes(data)

    def feed_eof(self) -> list[StreamEvent]:
        """Signal the end of the input; return the events of a last payload that lacked
        only its terminator (a final SSE event without its blank line, a last NDJSON line
        without newline). :meth:`close` calls it if you did not; later feeds raise."""
        return self._feed_eof()

    def close(self) -> Response:
        """Finish the stream: the :class:`Response`, or the right :class:`StreamError`."""
        return self._close()

    # ------------------------------------------------- what a layer above may ask

    @property
    def settled(self) -> bool:
        """Whether the stream has failed, or closed with its response."""
        return self._failed is not None or self._result is not None

    def call_parser(self, key: int) -> PartialJSONParser:
        """The argument parser of the call with ``key``."""
        return self._calls[key].parser

    def fail_with(self, exc: StreamError) -> StreamError:
        """Record ``exc`` as the stream's failure (its partial filled in) and return it;
        a response already given by :meth:`close` is withdrawn."""
        self._result = None
        return self._fail(exc)

    def settle(self, response: Response) -> None:
        """Make ``response`` what :meth:`close` returns from now on."""
        self._result = response

    # ------------------------------------------------------------------ feeding

    def _feed(self, payload: Any, event: str | None) -> list[StreamEvent]:
        """Apply one provider payload; return the events it produced.

        ``payload`` is a decoded dict, an SDK event object (anything with
        ``model_dump()``; the argument fragments of the ``openai`` and ``anthropic`` SDKs'
        event types are read by attribute access instead), a JSON string, or
        ``"[DONE]"``. ``event`` is the SSE event name it arrived under, if any (an
        ``error`` event is an error payload).
        """
        if self._failed is not None:
            raise self._failed
        if self._closed:
            # not recorded as the failure: the finished result stays what close() gave
            raise StreamFormatError("feed() after close()", self.partial(), payload=payload)
        if type(payload) is not dict:
            fast = self._fast_object
            if (
                fast is not None
                and event != "error"
                and self._finish is None
                and type(payload) is not str
            ):
                try:
                    hit = fast(payload)
                except Exception:
                    hit = None  # the general path reports what is wrong with the object
                if hit is not None:
                    return self._fragment(hit, payload)
            payload = self._normalise(payload)
            if payload is DONE:
                return []
        return self._dispatch(payload, event)

    def _dispatch(self, payload: Any, event: str | None) -> list[StreamEvent]:
        """Apply one decoded payload, taking the fragment fast path where it applies.

        The common case of a big call is a payload that is nothing but one argument
        fragment of an open call: the adapter's ``fragment`` recognises it without
        building deltas, and the call it names is found the way the general path would
        route it, so the events are identical.
        """
        fast = self._fast
        if fast is not None and event != "error" and self._finish is None:
            try:
                hit = fast(payload)
            except Exception:
                hit = None  # let the general path report what is wrong with the payload
            if hit is not None:
                return self._fragment(hit, payload)
        out: list[StreamEvent] = []
        self._apply(payload, event, out)
        return out

    def _fragment(self, hit: Fragment, payload: Any) -> list[StreamEvent]:
        """Apply a recognised fragment: straight into an open call's parser, or, for a
        call in any other state, as the one delta the adapter's ``translate`` gives."""
        ref, index, text = hit
        call = self._by_ref.get(ref) if ref is not None else self._by_index.get(index)  # type: ignore[arg-type]
        if call is not None and call.state is _OPEN:
            return self._fast_args(call, text, payload)
        out: list[StreamEvent] = []
        delta = CallDelta(ref=ref, index=index, arguments=text, start=self._fast_start)
        try:
            self._on_call(delta, payload, out)
        except Exception as exc:
            raise self._failure(exc, payload) from (None if isinstance(exc, StreamError) else exc)
        return out

    def _fast_args(self, call: _Call, text: str, payload: Any) -> list[StreamEvent]:
        """``_on_args`` for an OPEN call (whose (OPEN, ARGS) transition is OPEN)."""
        n = call.chars + len(text)
        if n > self._max_args:
            raise self._fail(self._too_long(call))
        try:
            events = call.parser.feed(text)
        except JSONSyntaxError as exc:
            return self._not_json(call, text, exc, payload)
        call.chars = n
        call.parts.append(text)
        return [_arguments_event(call, text, events)]

    def _not_json(
        self, call: _Call, text: str, exc: JSONSyntaxError, payload: Any
    ) -> list[StreamEvent]:
        """Reject an OPEN call whose fragment ``text`` broke its JSON (``exc``): the
        fragment is kept as raw text, and the events are the rejection's."""
        call.chars += len(text)
        call.parts.append(text)
        out: list[StreamEvent] = []
        self._reject_json(call, exc, payload, out)
        return out

    def _feed_bytes(self, data: bytes) -> list[StreamEvent]:
        """Apply raw response bytes (SSE, NDJSON or a JSON array), split anywhere."""
        if self._failed is not None:
            raise self._failed
        if self._closed:
            raise StreamFormatError("feed_bytes() after close()", self.partial(), payload=data)
        if type(data) is not bytes:
            if isinstance(data, (bytearray, memoryview)):
                data = bytes(data)
            else:
                raise self._fail(
                    StreamFormatError(
                        f"feed_bytes() takes bytes, not {type(data).__name__}", payload=data
                    )
                )
        framer = self._framer
        if framer is None:
            framer = self._framer = FrameDecoder()
        out: list[StreamEvent] = []
        # A big read is framed in slices so that only one slice's payloads are alive at a
        # time: a whole body's worth of dicts makes the cyclic GC rescan a growing heap.
        pieces = [data] if len(data) <= _SLICE else _slices(data)
        for piece in pieces:
            try:
                items = framer.feed(piece)
            except StreamError as exc:
                raise self._fail(exc) from None
            self._items(items, out)
        return out

    def _items(self, items: list[tuple[str | None, Any]], out: list[StreamEvent]) -> None:
        """Apply framed payloads: what ``_dispatch`` does for each, with the fragment fast
        path for an open call (``_fragment``, ``_fast_args``) inlined, as this loop runs
        once per chunk of a big call. Events are appended to ``out``."""
        fast = self._fast
        finished = self._finish is not None
        by_ref = self._by_ref
        by_index = self._by_index
        append = out.append
        for event, payload in items:
            if payload is DONE:
                continue
            hit = None
            if fast is not None and not finished and event != "error":
                try:
                    hit = fast(payload)
                except Exception:
                    hit = None  # let the general path report what is wrong with the payload
            if hit is None:
                self._apply(payload, event, out)
                fast = self._fast  # the format may just have been detected
                finished = self._finish is not None
                continue
            ref, index, text = hit
            call = by_ref.get(ref) if ref is not None else by_index.get(index)  # type: ignore[arg-type]
            if call is None or call.state is not _OPEN:
                out += self._fragment(hit, payload)
                continue
            n = call.chars + len(text)
            if n > self._max_args:
                raise self._fail(self._too_long(call))
            try:
                events = call.parser.feed(text)
            except JSONSyntaxError as exc:
                out += self._not_json(call, text, exc, payload)
                continue
            call.chars = n
            call.parts.append(text)
            append(_arguments_event(call, text, events))

    def _feed_eof(self) -> list[StreamEvent]:
        """Signal the end of the input (see :meth:`feed_eof`)."""
        if self._failed is not None:
            raise self._failed
        out: list[StreamEvent] = []
        if self._closed:
            return out
        self._closed = True
        if self._framer is not None:
            try:
                items = self._framer.close()
            except StreamError as exc:
                raise self._fail(exc) from None
            self._items(items, out)
        return out

    def _normalise(self, payload: Any) -> Any:
        if isinstance(payload, dict):
            return dict(payload)  # a dict subclass (OrderedDict...)
        if isinstance(payload, str):
            if payload.strip() == DONE:
                return DONE
            try:
                payload = json.loads(payload)
            except (ValueError, RecursionError):
                raise self._fail(
                    StreamFormatError("payload string is not JSON", payload=payload)
                ) from None
        elif isinstance(payload, (bytes, bytearray)):
            raise self._fail(
                StreamFormatError(
                    "feed() takes payloads; use feed_bytes() for raw bytes", payload=payload
                )
            )
        elif hasattr(payload, "model_dump"):
            payload = self._dump(payload)
        if type(payload) is not dict:
            raise self._fail(
                StreamFormatError(
                    f"a payload must be a JSON object, not {type(payload).__name__}",
                    payload=payload,
                )
            )
        return payload

    def _dump(self, obj: Any) -> Any:
        # The wire shape: only fields the server sent, by their wire names.
        try:
            return obj.model_dump(mode="json", exclude_unset=True, by_alias=True)
        except TypeError:
            pass
        try:
            return obj.model_dump()
        except Exception as exc:
            raise self._fail(
                StreamFormatError(f"model_dump() of the payload failed: {exc}", payload=obj)
            ) from None

    def _apply(self, payload: Any, event: str | None, out: list[StreamEvent]) -> None:
        """The general path: detect the format if need be, translate, apply the deltas."""
        try:
            if type(payload) is not dict:
                raise StreamFormatError(
                    f"a payload must be a JSON object, not {type(payload).__name__}",
                    payload=payload,
                )
            adapter = self._adapter
            if adapter is None:
                self._use(detect(payload, event))
                adapter = self._adapter
                assert adapter is not None
            deltas = (
                adapter.translate(payload) if event is None else adapter.translate(payload, event)
            )
            for d in deltas:
                t = type(d)
                if t is CallDelta:
                    self._on_call(d, payload, out)  # type: ignore[arg-type]
                elif t is TextDelta or t is ReasoningDelta or t is RefusalPart:
                    self._on_text(d, payload, out)  # type: ignore[arg-type]
                elif t is PartDelta:
                    self._on_part(d)  # type: ignore[arg-type]
                elif t is UsageDelta:
                    self._on_usage(d, out)  # type: ignore[arg-type]
                elif t is MetaDelta:
                    self._on_meta(d)  # type: ignore[arg-type]
                elif t is FinishDelta:
                    self._on_finish(d, out)  # type: ignore[arg-type]
                elif t is ErrorDelta:
                    if self._error is None:
                        self._error = d  # type: ignore[assignment]
                else:
                    raise StreamFormatError(
                        f"adapter produced {type(d).__name__}, not a delta", payload=payload
                    )
            if self._mark_due:
                # after the whole payload: a chunk's own content is in its running count
                self._mark_content()
        except Exception as exc:
            raise self._failure(exc, payload) from (None if isinstance(exc, StreamError) else exc)

    def _failure(self, exc: Exception, payload: Any) -> StreamError:
        """``exc`` as the recorded failure: a ``StreamError`` as it is, anything else (a
        bug or a gap in an adapter) as a :class:`StreamFormatError` naming it."""
        if isinstance(exc, StreamError):
            return self._fail(exc)
        if isinstance(exc, ToolwireError):
            return self._fail(StreamFormatError(str(exc), payload=payload))
        return self._fail(
            StreamFormatError(
                f"payload broke the {self.format} adapter: {type(exc).__name__}: {exc}",
                payload=payload,
            )
        )

    def _fail(self, exc: StreamError) -> StreamError:
        if exc.partial is None:
            exc.partial = self.partial()
        self._failed = exc
        return exc

    # --------------------------------------------------------------- text, usage

    def _on_text(
        self, d: TextDelta | ReasoningDelta | RefusalPart, payload: Any, out: list[StreamEvent]
    ) -> None:
        """Text or reasoning, handed on as its own event, or refusal text (kept apart, never
        text nor output; ``close()`` raises it), counted against ``max_text_chars``."""
        text = d.text
        if not text:
            return
        kind = type(d)
        if type(text) is not str:
            what = "text" if kind is not RefusalPart else "refusal"
            raise StreamFormatError(f"{what} is not a string", payload=payload)
        n = self._text_chars + len(text)
        if n > self._max_text:
            raise StreamLimitExceeded(
                f"more than {self._max_text} characters of text",
                limit="max_text_chars",
                value=self._max_text,
            )
        self._text_chars = n
        parts = self._parts
        if kind is TextDelta:
            if not parts or parts[-1][0] != "text":
                parts.append(["text", len(self._text), None])
            self._text.append(text)
            out.append(d)  # type: ignore[arg-type]
        elif kind is ReasoningDelta:
            if not parts or parts[-1][0] != "reasoning":
                parts.append(["reasoning", len(self._reasoning), None])
            self._reasoning.append(text)
            out.append(d)  # type: ignore[arg-type]
        else:
            self._refusal.append(text)

    def _on_part(self, d: PartDelta) -> None:
        """A part boundary, or data for the current part (see :class:`PartDelta`)."""
        kind = d.kind
        data = dict(d.data) if d.data else None
        parts = self._parts
        if kind == "item":
            parts.append(["item", None, data or {}])
        elif d.start or not parts or parts[-1][0] != kind:
            chunks = self._text if kind == "text" else self._reasoning
            parts.append([kind, len(chunks), data])
        elif data:
            last = parts[-1]
            last[2] = {**last[2], **data} if last[2] else data

    def _on_usage(self, d: UsageDelta, out: list[StreamEvent]) -> None:
        # Counts merge field by field. The raw reports merge key by key without a copy in
        # the common case: a report that repeats every key so far (running totals, Gemini's
        # usageMetadata on every chunk) is adopted as it is (adapters hand over a fresh
        # dict they never touch again), a report without raw keeps the merged dict, and
        # only a report with some keys is merged into a new dict, whose size the
        # max_usage_fields bound keeps O(1). Estimation is not done here but once, in
        # partial() / close(): the per-report cost stays O(1) (plus O(calls) to mark
        # where the content stood).
        old = self._usage
        values: dict[str, Any] = {}
        for name in _USAGE_FIELDS:
            value = getattr(d, name)
            if value is None and old is not None:
                value = getattr(old, name)
            values[name] = value
        merged: dict[str, Any] = old.raw if old is not None else {}  # type: ignore[assignment]
        report = d.raw
        if report:
            if type(report) is dict and (not merged or all(k in report for k in merged)):
                merged = report
            else:
                merged = {**merged, **report}
            if len(merged) > self._max_usage:
                raise StreamLimitExceeded(
                    f"more than {self._max_usage} distinct usage fields",
                    limit="max_usage_fields",
                    value=self._max_usage,
                )
        self._usage = Usage(**values, raw=merged, format=self.format)
        if d.output_tokens is not None:
            self._mark_due = True  # the mark is taken once the whole payload is applied
        out.append(UsageReported(usage=self._usage))

    def _mark_content(self) -> None:
        """Remember where the content stands: what arrives later is not covered by the
        output count reported so far (a running count, or a report cut short)."""
        self._mark_due = False
        self._usage_mark = (
            len(self._text),
            len(self._reasoning),
            tuple(call.chars for call in self._calls),
        )

    def _final_usage(self) -> Usage:
        """The usage to report: the merged reports, with the output that arrived after the
        last output report estimated (flagged), priced when a table was given. Reported
        counts are never lowered or replaced; an estimate only adds what no report
        covered. O(content after the last report), bounded for huge texts."""
        usage = self._usage
        mark = self._usage_mark
        if usage is not None and usage.output_tokens is not None and mark is not None:
            texts, thoughts, chars = mark
        else:
            texts, thoughts, chars = 0, 0, ()
        calls = self._calls
        new_calls = [(c.name or "", c.raw()) for c in calls[len(chars) :]]
        more = [c.raw()[n:] for c, n in zip(calls, chars, strict=False) if c.chars > n]
        text = "".join(self._text[texts:]) if texts < len(self._text) else ""
        reasoning = "".join(self._reasoning[thoughts:]) if thoughts < len(self._reasoning) else ""
        covered = usage is not None and usage.output_tokens is not None and mark is not None
        if covered and not (text or reasoning or new_calls or more):
            return self._priced(usage)  # type: ignore[arg-type]
        guess = estimate_output(
            format=self.format,
            model=self._model,
            text=text,
            reasoning=reasoning,
            new_calls=new_calls,
            more_arguments=more,
            calls_in_response=len(calls),
        )
        base = usage if usage is not None else Usage(raw={}, format=self.format)
        fields = ["output_tokens"]
        output = (base.output_tokens or 0) + guess.output
        reasoning_tokens = base.reasoning_tokens
        if guess.reasoning:
            reasoning_tokens = (reasoning_tokens or 0) + guess.reasoning
            fields.append("reasoning_tokens")
        total = base.total_tokens
        if total is not None:
            total += guess.output + guess.reasoning
            fields.append("total_tokens")
        estimated = Usage(
            input_tokens=base.input_tokens,
            output_tokens=output,
            total_tokens=total,
            cache_read_tokens=base.cache_read_tokens,
            cache_write_tokens=base.cache_write_tokens,
            reasoning_tokens=reasoning_tokens,
            raw=base.raw,
            estimated=True,
            estimated_fields=tuple(sorted(fields)),
            estimated_tokens=guess.output + guess.reasoning,
            estimate_method=guess.method,
            format=self.format,
        )
        return self._priced(estimated)

    def _priced(self, usage: Usage) -> Usage:
        prices = self._prices
        return usage if prices is None else prices.priced(usage, self._model)

    def _on_meta(self, d: MetaDelta) -> None:
        """The response's identity: the first value of each field wins."""
        if self._response_id is None and d.response_id is not None:
            self._response_id = self._identifier(d.response_id, "response id")
        if self._model is None and d.model is not None:
            self._model = self._identifier(d.model, "model name")
        if self._created is None and d.created is not None:
            self._created = self._identifier(d.created, "creation timestamp")

    def _identifier(self, value: str, what: str) -> str:
        """``value`` if it is within ``max_id_chars``, else the limit's error."""
        if len(value) > self._max_id:
            raise StreamLimitExceeded(
                f"a {what} of {len(value)} characters, more than {self._max_id}",
                limit="max_id_chars",
                value=self._max_id,
            )
        return value

    def _on_finish(self, d: FinishDelta, out: list[StreamEvent]) -> None:
        if self._finish is not None:
            return  # a repeated terminal event changes nothing
        self._finish = d
        out.append(_events.Finished(finish_reason=self._normalised(d), raw_finish_reason=d.raw))

    def _normalised(self, d: FinishDelta) -> str:
        if d.kind in _OK_KINDS:
            return "tool_calls" if self._calls else "stop"
        return d.kind

    # ------------------------------------------------------------------- calls

    def _on_call(self, d: CallDelta, payload: Any, out: list[StreamEvent]) -> None:
        if self._finish is not None:
            raise StreamFormatError("tool call fragment after the terminal event", payload=payload)
        max_id = self._max_id
        for value, what in ((d.id, "call id"), (d.ref, "call reference"), (d.name, "tool name")):
            if value is not None and len(value) > max_id:
                self._identifier(value, what)
        call = self._route(d, payload)
        if d.id is not None and call.id is None:
            call.id = d.id
            self._by_ref.setdefault(d.id, call)
        if d.metadata:
            call.metadata.update(d.metadata)
        if d.name and call.name is None:
            call.name = d.name
            call.move(CallEvent.NAME, payload)
            self._announce(call, out)
        if d.arguments:
            self._on_args(call, d.arguments, payload, out)
        if d.final_arguments is not None:
            self._on_final(call, d.final_arguments, payload, out)
        if d.end:
            call.got_end = True
            call.move(CallEvent.END, payload)
            if self._latest is call:
                self._latest = None
            if not call.ended_sent and call.state is CallState.ENDED:
                call.ended_sent = True
                self._emit(call, _events.ToolCallEnded(key=call.key), out)

    def _route(self, d: CallDelta, payload: Any) -> _Call:
        ref = d.ref or d.id
        if ref is not None:
            call = self._by_ref.get(ref)
            if call is not None:
                if d.start is True:
                    raise StreamFormatError(f"tool call {ref!r} started twice", payload=payload)
                return call
        if d.start is True:
            return self._open(d, payload)
        index = d.index
        latest = self._latest
        if d.start is False:
            # the format says this continues a call: it must be findable
            if ref is not None:
                raise StreamFormatError(
                    f"fragment for tool call {ref!r} that never started", payload=payload
                )
            call = self._by_index.get(index) if index is not None else latest
            if call is None:
                raise StreamFormatError(
                    "tool call fragment that matches no started call", payload=payload
                )
            return call
        name = d.name
        if index is not None:
            call = self._by_index.get(index)
            if call is not None:
                if name and self._is_new(d, call):
                    return self._open(d, payload)
                return call
            if name or latest is None:
                return self._open(d, payload)
            if d.id is not None and latest.id is not None and d.id != latest.id:
                return self._open(d, payload)  # new index and new id: a call named later
            return latest
        if latest is None:
            return self._open(d, payload)
        if name and self._is_new(d, latest):
            return self._open(d, payload)
        return latest

    @staticmethod
    def _is_new(d: CallDelta, call: _Call) -> bool:
        """A named fragment reaching ``call`` by position: is it really another call?"""
        if d.id is not None and call.id is not None:
            return d.id != call.id
        return call.name is not None and d.name != call.name

    def _open(self, d: CallDelta, payload: Any) -> _Call:
        if len(self._calls) >= self._max_calls:
            raise StreamLimitExceeded(
                f"more than {self._max_calls} tool calls",
                limit="max_tool_calls",
                value=self._max_calls,
            )
        call = _Call(len(self._calls), d.index, self._json_events)
        call.explicit = d.start is True
        self._parts.append(["call", call.key, None])
        if d.ref is not None:
            call.ref = d.ref
            self._by_ref[d.ref] = call
        if d.id is not None:
            call.id = d.id
            self._by_ref.setdefault(d.id, call)
        if d.index is not None:
            self._by_index[d.index] = call
            call.metadata["provider_index"] = d.index
        self._calls.append(call)
        self._latest = call
        return call

    def _announce(self, call: _Call, out: list[StreamEvent]) -> None:
        pending = call.pending
        call.pending = None
        call.shown_id = self._call_id(call)
        out.append(
            _events.ToolCallStarted(
                key=call.key, id=call.shown_id, name=call.name or "", index=call.key
            )
        )
        if pending:
            # fragments that arrived before the name was known carry it now
            name = call.name or ""
            out.extend(
                replace(ev, id=call.shown_id, name=name) if type(ev) is ToolCallArguments else ev
                for ev in pending
            )

    @staticmethod
    def _emit(call: _Call, event: StreamEvent, out: list[StreamEvent]) -> None:
        if call.pending is None:
            out.append(event)
        else:
            call.pending.append(event)

    def _on_args(self, call: _Call, text: str, payload: Any, out: list[StreamEvent]) -> None:
        n = call.chars + len(text)
        if n > self._max_args:
            raise self._too_long(call)
        call.chars = n
        call.parts.append(text)
        call.move(CallEvent.ARGS, payload)
        if call.state is CallState.REJECTED:
            return
        parser = call.parser
        try:
            events = parser.feed(text)
        except JSONSyntaxError as exc:
            self._reject_json(call, exc, payload, out)
            return
        ev = _arguments_event(call, text, events)
        if call.pending is None:
            out.append(ev)
        else:
            call.pending.append(ev)

    def _too_long(self, call: _Call) -> StreamLimitExceeded:
        return StreamLimitExceeded(
            f"tool call {call.key}: more than {self._max_args} characters of arguments",
            limit="max_argument_chars",
            value=self._max_args,
        )

    def _on_final(self, call: _Call, final: str, payload: Any, out: list[StreamEvent]) -> None:
        """The whole arguments stated once more (``final_arguments``): the streamed text
        that is missing is fed; fragments already complete that parse to the same JSON
        value (:func:`json_equal`: member order, spacing and ``1`` vs ``1.0`` aside) stand;
        anything else rejects the call."""
        if call.state is CallState.REJECTED:
            return
        have = call.raw()
        if final == have:
            return
        if final.startswith(have):
            self._on_args(call, final[len(have) :], payload, out)
            return
        if call.parser.complete and _same_value(call.parser.close(), final):
            return
        self._reject(
            call,
            "the arguments also stated whole (the call's start input or its final "
            "restatement) contradict the streamed fragments",
            None,
            payload,
            out,
        )

    def _reject(
        self,
        call: _Call,
        reason: str,
        offset: int | None,
        payload: Any,
        out: list[StreamEvent],
        duplicate: tuple[str | int, ...] | None = None,
    ) -> None:
        call.move(CallEvent.REJECT, payload)
        call.reason = reason
        call.offset = offset
        call.duplicate = duplicate
        self._emit(
            call,
            _events.ToolCallRejected(
                key=call.key,
                reason=reason,
                raw_arguments=call.raw(),
                offset=offset,
                duplicate_key=duplicate,
            ),
            out,
        )

    def _reject_json(
        self, call: _Call, exc: JSONSyntaxError, payload: Any, out: list[StreamEvent]
    ) -> None:
        """Reject ``call`` for what its parser raised: not JSON, or a repeated key."""
        if isinstance(exc, JSONDuplicateKeyError):
            reason = f"arguments repeat a key: {exc.msg}"
            self._reject(call, reason, exc.offset, payload, out, exc.path)
        else:
            self._reject(call, f"arguments are not valid JSON: {exc.msg}", exc.offset, payload, out)

    def _call_id(self, call: _Call) -> str:
        if call.id:
            return call.id
        if call.synth is None:
            # Deterministic: the same bytes give the same ids on every run, and responses
            # that the wire tells apart (id, model, timestamp) get different ones. Only
            # what is known before the first call is used: the name may come later, and
            # an id must not depend on when partial() was asked. The identity fields are
            # peer text and may hold lone surrogates, which "surrogatepass" encodes.
            seed = "\0".join(
                (self._response_id or "", self._model or "", self._created or "", str(call.key))
            )
            digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()
            call.synth = "call_" + digest[:24]
        return call.synth

    # ------------------------------------------------------------------ closing

    def _close(self) -> Response:
        """Finish the stream: the :class:`Response`, or the right :class:`StreamError`."""
        if self._failed is not None:
            raise self._failed
        if self._result is not None:
            return self._result
        if not self._closed:
            self.feed_eof()
        error = self._error
        if error is not None:
            raise self._fail(
                ProviderError(f"the stream carried an error: {error.message}", error=error.error)
            )
        finish = self._finish
        if finish is None:
            raise self._fail(StreamAborted("the stream ended without its terminal event"))
        if finish.kind == "length":
            raise self._fail(
                TokenLimitExceeded(f"the provider stopped at its token limit ({finish.raw})")
            )
        if self._refusal or finish.raw == "refusal":
            # Anthropic's refusal stop has no channel of its own: its words are the text
            refusal = "".join(self._refusal or (self._text if finish.raw == "refusal" else ()))
            raise self._fail(
                OutputRefused(f"the model refused: {refusal or finish.raw}", refusal=refusal)
            )
        if finish.kind == "content_filter":
            raise self._fail(ContentFiltered(f"the provider filtered the output ({finish.raw})"))
        if finish.kind == "error":
            raise self._fail(ProviderError(f"the response failed ({finish.raw})"))
        if finish.kind not in _OK_KINDS:
            raise self._fail(
                ProviderError(
                    f"the response ended with finish reason {finish.raw!r}, which toolwire does "
                    "not know to be a normal end; nothing is finalised"
                )
            )
        for call in self._calls:
            if call.explicit and not call.got_end:
                # The format ends each call on its own (content_block_stop,
                # output_item.done, contentBlockStop, tool-call-end...): a call whose end
                # never came lost at least that event, maybe others (its start input, a
                # fragment), so it is not final even under a normal finish.
                raise self._fail(
                    StreamAborted(
                        f"tool call {call.key} ({call.name or 'no name'}) never got its own "
                        f"end event before the terminal event ({finish.raw!r}): the stream "
                        "lost events, nothing is finalised"
                    )
                )
        calls: list[_response.ToolCall] = []
        rejected: list[_response.RejectedCall] = []
        for call in self._calls:
            if call.state is not CallState.REJECTED and not call.name:
                call.move(CallEvent.REJECT, None)
                call.reason = "the tool name is empty"
            if call.state is CallState.REJECTED:
                rejected.append(self._rejected(call))
                continue
            raw = call.raw()
            if not raw:
                arguments: Any = {}
            elif not call.parser.complete:
                raise self._fail(
                    TokenLimitExceeded(
                        f"tool call {call.key} ({call.name}) has unterminated arguments under "
                        f"finish reason {finish.raw!r}: the output was cut"
                    )
                )
            else:
                try:
                    arguments = call.parser.close()
                except JSONSyntaxError as exc:
                    call.state = CallState.REJECTED
                    call.reason = f"arguments are not valid JSON: {exc.msg}"
                    call.offset = exc.offset
                    rejected.append(self._rejected(call))
                    continue
            calls.append(
                _response.ToolCall(
                    id=self._call_id(call),
                    name=call.name or "",
                    arguments=arguments,
                    raw_arguments=raw,
                    index=call.key,
                    metadata=call.metadata,
                    synthetic_id=not call.id,
                )
            )
        self._result = Response(
            text="".join(self._text),
            reasoning="".join(self._reasoning),
            tool_calls=calls,
            rejected=rejected,
            finish_reason=self._normalised(finish),
            raw_finish_reason=finish.raw,
            usage=self._final_usage(),
            response_id=self._response_id,
            model=self._model,
            format=self.format,
            created=self._created,
            parts=self._content_parts(),
        )
        return self._result

    def _content_parts(self) -> list[_response.ContentPart]:
        """The ordered parts, text and reasoning runs cut out of their chunk lists."""
        parts = self._parts
        texts: dict[int, str] = {}
        for kind, chunks in (("text", self._text), ("reasoning", self._reasoning)):
            starts = [i for i, p in enumerate(parts) if p[0] == kind]
            for j, i in enumerate(starts):
                end = parts[starts[j + 1]][1] if j + 1 < len(starts) else len(chunks)
                texts[i] = "".join(chunks[parts[i][1] : end])
        out: list[_response.ContentPart] = []
        for i, (kind, at, data) in enumerate(parts):
            if kind == "call":
                out.append(_response.ContentPart(kind="call", call=at))
            elif kind == "item":
                out.append(_response.ContentPart(kind="item", data=data))
            else:
                out.append(_response.ContentPart(kind=kind, text=texts[i], data=data or {}))
        return out

    def _rejected(self, call: _Call) -> _response.RejectedCall:
        return _response.RejectedCall(
            id=self._call_id(call),
            name=call.name or "",
            raw_arguments=call.raw(),
            reason=call.reason or "rejected",
            index=call.key,
            offset=call.offset,
            metadata=call.metadata,
            synthetic_id=not call.id,
            duplicate_key=call.duplicate,
        )

    def partial(self) -> Partial:
        """What has arrived so far, at any time: text, reasoning, every call with its raw
        arguments, the ordered parts, usage, finish reason, ids. Evidence for accounting
        and display; its calls are never instructions to execute (only :meth:`close`
        finalises)."""
        return Partial(
            text="".join(self._text),
            reasoning="".join(self._reasoning),
            calls=[
                _response.PartialCall(
                    id=self._call_id(c),
                    name=c.name or "",
                    raw_arguments=c.raw(),
                    index=c.key,
                    ended=c.state is CallState.ENDED,
                    synthetic_id=not c.id,
                    metadata=c.metadata,
                )
                for c in self._calls
            ],
            usage=self._final_usage(),
            raw_finish_reason=self._finish.raw if self._finish is not None else None,
            response_id=self._response_id,
            model=self._model,
            format=self.format,
            created=self._created,
            parts=self._content_parts(),
        )
