"""Scenario -> OpenAI Responses API events (``/v1/responses``): the inverse of the adapter.

Output items one after another; sequence numbers are assigned before faults apply.
Linear in the response.
"""

from __future__ import annotations

import random
from typing import Any

from .._scenario_types import ScenarioResponse
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    IdStyle,
    ProviderEncoder,
    TypedEvents,
    mint,
    pieces,
    typed_event,
)
from ._openai_shapes import CALL_IDS, openai_error

__all__ = ["OpenAIResponsesEncoder"]

_HEX = "0123456789abcdef"


class OpenAIResponsesEncoder(ProviderEncoder):
    """Writes Responses API streams and bodies (``format = "openai-responses"``)."""

    format = "openai-responses"
    call_ids = CALL_IDS
    response_ids = IdStyle("resp_", 48, _HEX)

    def _items(
        self, response: ScenarioResponse, rng: random.Random
    ) -> list[tuple[str, dict[str, Any]]]:
        """(kind, completed item) for each output item, with seeded item ids."""
        items: list[tuple[str, dict[str, Any]]] = []
        if response.reasoning:
            item: dict[str, Any] = {
                "id": mint(rng, "rs_", 48, _HEX),
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": response.reasoning}],
            }
            items.append(("reasoning", item))
        if response.text or response.refusal:
            content: list[dict[str, Any]] = []
            if response.text:
                content.append(
                    {
                        "type": "output_text",
                        "text": response.text,
                        "annotations": [],
                        "logprobs": [],
                    }
                )
            if response.refusal:
                content.append({"type": "refusal", "refusal": response.refusal})
            item = {
                "id": mint(rng, "msg_", 48, _HEX),
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
            items.append(("message", item))
        for call in response.tool_calls:
            item = {
                "id": mint(rng, "fc_", 48, _HEX),
                "type": "function_call",
                "status": "completed",
                "arguments": call.raw_arguments,
                "call_id": call.id,
                "name": call.name,
            }
            items.append(("function_call", item))
        return items

    def _response(
        self,
        response: ScenarioResponse,
        options: EncodeOptions,
        *,
        status: str,
        output: list[dict[str, Any]],
        usage: bool,
    ) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": response.response_id,
            "object": "response",
            "created_at": 1_700_000_000,
            "status": status,
            "error": None,
            "incomplete_details": None,
            "model": response.model or options.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": None,
        }
        if status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens"}
        if usage:
            counts = response.reported_usage()
            out["usage"] = {
                "input_tokens": counts.input_tokens,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": counts.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": counts.input_tokens + counts.output_tokens,
            }
        return out

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The events of ``response`` (see the module docstring)."""
        frames = TypedEvents()
        emit = frames.emit
        empty = self._response(response, options, status="in_progress", output=[], usage=False)
        emit("response.created", response=empty)
        emit("response.in_progress", response=empty)
        items = self._items(response, rng)
        done_items: list[dict[str, Any]] = []
        for index, (kind, item) in enumerate(items):
            item_id = item["id"]
            place = {"item_id": item_id, "output_index": index}
            if kind == "reasoning":
                emit("response.output_item.added", output_index=index, item={**item, "summary": []})
                part: dict[str, Any] = {"type": "summary_text", "text": ""}
                emit("response.reasoning_summary_part.added", summary_index=0, part=part, **place)
                for piece in pieces(response.reasoning, rng, 1, 8):
                    emit(
                        "response.reasoning_summary_text.delta",
                        summary_index=0,
                        delta=piece,
                        **place,
                    )
                emit(
                    "response.reasoning_summary_text.done",
                    summary_index=0,
                    text=response.reasoning,
                    **place,
                )
                part = {"type": "summary_text", "text": response.reasoning}
                emit("response.reasoning_summary_part.done", summary_index=0, part=part, **place)
            elif kind == "message":
                started = {**item, "status": "in_progress", "content": []}
                emit("response.output_item.added", output_index=index, item=started)
                for at, done in enumerate(item["content"]):
                    if done["type"] == "refusal":
                        part = {"type": "refusal", "refusal": ""}
                        emit("response.content_part.added", content_index=at, part=part, **place)
                        for piece in pieces(response.refusal, rng, 1, 8):
                            emit("response.refusal.delta", content_index=at, delta=piece, **place)
                        emit(
                            "response.refusal.done",
                            content_index=at,
                            refusal=response.refusal,
                            **place,
                        )
                        emit("response.content_part.done", content_index=at, part=done, **place)
                        continue
                    part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                    emit("response.content_part.added", content_index=at, part=part, **place)
                    for piece in pieces(response.text, rng, 1, 8):
                        emit(
                            "response.output_text.delta",
                            content_index=at,
                            delta=piece,
                            logprobs=[],
                            **place,
                        )
                    emit(
                        "response.output_text.done",
                        content_index=at,
                        text=response.text,
                        logprobs=[],
                        **place,
                    )
                    emit("response.content_part.done", content_index=at, part=done, **place)
            else:
                started = {**item, "status": "in_progress", "arguments": ""}
                emit("response.output_item.added", output_index=index, item=started)
                for piece in pieces(item["arguments"], rng, 1, 8):
                    emit("response.function_call_arguments.delta", delta=piece, **place)
                emit("response.function_call_arguments.done", arguments=item["arguments"], **place)
            emit("response.output_item.done", output_index=index, item=item)
            done_items.append(item)
        if response.finish_kind == "length":
            final = self._response(
                response, options, status="incomplete", output=done_items, usage=True
            )
            emit("response.incomplete", terminal=True, response=final)
        else:
            final = self._response(
                response, options, status="completed", output=done_items, usage=True
            )
            emit("response.completed", terminal=True, response=final)
        for number, frame in enumerate(frames):
            frame.payload["sequence_number"] = number  # type: ignore[index]  # always objects
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The ``response`` object, as ``POST /v1/responses`` without streaming returns it."""
        rng = random.Random(response.response_id)
        output = [item for _, item in self._items(response, rng)]
        status = "incomplete" if response.finish_kind == "length" else "completed"
        return self._response(response, options, status=status, output=output, usage=True)

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """The Responses ``error`` event (a flat object; its number follows the last)."""
        return typed_event(
            "error",
            code="server_error",
            message="The server had an error while processing your request.",
            param=None,
            sequence_number=10_000_000,
        )

    def error_body(self, status: int, message: str) -> ErrorReply:
        """OpenAI's HTTP error reply."""
        return openai_error(status, message)
