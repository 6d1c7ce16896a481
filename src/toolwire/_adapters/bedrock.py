"""Bedrock ``ConverseStream`` events -> normalised deltas.

Strategy: the input is what boto3's ``converse_stream()["stream"]`` yields (and what
:mod:`toolwire._eventstream` decodes from the raw HTTP body): one dict per event with a
single key naming the event (``{"contentBlockDelta": {...}}``). When the caller already
unwrapped the event and passes its name as ``event``, the payload is taken as that
event's body.

Guaranteed:

- ``contentBlockStart`` with ``start.toolUse`` opens a call (``start=True``, ``toolUseId``
  as id, ``name``, ``contentBlockIndex`` as index); each ``contentBlockDelta`` with
  ``delta.toolUse.input`` (JSON text, possibly split) continues it; ``contentBlockStop``
  ends it (``end=True``). A tool block that never gets an input delta has empty argument
  text (the assembler and validation decide what that means for the tool).
- ``delta.text`` is text and ``delta.reasoningContent.text`` reasoning (its
  ``signature`` and ``redactedContent`` are opaque and dropped). Text blocks have no
  ``contentBlockStart`` in Bedrock, so text deltas need no opened block; a ``toolUse``
  delta for a block that was not opened as a tool, or that already stopped, is a
  ``StreamFormatError``.
- ``messageStop.stopReason`` gives the one ``FinishDelta`` (``end_turn``/``stop_sequence``
  -> stop, ``tool_use`` -> tool_calls, ``max_tokens``/``model_context_window_exceeded`` ->
  length, ``guardrail_intervened``/``content_filtered`` -> content_filter, else other).
  Bedrock's ``metadata`` event (usage, metrics) comes *after* ``messageStop``; its
  ``usage`` becomes a ``UsageDelta`` all the same.
- The stream's exception events (``internalServerException``,
  ``modelStreamErrorException``, ``throttlingException``, ``validationException``,
  ``serviceUnavailableException``, and any other ``...Exception`` key) give an
  ``ErrorDelta`` carrying ``{name: body}``; so does the ``{"error": {"code", "message"}}``
  that :mod:`toolwire._eventstream` makes of the framing's protocol-level error messages.
- ``messageStart`` and unknown events give ``[]``.

Each event is translated in time linear in its size; the state is one small record per
tool block.
"""

from __future__ import annotations

from typing import Any

from .._deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    FinishKind,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from ._payload import ensure_dict, fail, opt_count, opt_dict, opt_str, req_count, req_dict

__all__ = ["BedrockConverseAdapter"]

_STOP_KINDS: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}

_EVENTS = frozenset(
    {
        "error",  # a protocol-level error message of the binary framing (_eventstream)
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)


class BedrockConverseAdapter:
    """Translates one Bedrock ``ConverseStream`` (``format = "bedrock-converse"``)."""

    format: str = "bedrock-converse"

    def __init__(self) -> None:
        self._tools: dict[int, str | None] = {}  # open tool blocks: index -> toolUseId
        self._stopped: set[int] = set()
        self._finished = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one decoded event (``{"eventName": body}``, or a body and its name)."""
        payload = ensure_dict(payload, "a Bedrock event", payload)
        name, body = self._unwrap(payload, event)
        if name is None:
            return []
        body = ensure_dict(body, name, payload)
        if name == "contentBlockDelta":
            return self._delta(body, payload)
        if name == "contentBlockStart":
            return self._start(body, payload)
        if name == "contentBlockStop":
            return self._stop(body, payload)
        if name == "messageStop":
            if self._finished:
                raise fail("a second messageStop", payload)
            self._finished = True
            reason = opt_str(body, "stopReason", name, payload)
            kind = _STOP_KINDS.get(reason, "other") if reason is not None else "other"
            return [FinishDelta(raw=reason, kind=kind)]
        if name == "metadata":
            usage = opt_dict(body, "usage", name, payload)
            return [] if usage is None else [self._usage(usage, payload)]
        if name.endswith("Exception"):
            message = opt_str(body, "message", name, payload)
            message = message or opt_str(body, "originalMessage", name, payload)
            return [ErrorDelta(message=f"{name}: {message or 'no message'}", error={name: body})]
        if name == "error":
            code = opt_str(body, "code", name, payload) or "error"
            message = opt_str(body, "message", name, payload) or "no message"
            return [ErrorDelta(message=f"{code}: {message}", error=body)]
        return []  # messageStart

    @staticmethod
    def _unwrap(payload: dict[str, Any], event: str | None) -> tuple[str | None, Any]:
        """``(event name, body)`` of a boto3-shaped event, or of a body named by ``event``."""
        for key, value in payload.items():
            if key in _EVENTS or key.endswith("Exception"):
                return key, value
        if event is not None and (event in _EVENTS or event.endswith("Exception")):
            return event, payload
        return None, None

    @staticmethod
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> UsageDelta:
        where = "metadata.usage"
        return UsageDelta(
            input_tokens=opt_count(usage, "inputTokens", where, payload),
            output_tokens=opt_count(usage, "outputTokens", where, payload),
            total_tokens=opt_count(usage, "totalTokens", where, payload),
            cache_read_tokens=opt_count(usage, "cacheReadInputTokens", where, payload),
            cache_write_tokens=opt_count(usage, "cacheWriteInputTokens", where, payload),
            raw=dict(usage),
        )

    def _start(self, body: dict[str, Any], payload: dict[str, Any]) -> list[Delta]:
        index = req_count(body, "contentBlockIndex", "contentBlockStart", payload)
        if index in self._tools or index in self._stopped:
            raise fail(f"content block {index} started twice", payload)
        start = req_dict(body, "start", "contentBlockStart", payload)
        tool = opt_dict(start, "toolUse", "contentBlockStart.start", payload)
        if tool is None:
            return []  # other block kinds carry nothing toolwire translates
        where = "contentBlockStart.start.toolUse"
        call_id = opt_str(tool, "toolUseId", where, payload) or None
        name = opt_str(tool, "name", where, payload)
        if name is None:
            raise fail(f"{where}.name is missing", payload)
        self._tools[index] = call_id
        return [CallDelta(id=call_id, index=index, name=name, start=True)]

    def _delta(self, body: dict[str, Any], payload: dict[str, Any]) -> list[Delta]:
        index = req_count(body, "contentBlockIndex", "contentBlockDelta", payload)
        delta = req_dict(body, "delta", "contentBlockDelta", payload)
        where = "contentBlockDelta.delta"
        if index in self._stopped:
            raise fail(f"contentBlockDelta for content block {index}, which stopped", payload)
        tool = opt_dict(delta, "toolUse", where, payload)
        if tool is not None:
            if index not in self._tools:
                raise fail(f"toolUse delta for content block {index}, not a tool block", payload)
            fragment = opt_str(tool, "input", f"{where}.toolUse", payload) or ""
            if not fragment:
                return []
            return [CallDelta(id=self._tools[index], index=index, arguments=fragment, start=False)]
        text = opt_str(delta, "text", where, payload)
        if text is not None:
            return [TextPart(text=text)] if text else []
        reasoning = opt_dict(delta, "reasoningContent", where, payload)
        if reasoning is not None:
            thought = opt_str(reasoning, "text", f"{where}.reasoningContent", payload)
            return [ReasoningPart(text=thought)] if thought else []
        return []  # citations, images and delta kinds added later

    def _stop(self, body: dict[str, Any], payload: dict[str, Any]) -> list[Delta]:
        index = req_count(body, "contentBlockIndex", "contentBlockStop", payload)
        if index in self._stopped:
            raise fail(f"content block {index} stopped twice", payload)
        self._stopped.add(index)
        if index not in self._tools:
            return []
        return [CallDelta(id=self._tools.pop(index), index=index, start=False, end=True)]
