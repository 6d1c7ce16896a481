"""What the OpenAI Responses API refuses in a request's input (the simulator's 400).

Every ``function_call_output.call_id`` matches a ``function_call`` in the input, or in the
output of the ``previous_response_id`` (the simulator remembers the calls of the responses
it served; an id it never served is refused as the API does). O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import ServedCalls

__all__ = ["check_request"]


def check_request(body: Mapping[str, Any], served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring), or
    ``None`` when it would accept it."""
    items = body.get("input")
    if not isinstance(items, list):
        return None  # a plain string input carries no tool outputs
    known: set[str] = set()
    previous = body.get("previous_response_id")
    if isinstance(previous, str):
        calls = served(previous)
        if calls is None:
            return f"Previous response with id '{previous}' not found."
        known |= calls
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "function_call":
            call_id = item.get("call_id")
            if isinstance(call_id, str):
                known.add(call_id)
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "function_call_output":
            call_id = item.get("call_id")
            if call_id not in known:
                return f"No tool call found for function call output with call_id {call_id}."
    return None
