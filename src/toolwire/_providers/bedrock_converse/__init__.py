"""Bedrock ``ConverseStream``: the ``"bedrock-converse"`` provider.

Each ``toolUse`` block is a call ended by its ``contentBlockStop``; a ``toolUse`` of type
``server_tool_use`` (Nova's code interpreter) and a ``toolResult`` block were run by Bedrock:
never calls, echoed as they came. Exception events are errors. Linear in the size of each
event.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..._core import deltas as d
from ..._core.content import File, Image, Part, fallback_text
from ..._core.messages import Call, ResultText, object_arguments, wire_name
from ..._core.providers import Provider
from ..._core.response import Response
from .. import _payload as read
from .._content_blocks import assistant_blocks, user_blocks
from .._definitions import parameters_for

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_STOP_KINDS = d.finish_kinds(
    stop=("end_turn", "stop_sequence"),
    tool_calls=("tool_use",),
    length=("max_tokens", "model_context_window_exceeded"),
    content_filter=("guardrail_intervened", "content_filtered"),
)

_TEXT_PART = d.PartDelta(kind="text", start=True)
_REASONING_PART = d.PartDelta(kind="reasoning", start=True)
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
    fragment_start = False  # an input delta continues a started tool block

    def __init__(self) -> None:
        self._tools: dict[int, str | None] = {}  # open tool blocks: index -> toolUseId
        self._inputs: dict[int, str] = {}  # open tool blocks' start input objects, as JSON
        self._part: tuple[str, int] | None = None  # kind and block index of the last part
        self._stopped: set[int] = set()
        self._finished = False
        # open server blocks (Nova's ``server_tool_use`` and its ``toolResult``): index ->
        # (block key, the start fields, the streamed input fragments or result content)
        self._server: dict[int, tuple[str, dict[str, Any], list[Any]]] = {}

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """The deltas of one decoded event (``{"eventName": body}``, or a body and its name)."""
        payload = read.ensure_dict(payload, "a Bedrock event", payload)
        name, body = self._unwrap(payload, event)
        if name is None:
            return []
        body = read.ensure_dict(body, name, payload)
        reader = _READERS.get(name)
        if reader is not None:
            return reader(self, body, payload)
        if name.endswith("Exception"):
            return [_exception(name, body, payload)]
        return []  # messageStart

    def _message_stop(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        if self._finished:
            raise read.fail("a second messageStop", payload)
        self._finished = True
        reason = read.opt_str(body, "stopReason", "messageStop", payload)
        kind = _STOP_KINDS.get(reason, "other") if reason is not None else "other"
        return [d.FinishDelta(raw=reason, kind=kind)]

    def _metadata(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        usage = read.opt_dict(body, "usage", "metadata", payload)
        return [] if usage is None else [self._usage(usage, payload)]

    def _error(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        code = read.opt_str(body, "code", "error", payload) or "error"
        message = read.opt_str(body, "message", "error", payload) or "no message"
        return [d.ErrorDelta(message=f"{code}: {message}", error=body)]

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
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> d.UsageDelta:
        where = "metadata.usage"
        return d.UsageDelta(
            input_tokens=read.opt_count(usage, "inputTokens", where, payload),
            output_tokens=read.opt_count(usage, "outputTokens", where, payload),
            total_tokens=read.opt_count(usage, "totalTokens", where, payload),
            cache_read_tokens=read.opt_count(usage, "cacheReadInputTokens", where, payload),
            cache_write_tokens=read.opt_count(usage, "cacheWriteInputTokens", where, payload),
            raw=dict(usage),
        )

    def _start(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        index = read.req_count(body, "contentBlockIndex", "contentBlockStart", payload)
        if index in self._tools or index in self._stopped or index in self._server:
            raise read.fail(f"content block {index} started twice", payload)
        start = read.req_dict(body, "start", "contentBlockStart", payload)
        tool = read.opt_dict(start, "toolUse", "contentBlockStart.start", payload)
        result = read.opt_dict(start, "toolResult", "contentBlockStart.start", payload)
        if result is not None or (tool is not None and tool.get("type") == "server_tool_use"):
            key, fields = ("toolUse", tool) if tool is not None else ("toolResult", result)
            assert fields is not None
            self._server[index] = (key, copy.deepcopy(fields), [])
            self._part = None
            return []  # run by Bedrock: echoed at its stop, never a client call
        if tool is None:
            return []  # other block kinds carry nothing toolwire translates
        return self._tool_start(index, tool, payload)

    def _tool_start(
        self, index: int, tool: dict[str, Any], payload: dict[str, Any]
    ) -> list[d.Delta]:
        """The start of a client tool call, its input as far as the start states it."""
        where = "contentBlockStart.start.toolUse"
        call_id = read.opt_str(tool, "toolUseId", where, payload) or None
        name = read.opt_str(tool, "name", where, payload)
        if name is None:
            raise read.fail(f"{where}.name is missing", payload)
        start_input = tool.get("input")
        fragment = ""
        if type(start_input) is str:
            fragment = start_input
        elif start_input is not None:
            value = read.opt_dict(tool, "input", where, payload)
            if value:
                self._inputs[index] = read.dump_arguments(value, f"{where}.input", payload)
        self._tools[index] = call_id
        self._part = None
        return [d.CallDelta(id=call_id, index=index, name=name, arguments=fragment, start=True)]

    def _delta(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        index = read.req_count(body, "contentBlockIndex", "contentBlockDelta", payload)
        delta = read.req_dict(body, "delta", "contentBlockDelta", payload)
        where = "contentBlockDelta.delta"
        if index in self._stopped:
            raise read.fail(f"contentBlockDelta for content block {index}, which stopped", payload)
        server = self._server.get(index)
        if server is not None:
            self._server_delta(server, delta, payload)
            return []
        tool = read.opt_dict(delta, "toolUse", where, payload)
        if tool is not None:
            if index not in self._tools:
                raise read.fail(
                    f"toolUse delta for content block {index}, not a tool block", payload
                )
            fragment = read.opt_str(tool, "input", f"{where}.toolUse", payload) or ""
            if not fragment:
                return []
            return [
                d.CallDelta(id=self._tools[index], index=index, arguments=fragment, start=False)
            ]
        text = read.opt_str(delta, "text", where, payload)
        if text is not None:
            if not text:
                return []
            return [*self._part_at("text", index), d.TextPart(text=text)]
        reasoning = read.opt_dict(delta, "reasoningContent", where, payload)
        if reasoning is not None:
            return self._reasoning(reasoning, index, payload)
        return []  # citations, images and delta kinds added later

    @staticmethod
    def _server_delta(
        server: tuple[str, dict[str, Any], list[Any]], delta: dict[str, Any], payload: Any
    ) -> None:
        """Keep a server block's input fragment, or its result content (text joined)."""
        key, _, pieces = server
        where = "contentBlockDelta.delta"
        if key == "toolUse":
            tool = read.opt_dict(delta, "toolUse", where, payload)
            fragment = None if tool is None else read.opt_str(tool, "input", where, payload)
            if fragment:
                pieces.append(fragment)
            return
        items = delta.get("toolResult")
        if items is None:
            return
        if type(items) is not list:
            raise read.fail(f"{where}.toolResult is not a list", payload)
        _result_pieces(items, pieces, payload)

    def _server_stop(self, index: int, payload: Any) -> list[d.Delta]:
        """The finished server block as the item the next request echoes."""
        key, fields, pieces = self._server.pop(index)
        if key == "toolResult":
            return [d.PartDelta(kind="item", data={key: {**fields, "content": pieces}})]
        if pieces:
            try:
                fields["input"] = json.loads("".join(pieces))
            except ValueError:
                raise read.fail(
                    "a server_tool_use block streamed input that is not JSON", payload
                ) from None
        fields.setdefault("input", {})
        return [d.PartDelta(kind="item", data={key: fields})]

    def _part_at(self, kind: str, index: int) -> list[d.Delta]:
        """A ``PartDelta`` opening a new part when the block index or kind changes."""
        if self._part == (kind, index):
            return []
        self._part = (kind, index)
        return [_TEXT_PART if kind == "text" else _REASONING_PART]

    def _reasoning(self, body: dict[str, Any], index: int, payload: Any) -> list[d.Delta]:
        where = "contentBlockDelta.delta.reasoningContent"
        redacted = body.get("redactedContent")
        if redacted is not None:
            self._part = None
            item = {"reasoningContent": {"redactedContent": redacted}}
            return [d.PartDelta(kind="item", data=item)]
        out = self._part_at("reasoning", index)
        thought = read.opt_str(body, "text", where, payload)
        if thought:
            out.append(d.ReasoningPart(text=thought))
        signature = read.opt_str(body, "signature", where, payload)
        if signature:
            out.append(d.PartDelta(kind="reasoning", data={"signature": signature}))
        return out

    def fragment(self, payload: dict[str, Any]) -> d.Fragment | None:
        """Fast path: ``(toolUseId, block index, text)`` when ``payload`` is one non-empty
        ``toolUse`` input delta of an open tool block, else ``None`` (pure)."""
        body = payload.get("contentBlockDelta")
        if type(body) is not dict or len(payload) != 1:
            return None
        delta = body.get("delta")
        index = body.get("contentBlockIndex")
        if type(delta) is not dict or type(index) is not int or index not in self._tools:
            return None
        tool = delta.get("toolUse")
        text = tool.get("input") if type(tool) is dict else None
        if type(text) is not str or not text:
            return None
        return self._tools[index], index, text

    def _stop(self, body: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        index = read.req_count(body, "contentBlockIndex", "contentBlockStop", payload)
        if index in self._stopped:
            raise read.fail(f"content block {index} stopped twice", payload)
        self._stopped.add(index)
        if index in self._server:
            return self._server_stop(index, payload)
        if index not in self._tools:
            return []
        final = self._inputs.pop(index, None)
        call_id = self._tools.pop(index)
        return [d.CallDelta(id=call_id, index=index, final_arguments=final, start=False, end=True)]


# ------------------------------------------------------------------- the provider

_DETECTED = _EVENTS - {"error"}  # a bare {"error": ...} is OpenAI-compatible first


_Reader = Callable[[BedrockConverseAdapter, dict[str, Any], dict[str, Any]], list[d.Delta]]
# The events translate reads by name (an exception by its suffix); others carry nothing.
_READERS: dict[str, _Reader] = {
    "contentBlockDelta": BedrockConverseAdapter._delta,
    "contentBlockStart": BedrockConverseAdapter._start,
    "contentBlockStop": BedrockConverseAdapter._stop,
    "messageStop": BedrockConverseAdapter._message_stop,
    "metadata": BedrockConverseAdapter._metadata,
    "error": BedrockConverseAdapter._error,
}


def _exception(name: str, body: dict[str, Any], payload: dict[str, Any]) -> d.Delta:
    """An ``...Exception`` event as an error."""
    message = read.opt_str(body, "message", name, payload)
    message = message or read.opt_str(body, "originalMessage", name, payload)
    return d.ErrorDelta(message=f"{name}: {message or 'no message'}", error={name: body})


def _result_pieces(items: list[Any], pieces: list[Any], payload: Any) -> None:
    """Keep a server result's content items: text joined to the text before it."""
    where = "contentBlockDelta.delta"
    for item in items:
        item = read.ensure_dict(item, f"{where}.toolResult item", payload)
        text = read.opt_str(item, "text", f"{where}.toolResult", payload)
        if text is not None:
            if pieces and set(pieces[-1]) == {"text"}:
                pieces[-1] = {"text": pieces[-1]["text"] + text}
            else:
                pieces.append({"text": text})
        elif "json" in item:
            pieces.append({"json": copy.deepcopy(item["json"])})


def adapter(choice: int) -> BedrockConverseAdapter:
    """A fresh adapter for one stream (``choice`` is ignored: a Converse stream has one choice)."""
    return BedrockConverseAdapter()


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a Converse event (one key: an event name or an exception)."""
    if len(payload) != 1:
        return False
    name = next(iter(payload))
    return name in _DETECTED or (name.endswith("Exception") and name[:1].islower())


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """``{"toolSpec": {"name", "description", "inputSchema": {"json": schema}}}``;
    ``strict`` has no meaning for Bedrock and is ignored."""
    spec = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": {"json": parameters_for(tool, False)},
    }
    return {"toolSpec": spec}


def tool_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One user message of ``toolResult`` blocks; no results give ``[]``. A rich result's
    content is ``text``, ``image`` and ``document`` blocks whose ``source.bytes`` are the
    raw bytes (what boto3 takes; base64 on the JSON wire); a type Converse has no format
    for is a text note."""
    return user_blocks(
        [
            {
                "toolResult": {
                    "toolUseId": r.outcome.call_id,
                    "content": [{"text": r.text}] if r.parts is None else _rich_content(r.parts),
                    "status": "error" if r.error else "success",
                }
            }
            for r in results
        ]
    )


IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/csv": "csv",
    "application/msword": "doc",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
    "text/html": "html",
    "text/plain": "txt",
    "text/markdown": "md",
}
"""Converse's ``image`` and ``document`` formats by media type."""

_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9 \-()\[\]]+")


def _document_name(part: File, position: int) -> str:
    """A document name Converse accepts: letters, digits, single spaces, hyphens,
    parentheses and brackets (the file name's extension and other characters dropped)."""
    stem = (part.filename or "").rsplit(".", 1)[0]
    name = " ".join(_NAME_UNSAFE.sub(" ", stem).split())
    return name or f"document {position + 1}"


def _rich_content(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for position, part in enumerate(parts):
        if isinstance(part, Image) and part.media_type in IMAGE_FORMATS:
            image = {"format": IMAGE_FORMATS[part.media_type], "source": {"bytes": part.data}}
            blocks.append({"image": image})
        elif isinstance(part, File) and part.media_type in DOCUMENT_FORMATS:
            document = {
                "format": DOCUMENT_FORMATS[part.media_type],
                "name": _document_name(part, position),
                "source": {"bytes": part.data},
            }
            blocks.append({"document": document})
        else:
            text = part if isinstance(part, str) else fallback_text((part,))
            if text:
                blocks.append({"text": text})
    return blocks


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The assistant message with the response's content blocks in order (see the module
    docstring); reasoning without a signature cannot be sent back and is left out."""
    return assistant_blocks(
        response, call=_tool_use, text=lambda text: {"text": text}, reasoning=_reasoning
    )


def _tool_use(call: Call) -> dict[str, Any]:
    use = {"toolUseId": call.id, "name": wire_name(call.name)}
    return {"toolUse": {**use, "input": object_arguments(call)}}


def _reasoning(text: str, signature: Any) -> dict[str, Any]:
    return {"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}


def user_message(text: str) -> dict[str, Any]:
    """A user message holding ``text`` (what toolwire itself tells the model)."""
    return {"role": "user", "content": [{"text": text}]}


PROVIDER = Provider(
    name="bedrock-converse",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
)
