"""Wire shapes the encoders of OpenAI's APIs and of their copies share: OpenAI's call ids
and error reply (Chat and Responses), and a call as a chat message's ``tool_calls`` entry
(Chat and Cohere v2). Encoders import this module, never each other.
"""

from __future__ import annotations

from typing import Any

from .._scenario_types import ScenarioCall
from .._wire_writing import ErrorReply, IdStyle

__all__ = ["CALL_IDS", "function_call", "openai_error"]

CALL_IDS = IdStyle("call_", 24)
"""OpenAI's call ids (``call_`` and 24 letters and digits), Chat's and Responses'."""

_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("invalid_request_error", "unsupported_country_region_territory"),
    404: ("invalid_request_error", "model_not_found"),
    409: ("invalid_request_error", None),
    422: ("invalid_request_error", None),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_error(status: int, message: str) -> ErrorReply:
    """OpenAI's error reply: ``{"error": {message, type, param, code}}`` (Chat and
    Responses share it); 5xx are ``server_error``."""
    kind, code = _ERROR_TYPES.get(status, ("server_error", None))
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    headers = {"x-request-id": "req_simulated"}
    if status == 429:
        headers.update({"x-ratelimit-limit-requests": "500", "x-ratelimit-remaining-requests": "0"})
    return ErrorReply(status, body, headers)


def function_call(call: ScenarioCall) -> dict[str, Any]:
    """A call as a message's ``tool_calls`` entry, arguments as text (Cohere v2 copies it)."""
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.raw_arguments},
    }
