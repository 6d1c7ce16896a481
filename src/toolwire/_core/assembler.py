"""The core assembler: one streamed response, fed payload by payload, finished strictly.

Sans-IO. Tool-call fragments are correlated here for every format (by id, then index
hint, then the latest open call); ``close()`` returns a ``Response`` only for a stream
that ended properly with every call ended and complete, else raises a ``StreamError``
with a ``Partial``. Linear in the size of the stream.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .._errors import (
    ContentFiltered,
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
from .calls import _Call, _CallTable, _Content, _Identity
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
    payload_fields,
)
from .events import (
    ReasoningDelta,
    StreamEvent,
    TextDelta,
    UsageReported,
)
from .framing import DONE, FrameDecoder
from .partial_json import PartialJSONParser
from .providers import Formats, Provider
from .response import Partial, Response, Usage
from .usage_estimate import CounterFinder, estimate_output, heuristic_counter

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


_SLICE = 8 * 1024  # bytes framed at a time by feed_bytes()


def _slices(data: bytes) -> list[bytes]:
    return [data[i : i + _SLICE] for i in range(0, len(data), _SLICE)]


class _Accounting:
    """Usage: the reports merged field by field, the mark of where the content stood at the
    last output report, and the estimate of what arrived after it.

    Reports merge without a copy of the raw report in the common case (see ``report``);
    estimation is done once, in ``final``, never per event, so a report costs O(number of
    usage fields, at most ``max_usage_fields``), plus O(calls) for the mark.
    """

    __slots__ = ("counter_for", "mark", "mark_due", "max_fields", "usage")

    def __init__(self, max_fields: int, counter_for: CounterFinder) -> None:
        self.max_fields = max_fields
        self.counter_for = counter_for
        self.usage: Usage | None = None
        # where the content stood after the last payload that reported output tokens:
        # (text chunks, reasoning chunks, argument characters of each call)
        self.mark: tuple[int, int, tuple[int, ...]] | None = None
        self.mark_due = False

    def report(self, d: UsageDelta, format: str | None) -> Usage:
        """Merge a report. The raw reports merge key by key: a report that repeats every
        key so far (running totals, Gemini's usageMetadata on every chunk) is adopted as it
        is (adapters hand over a fresh dict they never touch again), a report without raw
        keeps the merged dict, and only a report with some keys is merged into a new dict,
        whose size the max_usage_fields bound keeps O(1)."""
        old = self.usage
        values: dict[str, Any] = {}
        for name in _USAGE_FIELDS:
            value = getattr(d, name)
            if value is None and old is not None:
                value = getattr(old, name)
            values[name] = value
        merged: dict[str, Any] = old.raw if old is not None else {}  # type: ignore[assignment]
        raw = d.raw
        if raw:
            if type(raw) is dict and (not merged or all(k in raw for k in merged)):
                merged = raw
            else:
                merged = {**merged, **raw}
            if len(merged) > self.max_fields:
                raise StreamLimitExceeded(
                    f"more than {self.max_fields} distinct usage fields",
                    limit="max_usage_fields",
                    value=self.max_fields,
                )
        self.usage = Usage(**values, raw=merged, format=format)
        if d.output_tokens is not None:
            self.mark_due = True  # the mark is taken once the whole payload is applied
        return self.usage

    def take_mark(self, content: _Content, calls: list[_Call]) -> None:
        """Remember where the content stands: what arrives later is not covered by the
        output count reported so far (a running count, or a report cut short)."""
        self.mark_due = False
        self.mark = (len(content.text), len(content.reasoning), tuple(c.chars for c in calls))

    def final(
        self, format: str | None, model: str | None, content: _Content, calls: list[_Call]
    ) -> Usage:
        """The usage to report: the merged reports, with the output that arrived after the
        last output report estimated (flagged, counted by ``counter_for``). Reported
        counts are never lowered or replaced; an estimate only adds what no report
        covered. O(content after the last report), bounded for huge texts."""
        usage = self.usage
        mark = self.mark
        covered = usage is not None and usage.output_tokens is not None and mark is not None
        texts, thoughts, chars = mark if covered and mark is not None else (0, 0, ())
        new_calls = [(c.name or "", c.raw()) for c in calls[len(chars) :]]
        more = [c.raw()[n:] for c, n in zip(calls, chars, strict=False) if c.chars > n]
        text = "".join(content.text[texts:])
        reasoning = "".join(content.reasoning[thoughts:])
        if covered and usage is not None and not (text or reasoning or new_calls or more):
            return usage
        guess = estimate_output(
            format=format,
            model=model,
            text=text,
            reasoning=reasoning,
            new_calls=new_calls,
            more_arguments=more,
            calls_in_response=len(calls),
            counter_for=self.counter_for,
        )
        base = usage if usage is not None else Usage(raw={}, format=format)
        fields = ["output_tokens"]
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
            output_tokens=(base.output_tokens or 0) + guess.output,
            total_tokens=total,
            cache_read_tokens=base.cache_read_tokens,
            cache_write_tokens=base.cache_write_tokens,
            reasoning_tokens=reasoning_tokens,
            raw=base.raw,
            estimated=True,
            estimated_fields=tuple(sorted(fields)),
            estimated_tokens=guess.output + guess.reasoning,
            estimate_method=guess.method,
            format=format,
        )
        return estimated


class Assembler:
    """Assemble one streamed response from provider payloads (sans-IO).

    ``format`` is ``"auto"`` (decided from the first payload) or a wire format name:
    ``"openai-chat"`` (alias ``"openai"``; every OpenAI-compatible server),
    ``"openai-responses"``, ``"anthropic"``, ``"gemini"``, ``"bedrock-converse"``,
    ``"ollama"`` or ``"cohere"``; an unknown name raises :class:`UnknownFormat` naming the
    closest ones. ``"openai-chat-done-marker"`` is ``"openai-chat"`` for servers that end
    a stream with ``[DONE]`` and no finish reason: the marker is then the finish
    (``Response.done_marker_finish``); it is never detected, so it must be named. ``choice``
    picks the choice of an ``n > 1`` OpenAI chat stream (the candidate of a Gemini one).
    ``formats`` is the table the name is looked up in and the first payload detected by
    (the core has none of its own: ``StreamAssembler`` passes the built-in one).

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

    The usage on the response and on every error's partial is always set: what the
    provider reported, plus an estimate (``usage.estimated``) of output that arrived
    after its last report, or of all output when it reported none (see
    :class:`~toolwire.Usage`), counted by ``counter_for(model)`` (default: the heuristic
    of ``usage_estimate``; ``StreamAssembler`` passes ``toolwire.accounting``'s, which
    uses tiktoken where it can). Costs are set above the core
    (``StreamAssembler(prices=...)``).
    """

    __slots__ = (
        "_adapter",
        "_calls",
        "_choice",
        "_closed",
        "_content",
        "_done_finish",
        "_done_marked",
        "_error",
        "_failed",
        "_fast",
        "_fast_start",
        "_finish",
        "_formats",
        "_framer",
        "_identity",
        "_result",
        "_usage",
        "format",
    )

    def __init__(
        self,
        format: str = "auto",
        *,
        formats: Formats,
        choice: int = 0,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        max_id_chars: int = DEFAULT_MAX_ID_CHARS,
        max_usage_fields: int = DEFAULT_MAX_USAGE_FIELDS,
        json_events: bool = True,
        counter_for: CounterFinder = heuristic_counter,
    ) -> None:
        if not isinstance(json_events, bool):
            raise UsageError(f"json_events must be True or False, not {json_events!r}")
        self.format: str | None = None
        """The wire format's canonical name: as given (an alias resolved), or detected from
        the first payload (``None`` before)."""
        self._adapter: Adapter | None = None
        # the adapter's fragment fast path (see _take_fragment), once the format is known
        self._fast: Callable[[dict[str, Any]], Fragment | None] | None = None
        self._fast_start: bool | None = None
        self._choice = choice
        self._formats = formats
        self._done_finish = False  # the format's profile takes [DONE] as the finish
        self._done_marked = False  # and it did
        if format != "auto":
            entry = formats.provider(format)
            self._use(entry)
            self._done_finish = format in entry.done_marker_names
        self._identity = _Identity(max_id_chars)
        self._content = _Content(max_text_chars)
        self._calls = _CallTable(
            max_tool_calls, max_argument_chars, json_events, self._identity, self._content
        )
        self._usage = _Accounting(max_usage_fields, counter_for)
        self._framer: FrameDecoder | None = None
        self._finish: FinishDelta | None = None
        self._error: ErrorDelta | None = None
        self._failed: StreamError | None = None
        self._closed = False
        self._result: Response | None = None

    def _use(self, entry: Provider) -> None:
        adapter = entry.adapter(self._choice)
        self._adapter = adapter
        self.format = entry.name
        self._fast = getattr(adapter, "fragment", None)
        self._fast_start = getattr(adapter, "fragment_start", None)

    # ------------------------------------------------------------------ feeding

    def feed(self, payload: Any, *, event: str | None = None) -> list[StreamEvent]:
        """Apply one provider payload; return the events it produced.

        ``payload`` is a decoded dict, an SDK event object (anything with
        ``model_dump()``; the argument fragments of the ``openai`` and ``anthropic`` SDKs'
        event types are read from their fields instead), a JSON string, or
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
        return self._calls.calls[key].parser

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
        """Apply one provider payload (see :meth:`feed`); return the events it produced."""
        if self._failed is not None:
            raise self._failed
        if self._closed:
            # not recorded as the failure: the finished result stays what close() gave
            raise StreamFormatError("feed() after close()", self.partial(), payload=payload)
        out: list[StreamEvent] = []
        if type(payload) is not dict:
            # an SDK event object's fragment is read from its fields, without model_dump
            if type(payload) is not str:
                fields = payload_fields(payload)
                if fields is not None and self._take_fragment(fields, payload, event, out):
                    return out
            payload = self._normalise(payload)
            if payload is DONE:
                self._done_marker(out)
                return out
        self._payload(payload, event, out)
        return out

    def _feed_bytes(self, data: bytes) -> list[StreamEvent]:
        """Apply raw response bytes (SSE, NDJSON or a JSON array), split anywhere."""
        if self._failed is not None:
            raise self._failed
        if self._closed:
            raise StreamFormatError("feed_bytes() after close()", self.partial(), payload=data)
        if type(data) is not bytes:
            if not isinstance(data, (bytearray, memoryview)):
                raise self._fail(
                    StreamFormatError(
                        f"feed_bytes() takes bytes, not {type(data).__name__}", payload=data
                    )
                )
            data = bytes(data)
        framer = self._framer
        if framer is None:
            framer = self._framer = FrameDecoder()
        out: list[StreamEvent] = []
        # A big read is framed in slices so that only one slice's payloads are alive at a
        # time: a whole body's worth of dicts makes the cyclic GC rescan a growing heap.
        for piece in [data] if len(data) <= _SLICE else _slices(data):
            try:
                items = framer.feed(piece)
            except StreamError as exc:
                raise self._fail(exc) from None
            self._items(items, out)
        return out

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

    def _items(self, items: list[tuple[str | None, Any]], out: list[StreamEvent]) -> None:
        """Apply framed payloads (SSE event name, decoded payload); events go to ``out``."""
        for event, payload in items:
            if payload is DONE:
                self._done_marker(out)
            elif not self._take_fragment(payload, payload, event, out):
                self._apply(payload, event, out)

    def _done_marker(self, out: list[StreamEvent]) -> None:
        """``[DONE]``: the finish, under a profile that opts in and when none came (the
        adapter's ``done_marker()`` gives what it holds until the finish, and the finish)."""
        if not self._done_finish or self._finish is not None or self._error is not None:
            return
        adapter: Any = self._adapter
        try:
            deltas = adapter.done_marker()
            for d in deltas:
                self._delta(d, DONE, out)
        except Exception as exc:
            raise self._failure(exc, DONE) from (None if isinstance(exc, StreamError) else exc)
        self._done_marked = self._finish is not None

    def _payload(self, payload: Any, event: str | None, out: list[StreamEvent]) -> None:
        """Apply one decoded payload: the fragment fast path where it applies, else the
        general path."""
        if not self._take_fragment(payload, payload, event, out):
            self._apply(payload, event, out)

    def _take_fragment(
        self, fields: dict[str, Any], payload: Any, event: str | None, out: list[StreamEvent]
    ) -> bool:
        """The fragment fast path: whether ``payload`` was nothing but one argument fragment
        (the common case of a big call), recognised by the adapter's ``fragment`` from
        ``fields`` (the dict itself, or an SDK event object's :func:`payload_fields`)
        without building deltas, and applied by the call table, which routes it as the
        general path would, so the events are identical. A payload it does not recognise,
        or that breaks it, is left to the general path (which reports what is wrong with
        it)."""
        recognise = self._fast
        if recognise is None or event == "error" or self._finish is not None:
            return False
        try:
            hit = recognise(fields)
        except Exception:
            return False
        if hit is None:
            return False
        try:
            self._calls.fragment(hit, self._fast_start, payload, out)
        except Exception as exc:
            raise self._failure(exc, payload) from (None if isinstance(exc, StreamError) else exc)
        return True

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
                self._use(self._formats.detect(payload, event))
                adapter = self._adapter
                assert adapter is not None
            deltas = (
                adapter.translate(payload) if event is None else adapter.translate(payload, event)
            )
            for d in deltas:
                self._delta(d, payload, out)
            usage = self._usage
            if usage.mark_due:
                # after the whole payload: a chunk's own content is in its running count
                usage.take_mark(self._content, self._calls.calls)
        except Exception as exc:
            raise self._failure(exc, payload) from (None if isinstance(exc, StreamError) else exc)

    def _delta(self, d: Any, payload: Any, out: list[StreamEvent]) -> None:
        """Hand one delta to the part that keeps what it says."""
        t = type(d)
        if t is CallDelta:
            if self._finish is not None:
                raise StreamFormatError(
                    "tool call fragment after the terminal event", payload=payload
                )
            self._calls.apply(d, payload, out)
        elif t is TextDelta or t is ReasoningDelta or t is RefusalPart:
            self._content.on_text(d, payload, out)
        elif t is PartDelta:
            self._content.on_part(d)
        elif t is UsageDelta:
            out.append(UsageReported(usage=self._usage.report(d, self.format)))
        elif t is MetaDelta:
            self._identity.on_meta(d)
        elif t is FinishDelta:
            self._on_finish(d, out)
        elif t is ErrorDelta:
            if self._error is None:
                self._error = d
        else:
            raise StreamFormatError(
                f"adapter produced {type(d).__name__}, not a delta", payload=payload
            )

    def _on_finish(self, d: FinishDelta, out: list[StreamEvent]) -> None:
        if self._finish is not None:
            return  # a repeated terminal event changes nothing
        self._finish = d
        out.append(_events.Finished(finish_reason=self._normalised(d), raw_finish_reason=d.raw))

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

    def _normalised(self, d: FinishDelta) -> str:
        if d.kind in _OK_KINDS:
            return "tool_calls" if self._calls.calls else "stop"
        return d.kind

    # ------------------------------------------------------------------ closing

    def _close(self) -> Response:
        """Finish the stream: the :class:`Response`, or the right :class:`StreamError`."""
        if self._failed is not None:
            raise self._failed
        if self._result is not None:
            return self._result
        if not self._closed:
            self.feed_eof()
        try:
            finish = self._normal_finish()
            self._calls.check_ends(finish)
            calls, rejected = self._calls.finals(finish)
        except StreamError as exc:
            raise self._fail(exc) from None
        identity = self._identity
        self._result = Response(
            text="".join(self._content.text),
            reasoning="".join(self._content.reasoning),
            tool_calls=calls,
            rejected=rejected,
            finish_reason=self._normalised(finish),
            raw_finish_reason=finish.raw,
            usage=self._final_usage(),
            response_id=identity.response_id,
            model=identity.model,
            format=self.format,
            created=identity.created,
            parts=self._content.content_parts(),
            done_marker_finish=self._done_marked,
            paused=finish.paused,
        )
        return self._result

    def _normal_finish(self) -> FinishDelta:
        """The terminal event, if the stream ended normally; else the matching error."""
        error = self._error
        if error is not None:
            raise ProviderError(f"the stream carried an error: {error.message}", error=error.error)
        finish = self._finish
        if finish is None:
            raise StreamAborted("the stream ended without its terminal event")
        if finish.kind == "length":
            raise TokenLimitExceeded(f"the provider stopped at its token limit ({finish.raw})")
        content = self._content
        if content.refusal or finish.raw == "refusal":
            # Anthropic's refusal stop has no channel of its own: its words are the text
            refusal = "".join(content.refusal or (content.text if finish.raw == "refusal" else ()))
            raise OutputRefused(f"the model refused: {refusal or finish.raw}", refusal=refusal)
        if finish.kind == "content_filter":
            raise ContentFiltered(f"the provider filtered the output ({finish.raw})")
        if finish.kind == "error":
            raise ProviderError(f"the response failed ({finish.raw})")
        if finish.kind not in _OK_KINDS:
            raise ProviderError(
                f"the response ended with finish reason {finish.raw!r}, which toolwire does "
                "not know to be a normal end; nothing is finalised"
            )
        return finish

    def _final_usage(self) -> Usage:
        identity = self._identity
        return self._usage.final(self.format, identity.model, self._content, self._calls.calls)

    def partial(self) -> Partial:
        """What has arrived so far, at any time: text, reasoning, every call with its raw
        arguments, the ordered parts, usage, finish reason, ids. Evidence for accounting
        and display; its calls are never instructions to execute (only :meth:`close`
        finalises)."""
        identity = self._identity
        return Partial(
            text="".join(self._content.text),
            reasoning="".join(self._content.reasoning),
            calls=self._calls.partial_calls(),
            usage=self._final_usage(),
            raw_finish_reason=self._finish.raw if self._finish is not None else None,
            response_id=identity.response_id,
            model=identity.model,
            format=self.format,
            created=identity.created,
            parts=self._content.content_parts(),
        )
