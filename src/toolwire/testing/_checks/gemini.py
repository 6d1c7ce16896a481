"""What Gemini refuses in a request's tools and contents (the simulator's 400).

After a ``model`` turn with ``functionCall`` parts, the next turn holds as many
``functionResponse`` parts with the same names; a ``functionResponse`` follows such a turn;
its own ``parts`` are ``inlineData`` (a MIME type and base64 data) or ``fileData``. A
Gemini 3 request (``thinkingLevel`` set) gives the first ``functionCall`` part of each model
turn of the current turn its ``thoughtSignature``. One pass over the turns: O(size of the
body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import ServedCalls
from ._media import is_base64

__all__ = ["check_request"]


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _parts(turn: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """The ``key`` members of the turn's parts, spelled ``camelCase`` (the REST API) or
    ``snake_case`` (as google-genai sends them; the API reads both)."""
    parts = turn.get("parts")
    if not isinstance(parts, list):
        return []
    found = []
    for part in parts:
        if isinstance(part, Mapping):
            member = part.get(key, part.get(_snake(key)))
            if isinstance(member, Mapping):
                found.append(member)
    return found


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
        refused = _check_declarations(declarations, position)
        if refused is not None:
            return refused
    return None


def _check_declarations(declarations: list[Any], position: int) -> str | None:
    """Gemini's refusal of a Tool's function declarations: each has a name, and gives
    ``parameters`` or ``parametersJsonSchema``, never both."""
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
    refused = _check_turns(contents)
    if refused is not None:
        return refused
    return _check_signatures(body, contents)


def _check_turns(contents: list[Any]) -> str | None:
    """Gemini's refusal of a turn of ``contents``: each is an object, and its
    ``functionResponse`` parts are well formed and answer the turn before it."""
    calls: list[str] = []
    for position, turn in enumerate(contents):
        if not isinstance(turn, Mapping):
            return f"Invalid value at 'contents[{position}]'"
        function_responses = _parts(turn, "functionResponse")
        for response in function_responses:
            refused = _check_response_parts(response.get("parts"), position)
            if refused is not None:
                return refused
        refused = _check_answers(calls, [str(p.get("name")) for p in function_responses])
        if refused is not None:
            return refused
        role = turn.get("role")
        calls = (
            [str(p.get("name")) for p in _parts(turn, "functionCall")] if role == "model" else []
        )
    return None


def _check_answers(calls: list[str], responses: list[str]) -> str | None:
    """Gemini's refusal of a turn whose ``functionResponse`` parts do not answer the
    ``functionCall`` parts of the turn before it one for one."""
    if not calls:
        if responses:
            return (
                "Please ensure that function response turn comes immediately after a function "
                "call turn."
            )
        return None
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
    return None


def _thinking_level(body: Mapping[str, Any]) -> bool:
    """Whether the request sets ``thinkingLevel``, which only Gemini 3 models take."""
    config = body.get("generationConfig", body.get("generation_config"))
    thinking = None
    if isinstance(config, Mapping):
        thinking = config.get("thinkingConfig", config.get("thinking_config"))
    if not isinstance(thinking, Mapping):
        return False
    return thinking.get("thinkingLevel", thinking.get("thinking_level")) is not None


def _check_signatures(body: Mapping[str, Any], contents: list[Any]) -> str | None:
    """Gemini 3's refusal of a model turn of the current turn (after the last user text)
    whose first ``functionCall`` part lost its ``thoughtSignature``."""
    if not _thinking_level(body):
        return None
    start = 0
    for position, turn in enumerate(contents):
        if turn.get("role") != "model" and not _parts(turn, "functionResponse"):
            start = position + 1
    for position in range(start, len(contents)):
        refused = _check_first_call_signed(contents[position], position)
        if refused is not None:
            return refused
    return None


def _check_first_call_signed(turn: Mapping[str, Any], position: int) -> str | None:
    """Gemini 3's refusal of a model turn whose first ``functionCall`` part has no
    ``thoughtSignature`` (only a step's first call carries one)."""
    parts = turn.get("parts") if turn.get("role") == "model" else None
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, Mapping):
            continue
        call = part.get("functionCall", part.get("function_call"))
        if not isinstance(call, Mapping):
            continue
        if part.get("thoughtSignature", part.get("thought_signature")):
            return None
        return (
            "Function call is missing a thought_signature in functionCall parts. This "
            "is required for tools to work correctly, and missing thought_signature may "
            "lead to degraded model performance. Additional data, function call "
            f"`default_api:{call.get('name')}` , position {position + 1}."
        )
    return None


def _check_response_parts(parts: Any, position: int) -> str | None:
    """Gemini's refusal of a ``functionResponse.parts`` list, or ``None``."""
    if parts is None:
        return None
    where = f"contents[{position}].parts[].function_response.parts"
    if not isinstance(parts, list):
        return f"Invalid value at '{where}': expected a list."
    for part in parts:
        refused = _check_response_part(part, where)
        if refused is not None:
            return refused
    return None


def _check_response_part(part: Any, where: str) -> str | None:
    """Gemini's refusal of one part of a ``functionResponse``: ``inlineData`` (a MIME type
    and base64 data) or ``fileData``."""
    if not isinstance(part, Mapping):
        return f"Invalid value at '{where}[]'"
    blob = part.get("inlineData", part.get("inline_data"))
    if blob is None:
        if isinstance(part.get("fileData", part.get("file_data")), Mapping):
            return None
        return f"Invalid value at '{where}[]': expected inline_data or file_data."
    if not isinstance(blob, Mapping):
        return f"Invalid value at '{where}[].inline_data'"
    mime = blob.get("mimeType", blob.get("mime_type"))
    if not isinstance(mime, str) or "/" not in mime:
        return f"* {where}[].inline_data.mime_type: a MIME type is required."
    if not is_base64(blob.get("data"), urlsafe=True):
        return f"Invalid value at '{where}[].inline_data.data' (TYPE_BYTES), Base64 decoding failed"
    return None
