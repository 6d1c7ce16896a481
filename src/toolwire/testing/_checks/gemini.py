"""What Gemini refuses in a request's contents (the simulator's 400).

After a ``model`` turn with ``functionCall`` parts, the next turn holds as many
``functionResponse`` parts with the same names; a ``functionResponse`` follows such a turn.
One pass over the turns: O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import ServedCalls

__all__ = ["check_request"]


def _parts(turn: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    parts = turn.get("parts")
    if not isinstance(parts, list):
        return []
    return [p[key] for p in parts if isinstance(p, Mapping) and isinstance(p.get(key), Mapping)]


def check_request(body: Mapping[str, Any], _served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring), or
    ``None`` when it would accept it."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        return "Invalid JSON payload received. 'contents' must be a list."
    calls: list[str] = []
    for position, turn in enumerate(contents):
        if not isinstance(turn, Mapping):
            return f"Invalid value at 'contents[{position}]'"
        responses = [str(p.get("name")) for p in _parts(turn, "functionResponse")]
        if calls:
            if len(responses) != len(calls):
                return (
                    "Please ensure that the number of function response parts is equal to the "
                    "number of function call parts of the function call turn."
                )
            if sorted(responses) != sorted(calls):
                return (
                    "Please ensure that the function response turn answers the function call "
                    f"turn: calls {calls}, responses {responses}."
                )
        elif responses:
            return (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        role = turn.get("role")
        calls = (
            [str(p.get("name")) for p in _parts(turn, "functionCall")] if role == "model" else []
        )
    return None
