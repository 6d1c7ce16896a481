"""Scenario -> Ollama native ``/api/chat`` NDJSON lines: the inverse of the adapter.

Each call whole, without an id, as Ollama sends it. Linear in the response.
"""

from __future__ import annotations

import random
from typing import Any

from .._scenario_types import ScenarioCall, ScenarioResponse
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    Framing,
    ProviderEncoder,
    argument_object,
    pieces,
)

__all__ = ["OllamaEncoder"]


def _arguments(call: ScenarioCall) -> dict[str, Any]:
    return argument_object(call, "Ollama sends tool call arguments as objects")


class OllamaEncoder(ProviderEncoder):
    """Writes Ollama ``/api/chat`` streams and bodies (``format = "ollama"``; no ids)."""

    format = "ollama"
    framing: Framing = "ndjson"
    text_arguments = False
    refusals = False

    def _done(self, response: ScenarioResponse, rng: random.Random) -> dict[str, Any]:
        usage = response.reported_usage()
        return {
            "done": True,
            "done_reason": "length" if response.finish_kind == "length" else "stop",
            "total_duration": rng.randint(10**8, 10**10),
            "load_duration": rng.randint(10**6, 10**8),
            "prompt_eval_count": usage.input_tokens,
            "prompt_eval_duration": rng.randint(10**6, 10**9),
            "eval_count": usage.output_tokens,
            "eval_duration": rng.randint(10**7, 10**10),
        }

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The NDJSON lines of ``response`` (see the module docstring)."""
        model = response.model or options.model
        clock = [rng.randint(0, 10**6)]  # microseconds into the minute, always increasing

        def line(message: dict[str, Any], **more: Any) -> dict[str, Any]:
            clock[0] += rng.randint(1_000, 40_000)
            seconds, micros = divmod(clock[0], 10**6)
            stamp = f"2025-01-01T00:{seconds // 60 % 60:02d}:{seconds % 60:02d}.{micros:06d}Z"
            return {"model": model, "created_at": stamp, "message": message, "done": False, **more}

        frames: list[Frame] = []
        for piece in pieces(response.reasoning, rng, 1, 8):
            frames.append(Frame(line({"role": "assistant", "content": "", "thinking": piece})))
        for piece in pieces(response.text, rng, 1, 8):
            frames.append(Frame(line({"role": "assistant", "content": piece})))
        for index, call in enumerate(response.tool_calls):
            function = {"index": index, "name": call.name, "arguments": _arguments(call)}
            message = {"role": "assistant", "content": "", "tool_calls": [{"function": function}]}
            frames.append(Frame(line(message)))
        last = line({"role": "assistant", "content": ""}, **self._done(response, rng))
        frames.append(Frame(last, terminal=True))
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The single ``ChatResponse`` of a ``"stream": false`` request."""
        message: dict[str, Any] = {"role": "assistant", "content": response.text}
        if response.reasoning:
            message["thinking"] = response.reasoning
        if response.tool_calls:
            message["tool_calls"] = [
                {"function": {"index": i, "name": call.name, "arguments": _arguments(call)}}
                for i, call in enumerate(response.tool_calls)
            ]
        return {
            "model": response.model or options.model,
            "created_at": "2025-01-01T00:00:00.000000Z",
            "message": message,
            **self._done(response, random.Random(0)),
        }

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """Ollama's in-stream error line: ``{"error": "..."}``."""
        return Frame({"error": "an error was encountered while running the model"})

    def error_body(self, status: int, message: str) -> ErrorReply:
        """Ollama's error reply: ``{"error": "..."}``."""
        return ErrorReply(status, {"error": message})
