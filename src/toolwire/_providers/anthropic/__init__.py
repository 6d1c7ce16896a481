"""Anthropic Messages: the ``"anthropic"`` provider (detection, adapter, definitions, messages).

Each ``tool_use`` block is a call ended by its ``content_block_stop`` (or complete in
``message_start``); server-side tool blocks and unknown blocks produce no calls and are
echoed as they came. Linear in the size of each payload.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._core import deltas as d
from ..._core.content import File, Image, Part, b64, fallback_text
from ..._core.messages import Call, ResultText, object_arguments, wire_name
from ..._core.providers import Provider
from ..._core.response import Response
from .. import _payload as read
from .._content_blocks import assistant_blocks, user_blocks
from .._format_parts import text_user_message
from .schema import anthropic_strict_schema

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_STOP_KINDS = d.finish_kinds(
    stop=("end_turn", "stop_sequence", "pause_turn"),
    tool_calls=("tool_use",),
    length=("max_tokens", "model_context_window_exceeded"),
    content_filter=("refusal",),
)
_EVENT_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_TEXT_PART = d.PartDelta(kind="text", start=True)
_THINKING_PART = d.PartDelta(kind="reasoning", start=True)

# Block kinds whose deltas the adapter translates; any other block type is a server-side
# block (tracked, never translated).
_TEXT, _THINKING, _REDACTED, _TOOL, _SERVER = "text", "thinking", "redacted", "tool", "server"


@dataclass(slots=True)
class _Block:
    """What the adapter remembers about one started content block."""

    kind: str
    call_id: str | None = None
    start_input: str | None = None  # a non-empty start ``input``, as compact JSON
    stopped: bool = False
    raw: dict[str, Any] | None = None  # a server or unknown block, echoed at its stop
    fragments: list[str] | None = None  # a server block's streamed ``input``
    citations: list[Any] | None = None  # a text block's citations, in order


def _stop_kind(reason: str | None) -> d.FinishKind:
    if reason is None:
        return "other"
    return _STOP_KINDS.get(reason, "other")


def _usage(usage: dict[str, Any], where: str, payload: Any) -> d.UsageDelta:
    """The counts of one ``usage`` object; ``cache_creation`` splits the cache writes by
    lifetime (the 1-hour part is priced apart) and ``server_tool_use`` counts the web
    searches billed per request."""
    writes = read.opt_count(usage, "cache_creation_input_tokens", where, payload)
    writes_1h = None
    creation = read.opt_dict(usage, "cache_creation", where, payload)
    if creation is not None:
        inner = f"{where}.cache_creation"
        writes_5m = read.opt_count(creation, "ephemeral_5m_input_tokens", inner, payload)
        writes_1h = read.opt_count(creation, "ephemeral_1h_input_tokens", inner, payload)
        if writes is None and (writes_5m is not None or writes_1h is not None):
            writes = (writes_5m or 0) + (writes_1h or 0)
    searches = None
    server = read.opt_dict(usage, "server_tool_use", where, payload)
    if server is not None:
        inner = f"{where}.server_tool_use"
        searches = read.opt_count(server, "web_search_requests", inner, payload)
    return d.UsageDelta(
        input_tokens=read.opt_count(usage, "input_tokens", where, payload),
        output_tokens=read.opt_count(usage, "output_tokens", where, payload),
        cache_read_tokens=read.opt_count(usage, "cache_read_input_tokens", where, payload),
        cache_write_tokens=writes,
        cache_write_1h_tokens=writes_1h,
        web_search_requests=searches,
        raw=dict(usage),
    )


class AnthropicAdapter:
    """Translates one Anthropic Messages stream (``format = "anthropic"``).

    One instance per stream: it remembers the started blocks and the ``stop_reason``.
    """

    format: str = "anthropic"
    fragment_start = False  # a fragment continues a started block

    def __init__(self) -> None:
        self._blocks: dict[int, _Block] = {}
        self._stop_reason: str | None = None
        self._finished = False  # message_stop seen
        self._finish_sent = False  # FinishDelta emitted (at a failing message_delta, or at stop)

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """The deltas of one event payload; ``event`` is the SSE event name, if any."""
        payload = read.ensure_dict(payload, "an Anthropic event", payload)
        kind = read.opt_str(payload, "type", "event", payload) or event
        if kind is None:
            raise read.fail("Anthropic event has no type", payload)
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
                raise read.fail("a second message_stop", payload)
            self._finished = True
            if self._finish_sent:
                return []
            self._finish_sent = True
            reason = self._stop_reason
            return [
                d.FinishDelta(raw=reason, kind=_stop_kind(reason), paused=reason == "pause_turn")
            ]
        if kind == "error":
            return [self._error(payload)]
        return []  # ping and event types added after this adapter was written

    # ---------------------------------------------------------------- message level

    def _message_start(self, payload: dict[str, Any]) -> list[d.Delta]:
        message = read.req_dict(payload, "message", "message_start", payload)
        out: list[d.Delta] = [
            d.MetaDelta(
                response_id=read.opt_str(message, "id", "message", payload),
                model=read.opt_str(message, "model", "message", payload),
            )
        ]
        usage = read.opt_dict(message, "usage", "message", payload)
        if usage is not None:
            out.append(_usage(usage, "message.usage", payload))
        reason = read.opt_str(message, "stop_reason", "message", payload)
        if reason is not None:
            self._stop_reason = reason
        content = message.get("content")
        if content is None:
            return out
        if type(content) is not list:
            raise read.fail("message_start message.content is not a list", payload)
        for index, block in enumerate(content):  # complete blocks (programmatic calls)
            start = {"type": "content_block_start", "index": index, "content_block": block}
            out += self._block_start(start)
            out += self._block_stop({"type": "content_block_stop", "index": index})
        return out

    def _message_delta(self, payload: dict[str, Any]) -> list[d.Delta]:
        delta = read.req_dict(payload, "delta", "message_delta", payload)
        reason = read.opt_str(delta, "stop_reason", "message_delta.delta", payload)
        if reason is not None:
            self._stop_reason = reason
        usage = read.opt_dict(payload, "usage", "message_delta", payload)
        out: list[d.Delta] = (
            [] if usage is None else [_usage(usage, "message_delta.usage", payload)]
        )
        kind = _stop_kind(reason) if reason is not None else None
        if kind is not None and kind not in ("stop", "tool_calls") and not self._finish_sent:
            self._finish_sent = True
            out.append(d.FinishDelta(raw=reason, kind=kind))
        return out

    def _error(self, payload: dict[str, Any]) -> d.ErrorDelta:
        error = read.opt_dict(payload, "error", "error event", payload)
        if error is None:
            return d.ErrorDelta(message="Anthropic error event", error=payload)
        text = read.error_text(error, "type", "Anthropic error event", payload)
        return d.ErrorDelta(message=text, error=error)

    # ------------------------------------------------------------------ block level

    def _block_start(self, payload: dict[str, Any]) -> list[d.Delta]:
        index = read.req_count(payload, "index", "content_block_start", payload)
        if index in self._blocks:
            raise read.fail(f"content block {index} started twice", payload)
        block = read.req_dict(payload, "content_block", "content_block_start", payload)
        btype = read.req_str(block, "type", "content_block", payload)
        if btype == "text":
            citations = block.get("citations")
            if citations is not None and type(citations) is not list:
                raise read.fail("content_block.citations is not a list", payload)
            self._blocks[index] = _Block(
                _TEXT, citations=None if citations is None else list(citations)
            )
            text = read.opt_str(block, "text", "content_block", payload)
            return [_TEXT_PART, d.TextPart(text=text)] if text else [_TEXT_PART]
        if btype == "thinking":
            self._blocks[index] = _Block(_THINKING)
            thinking = read.opt_str(block, "thinking", "content_block", payload)
            signature = read.opt_str(block, "signature", "content_block", payload)
            out: list[d.Delta] = [
                d.PartDelta(kind="reasoning", start=True, data={"signature": signature})
                if signature
                else _THINKING_PART
            ]
            if thinking:
                out.append(d.ReasoningPart(text=thinking))
            return out
        if btype == "redacted_thinking":
            self._blocks[index] = _Block(_REDACTED)
            data = read.req_str(block, "data", "content_block", payload)
            return [d.PartDelta(kind="item", data={"type": "redacted_thinking", "data": data})]
        if btype != "tool_use":  # server_tool_use, its results, mcp blocks, unknown blocks
            self._blocks[index] = _Block(_SERVER, raw=copy.deepcopy(block))
            return []
        call_id = read.req_str(block, "id", "content_block", payload)
        name = read.req_str(block, "name", "content_block", payload)
        start_input = read.opt_dict(block, "input", "content_block", payload)
        text = None  # the placeholder {} (or no input) states nothing
        if start_input:
            text = read.dump_arguments(start_input, "content_block.input", payload)
        self._blocks[index] = _Block(_TOOL, call_id=call_id or None, start_input=text)
        caller = read.opt_dict(block, "caller", "content_block", payload)
        metadata = {"caller": copy.deepcopy(caller)} if caller is not None else None
        return [
            d.CallDelta(id=call_id or None, index=index, name=name, start=True, metadata=metadata)
        ]

    def _open_block(self, payload: dict[str, Any], where: str) -> tuple[int, _Block]:
        """The started, not yet stopped block that ``payload`` addresses."""
        index = read.req_count(payload, "index", where, payload)
        block = self._blocks.get(index)
        if block is None:
            raise read.fail(f"{where} for content block {index}, which never started", payload)
        if block.stopped:
            raise read.fail(f"{where} for content block {index}, which already stopped", payload)
        return index, block

    def fragment(self, payload: dict[str, Any]) -> d.Fragment | None:
        """Fast path: ``(tool_use id, block index, text)`` when ``payload`` is one non-empty
        ``input_json_delta`` of an open ``tool_use`` block (the bulk of a big call), else
        ``None`` (pure, so the assembler may fall back). The ``anthropic`` SDK's
        ``RawContentBlockDeltaEvent`` is read the same way, its ``delta`` through
        :func:`~toolwire._core.deltas.payload_fields`."""
        if payload.get("type") != "content_block_delta":
            return None
        delta = payload.get("delta")
        if type(delta) is not dict and (delta := d.payload_fields(delta)) is None:
            return None
        if delta.get("type") != "input_json_delta":
            return None
        index = payload.get("index")
        text = delta.get("partial_json")
        if type(text) is not str or not text or type(index) is not int:
            return None
        block = self._blocks.get(index)
        if block is None or block.kind != _TOOL or block.stopped:
            return None
        return block.call_id, index, text

    def _block_delta(self, payload: dict[str, Any]) -> list[d.Delta]:
        index, block = self._open_block(payload, "content_block_delta")
        delta = read.req_dict(payload, "delta", "content_block_delta", payload)
        dtype = read.req_str(delta, "type", "content_block_delta.delta", payload)
        where = "content_block_delta.delta"
        if dtype == "text_delta":
            self._expect(block, (_TEXT,), dtype, index, payload)
            text = read.req_str(delta, "text", where, payload)
            return [d.TextPart(text=text)] if text else []
        if dtype == "input_json_delta":
            self._expect(block, (_TOOL, _SERVER), dtype, index, payload)
            fragment = read.req_str(delta, "partial_json", where, payload)
            if block.kind == _SERVER:
                if fragment:
                    block.fragments = [*(block.fragments or ()), fragment]
                return []
            if not fragment:  # the empty first fragment: nothing
                return []
            return [d.CallDelta(id=block.call_id, index=index, arguments=fragment, start=False)]
        if dtype == "thinking_delta":
            self._expect(block, (_THINKING,), dtype, index, payload)
            thinking = read.req_str(delta, "thinking", where, payload)
            return [d.ReasoningPart(text=thinking)] if thinking else []
        if dtype == "signature_delta":
            self._expect(block, (_THINKING,), dtype, index, payload)
            signature = read.req_str(delta, "signature", where, payload)
            return [d.PartDelta(kind="reasoning", data={"signature": signature})]
        if dtype == "citations_delta":
            self._expect(block, (_TEXT,), dtype, index, payload)
            citation = read.req_dict(delta, "citation", where, payload)
            block.citations = [*(block.citations or ()), citation]
            return []
        return []  # delta types added later

    @staticmethod
    def _expect(
        block: _Block, kinds: tuple[str, ...], dtype: str, index: int, payload: dict[str, Any]
    ) -> None:
        if block.kind not in kinds:
            raise read.fail(f"{dtype} in content block {index}, a {block.kind} block", payload)

    def _block_stop(self, payload: dict[str, Any]) -> list[d.Delta]:
        """End the block; a tool block restates a non-empty start ``input`` as its final
        arguments (the whole call without fragments, else checked against them)."""
        index, block = self._open_block(payload, "content_block_stop")
        block.stopped = True
        if block.kind == _SERVER:
            return [d.PartDelta(kind="item", data=self._server_block(block, payload))]
        if block.kind == _TEXT and block.citations is not None:
            fields = {"citations": block.citations}
            return [d.PartDelta(kind="text", data={"block_fields": fields})]
        if block.kind != _TOOL:
            return []
        return [
            d.CallDelta(
                id=block.call_id,
                index=index,
                final_arguments=block.start_input,
                start=False,
                end=True,
            )
        ]

    @staticmethod
    def _server_block(block: _Block, payload: dict[str, Any]) -> dict[str, Any]:
        """The block as it came, with its streamed ``input`` (``server_tool_use``) parsed."""
        raw = block.raw if block.raw is not None else {}
        if block.fragments:
            text = "".join(block.fragments)
            try:
                raw["input"] = json.loads(text)
            except ValueError:
                raise read.fail(
                    f"a {raw.get('type')} block streamed input that is not JSON", payload
                ) from None
        return raw


# ------------------------------------------------------------------- the provider


def adapter(choice: int) -> AnthropicAdapter:
    """A fresh adapter for one stream (``choice`` is ignored: a message has one choice)."""
    return AnthropicAdapter()


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a Messages event (or an error with a nested object)."""
    kind = payload.get("type")
    if kind == "error":
        return type(payload.get("error")) is dict  # a Responses error event is flat
    return kind in _EVENT_TYPES


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """``{"name", "description", "input_schema"}``, plus ``"strict": true`` with the
    schema in Anthropic's strict subset (:func:`.schema.anthropic_strict_schema`) when
    ``strict``."""
    if not strict:
        return {
            "name": tool.name,
            "description": tool.description,
            "input_schema": copy.deepcopy(tool.parameters),
        }
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": anthropic_strict_schema(tool.parameters, where=f"tool {tool.name!r}"),
        "strict": True,
    }


def tool_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One user message with a ``tool_result`` block per result (``is_error`` for every
    status but completed and replayed); no results give ``[]``. A rich result's content
    is a list of ``text``, ``image`` (base64 source) and ``document`` blocks (a PDF as
    base64, a ``text/plain`` file as text); any other file is a text note."""
    return user_blocks(
        [
            {
                "type": "tool_result",
                "tool_use_id": r.outcome.call_id,
                "content": r.text if r.parts is None else _rich_content(r.parts),
                "is_error": r.error,
            }
            for r in results
        ]
    )


IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image media types the Messages API takes."""


def _rich_content(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Image) and part.media_type in IMAGE_TYPES:
            source = {"type": "base64", "media_type": part.media_type, "data": b64(part)}
            blocks.append({"type": "image", "source": source})
        elif isinstance(part, File) and part.media_type in ("application/pdf", "text/plain"):
            if part.media_type == "text/plain":
                text = part.data.decode("utf-8", errors="replace")
                source = {"type": "text", "media_type": "text/plain", "data": text}
            else:
                source = {"type": "base64", "media_type": part.media_type, "data": b64(part)}
            block: dict[str, Any] = {"type": "document", "source": source}
            if part.filename:
                block["title"] = part.filename
            blocks.append(block)
        else:
            text = part if isinstance(part, str) else fallback_text((part,))
            if text:  # the API refuses an empty text block
                blocks.append({"type": "text", "text": text})
    return blocks


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The assistant message with the response's blocks in order.

    ``text`` blocks (empty ones left out: the API refuses them), ``thinking`` blocks with
    their ``signature`` (a thinking block that never got one cannot be sent back and is
    left out), ``redacted_thinking`` blocks as they came, and a ``tool_use`` block per
    call, whose ``input`` is the arguments object, or ``{"INVALID_JSON": raw}`` for a
    rejected call. Text keeps its ``citations``; server-side tool blocks (``server_tool_use``,
    its results, ``mcp_tool_use`` / ``mcp_tool_result``) and unknown blocks are repeated as
    they came, in order. A response with no block to send gives ``[]``.
    """
    return assistant_blocks(
        response,
        call=_tool_use,
        text=lambda text: {"type": "text", "text": text},
        reasoning=lambda text, signature: {
            "type": "thinking",
            "thinking": text,
            "signature": signature,
        },
    )


def _tool_use(call: Call) -> dict[str, Any]:
    """A ``tool_use`` block, with the ``caller`` of a programmatic call as it came."""
    block = {
        "type": "tool_use",
        "id": call.id,
        "name": wire_name(call.name),
        "input": object_arguments(call),
    }
    caller = call.metadata.get("caller")
    if caller is not None:
        block["caller"] = caller
    return block


user_message = text_user_message

PROVIDER = Provider(
    name="anthropic",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
)
