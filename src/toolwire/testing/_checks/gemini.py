"""What Gemini refuses in a request's tools and contents (the simulator's 400).

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


# Fields of a function declaration; the Tool around them has none of these.
_DECLARATION_FIELDS = ("name", "description", "parameters", "parametersJsonSchema")


def _check_tools(tools: Any) -> str | None:
    """Gemini's refusal of a ``tools`` list: each entry is a ``Tool`` (a bare function
    declaration is not), and a declaration gives ``parameters`` or
    ``parametersJsonSchema``, never both."""
    if not isinstance(tools, list):
        return "Invalid JSON payload received. 'tools' must be a list."
    for position, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            return f"Invalid value at 'tools[{position}]'"
        for key in _DECLARATION_FIELDS:
            if key in tool:
                return (
                    f'Invalid JSON payload received. Unknown name "{key}" at '
                    f"'tools[{position}]': Cannot find field."
                )
        declarations = tool.get("functionDeclarations", tool.get("function_declarations", []))
        if not isinstance(declarations, list):
            return f"Invalid value at 'tools[{position}].function_declarations'"
        for index, declaration in enumerate(declarations):
            where = f"tools[{position}].function_declarations[{index}]"
            if not isinstance(declaration, Mapping) or not declaration.get("name"):
                return f"* GenerateContentRequest.{where}.name: Name cannot be empty."
            schema_keys = ("parametersJsonSchema", "parameters_json_schema")
            if "parameters" in declaration and any(k in declaration for k in schema_keys):
                return (
                    f"* GenerateContentRequest.{where}: parameters and parameters_json_schema "
                    "are mutually exclusive."
                )
    return None


def check_request(body: Mapping[str, Any], _served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring, and
    ``_check_tools`` for its ``tools``), or ``None`` when it would accept it."""
    if "tools" in body:
        refused = _check_tools(body["tools"])
        if refused is not None:
            return refused
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
