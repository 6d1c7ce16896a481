"""Scenario -> Gemini ``GenerateContentResponse`` chunks (``:streamGenerateContent``): the
inverse of the adapter, calls whole as the Gemini API sends them. Linear in the response.
"""

from __future__ import annotations

import random
import string
from typing import Any

from .._quirks import PROFILES
from .._scenario_types import ScenarioCall, ScenarioResponse
from .._wire_writing import (
    EncodeOptions,
    ErrorReply,
    Frame,
    IdStyle,
    ProviderEncoder,
    argument_object,
    mint,
    pieces,
)

__all__ = ["GeminiEncoder", "google_status"]

_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_LOWER = string.ascii_lowercase + string.digits


def google_status(status: int) -> str:
    """Google's canonical status name for an HTTP status."""
    return _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")


def _arguments(call: ScenarioCall) -> dict[str, Any]:
    why = "Gemini sends function call arguments as objects, so they cannot be cut or invalid"
    return argument_object(call, why)


def _code_parts() -> list[dict[str, Any]]:
    """What the code_execution tool adds: the code the model ran, and its result."""
    code = {"executableCode": {"language": "PYTHON", "code": "print(sum(range(10)))"}}
    return [code, {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "45\n"}}]


def _server_parts(rng: random.Random) -> list[dict[str, Any]]:
    """A built-in tool the API ran itself: its signed toolCall and its toolResponse."""
    call_id = mint(rng, "", 8, _LOWER)
    call = {"toolType": "GOOGLE_SEARCH_WEB", "id": call_id, "args": {"queries": ["weather"]}}
    signed = {"toolCall": call, "thoughtSignature": mint(rng, "c2ln", 40)}
    return [signed, {"toolResponse": {"id": call_id, "response": {"results": 3}}}]


class GeminiEncoder(ProviderEncoder):
    """Writes Gemini streams and bodies (``format = "gemini"``)."""

    format = "gemini"
    text_arguments = False
    profiles = tuple(p for p in PROFILES.values() if "gemini" in p.formats)
    call_ids = IdStyle("", 8, _LOWER)
    response_ids = IdStyle("", 22)

    def _chunk(
        self,
        response: ScenarioResponse,
        options: EncodeOptions,
        parts: list[dict[str, Any]],
        *,
        finish: str | None = None,
    ) -> dict[str, Any]:
        usage = response.reported_usage()
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        metadata: dict[str, Any] = {
            "promptTokenCount": usage.input_tokens,
            "totalTokenCount": usage.input_tokens,
        }
        if finish is not None:
            candidate["finishReason"] = finish
            metadata = {
                "promptTokenCount": usage.input_tokens,
                "candidatesTokenCount": usage.output_tokens,
                "totalTokenCount": usage.input_tokens + usage.output_tokens,
            }
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": metadata,
            "modelVersion": response.model or options.model,
            "responseId": response.response_id,
        }

    @staticmethod
    def _finish(response: ScenarioResponse) -> str:
        if response.refusal:
            return "SAFETY"  # Gemini's way to decline: a safety finish
        return "MAX_TOKENS" if response.finish_kind == "length" else "STOP"

    @staticmethod
    def _call_part(call: Any) -> dict[str, Any]:
        function: dict[str, Any] = {"name": call.name, "args": _arguments(call)}
        if call.id:
            function = {"id": call.id, **function}
        return {"functionCall": function}

    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The chunks of ``response`` (see the module docstring)."""
        frames: list[Frame] = []
        if options.has("code-execution"):
            frames.append(Frame(self._chunk(response, options, _code_parts())))
        if options.has("server-tool-parts"):
            frames.append(Frame(self._chunk(response, options, _server_parts(rng))))
        for piece in pieces(response.reasoning, rng, 10, 60):
            frames.append(Frame(self._chunk(response, options, [{"text": piece, "thought": True}])))
        for piece in pieces(response.text, rng, 5, 40):
            frames.append(Frame(self._chunk(response, options, [{"text": piece}])))
        group: list[dict[str, Any]] = []
        for position, call in enumerate(response.tool_calls):
            part = self._call_part(call)
            if position == 0 and options.has("thought-signatures"):
                part["thoughtSignature"] = mint(rng, "c2ln", 40)
            group.append(part)
            if rng.random() < 0.5:
                frames.append(Frame(self._chunk(response, options, group)))
                group = []
        if group:
            frames.append(Frame(self._chunk(response, options, group)))
        last = self._chunk(response, options, [{"text": ""}], finish=self._finish(response))
        frames.append(Frame(last, terminal=True))
        return frames

    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The ``GenerateContentResponse`` of ``:generateContent``."""
        parts: list[dict[str, Any]] = []
        if response.reasoning:
            parts.append({"text": response.reasoning, "thought": True})
        if response.text:
            parts.append({"text": response.text})
        parts += [self._call_part(call) for call in response.tool_calls]
        return self._chunk(response, options, parts, finish=self._finish(response))

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """What Gemini sends when a stream fails: an ``{"error": {...}}`` chunk."""
        return Frame(self.error_body(500, "An internal error has occurred.").body)

    def error_body(self, status: int, message: str) -> ErrorReply:
        """Google's error reply: ``{"error": {code, message, status}}``."""
        body = {"error": {"code": status, "message": message, "status": google_status(status)}}
        return ErrorReply(status, body)
