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

from .._request_reading import Refusal, ServedCalls, content_blocks, each_message, refusing

__all__ = ["check_request"]


@refusing
def check_request(body: Mapping[str, Any], _served: ServedCalls) -> None:
    """Raises :class:`Refusal` with the provider's message for what it refuses in ``body``
    (see the module docstring)."""
    previous_tools: list[str] = []
    previous_role: str | None = None
    for position, message in each_message(
        body, "messages", "messages.{position}: Input should be a valid dictionary"
    ):
        role = message.get("role")
        if role not in ("user", "assistant"):
            raise Refusal(f"messages.{position}.role: Input should be 'user' or 'assistant'")
        if position == 0 and role != "user":
            raise Refusal('messages: first message must use the "user" role')
        if role == previous_role:
            raise Refusal(
                f'messages.{position}: roles must alternate between "user" and '
                '"assistant", but found multiple "' + str(role) + '" roles in a row'
            )
        blocks = content_blocks(message)
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if previous_tools:
            if role != "user" or set(previous_tools) - set(results):
                missing = [t for t in previous_tools if t not in results]
                raise Refusal(
                    f"messages.{position}: `tool_use` ids were found without `tool_result` "
                    f"blocks immediately after: {', '.join(missing)}. Each `tool_use` block "
                    "must have a corresponding `tool_result` block in the next message."
                )
            leading = 0
            while leading < len(blocks) and blocks[leading].get("type") == "tool_result":
                leading += 1
            if leading != len(results):
                raise Refusal(
                    f"messages.{position}: `tool_result` blocks must come first in the "
                    "content of the message that answers `tool_use` blocks"
                )
        for result in results:
            if result not in previous_tools:
                raise Refusal(
                    f"messages.{position}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {result}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message."
                )
        previous_tools = [
            str(b.get("id")) for b in blocks if role == "assistant" and b.get("type") == "tool_use"
        ]
        previous_role = role
