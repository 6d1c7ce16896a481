"""OpenAI Responses API stream events (and compatible servers) -> deltas.

Strategy: dispatch on the event ``type`` (the SSE event name when ``type`` is missing).
Function calls are correlated by ``item_id`` (passed as ``ref``); the public id is the
item's ``call_id``, and ``item_id`` is kept in the call's metadata because a follow-up
request must echo it. ``output_item.added`` opens a call (``start=True``); argument
``.delta`` events continue one (``start=False``: a delta for an item that never started
is a format error in the assembler); ``function_call_arguments.done`` and
``output_item.done`` restate the whole arguments (``final_arguments``), so servers that
send the arguments only there (LM Studio) still assemble, and ``output_item.done`` ends
the call. Custom tools (free-form ``input`` text) are carried as a JSON string: the
adapter opens it with ``"``, escapes every fragment and closes it at ``.done``, so the
call's arguments are the input text as a JSON string value.

Terminal events: ``response.completed`` (kind ``stop``), ``response.incomplete``
(``max_output_tokens`` -> ``length``, ``content_filter``), ``response.failed``
(``error``, plus an :class:`ErrorDelta`); a top-level ``error`` event is an
:class:`ErrorDelta`. ``sequence_number`` must increase when present (a replayed or
reordered event is a format error). Unknown event types give ``[]``.

Complexity: O(size of the event) per event; state is the custom-tool item set and the
last sequence number.
"""

from __future__ import annotations

import json
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
from .._errors import StreamFormatError
from ._payload import error_message, openai_usage

__all__ = ["OpenAIResponsesAdapter", "responses_usage"]

_CALL_ITEMS = ("function_call", "custom_tool_call")


def _bad(payload: Any, what: str) -> StreamFormatError:
    return StreamFormatError(f"openai-responses payload: {what}", payload=payload)


def _opt_str(payload: Any, obj: dict[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) is not str:
        raise _bad(payload, f"{key!r} is not a string")
    return value or None


def _obj(payload: Any, obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    if type(value) is not dict:
        raise _bad(payload, f"{key!r} is not an object")
    return value


def responses_usage(usage: dict[str, Any]) -> UsageDelta:
    """Read a Responses ``usage`` object (input/output/total tokens and their details)."""
    return openai_usage(usage, input_key="input_tokens", output_key="output_tokens")


def _escaped(text: str) -> str:
    """``text`` as the inside of a JSON string literal (no quotes)."""
    return json.dumps(text, ensure_ascii=False)[1:-1]


class OpenAIResponsesAdapter:
    """Translate Responses API streaming events into deltas."""

    format = "openai-responses"

    __slots__ = ("_custom", "_seq")

    def __init__(self) -> None:
        self._custom: set[str] = set()  # item ids of custom tool calls (free-form input)
        self._seq = -1

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """Turn one event into deltas (``[]`` for event types that carry nothing here)."""
        kind = payload.get("type", event)
        if type(kind) is not str:
            raise _bad(payload, "'type' is not a string")
        seq = payload.get("sequence_number")
        if seq is not None:
            if type(seq) is not int:
                raise _bad(payload, "'sequence_number' is not an integer")
            if seq <= self._seq:
                raise _bad(payload, f"sequence_number {seq} after {self._seq}")
            self._seq = seq

        if kind == "response.function_call_arguments.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [self._continue(payload, delta)]
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [TextPart(text=delta)] if delta else []
        if kind in (
            "response.reasoning_summary_text.delta",
            "response.reasoning_text.delta",
        ):
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [ReasoningPart(text=delta)] if delta else []
        if kind == "response.custom_tool_call_input.delta":
            delta = payload.get("delta")
            if type(delta) is not str:
                raise _bad(payload, "'delta' is not a string")
            return [self._continue(payload, _escaped(delta))]
        if kind == "response.function_call_arguments.done":
            args = payload.get("arguments")
            if type(args) is not str:
                raise _bad(payload, "'arguments' is not a string")
            ref = _opt_str(payload, payload, "item_id")
            return [
                CallDelta(ref=ref, index=self._index(payload), final_arguments=args, start=False)
            ]
        if kind == "response.custom_tool_call_input.done":
            text = payload.get("input")
            if type(text) is not str:
                raise _bad(payload, "'input' is not a string")
            ref = _opt_str(payload, payload, "item_id")
            final = json.dumps(text, ensure_ascii=False)
            return [
                CallDelta(ref=ref, index=self._index(payload), final_arguments=final, start=False)
            ]
        if kind == "response.output_item.added":
            return self._item(payload, done=False)
        if kind == "response.output_item.done":
            return self._item(payload, done=True)
        if kind in ("response.created", "response.in_progress"):
            response = _obj(payload, payload, "response")
            return [self._meta(payload, response)]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._terminal(payload, kind)
        if kind == "error":
            error = payload.get("error", payload)
            return [ErrorDelta(message=error_message(error), error=error)]
        return []

    @staticmethod
    def _index(payload: dict[str, Any]) -> int | None:
        index = payload.get("output_index")
        if index is not None and type(index) is not int:
            raise _bad(payload, "'output_index' is not an integer")
        return index

    def _continue(self, payload: dict[str, Any], fragment: str) -> CallDelta:
        ref = _opt_str(payload, payload, "item_id")
        return CallDelta(ref=ref, index=self._index(payload), arguments=fragment, start=False)

    def _meta(self, payload: Any, response: dict[str, Any]) -> MetaDelta:
        return MetaDelta(
            response_id=_opt_str(payload, response, "id"),
            model=_opt_str(payload, response, "model"),
        )

    def _item(self, payload: dict[str, Any], *, done: bool) -> list[Delta]:
        item = _obj(payload, payload, "item")
        item_type = item.get("type")
        if item_type not in _CALL_ITEMS:
            return []
        item_id = _opt_str(payload, item, "id")
        call_id = _opt_str(payload, item, "call_id")
        name = _opt_str(payload, item, "name")
        index = self._index(payload)
        custom = item_type == "custom_tool_call"
        args = item.get("input" if custom else "arguments")
        if args is not None and type(args) is not str:
            raise _bad(payload, "the item's arguments are not a string")
        metadata: dict[str, Any] = {}
        if item_id:
            metadata["item_id"] = item_id
        if custom:
            metadata["type"] = "custom_tool_call"
        if not done:
            if custom:
                if item_id:
                    self._custom.add(item_id)
                fragment = '"' + _escaped(args or "")
            else:
                fragment = args or ""
            return [
                CallDelta(
                    id=call_id,
                    ref=item_id,
                    index=index,
                    name=name,
                    arguments=fragment,
                    start=True,
                    metadata=metadata,
                )
            ]
        final = None
        if args is not None:
            final = json.dumps(args, ensure_ascii=False) if custom else args
        return [
            CallDelta(
                id=call_id,
                ref=item_id,
                index=index,
                name=name,
                final_arguments=final,
                start=False,
                end=True,
                metadata=metadata,
            )
        ]

    def _terminal(self, payload: dict[str, Any], kind: str) -> list[Delta]:
        response = _obj(payload, payload, "response")
        out: list[Delta] = [self._meta(payload, response)]
        usage = response.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise _bad(payload, "'usage' is not an object")
            out.append(responses_usage(usage))
        status = response.get("status")
        raw = status if type(status) is str else kind.rpartition(".")[2]
        finish: FinishKind = "stop"
        if kind == "response.incomplete":
            details = response.get("incomplete_details")
            reason = details.get("reason") if type(details) is dict else None
            # max_output_tokens, or an unknown reason: the output is not complete
            finish = "content_filter" if reason == "content_filter" else "length"
            raw = reason if type(reason) is str else raw
        elif kind == "response.failed":
            error = response.get("error")
            out.append(ErrorDelta(message=error_message(error), error=error))
            finish = "error"
        out.append(FinishDelta(raw=raw, kind=finish))
        return out
