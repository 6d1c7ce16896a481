"""Scenario -> Cohere v2 chat stream events (``/v2/chat``): the inverse of the adapter.

Linear in the response.
"""

from __future__ import annotations

import random
import string
from typing import Any

from .._scenario_types import ScenarioResponse
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    ProviderEncoder,
    TypedEvents,
    finish_name,
    mint,
    pieces,
    typed_event,
    with_ids,
)
from ._openai_shapes import function_call

__all__ = ["CohereEncoder"]

_LOWER = string.ascii_lowercase + string.digits
_HEX = "0123456789abcdef"


def _uuid(rng: random.Random) -> str:
    raw = mint(rng, "", 32, _HEX)
    return f"{raw[:8]}-{raw[8:12]}-4{raw[13:16]}-a{raw[17:20]}-{raw[20:]}"


def _finish(response: ScenarioResponse) -> str:
    return finish_name(response, length="MAX_TOKENS", tool_calls="TOOL_CALL", stop="COMPLETE")


def _usage(response: ScenarioResponse) -> dict[str, Any]:
    usage = response.reported_usage()
    counts = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    return {"billed_units": dict(counts), "tokens": dict(counts), "cached_tokens": 0}


class CohereEncoder(ProviderEncoder):
    """Writes Cohere v2 chat streams and bodies (``format = "cohere"``)."""

    format = "cohere"
    refusals = False

    def ids(self, response: ScenarioResponse, *, rng: random.Random) -> ScenarioResponse:
        """Mint a UUID response id and ``<name>_<12 chars>`` call ids where none are given."""
        return with_ids(
            response, lambda call: mint(rng, f"{call.name}_", 12, _LOWER), lambda: _uuid(rng)
        )

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The events of ``response`` (see the module docstring)."""
        frames = TypedEvents()
        emit = frames.emit
        empty = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        emit("message-start", id=response.response_id, delta={"message": empty})
        content_index = 0
        if response.reasoning and response.tool_calls:
            for piece in pieces(response.reasoning, rng, 1, 8):
                emit("tool-plan-delta", delta={"message": {"tool_plan": piece}})
        elif response.reasoning:
            start = {"type": "thinking", "thinking": ""}
            emit("content-start", index=0, delta={"message": {"content": start}})
            for piece in pieces(response.reasoning, rng, 1, 8):
                emit("content-delta", index=0, delta={"message": {"content": {"thinking": piece}}})
            emit("content-end", index=0)
            content_index = 1
        if response.text:
            start = {"type": "text", "text": ""}
            emit("content-start", index=content_index, delta={"message": {"content": start}})
            for piece in pieces(response.text, rng, 1, 8):
                emit(
                    "content-delta",
                    index=content_index,
                    delta={"message": {"content": {"text": piece}}},
                )
            emit("content-end", index=content_index)
        for index, call in enumerate(response.tool_calls):
            header = {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            emit("tool-call-start", index=index, delta={"message": {"tool_calls": header}})
            for piece in pieces(call.raw_arguments, rng, 1, 8):
                fragment = {"function": {"arguments": piece}}
                emit("tool-call-delta", index=index, delta={"message": {"tool_calls": fragment}})
            emit("tool-call-end", index=index)
        emit(
            "message-end",
            terminal=True,
            delta={"finish_reason": _finish(response), "usage": _usage(response)},
        )
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The non-streamed v2 chat response."""
        message: dict[str, Any] = {"role": "assistant"}
        if response.text:
            message["content"] = [{"type": "text", "text": response.text}]
        if response.reasoning:
            message["tool_plan"] = response.reasoning
        if response.tool_calls:
            message["tool_calls"] = [function_call(call) for call in response.tool_calls]
        return {
            "id": response.response_id,
            "message": message,
            "finish_reason": _finish(response),
            "usage": _usage(response),
        }

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """A ``message-end`` that reports a failed generation."""
        failed = {"finish_reason": "ERROR", "error": "internal server error"}
        return typed_event("message-end", delta=failed)

    def error_body(self, status: int, message: str) -> ErrorReply:
        """Cohere's error reply: ``{"id", "message"}``."""
        return ErrorReply(
            status, {"id": "00000000-0000-4000-a000-000000000000", "message": message}
        )
