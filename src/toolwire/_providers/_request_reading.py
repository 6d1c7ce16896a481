"""Reading a request's conversation, for the providers' request checks.

The simulator refuses, with the provider's 400, a request the provider itself would
refuse; each provider package says what that is in its ``request_checks`` module, a pure
function of the parsed request body. What several of those checks read the same way is
here: the list of messages and the content blocks of one message, both tolerant (a
malformed member is skipped, the check then names what is missing). O(size read).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RequestCheck", "ServedCalls", "content_blocks", "message_list"]

ServedCalls = Callable[[str], set[str] | None]
"""The call ids of a response the simulator served, by response id (``None``: never served)."""

RequestCheck = Callable[[Mapping[str, Any], ServedCalls], str | None]
"""A provider's check of one request body: its refusal message, or ``None`` to accept."""


def message_list(body: Mapping[str, Any], key: str) -> list[Any] | str:
    """The list under ``key``, or the message saying it is not a list."""
    messages = body.get(key)
    if not isinstance(messages, list):
        return f"'{key}' must be an array"
    return messages


def content_blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The object blocks of a message's ``content`` list (none for a string content)."""
    content = message.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []
