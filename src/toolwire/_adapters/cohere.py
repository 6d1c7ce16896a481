"""Cohere v2 chat stream events -> normalised deltas.

Strategy: Cohere's v2 ``/chat`` stream sends typed events (``type`` in the payload, and
as the SSE event name): ``message-start``, ``content-start`` / ``content-delta`` /
``content-end``, ``tool-plan-delta``, ``tool-call-start`` / ``tool-call-delta`` /
``tool-call-end``, ``citation-start`` / ``citation-end`` and ``message-end``. Tool calls
are numbered by the event's ``index``; the adapter remembers, per index, the call id and
whether the call has ended, nothing else.

Guaranteed:

- ``message-start`` gives a ``MetaDelta`` with the response ``id``;
- ``content-delta`` ``delta.message.content.text`` is text, ``...content.thinking``
  (reasoning models) is reasoning;
- ``tool-plan-delta`` (``delta.message.tool_plan``) is **reasoning**: Cohere documents the
  tool plan as the model's chain-of-thought before its calls, not an answer for the user,
  so it stays out of ``Response.text`` and is kept in ``Response.reasoning``;
- ``tool-call-start`` opens a call (``start=True``: id, ``function.name``, index, and the
  first ``function.arguments`` fragment, possibly empty); ``tool-call-delta`` continues
  the call at its ``index`` with an argument fragment; ``tool-call-end`` ends it
  (``end=True``). ``delta.message.tool_calls`` is an object in the v2 stream; a
  one-element array is accepted too;
- ``message-end`` gives the one ``FinishDelta``: ``COMPLETE`` / ``STOP_SEQUENCE`` -> stop,
  ``TOOL_CALL`` -> tool_calls, ``MAX_TOKENS`` / ``ERROR_LIMIT`` -> length, ``ERROR_TOXIC``
  -> content_filter, ``ERROR`` / ``TIMEOUT`` -> error (a response cut by a server timeout
  is not usable), anything else -> other; an ``error`` message there also gives an
  ``ErrorDelta``. Usage: ``usage.tokens`` (the model's real token counts) when present,
  else ``usage.billed_units``; ``cached_tokens`` is the cache-read count; the whole
  ``usage`` object is kept in ``raw`` (billed units included).

Structural errors (``StreamFormatError``): a tool-call delta or end for an index that
never started or already ended, a call started twice at one index, a ``tool-call-start``
without a function name, wrong field types, a second ``message-end``. Unknown event types
(and citations, ``debug``) give ``[]``. Each event is translated in time linear in its size.
"""

from __future__ import annotations

from typing import Any

from .._deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    FinishKind,
    MetaDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from ._payload import (
    ensure_dict,
    fail,
    opt_count,
    opt_dict,
    opt_str,
    req_count,
    req_dict,
    type_name,
)

__all__ = ["CohereAdapter"]

_FINISH_KINDS: dict[str, FinishKind] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "TOOL_CALL": "tool_calls",
    "MAX_TOKENS": "length",
    "ERROR_LIMIT": "length",
    "ERROR_TOXIC": "content_filter",
    "ERROR": "error",
    "TIMEOUT": "error",
}


class CohereAdapter:
    """Translates one Cohere v2 chat stream (``format = "cohere"``)."""

    format: str = "cohere"

    def __init__(self) -> None:
        self._calls: dict[int, str | None] = {}  # open calls: index -> id
        self._ended: set[int] = set()
        self._finished = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one event payload; ``event`` is the SSE event name, if any."""
        payload = ensure_dict(payload, "a Cohere event", payload)
        kind = opt_str(payload, "type", "event", payload) or event
        if kind is None:
            raise fail("Cohere event has no type", payload)
        if kind in ("content-delta", "content-start"):
            return self._content(payload, kind)
        if kind == "tool-plan-delta":
            message = self._message(payload, kind)
            plan = opt_str(message, "tool_plan", f"{kind}.delta.message", payload)
            return [ReasoningPart(text=plan)] if plan else []
        if kind == "tool-call-delta":
            return self._call_delta(payload)
        if kind == "tool-call-start":
            return self._call_start(payload)
        if kind == "tool-call-end":
            index, call_id = self._open_call(payload, kind)
            del self._calls[index]
            self._ended.add(index)
            return [CallDelta(id=call_id, index=index, start=False, end=True)]
        if kind == "message-start":
            return [MetaDelta(response_id=opt_str(payload, "id", kind, payload) or None)]
        if kind == "message-end":
            return self._end(payload)
        return []  # content-end, citations, debug and event types added later

    @staticmethod
    def _message(payload: dict[str, Any], kind: str) -> dict[str, Any]:
        delta = req_dict(payload, "delta", kind, payload)
        return req_dict(delta, "message", f"{kind}.delta", payload)

    def _content(self, payload: dict[str, Any], kind: str) -> list[Delta]:
        message = self._message(payload, kind)
        content = opt_dict(message, "content", f"{kind}.delta.message", payload)
        if content is None:
            return []
        where = f"{kind}.delta.message.content"
        out: list[Delta] = []
        thinking = opt_str(content, "thinking", where, payload)
        if thinking:
            out.append(ReasoningPart(text=thinking))
        text = opt_str(content, "text", where, payload)
        if text:
            out.append(TextPart(text=text))
        return out

    def _tool_call(self, payload: dict[str, Any], kind: str) -> dict[str, Any]:
        """``delta.message.tool_calls`` as one object (the v2 stream sends one per event)."""
        calls = self._message(payload, kind).get("tool_calls")
        if isinstance(calls, list) and len(calls) == 1:
            calls = calls[0]
        if not isinstance(calls, dict):
            raise fail(
                f"{kind}.delta.message.tool_calls must be an object, got {type_name(calls)}",
                payload,
            )
        return calls

    def _call_start(self, payload: dict[str, Any]) -> list[Delta]:
        kind = "tool-call-start"
        index = req_count(payload, "index", kind, payload)
        if index in self._calls or index in self._ended:
            raise fail(f"tool call {index} started twice", payload)
        call = self._tool_call(payload, kind)
        where = f"{kind}.delta.message.tool_calls"
        call_id = opt_str(call, "id", where, payload) or None
        function = req_dict(call, "function", where, payload)
        name = opt_str(function, "name", f"{where}.function", payload)
        if name is None:
            raise fail(f"{where}.function.name is missing", payload)
        arguments = opt_str(function, "arguments", f"{where}.function", payload) or ""
        self._calls[index] = call_id
        return [CallDelta(id=call_id, index=index, name=name, arguments=arguments, start=True)]

    def _open_call(self, payload: dict[str, Any], kind: str) -> tuple[int, str | None]:
        """The index and id of the started, not yet ended call that ``payload`` addresses."""
        index = req_count(payload, "index", kind, payload)
        if index not in self._calls:
            state = "already ended" if index in self._ended else "never started"
            raise fail(f"{kind} for tool call {index}, which {state}", payload)
        return index, self._calls[index]

    def _call_delta(self, payload: dict[str, Any]) -> list[Delta]:
        kind = "tool-call-delta"
        index, call_id = self._open_call(payload, kind)
        call = self._tool_call(payload, kind)
        where = f"{kind}.delta.message.tool_calls"
        function = req_dict(call, "function", where, payload)
        fragment = opt_str(function, "arguments", f"{where}.function", payload) or ""
        if not fragment:
            return []
        return [CallDelta(id=call_id, index=index, arguments=fragment, start=False)]

    def _end(self, payload: dict[str, Any]) -> list[Delta]:
        if self._finished:
            raise fail("a second message-end", payload)
        self._finished = True
        delta = opt_dict(payload, "delta", "message-end", payload) or {}
        out: list[Delta] = []
        error = opt_str(delta, "error", "message-end.delta", payload)
        if error:
            out.append(ErrorDelta(message=error, error=delta))
        usage = opt_dict(delta, "usage", "message-end.delta", payload)
        if usage is not None:
            out.append(self._usage(usage, payload))
        reason = opt_str(delta, "finish_reason", "message-end.delta", payload)
        kind = _FINISH_KINDS.get(reason, "other") if reason is not None else "other"
        out.append(FinishDelta(raw=reason, kind=kind))
        return out

    @staticmethod
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> UsageDelta:
        where = "message-end.delta.usage"
        counts = opt_dict(usage, "tokens", where, payload)
        billed = opt_dict(usage, "billed_units", where, payload)
        source, source_where = (
            (counts, "tokens") if counts is not None else (billed, "billed_units")
        )
        source = source or {}
        inputs = opt_count(source, "input_tokens", f"{where}.{source_where}", payload)
        outputs = opt_count(source, "output_tokens", f"{where}.{source_where}", payload)
        total = None if inputs is None or outputs is None else inputs + outputs
        return UsageDelta(
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=total,
            cache_read_tokens=opt_count(usage, "cached_tokens", where, payload),
            raw=dict(usage),
        )
