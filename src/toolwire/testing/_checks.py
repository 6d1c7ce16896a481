"""Request checks: refuse, with the provider's 400, what the provider itself would refuse.

The simulator is a test of the messages a client builds, so each endpoint checks the
conversation the way its provider does, and answers a request the real API would refuse
with a 400 and the provider's error body (the SDK then raises its ``BadRequestError``).
What is checked, per format:

* **openai-chat**: every ``tool`` message answers a ``tool_calls`` id of the assistant
  message before it (only ``tool`` messages in between), and every call of an assistant
  message is answered before the next user or assistant message.
* **openai-responses**: every ``function_call_output.call_id`` matches a
  ``function_call`` in the input, or in the output of the ``previous_response_id`` (the
  simulator remembers the calls of the responses it served).
* **anthropic**: roles are ``user`` and ``assistant``, alternating, starting with
  ``user`` (stricter than today's API, which merges consecutive turns, so a request that
  passes here passes there); the message after an assistant ``tool_use`` is a user
  message whose ``tool_result`` blocks answer each ``tool_use`` id and come first; a
  ``tool_result`` answers a ``tool_use`` of the message right before it.
* **gemini**: after a ``model`` turn with ``functionCall`` parts, the next turn holds as
  many ``functionResponse`` parts with the same names; a ``functionResponse`` follows
  such a turn.
* **bedrock-converse**: roles alternate, starting with ``user``; each ``toolResult`` id
  matches a ``toolUse`` id of the previous assistant message, and each ``toolUse`` gets
  its ``toolResult`` in the next message.
* **cohere**: as openai-chat (``tool`` messages answer ``tool_calls`` ids).
* **ollama**: nothing: Ollama matches tool results by position and name, refuses none.

Each check reads the request once: O(size of the body). A check returns the provider's
error message, or ``None`` when the request is acceptable.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["check_request"]

Lookup = Callable[[str], set[str] | None]


def _messages(body: Mapping[str, Any], key: str) -> list[Any] | str:
    messages = body.get(key)
    if not isinstance(messages, list):
        return f"'{key}' must be an array"
    return messages


def _calls_of(message: Mapping[str, Any]) -> list[str]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        return []
    return [str(c["id"]) for c in calls if isinstance(c, Mapping) and isinstance(c.get("id"), str)]


def _check_chat(body: Mapping[str, Any], _lookup: Lookup) -> str | None:
    messages = _messages(body, "messages")
    if isinstance(messages, str):
        return messages
    pending: list[str] = []
    open_ids: set[str] = set()
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return f"Invalid type for 'messages[{position}]': expected an object."
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                return (
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls'. (messages[{position}], tool_call_id "
                    f"{call_id!r})"
                )
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                f"response messages: {', '.join(pending)}"
            )
        open_ids = set()
        if role == "assistant":
            pending = _calls_of(message)
            open_ids = set(pending)
    if pending:
        return (
            "An assistant message with 'tool_calls' must be followed by tool messages "
            "responding to each 'tool_call_id'. The following tool_call_ids did not have "
            f"response messages: {', '.join(pending)}"
        )
    return None


def _check_cohere(body: Mapping[str, Any], lookup: Lookup) -> str | None:
    problem = _check_chat(body, lookup)
    return None if problem is None else f"invalid request: {problem}"


def _check_responses(body: Mapping[str, Any], lookup: Lookup) -> str | None:
    items = body.get("input")
    if not isinstance(items, list):
        return None  # a plain string input carries no tool outputs
    known: set[str] = set()
    previous = body.get("previous_response_id")
    if isinstance(previous, str):
        calls = lookup(previous)
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


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = message.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _check_anthropic(body: Mapping[str, Any], _lookup: Lookup) -> str | None:
    messages = _messages(body, "messages")
    if isinstance(messages, str):
        return messages
    previous_tools: list[str] = []
    previous_role: str | None = None
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return f"messages.{position}: Input should be a valid dictionary"
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{position}.role: Input should be 'user' or 'assistant'"
        if position == 0 and role != "user":
            return 'messages: first message must use the "user" role'
        if role == previous_role:
            return (
                f'messages.{position}: roles must alternate between "user" and '
                '"assistant", but found multiple "' + str(role) + '" roles in a row'
            )
        blocks = _blocks(message)
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if previous_tools:
            if role != "user" or set(previous_tools) - set(results):
                missing = [t for t in previous_tools if t not in results]
                return (
                    f"messages.{position}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message."
                )
            leading = 0
            while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
                leading += 1
            if leading != len(results):
                return (
                    f"messages.{position}: `tool_result` blocks must come first in the "
                    "content of the message that answers `tool_use` blocks"
                )
        for result in results:
            if result not in previous_tools:
                return (
                    f"messages.{position}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {result}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
        previous_tools = [
            str(b.get("id")) for b in blocks if role == "assistant" and b.get("type") == "tool_use"
        ]
        previous_role = role
    return None


def _parts(turn: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    parts = turn.get("parts")
    if not isinstance(parts, list):
        return []
    return [p[key] for p in parts if isinstance(p, Mapping) and isinstance(p.get(key), Mapping)]


def _check_gemini(body: Mapping[str, Any], _lookup: Lookup) -> str | None:
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


def _check_bedrock(body: Mapping[str, Any], _lookup: Lookup) -> str | None:
    messages = _messages(body, "messages")
    if isinstance(messages, str):
        return messages
    uses: list[str] = []
    previous_role: str | None = None
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return f"messages.{position}: expected an object"
        role = message.get("role")
        if position == 0 and role != "user":
            return "A conversation must start with a user message. Try again with a conversation that starts with a user message."  # noqa: E501
        if role == previous_role:
            return (
                "A conversation must alternate between user and assistant roles. Make sure "
                "the conversation alternates between user and assistant roles and try again."
            )
        blocks = _blocks(message)
        results = [
            str(b["toolResult"].get("toolUseId"))
            for b in blocks
            if isinstance(b.get("toolResult"), Mapping)
        ]
        extra = [r for r in results if r not in uses]
        if extra:
            return (
                f"The number of toolResult blocks at messages.{position}.content exceeds the "
                f"number of toolUse blocks of previous turn (unknown ids: {', '.join(extra)})."
            )
        missing = [u for u in uses if u not in results]
        if missing:
            return (
                f"Expected toolResult blocks at messages.{position}.content for the following "
                f"Ids: {', '.join(missing)}"
            )
        uses = [
            str(b["toolUse"].get("toolUseId"))
            for b in blocks
            if role == "assistant" and isinstance(b.get("toolUse"), Mapping)
        ]
        previous_role = role
    return None  # a conversation may end with the assistant's calls (a prefill)


_CHECKS: dict[str, Callable[[Mapping[str, Any], Lookup], str | None]] = {
    "openai-chat": _check_chat,
    "openai-responses": _check_responses,
    "anthropic": _check_anthropic,
    "gemini": _check_gemini,
    "bedrock-converse": _check_bedrock,
    "cohere": _check_cohere,
}


def check_request(format: str, body: Any, lookup: Lookup) -> str | None:
    """The provider's refusal message for ``body``, or ``None`` when it is acceptable.

    ``lookup(response_id)`` gives the call ids of a response this simulator served (for
    ``previous_response_id``), or ``None`` for an id it never served.
    """
    if not isinstance(body, Mapping):
        return "the request body must be a JSON object"
    check = _CHECKS.get(format)
    return None if check is None else check(body, lookup)
