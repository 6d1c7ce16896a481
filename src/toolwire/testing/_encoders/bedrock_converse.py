"""Scenario -> Bedrock ``ConverseStream`` events in AWS event-stream framing: the inverse of
the adapter and of the event-stream decoder. Linear in the response.
"""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from typing import Any

from .._scenario_types import ScenarioResponse
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    Framing,
    IdStyle,
    ProviderEncoder,
    argument_object,
    finish_name,
    mint,
    pieces,
)

__all__ = ["BedrockEncoder", "bedrock_error_code"]

_PAD = string.ascii_letters + string.digits
_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def bedrock_error_code(status: int) -> str:
    """The Bedrock runtime exception name for an HTTP status."""
    return _ERRORS.get(
        status, "InternalServerException" if status >= 500 else "ValidationException"
    )


def _reasoning_deltas(reasoning: str, rng: random.Random) -> Iterator[dict[str, Any]]:
    """The ``reasoningContent`` deltas of ``reasoning``: its text pieces, then a signature."""
    for piece in pieces(reasoning, rng, 2, 24):
        yield {"reasoningContent": {"text": piece}}
    yield {"reasoningContent": {"signature": mint(rng, "", 48)}}


def _input_deltas(arguments: str, rng: random.Random) -> Iterator[dict[str, Any]]:
    """The ``toolUse`` deltas of a call's argument text, in pieces of 5 to 40 characters."""
    for piece in pieces(arguments, rng, 5, 40):
        yield {"toolUse": {"input": piece}}


def _stop_reason(response: ScenarioResponse) -> str:
    # Converse names its stop reasons after Anthropic's
    return finish_name(response, length="max_tokens", tool_calls="tool_use", stop="end_turn")


class BedrockEncoder(ProviderEncoder):
    """Writes Bedrock ConverseStream event streams and Converse bodies."""

    format = "bedrock-converse"
    framing: Framing = "aws-eventstream"
    call_ids = IdStyle("tooluse_", 22, _PAD + "_-")  # responses have no id
    refusals = False

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The events of ``response`` (see the module docstring)."""
        frames: list[Frame] = []

        def emit(name: str, terminal: bool = False, **body: Any) -> None:
            body["p"] = _PAD[: rng.randint(1, len(_PAD))]
            frames.append(Frame(body, event=name, terminal=terminal))

        index = 0

        def block(deltas: Iterator[dict[str, Any]], start: dict[str, Any] | None = None) -> None:
            nonlocal index
            if start is not None:
                emit("contentBlockStart", contentBlockIndex=index, start=start)
            for delta in deltas:  # lazily: the seeded draws keep their order with the padding
                emit("contentBlockDelta", contentBlockIndex=index, delta=delta)
            emit("contentBlockStop", contentBlockIndex=index)
            index += 1

        emit("messageStart", role="assistant")
        if response.reasoning:
            block(_reasoning_deltas(response.reasoning, rng))
        if response.text:
            block({"text": piece} for piece in pieces(response.text, rng, 1, 12))
        for call in response.tool_calls:
            start = {"toolUse": {"toolUseId": call.id, "name": call.name}}
            block(_input_deltas(call.raw_arguments, rng), start)
        emit("messageStop", terminal=True, stopReason=_stop_reason(response))
        usage = response.reported_usage()
        emit(
            "metadata",
            terminal=True,
            usage={
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "totalTokens": usage.input_tokens + usage.output_tokens,
            },
            metrics={"latencyMs": rng.randint(100, 2000)},
        )
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The ``Converse`` response body."""
        content: list[dict[str, Any]] = []
        if response.reasoning:
            reasoning = {"reasoningText": {"text": response.reasoning, "signature": "s"}}
            content.append({"reasoningContent": reasoning})
        if response.text:
            content.append({"text": response.text})
        for call in response.tool_calls:
            arguments = argument_object(call, "a Converse body carries toolUse input as an object")
            content.append(
                {"toolUse": {"toolUseId": call.id, "name": call.name, "input": arguments}}
            )
        usage = response.reported_usage()
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _stop_reason(response),
            "usage": {
                "inputTokens": usage.input_tokens,
                "outputTokens": usage.output_tokens,
                "totalTokens": usage.input_tokens + usage.output_tokens,
            },
            "metrics": {"latencyMs": 321},
        }

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """A ``modelStreamErrorException`` exception message."""
        headers = {
            ":exception-type": "modelStreamErrorException",
            ":content-type": "application/json",
            ":message-type": "exception",
        }
        payload = {
            "message": "The model stream failed.",
            "originalStatusCode": 500,
            "originalMessage": "Internal error",
        }
        return Frame(payload, event="modelStreamErrorException", headers=headers)

    def error_body(self, status: int, message: str) -> ErrorReply:
        """Bedrock's error reply: ``x-amzn-ErrorType`` and ``{"message"}``."""
        code = bedrock_error_code(status)
        headers = {
            "x-amzn-ErrorType": f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/",
            "x-amzn-RequestId": "00000000-0000-4000-8000-000000000000",
        }
        return ErrorReply(status, {"message": message}, headers)
