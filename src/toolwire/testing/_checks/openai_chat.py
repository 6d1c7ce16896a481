"""What OpenAI Chat Completions refuses in a request's messages (the simulator's 400).

Every ``tool`` message answers a ``tool_calls`` id of the assistant message before it
(only ``tool`` messages in between), and every call of an assistant message is answered
before the next user or assistant message. The messages are the API's own. One pass over
the messages: O(size of the body).
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
