"""What Anthropic Messages refuses in a request's messages (the simulator's 400).

Roles are ``user`` and ``assistant``, alternating, starting with ``user`` (stricter than
today's API, which merges consecutive turns, so a request that passes here passes there);
the message after an assistant ``tool_use`` is a user message whose ``tool_result`` blocks
answer each ``tool_use`` id and come first; a ``tool_result`` answers a ``tool_use`` of the
message right before it. One pass over the messages: O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import ServedCalls, content_blocks, message_list

__all__ = ["check_request"]


def check_request(body: Mapping[str, Any], _served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring), or
    ``None`` when it would accept it."""
    messages = message_list(body, "messages")
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
        blocks = content_blocks(message)
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
