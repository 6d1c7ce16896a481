"""Cohere v2 chat: the ``"cohere"`` provider (detection, adapter, definitions, messages).

A call runs from ``tool-call-start`` to ``tool-call-end``; the tool plan is reasoning,
never text. Linear in the size of each event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..._core import deltas as d
from ..._core.messages import turn_parts
from ..._core.providers import Provider
from ..._core.response import Response
from .. import _payload as read
from .._definitions import function_definition
from .._format_parts import text_user_message
from .._openai_shapes import function_call_entry, tool_messages

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_FINISH_KINDS = d.finish_kinds(
    stop=("COMPLETE", "STOP_SEQUENCE"),
    tool_calls=("TOOL_CALL",),
    length=("MAX_TOKENS", "ERROR_LIMIT"),
    content_filter=("ERROR_TOXIC",),
    error=("ERROR", "TIMEOUT"),
)
_EVENT_TYPES = frozenset(
    {
        "message-start",
        "message-end",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "debug",
    }
)
_PLAN_PART = d.PartDelta(kind="reasoning", start=True, data={"tool_plan": True})
_THINKING_PART = d.PartDelta(kind="reasoning", start=True)


class CohereAdapter:
    """Translates one Cohere v2 chat stream (``format = "cohere"``)."""

    format: str = "cohere"
    fragment_start = False  # a tool-call-delta continues a started call

    def __init__(self) -> None:
        self._calls: dict[int, str | None] = {}  # open calls: index -> id
        self._ended: set[int] = set()
        self._finished = False
        self._in_plan = False  # the last part emitted is the tool plan

    def fragment(self, payload: dict[str, Any]) -> d.Fragment | None:
        """Fast path: ``(call id, index, text)`` when ``payload`` is one non-empty
        ``tool-call-delta`` of an open call, else ``None`` (pure)."""
        if payload.get("type") != "tool-call-delta":
            return None
        index = payload.get("index")
        delta = payload.get("delta")
        if type(index) is not int or index not in self._calls or type(delta) is not dict:
            return None
        message = delta.get("message")
        calls = message.get("tool_calls") if type(message) is dict else None
        if type(calls) is list and len(calls) == 1:
            calls = calls[0]
        function = calls.get("function") if type(calls) is dict else None
        text = function.get("arguments") if type(function) is dict else None
        if type(text) is not str or not text:
            return None
        return self._calls[index], index, text

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """The deltas of one event payload; ``event`` is the SSE event name, if any."""
        payload = read.ensure_dict(payload, "a Cohere event", payload)
        kind = read.opt_str(payload, "type", "event", payload) or event
        if kind is None:
            raise read.fail("Cohere event has no type", payload)
        reader = _READERS.get(kind)
        if reader is None:
            return []  # content-end, citations, debug and event types added later
        return reader(self, payload, kind)

    def _content_event(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        out = self._content(payload, kind)
        if out:
            self._in_plan = False
        return out

    def _plan(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        """A piece of the tool plan: reasoning, a new part where another part came between."""
        message = self._message(payload, kind)
        plan = read.opt_str(message, "tool_plan", f"{kind}.delta.message", payload)
        if not plan:
            return []
        start = [] if self._in_plan else [_PLAN_PART]
        self._in_plan = True
        return [*start, d.ReasoningPart(text=plan)]

    def _call_end(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        index, call_id = self._open_call(payload, kind)
        del self._calls[index]
        self._ended.add(index)
        return [d.CallDelta(id=call_id, index=index, start=False, end=True)]

    def _message_start(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        return [d.MetaDelta(response_id=read.opt_str(payload, "id", kind, payload) or None)]

    @staticmethod
    def _message(payload: dict[str, Any], kind: str) -> dict[str, Any]:
        delta = read.req_dict(payload, "delta", kind, payload)
        return read.req_dict(delta, "message", f"{kind}.delta", payload)

    def _content(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        message = self._message(payload, kind)
        content = read.opt_dict(message, "content", f"{kind}.delta.message", payload)
        if content is None:
            return []
        where = f"{kind}.delta.message.content"
        out: list[d.Delta] = []
        thinking = read.opt_str(content, "thinking", where, payload)
        if thinking:
            if self._in_plan:
                out.append(_THINKING_PART)
            out.append(d.ReasoningPart(text=thinking))
        text = read.opt_str(content, "text", where, payload)
        if text:
            out.append(d.TextPart(text=text))
        return out

    def _tool_call(self, payload: dict[str, Any], kind: str) -> dict[str, Any]:
        """``delta.message.tool_calls`` as one object (the v2 stream sends one per event)."""
        calls = self._message(payload, kind).get("tool_calls")
        if isinstance(calls, list) and len(calls) == 1:
            calls = calls[0]
        if not isinstance(calls, dict):
            raise read.fail(
                f"{kind}.delta.message.tool_calls must be an object, got {read.type_name(calls)}",
                payload,
            )
        return calls

    def _call_start(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        self._in_plan = False
        index = read.req_count(payload, "index", kind, payload)
        if index in self._calls or index in self._ended:
            raise read.fail(f"tool call {index} started twice", payload)
        call = self._tool_call(payload, kind)
        where = f"{kind}.delta.message.tool_calls"
        call_id = read.opt_str(call, "id", where, payload) or None
        function = read.req_dict(call, "function", where, payload)
        name = read.opt_str(function, "name", f"{where}.function", payload)
        if name is None:
            raise read.fail(f"{where}.function.name is missing", payload)
        arguments = read.opt_str(function, "arguments", f"{where}.function", payload) or ""
        self._calls[index] = call_id
        return [d.CallDelta(id=call_id, index=index, name=name, arguments=arguments, start=True)]

    def _open_call(self, payload: dict[str, Any], kind: str) -> tuple[int, str | None]:
        """The index and id of the started, not yet ended call that ``payload`` addresses."""
        index = read.req_count(payload, "index", kind, payload)
        if index not in self._calls:
            state = "already ended" if index in self._ended else "never started"
            raise read.fail(f"{kind} for tool call {index}, which {state}", payload)
        return index, self._calls[index]

    def _call_delta(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        index, call_id = self._open_call(payload, kind)
        call = self._tool_call(payload, kind)
        where = f"{kind}.delta.message.tool_calls"
        function = read.req_dict(call, "function", where, payload)
        fragment = read.opt_str(function, "arguments", f"{where}.function", payload) or ""
        if not fragment:
            return []
        return [d.CallDelta(id=call_id, index=index, arguments=fragment, start=False)]

    def _end(self, payload: dict[str, Any], kind: str) -> list[d.Delta]:
        if self._finished:
            raise read.fail("a second message-end", payload)
        self._finished = True
        delta = read.opt_dict(payload, "delta", kind, payload) or {}
        out: list[d.Delta] = []
        error = read.opt_str(delta, "error", f"{kind}.delta", payload)
        if error:
            out.append(d.ErrorDelta(message=error, error=delta))
        usage = read.opt_dict(delta, "usage", f"{kind}.delta", payload)
        if usage is not None:
            out.append(self._usage(usage, payload))
        reason = read.opt_str(delta, "finish_reason", f"{kind}.delta", payload)
        finish = _FINISH_KINDS.get(reason, "other") if reason is not None else "other"
        out.append(d.FinishDelta(raw=reason, kind=finish))
        return out

    @staticmethod
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> d.UsageDelta:
        where = "message-end.delta.usage"
        counts = read.opt_dict(usage, "tokens", where, payload)
        billed = read.opt_dict(usage, "billed_units", where, payload)
        source, source_where = (
            (counts, "tokens") if counts is not None else (billed, "billed_units")
        )
        source = source or {}
        inputs = read.opt_count(source, "input_tokens", f"{where}.{source_where}", payload)
        outputs = read.opt_count(source, "output_tokens", f"{where}.{source_where}", payload)
        total = None if inputs is None or outputs is None else inputs + outputs
        return d.UsageDelta(
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=total,
            cache_read_tokens=read.opt_count(usage, "cached_tokens", where, payload),
            raw=dict(usage),
        )


# ------------------------------------------------------------------- the provider


_Reader = Callable[[CohereAdapter, dict[str, Any], str], list[d.Delta]]
# The events translate reads, by type; the others carry nothing toolwire translates.
_READERS: dict[str, _Reader] = {
    "content-delta": CohereAdapter._content_event,
    "content-start": CohereAdapter._content_event,
    "tool-plan-delta": CohereAdapter._plan,
    "tool-call-delta": CohereAdapter._call_delta,
    "tool-call-start": CohereAdapter._call_start,
    "tool-call-end": CohereAdapter._call_end,
    "message-start": CohereAdapter._message_start,
    "message-end": CohereAdapter._end,
}


def adapter(choice: int) -> CohereAdapter:
    """A fresh adapter for one stream (``choice`` is ignored: a Cohere stream has one choice)."""
    return CohereAdapter()


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a Cohere v2 chat event (``type`` one of its events)."""
    return payload.get("type") in _EVENT_TYPES


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """OpenAI's function shape; ``strict`` has no meaning for Cohere and is ignored."""
    return function_definition(tool, False)


tool_results = tool_messages  # Cohere v2's tool messages copy OpenAI chat's


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The assistant message: the tool plan and every call, plus the text if any."""
    plan: list[str] = []
    entries: list[dict[str, Any]] = []
    for part, call in turn_parts(response):
        if call is not None:
            entries.append(function_call_entry(call))
        elif part.kind == "reasoning" and part.data.get("tool_plan"):
            plan.append(part.text)
    message: dict[str, Any] = {"role": "assistant"}
    if response.text or not entries:
        message["content"] = response.text
    if entries:
        if plan:
            message["tool_plan"] = "".join(plan)
        message["tool_calls"] = entries
    return [message]


user_message = text_user_message

PROVIDER = Provider(
    name="cohere",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
)
