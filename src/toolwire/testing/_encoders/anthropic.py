"""Scenario -> Anthropic Messages stream events (``/v1/messages``): the inverse of the adapter.

Blocks one at a time, each ``tool_use`` opened with ``input: {}``. Linear in the response.
"""

from __future__ import annotations

import json
import random
from typing import Any

from .._scenario_types import ScenarioResponse, ScenarioServerTool
from .._thinking_seal import seal
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    IdStyle,
    ProviderEncoder,
    TypedEvents,
    argument_object,
    finish_name,
    mint,
    pieces,
    typed_event,
)

__all__ = ["AnthropicEncoder"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


def _stop_reason(response: ScenarioResponse) -> str:
    if response.refusal:
        return "refusal"  # the refusal's words are the text (Anthropic has no other channel)
    if response.finish == "pause":
        return "pause_turn"
    return finish_name(response, length="max_tokens", tool_calls="tool_use", stop="end_turn")


def _server_blocks(
    tool: ScenarioServerTool, use_id: str, position: int
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The ``server_tool_use`` block of a provider-run tool and its ``<name>_tool_result``
    block (``None`` while it is pending)."""
    use = {"type": "server_tool_use", "id": use_id, "name": tool.name, "input": tool.input}
    if tool.result is None:
        return use, None
    result = {"type": f"{tool.name}_tool_result", "tool_use_id": use_id, "content": tool.result}
    return use, result


class AnthropicEncoder(ProviderEncoder):
    """Writes Anthropic Messages streams and bodies (``format = "anthropic"``)."""

    format = "anthropic"
    call_ids = IdStyle("toolu_01", 22)
    response_ids = IdStyle("msg_01", 22)
    server_tools = True

    def _message(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        usage = response.reported_usage()
        return {
            "id": response.response_id,
            "type": "message",
            "role": "assistant",
            "model": response.model or options.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 0,
                "output_tokens": 1,
                "service_tier": "standard",
            },
        }

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The events of ``response`` (see the module docstring)."""
        frames = TypedEvents()
        emit = frames.emit
        emit("message_start", message=self._message(response, options))
        emit("ping")
        index = 0

        def block(content_block: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
            nonlocal index
            emit("content_block_start", index=index, content_block=content_block)
            for delta in deltas:
                emit("content_block_delta", index=index, delta=delta)
            emit("content_block_stop", index=index)
            index += 1

        if response.reasoning:
            thinking = [
                {"type": "thinking_delta", "thinking": piece}
                for piece in pieces(response.reasoning, rng, 2, 24)
            ]
            sealed = seal(mint(rng, "", 24), response.reasoning)
            signature = {"type": "signature_delta", "signature": sealed}
            block({"type": "thinking", "thinking": "", "signature": ""}, [*thinking, signature])
        text = response.text or response.refusal  # a refusal's words come as text
        if text:
            texts = [{"type": "text_delta", "text": piece} for piece in pieces(text, rng, 1, 12)]
            block({"type": "text", "text": ""}, texts)
        for position, tool in enumerate(response.server_tools):
            use, result = _server_blocks(tool, tool.id or mint(rng, "srvtoolu_01", 22), position)
            fragments = ["", *pieces(json.dumps(tool.input), rng, 5, 40)]
            block(
                {**use, "input": {}},
                [{"type": "input_json_delta", "partial_json": f} for f in fragments],
            )
            if result is not None:
                block(result, [])
        for call in response.tool_calls:
            start: dict[str, Any] = {
                "type": "tool_use",
                "id": call.id,
                "name": call.name,
                "input": {},
            }
            fragments = ["", *pieces(call.raw_arguments, rng, 5, 40)]
            block(start, [{"type": "input_json_delta", "partial_json": f} for f in fragments])
        emit(
            "message_delta",
            terminal=True,
            delta={"stop_reason": _stop_reason(response), "stop_sequence": None},
            usage={"output_tokens": response.reported_usage().output_tokens},
        )
        emit("message_stop", terminal=True)
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The ``message`` object of a non-streamed ``POST /v1/messages``."""
        message = self._message(response, options)
        content: list[dict[str, Any]] = []
        if response.reasoning:
            sealed = seal(response.response_id or "body", response.reasoning)
            thinking = {"type": "thinking", "thinking": response.reasoning, "signature": sealed}
            content.append(thinking)
        if response.text or response.refusal:
            content.append({"type": "text", "text": response.text or response.refusal})
        for position, tool in enumerate(response.server_tools):
            use, result = _server_blocks(
                tool, tool.id or f"srvtoolu_01body{position:018d}", position
            )
            content.extend(b for b in (use, result) if b is not None)
        for call in response.tool_calls:
            why = "a non-streamed Anthropic body carries tool input as an object"
            arguments = argument_object(call, why)
            content.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}
            )
        message["content"] = content
        message["stop_reason"] = _stop_reason(response)
        message["usage"]["output_tokens"] = response.reported_usage().output_tokens
        return message

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """Anthropic's in-stream ``error`` event (``overloaded_error``, its HTTP 529)."""
        return typed_event("error", error={"type": "overloaded_error", "message": "Overloaded"})

    def error_body(self, status: int, message: str) -> ErrorReply:
        """Anthropic's error reply: ``{"type": "error", "error": {type, message}}``."""
        kind = _ERROR_TYPES.get(status, "api_error")
        body = {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_011CSimulated",
        }
        return ErrorReply(status, body, {"request-id": "req_011CSimulated"})
