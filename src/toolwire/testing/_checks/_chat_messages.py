"""What OpenAI Chat Completions refuses in a request's messages (the simulator's 400),
shared by the formats that copy its messages (OpenAI chat, Cohere v2).

Every ``tool`` message answers a ``tool_calls`` id of the assistant message before it
(only ``tool`` messages in between), and every call of an assistant message is answered
before the next user or assistant message. The messages are the API's own. Compatible
servers add their own: in thinking mode (DeepSeek ``deepseek-reasoner`` or ``thinking``
enabled, Kimi ``*-thinking``) an assistant message with ``tool_calls`` after the last user
message carries its ``reasoning_content``; for a Gemini 3 model the first call of each such
assistant message carries ``extra_content.google.thought_signature``. One pass over the
messages: O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import Refusal, ServedCalls, each_message, refusing

__all__ = ["check_request"]


def _calls_of(message: Mapping[str, Any]) -> list[str]:
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        return []
    return [str(c["id"]) for c in calls if isinstance(c, Mapping) and isinstance(c.get("id"), str)]


def _unanswered(pending: list[str]) -> Refusal:
    """The refusal of an assistant message whose calls ``pending`` got no tool message."""
    return Refusal(
        "An assistant message with 'tool_calls' must be followed by tool messages "
        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
        f"response messages: {', '.join(pending)}"
    )


def _thinking_mode(body: Mapping[str, Any]) -> bool:
    """DeepSeek's and Kimi's thinking mode: a reasoner model, or ``thinking`` enabled."""
    model = body.get("model")
    thinking = body.get("thinking")
    enabled = isinstance(thinking, Mapping) and thinking.get("type") == "enabled"
    named = isinstance(model, str) and (model == "deepseek-reasoner" or "thinking" in model)
    return enabled or named


def _signed(call: Any) -> bool:
    extra = call.get("extra_content") if isinstance(call, Mapping) else None
    google = extra.get("google") if isinstance(extra, Mapping) else None
    signature = google.get("thought_signature") if isinstance(google, Mapping) else None
    return isinstance(signature, str) and bool(signature)


def _check_passback(body: Mapping[str, Any], messages: list[Any]) -> None:
    """The compatible servers' refusals of an assistant message of the current turn (after
    the last user message) that lost its reasoning or its signature."""
    model = body.get("model")
    gemini3 = isinstance(model, str) and model.removeprefix("models/").startswith("gemini-3")
    thinking = _thinking_mode(body)
    if not (gemini3 or thinking):
        return
    last_user = max((i for i, m in enumerate(messages) if _role(m) == "user"), default=-1)
    for position in range(last_user + 1, len(messages)):
        message = messages[position]
        if _role(message) == "assistant" and message.get("tool_calls"):
            _check_passed_back(message, position, thinking=thinking, gemini3=gemini3)


def _check_passed_back(
    message: Mapping[str, Any], position: int, *, thinking: bool, gemini3: bool
) -> None:
    """An assistant message with calls keeps its ``reasoning_content`` (thinking mode) and
    its first call's signature (Gemini 3)."""
    if thinking and not isinstance(message.get("reasoning_content"), str):
        raise Refusal(
            "Missing `reasoning_content` field in the assistant message at message "
            f"index {position}. For more information, please refer to "
            "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"
        )
    calls = message["tool_calls"]
    if gemini3 and isinstance(calls, list) and calls and not _signed(calls[0]):
        raise Refusal(
            "Function call is missing a thought_signature in functionCall parts. This is "
            "required for tools to work correctly, and missing thought_signature may lead "
            "to degraded model performance. Additional data, function call `default_api:"
            f"{_name(calls[0])}` , position {position + 1}."
        )


def _role(message: Any) -> Any:
    return message.get("role") if isinstance(message, Mapping) else None


def _name(call: Any) -> str:
    function = call.get("function") if isinstance(call, Mapping) else None
    name = function.get("name") if isinstance(function, Mapping) else None
    return name if isinstance(name, str) else ""


@refusing
def check_request(body: Mapping[str, Any], _served: ServedCalls) -> None:
    """Raises :class:`Refusal` with the provider's message for what it refuses in ``body``
    (see the module docstring)."""
    pending: list[str] = []
    open_ids: set[str] = set()
    for position, message in each_message(
        body, "messages", "Invalid type for 'messages[{position}]': expected an object."
    ):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in open_ids:
                raise Refusal(
                    f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls'. (messages[{position}], tool_call_id "
                    f"{call_id!r})"
                )
            if call_id in pending:
                pending.remove(call_id)
            continue
        if pending:
            raise _unanswered(pending)
        open_ids = set()
        if role == "assistant":
            pending = _calls_of(message)
            open_ids = set(pending)
    if pending:
        raise _unanswered(pending)
    messages = body["messages"]
    _check_passback(body, messages)
