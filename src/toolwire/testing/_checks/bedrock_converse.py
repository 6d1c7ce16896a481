"""What Bedrock Converse refuses in a request's messages (the simulator's 400).

Roles alternate, starting with ``user``; each ``toolResult`` id matches a ``toolUse`` id of
the previous assistant message, and each ``toolUse`` gets its ``toolResult`` in the next
message (a conversation may end with the assistant's calls, a prefill). One pass over the
messages: O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import Refusal, ServedCalls, content_blocks, each_message, refusing

__all__ = ["check_request"]


@refusing
def check_request(body: Mapping[str, Any], _served: ServedCalls) -> None:
    """Raises :class:`Refusal` with the provider's message for what it refuses in ``body``
    (see the module docstring); a conversation may end with the assistant's calls (a
    prefill)."""
    uses: list[str] = []
    previous_role: str | None = None
    for position, message in each_message(
        body, "messages", "messages.{position}: expected an object"
    ):
        role = message.get("role")
        if position == 0 and role != "user":
            raise Refusal(
                "A conversation must start with a user message. Try again with a "
                "conversation that starts with a user message."
            )
        if role == previous_role:
            raise Refusal(
                "A conversation must alternate between user and assistant roles. Make sure "
                "the conversation alternates between user and assistant roles and try again."
            )
        blocks = content_blocks(message)
        results = [
            str(b["toolResult"].get("toolUseId"))
            for b in blocks
            if isinstance(b.get("toolResult"), Mapping)
        ]
        extra = [r for r in results if r not in uses]
        if extra:
            raise Refusal(
                f"The number of toolResult blocks at messages.{position}.content exceeds the "
                f"number of toolUse blocks of previous turn (unknown ids: {', '.join(extra)})."
            )
        missing = [u for u in uses if u not in results]
        if missing:
            raise Refusal(
                f"Expected toolResult blocks at messages.{position}.content for the following "
                f"Ids: {', '.join(missing)}"
            )
        uses = [
            str(b["toolUse"].get("toolUseId"))
            for b in blocks
            if role == "assistant" and isinstance(b.get("toolUse"), Mapping)
        ]
        previous_role = role
