"""Anthropic Messages streaming events -> normalised deltas.

Strategy: the Messages API streams numbered content blocks, each opened by
``content_block_start``, grown by ``content_block_delta`` and closed by
``content_block_stop``; the response ends with ``message_stop``. The adapter keeps one
small record per block index (its kind, and for ``tool_use`` the id and the ``input`` given
at the start) and the ``stop_reason`` from ``message_delta``, nothing else.

Guaranteed:

- ``message_start`` gives a ``MetaDelta`` (id, model) and a ``UsageDelta`` (input tokens,
  cache reads and writes) so that an aborted stream still knows what it spent;
  ``message_delta`` usage (running output total) gives another ``UsageDelta``.
- ``tool_use`` blocks become calls: ``start=True`` with id, name and block index at
  ``content_block_start``, one ``CallDelta`` per non-empty ``input_json_delta`` fragment,
  ``end=True`` at ``content_block_stop``. The ``input`` object at the start is the API's
  placeholder (``{}``) when fragments follow, so it is never emitted as argument text;
  only a block that ends with *no* ``input_json_delta`` at all and a non-empty ``input``
  is a whole call, and its ``input`` is then emitted (compact JSON) with the end.
  The empty first fragment (``partial_json: ""``) is matched by type and skipped.
- ``thinking`` blocks become ``ReasoningPart``; ``signature_delta`` and
  ``redacted_thinking`` (opaque, encrypted) are dropped: they carry nothing readable.
- Server-side tool blocks (``server_tool_use``, ``web_search_tool_result``,
  ``mcp_tool_use``, ``code_execution_tool_result``... any block type other than ``text``,
  ``thinking``, ``redacted_thinking`` and ``tool_use``) were executed by Anthropic, not by
  the client: they are tracked (so their deltas are legal) but produce no deltas. Emitting
  them as calls would make an executor run a tool the provider already ran.
- ``message_stop`` gives exactly one ``FinishDelta`` with the remembered ``stop_reason``.
  A ``message_delta`` whose ``stop_reason`` already says the turn failed (``max_tokens``,
  ``refusal``...) gives that ``FinishDelta`` at once instead: a failed turn needs no
  ``message_stop`` to be believed, and a reader that loses the last event (the anthropic
  SDK drops a final event that lacks its blank line) still learns why the stream stopped.
- ``error`` events give an ``ErrorDelta``; ``ping`` and unknown event types give ``[]``.

Structural errors (``StreamFormatError``): a payload that is not an object or has no
type, a delta or stop for a block index that never started or already stopped, a block
started twice, a delta whose type does not fit its block (``input_json_delta`` in a text
block), wrong field types, a second ``message_stop``.

Not done here: correlation and finishing (the assembler's), and judging whether a
``tool_use`` stop reason with unterminated arguments is a truncation (the assembler sees
the arguments). Each payload is translated in time linear in its size.
"""

from __future__ import annotations

from dataclasses import dataclass
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
    dump_arguments,
    ensure_dict,
    fail,
    opt_count,
    opt_dict,
    opt_str,
    req_count,
    req_dict,
    req_str,
)

__all__ = ["AnthropicAdapter"]

_STOP_KINDS: dict[str, FinishKind] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}

# Block kinds whose deltas the adapter translates; any other block type is a server-side
# block (tracked, never translated).
_TEXT, _THINKING, _REDACTED, _TOOL, _SERVER = "text", "thinking", "redacted", "tool", "server"


@dataclass(slots=True)
class _Block:
    """What the adapter remembers about one started content block."""

    kind: str
    call_id: str | None = None
    start_input: dict[str, Any] | None = None
    saw_fragment: bool = False
    stopped: bool = False


def _stop_kind(reason: str | None) -> FinishKind:
    if reason is None:
        return "other"
    return _STOP_KINDS.get(reason, "other")


def _usage(usage: dict[str, Any], where: str, payload: Any) -> UsageDelta:
    return UsageDelta(
        input_tokens=opt_count(usage, "input_tokens", where, payload),
        output_tokens=opt_count(usage, "output_tokens", where, payload),
        cache_read_tokens=opt_count(usage, "cache_read_input_tokens", where, payload),
        cache_write_tokens=opt_count(usage, "cache_creation_input_tokens", where, payload),
        raw=dict(usage),
    )


class AnthropicAdapter:
    """Translates one Anthropic Messages stream (``format = "anthropic"``).

    One instance per stream: it remembers the started blocks and the ``stop_reason``.
    """

    format: str = "anthropic"

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None
        self._finished = False  # message_stop seen
        self._finish_sent = False  # FinishDelta emitted (at a failing message_delta, or at stop)

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one event payload; ``event`` is the SSE event name, if any."""
        payload = ensure_dict(payload, "an Anthropic event", payload)
        kind = opt_str(payload, "type", "event", payload) or event
        if kind is None:
            raise fail("Anthropic event has no type", payload)
        if kind == "content_block_delta":
            return self._block_delta(payload)
        if kind == "content_block_start":
            return self._block_start(payload)
        if kind == "content_block_stop":
            return self._block_stop(payload)
        if kind == "message_start":
            return self._message_start(payload)
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "message_stop":
            if self._finished:
                raise fail("a second message_stop", payload)
            self._finished = True
            if self._finish_sent:
                return []
            self._finish_sent = True
            return [FinishDelta(raw=self._stop_reason, kind=_stop_kind(self._stop_reason))]
        if kind == "error":
            return [self._error(payload)]
        return []  # ping and event types added after this adapter was written

    # ---------------------------------------------------------------- message level

    def _message_start(self, payload: dict[str, Any]) -> list[Delta]:
        message = req_dict(payload, "message", "message_start", payload)
        out: list[Delta] = [
            MetaDelta(
                response_id=opt_str(message, "id", "message", payload),
                model=opt_str(message, "model", "message", payload),
            )
        ]
        usage = opt_dict(message, "usage", "message", payload)
        if usage is not None:
            out.append(_usage(usage, "message.usage", payload))
        return out

    def _message_delta(self, payload: dict[str, Any]) -> list[Delta]:
        delta = req_dict(payload, "delta", "message_delta", payload)
        reason = opt_str(delta, "stop_reason", "message_delta.delta", payload)
        if reason is not None:
            self._stop_reason = reason
        usage = opt_dict(payload, "usage", "message_delta", payload)
        out: list[Delta] = [] if usage is None else [_usage(usage, "message_delta.usage", payload)]
        kind = _stop_kind(reason) if reason is not None else None
        if kind is not None and kind not in ("stop", "tool_calls") and not self._finish_sent:
            self._finish_sent = True
            out.append(FinishDelta(raw=reason, kind=kind))
        return out

    def _error(self, payload: dict[str, Any]) -> ErrorDelta:
        error = opt_dict(payload, "error", "error event", payload)
        if error is None:
            return ErrorDelta(message="Anthropic error event", error=payload)
        message = opt_str(error, "message", "error", payload)
        kind = opt_str(error, "type", "error", payload)
        text = message or kind or "Anthropic error event"
        if message and kind:
            text = f"{kind}: {message}"
        return ErrorDelta(message=text, error=error)

    # ------------------------------------------------------------------ block level

    def _block_start(self, payload: dict[str, Any]) -> list[Delta]:
        index = req_count(payload, "index", "content_block_start", payload)
        if index in self._blocks:
            raise fail(f"content block {index} started twice", payload)
        block = req_dict(payload, "content_block", "content_block_start", payload)
        btype = req_str(block, "type", "content_block", payload)
        if btype == "text":
            self._blocks[index] = _Block(_TEXT)
            text = opt_str(block, "text", "content_block", payload)
            return [TextPart(text=text)] if text else []
        if btype == "thinking":
            self._blocks[index] = _Block(_THINKING)
            thinking = opt_str(block, "thinking", "content_block", payload)
            return [ReasoningPart(text=thinking)] if thinking else []
        if btype == "redacted_thinking":
            self._blocks[index] = _Block(_REDACTED)
            return []
        if btype != "tool_use":
            self._blocks[index] = _Block(_SERVER)
            return []
        call_id = req_str(block, "id", "content_block", payload)
        name = req_str(block, "name", "content_block", payload)
        start_input = opt_dict(block, "input", "content_block", payload)
        self._blocks[index] = _Block(_TOOL, call_id=call_id or None, start_input=start_input)
        return [CallDelta(id=call_id or None, index=index, name=name, start=True)]

    def _open_block(self, payload: dict[str, Any], where: str) -> tuple[int, _Block]:
        """The started, not yet stopped block that ``payload`` addresses."""
        index = req_count(payload, "index", where, payload)
        block = self._blocks.get(index)
        if block is None:
            raise fail(f"{where} for content block {index}, which never started", payload)
        if block.stopped:
            raise fail(f"{where} for content block {index}, which already stopped", payload)
        return index, block

    def fragment(self, payload: dict[str, Any]) -> tuple[int, str] | None:
        """Fast path: ``(block index, text)`` when ``payload`` is one non-empty
        ``input_json_delta`` of an open ``tool_use`` block (the bulk of a big call), else
        ``None``. It changes nothing that :meth:`translate` would not change in the same
        way (it marks the block as having fragments), so the assembler may fall back."""
        if payload.get("type") != "content_block_delta":
            return None
        delta = payload.get("delta")
        if type(delta) is not dict or delta.get("type") != "input_json_delta":
            return None
        text = delta.get("partial_json")
        index = payload.get("index")
        if type(text) is not str or not text or type(index) is not int:
            return None
        block = self._blocks.get(index)
        if block is None or block.kind != _TOOL or block.stopped:
            return None
        block.saw_fragment = True
        return index, text

    def _block_delta(self, payload: dict[str, Any]) -> list[Delta]:
        index, block = self._open_block(payload, "content_block_delta")
        delta = req_dict(payload, "delta", "content_block_delta", payload)
        dtype = req_str(delta, "type", "content_block_delta.delta", payload)
        where = "content_block_delta.delta"
        if dtype == "text_delta":
            self._expect(block, (_TEXT,), dtype, index, payload)
            text = req_str(delta, "text", where, payload)
            return [TextPart(text=text)] if text else []
        if dtype == "input_json_delta":
            self._expect(block, (_TOOL, _SERVER), dtype, index, payload)
            fragment = req_str(delta, "partial_json", where, payload)
            if block.kind == _SERVER:
                return []
            block.saw_fragment = True
            if not fragment:  # the API's empty first fragment carries nothing
                return []
            return [CallDelta(id=block.call_id, index=index, arguments=fragment, start=False)]
        if dtype == "thinking_delta":
            self._expect(block, (_THINKING,), dtype, index, payload)
            thinking = req_str(delta, "thinking", where, payload)
            return [ReasoningPart(text=thinking)] if thinking else []
        if dtype == "signature_delta":
            self._expect(block, (_THINKING,), dtype, index, payload)
            req_str(delta, "signature", where, payload)
            return []
        return []  # citations_delta and delta types added later

    @staticmethod
    def _expect(
        block: _Block, kinds: tuple[str, ...], dtype: str, index: int, payload: dict[str, Any]
    ) -> None:
        if block.kind not in kinds:
            raise fail(f"{dtype} in content block {index}, a {block.kind} block", payload)

    def _block_stop(self, payload: dict[str, Any]) -> list[Delta]:
        """End the block; a tool block without fragments emits its start ``input``."""
        index, block = self._open_block(payload, "content_block_stop")
        block.stopped = True
        if block.kind != _TOOL:
            return []
        arguments = ""
        if not block.saw_fragment and block.start_input:
            # No fragment ever came: the input given at the start is the whole call.
            arguments = dump_arguments(block.start_input, "content_block.input", payload)
        return [
            CallDelta(id=block.call_id, index=index, arguments=arguments, start=False, end=True)
        ]
