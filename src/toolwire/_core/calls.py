"""The call table: every tool call of one response, correlated from its fragments (by
provider id, then index hint, then the latest open call), and each call's state machine.

Sans-IO. The rules are DESIGN.md's "Correlating fragments", written once for every format;
the assembler feeds the table and finishes it. Linear in the size of the stream.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable
from typing import Any

from .._errors import (
    JSONDuplicateKeyError,
    JSONSyntaxError,
    StreamAborted,
    StreamFormatError,
    StreamLimitExceeded,
    TokenLimitExceeded,
)
from . import events as _events
from . import response as _response
from .deltas import CallDelta, FinishDelta, Fragment, MetaDelta, PartDelta, RefusalPart
from .events import (
    JSONEvent,
    ReasoningDelta,
    StreamEvent,
    StringAppended,
    TextDelta,
    ToolCallArguments,
    ValueStarted,
)
from .json_types import json_equal
from .partial_json import PartialJSONParser, snapshot_outdated


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

    def preview_changed(self, json_events: tuple[JSONEvent, ...]) -> bool:
        """Whether a fragment whose JSON events the parser gave can have changed the
        preview."""
        if not self.events:
            return snapshot_outdated(self.parser)
        return _changes_preview(json_events)

    def emit(self, event: StreamEvent, out: list[StreamEvent]) -> None:
        """Hand ``event`` on, or keep it until the call is announced (its name known)."""
        if self.pending is None:
            out.append(event)
        else:
            self.pending.append(event)


class _Identity:
    """The response's identity (id, model, creation timestamp: the first value of each
    wins) and the ``max_id_chars`` limit on every identifier."""

    __slots__ = ("created", "max_chars", "model", "response_id")

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.response_id: str | None = None
        self.model: str | None = None
        self.created: str | None = None

    def on_meta(self, d: MetaDelta) -> None:
        if self.response_id is None and d.response_id is not None:
            self.response_id = self.check(d.response_id, "response id")
        if self.model is None and d.model is not None:
            self.model = self.check(d.model, "model name")
        if self.created is None and d.created is not None:
            self.created = self.check(d.created, "creation timestamp")

    def check(self, value: str, what: str) -> str:
        """``value`` if it is within ``max_id_chars``, else the limit's error."""
        if len(value) > self.max_chars:
            raise StreamLimitExceeded(
                f"a {what} of {len(value)} characters, more than {self.max_chars}",
                limit="max_id_chars",
                value=self.max_chars,
            )
        return value

    def call_id(self, call: _Call) -> str:
        """The call's id: the provider's, or one synthesised deterministically.

        The same bytes give the same ids on every run, and responses that the wire tells
        apart (id, model, timestamp) get different ones. Only what is known before the
        first call is used: the name may come later, and an id must not depend on when
        partial() was asked. The identity fields are peer text and may hold lone
        surrogates, which "surrogatepass" encodes.
        """
        if call.id:
            return call.id
        if call.synth is None:
            seed = "\0".join(
                (self.response_id or "", self.model or "", self.created or "", str(call.key))
            )
            digest = hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()
            call.synth = "call_" + digest[:24]
        return call.synth


class _Content:
    """The output as it arrived: text and reasoning chunks (stored once), refusal text, and
    the ordered parts (text runs, reasoning runs, calls, provider items) that hold chunk
    offsets, from which ``Response.parts`` is cut. Bounded by ``max_text_chars``."""

    __slots__ = ("chars", "max_chars", "parts", "reasoning", "refusal", "text")

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.refusal: list[str] = []
        # the output in order: [kind, first text chunk or call key, data]
        self.parts: list[list[Any]] = []

    def on_text(
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
        n = self.chars + len(text)
        if n > self.max_chars:
            raise StreamLimitExceeded(
                f"more than {self.max_chars} characters of text",
                limit="max_text_chars",
                value=self.max_chars,
            )
        self.chars = n
        if kind is RefusalPart:
            self.refusal.append(text)
            return
        run = "text" if kind is TextDelta else "reasoning"
        chunks = self.text if kind is TextDelta else self.reasoning
        parts = self.parts
        if not parts or parts[-1][0] != run:
            parts.append([run, len(chunks), None])
        chunks.append(text)
        out.append(d)  # type: ignore[arg-type]

    def on_part(self, d: PartDelta) -> None:
        """A part boundary, or data for the current part (see :class:`PartDelta`)."""
        kind = d.kind
        data = dict(d.data) if d.data else None
        parts = self.parts
        if kind == "item":
            parts.append(["item", None, data or {}])
        elif d.start or not parts or parts[-1][0] != kind:
            chunks = self.text if kind == "text" else self.reasoning
            parts.append([kind, len(chunks), data])
        elif data:
            last = parts[-1]
            last[2] = {**last[2], **data} if last[2] else data

    def add_call(self, key: int) -> None:
        """A call opened: it takes its place among the parts."""
        self.parts.append(["call", key, None])

    def content_parts(self) -> list[_response.ContentPart]:
        """The ordered parts, text and reasoning runs cut out of their chunk lists."""
        parts = self.parts
        texts: dict[int, str] = {}
        for kind, chunks in (("text", self.text), ("reasoning", self.reasoning)):
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


class _CallTable:
    """The tool calls, and the correlation rules that route every fragment to its call,
    once for every format: by provider id (or ``ref``), then by index hint, then to the
    latest open call (see the module docstring for the refinements). Also what happens to
    a call: announced when its name is known, fed its fragments, rejected, ended."""

    __slots__ = (
        "by_index",
        "by_ref",
        "calls",
        "content",
        "identity",
        "json_events",
        "latest",
        "max_args",
        "max_calls",
    )

    def __init__(
        self,
        max_calls: int,
        max_args: int,
        json_events: bool,
        identity: _Identity,
        content: _Content,
    ) -> None:
        self.max_calls = max_calls
        self.max_args = max_args
        self.json_events = json_events
        self.identity = identity
        self.content = content
        self.calls: list[_Call] = []
        self.by_ref: dict[str, _Call] = {}
        self.by_index: dict[int, _Call] = {}
        self.latest: _Call | None = None  # most recent call not ended

    # ------------------------------------------------------------------ applying

    def fragment(
        self, hit: Fragment, start: bool | None, payload: Any, out: list[StreamEvent]
    ) -> None:
        """Apply a fragment the adapter recognised (``ref``, ``index``, text): straight into
        an open call's parser, or, for a call in any other state, as the one delta the
        adapter's ``translate`` gives for it (``start`` is the format's ``fragment_start``)."""
        ref, index, text = hit
        call = self.by_ref.get(ref) if ref is not None else self.by_index.get(index)  # type: ignore[arg-type]
        if call is not None and call.state is _OPEN:
            self.on_args(call, text, payload, out)
        else:
            self.apply(CallDelta(ref=ref, index=index, arguments=text, start=start), payload, out)

    def apply(self, d: CallDelta, payload: Any, out: list[StreamEvent]) -> None:
        """Apply one call delta: route it, then its id, metadata, name, arguments, end."""
        identity = self.identity
        for value, what in ((d.id, "call id"), (d.ref, "call reference"), (d.name, "tool name")):
            if value is not None:
                identity.check(value, what)
        call = self.route(d, payload)
        if d.id is not None and call.id is None:
            call.id = d.id
            self.by_ref.setdefault(d.id, call)
        if d.metadata:
            call.metadata.update(d.metadata)
        if d.name and call.name is None:
            call.name = d.name
            call.move(CallEvent.NAME, payload)
            self.announce(call, out)
        if d.arguments:
            self.on_args(call, d.arguments, payload, out)
        if d.final_arguments is not None:
            self.on_final(call, d.final_arguments, payload, out)
        if d.end:
            self.on_end(call, payload, out)

    def route(self, d: CallDelta, payload: Any) -> _Call:
        """The call ``d`` belongs to (opened if need be): by ref or id, else by position."""
        ref = d.ref or d.id
        if ref is not None:
            call = self.by_ref.get(ref)
            if call is not None:
                if d.start is True:
                    raise StreamFormatError(f"tool call {ref!r} started twice", payload=payload)
                return call
        if d.start is True:
            return self.open(d)
        if d.start is False:
            # the format says this continues a call: it must be findable
            if ref is not None:
                raise StreamFormatError(
                    f"fragment for tool call {ref!r} that never started", payload=payload
                )
            call = self.by_index.get(d.index) if d.index is not None else self.latest
            if call is None:
                raise StreamFormatError(
                    "tool call fragment that matches no started call", payload=payload
                )
            return call
        return self._by_position(d)

    def _by_position(self, d: CallDelta) -> _Call:
        """Route a delta that no ref found and that may open a call: by index hint, then
        the latest open call. A nameless fragment never opens a call while one is open,
        but at an index no call has seen with an id unlike the latest's (a second parallel
        call whose header lacks the name); a named one opens one when it is really another
        call (``_is_new``)."""
        latest = self.latest
        if d.index is not None:
            call = self.by_index.get(d.index)
            if call is not None:
                return self.open(d) if d.name and self._is_new(d, call) else call
            if d.name or latest is None:
                return self.open(d)
            if d.id is not None and latest.id is not None and d.id != latest.id:
                return self.open(d)  # new index and new id: a call named later
            return latest
        if latest is None or (d.name and self._is_new(d, latest)):
            return self.open(d)
        return latest

    @staticmethod
    def _is_new(d: CallDelta, call: _Call) -> bool:
        """A named fragment reaching ``call`` by position: is it really another call?"""
        if d.id is not None and call.id is not None:
            return d.id != call.id
        return call.name is not None and d.name != call.name

    def open(self, d: CallDelta) -> _Call:
        if len(self.calls) >= self.max_calls:
            raise StreamLimitExceeded(
                f"more than {self.max_calls} tool calls",
                limit="max_tool_calls",
                value=self.max_calls,
            )
        call = _Call(len(self.calls), d.index, self.json_events)
        call.explicit = d.start is True
        self.content.add_call(call.key)
        if d.ref is not None:
            call.ref = d.ref
            self.by_ref[d.ref] = call
        if d.id is not None:
            call.id = d.id
            self.by_ref.setdefault(d.id, call)
        if d.index is not None:
            self.by_index[d.index] = call
            call.metadata["provider_index"] = d.index
        self.calls.append(call)
        self.latest = call
        return call

    def announce(self, call: _Call, out: list[StreamEvent]) -> None:
        pending = call.pending
        call.pending = None
        call.shown_id = self.identity.call_id(call)
        out.append(
            _events.ToolCallStarted(
                key=call.key, id=call.shown_id, name=call.name or "", index=call.key
            )
        )
        if pending:
            # fragments that arrived before the name was known carry it now
            name = call.name or ""
            out.extend(
                ev._replace(id=call.shown_id, name=name) if type(ev) is ToolCallArguments else ev
                for ev in pending
            )

    def on_args(self, call: _Call, text: str, payload: Any, out: list[StreamEvent]) -> None:
        """A fragment of ``call``'s arguments: kept as raw text and, unless the call was
        rejected, fed to its parser; a syntax error or a repeated key rejects the call."""
        n = call.chars + len(text)
        if n > self.max_args:
            raise StreamLimitExceeded(
                f"tool call {call.key}: more than {self.max_args} characters of arguments",
                limit="max_argument_chars",
                value=self.max_args,
            )
        call.chars = n
        call.parts.append(text)
        if call.state is not _OPEN:  # (OPEN, ARGS) stays OPEN: the common case, no lookup
            call.move(CallEvent.ARGS, payload)
            if call.state is CallState.REJECTED:
                return
        try:
            json_events = call.parser.feed(text)
        except JSONSyntaxError as exc:
            self.reject_json(call, exc, payload, out)
            return
        # the common fragment of a long string is one StringAppended: a change
        changed = (len(json_events) == 1 and type(json_events[0]) is StringAppended) or (
            call.preview_changed(json_events)
        )
        # positional: a keyword call builds a dict of the arguments, once per fragment
        event = ToolCallArguments(
            call.key, text, json_events, call.snapshot, call.shown_id, call.name or "", changed
        )
        pending = call.pending
        if pending is None:
            out.append(event)
        else:
            pending.append(event)  # held until the call is announced (see emit)

    def on_final(self, call: _Call, final: str, payload: Any, out: list[StreamEvent]) -> None:
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
            self.on_args(call, final[len(have) :], payload, out)
            return
        if call.parser.complete and _same_value(call.parser.close(), final):
            return
        self.reject(
            call,
            "the arguments also stated whole (the call's start input or its final "
            "restatement) contradict the streamed fragments",
            None,
            payload,
            out,
        )

    def on_end(self, call: _Call, payload: Any, out: list[StreamEvent]) -> None:
        """The provider ended ``call``."""
        call.got_end = True
        call.move(CallEvent.END, payload)
        if self.latest is call:
            self.latest = None
        if not call.ended_sent and call.state is CallState.ENDED:
            call.ended_sent = True
            call.emit(_events.ToolCallEnded(key=call.key), out)

    def reject(
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
        call.emit(
            _events.ToolCallRejected(
                key=call.key,
                reason=reason,
                raw_arguments=call.raw(),
                offset=offset,
                duplicate_key=duplicate,
            ),
            out,
        )

    def reject_json(
        self, call: _Call, exc: JSONSyntaxError, payload: Any, out: list[StreamEvent]
    ) -> None:
        """Reject ``call`` for what its parser raised: not JSON, or a repeated key."""
        if isinstance(exc, JSONDuplicateKeyError):
            reason = f"arguments repeat a key: {exc.msg}"
            self.reject(call, reason, exc.offset, payload, out, exc.path)
        else:
            self.reject(call, f"arguments are not valid JSON: {exc.msg}", exc.offset, payload, out)

    # ------------------------------------------------------------------ results

    def check_ends(self, finish: FinishDelta) -> None:
        """Raise when a call that the format ends on its own (content_block_stop,
        output_item.done, contentBlockStop, tool-call-end...) never got its end: it lost at
        least that event, maybe others (its start input, a fragment), so it is not final
        even under a normal finish."""
        for call in self.calls:
            if call.explicit and not call.got_end:
                raise StreamAborted(
                    f"tool call {call.key} ({call.name or 'no name'}) never got its own "
                    f"end event before the terminal event ({finish.raw!r}): the stream "
                    "lost events, nothing is finalised"
                )

    def finals(
        self, finish: FinishDelta
    ) -> tuple[list[_response.ToolCall], list[_response.RejectedCall]]:
        """The response's calls and rejected calls; raises when a call's arguments are
        unterminated (the output was cut)."""
        calls: list[_response.ToolCall] = []
        rejected: list[_response.RejectedCall] = []
        for call in self.calls:
            if call.state is not CallState.REJECTED and not call.name:
                call.move(CallEvent.REJECT, None)
                call.reason = "the tool name is empty"
            arguments = self._arguments(call, finish)
            if call.state is CallState.REJECTED:
                rejected.append(self.rejected(call))
                continue
            calls.append(
                _response.ToolCall(
                    id=self.identity.call_id(call),
                    name=call.name or "",
                    arguments=arguments,
                    raw_arguments=call.raw(),
                    index=call.key,
                    metadata=call.metadata,
                    synthetic_id=not call.id,
                    kind=str(call.metadata.get("kind") or "function"),
                )
            )
        return calls, rejected

    @staticmethod
    def _arguments(call: _Call, finish: FinishDelta) -> Any:
        """The final arguments of a call not rejected (``{}`` for none), or ``None`` after
        rejecting a call whose complete text its parser still refuses."""
        if call.state is CallState.REJECTED:
            return None
        if not call.raw():
            return {}
        if not call.parser.complete:
            raise TokenLimitExceeded(
                f"tool call {call.key} ({call.name}) has unterminated arguments under "
                f"finish reason {finish.raw!r}: the output was cut"
            )
        try:
            return call.parser.close()
        except JSONSyntaxError as exc:
            call.state = CallState.REJECTED
            call.reason = f"arguments are not valid JSON: {exc.msg}"
            call.offset = exc.offset
            return None

    def rejected(self, call: _Call) -> _response.RejectedCall:
        return _response.RejectedCall(
            id=self.identity.call_id(call),
            name=call.name or "",
            raw_arguments=call.raw(),
            reason=call.reason or "rejected",
            index=call.key,
            offset=call.offset,
            metadata=call.metadata,
            synthetic_id=not call.id,
            duplicate_key=call.duplicate,
        )

    def partial_calls(self) -> list[_response.PartialCall]:
        return [
            _response.PartialCall(
                id=self.identity.call_id(c),
                name=c.name or "",
                raw_arguments=c.raw(),
                index=c.key,
                ended=c.state is CallState.ENDED,
                synthetic_id=not c.id,
                metadata=c.metadata,
            )
            for c in self.calls
        ]
