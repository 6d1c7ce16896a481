"""Reading a request's conversation, for the providers' request checks: tolerant reads of
messages and blocks, and a walk that stops at the first rule a message breaks. O(size read).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = [
    "Refusal",
    "RequestCheck",
    "ServedCalls",
    "content_blocks",
    "each_message",
    "each_turn",
    "message_list",
    "refusing",
]

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


class Refusal(Exception):
    """The provider's refusal of a request, raised by a check at the first rule the request
    breaks; its one argument is the refusal message."""


def refusing(walk: Callable[[Mapping[str, Any], ServedCalls], None]) -> RequestCheck:
    """The request check that answers the message of the :class:`Refusal` ``walk`` raises
    for a body, or ``None`` when it raises none."""

    @functools.wraps(walk)
    def check(body: Mapping[str, Any], served: ServedCalls) -> str | None:
        try:
            walk(body, served)
        except Refusal as refusal:
            return str(refusal)
        return None

    return check


def each_message(
    body: Mapping[str, Any], key: str, not_an_object: str
) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The position and object of each message of the list under ``key``, in order.

    Raises :class:`Refusal` with :func:`message_list`'s message when there is no such
    list, and with ``not_an_object`` (formatted with the ``position``) on reaching a member
    that is not an object: after the caller has checked the messages before it.
    """
    messages = message_list(body, key)
    if isinstance(messages, str):
        raise Refusal(messages)
    for position, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise Refusal(not_an_object.format(position=position))
        yield position, message


def each_turn(
    body: Mapping[str, Any], not_an_object: str
) -> Iterator[tuple[int, Any, Any, list[Mapping[str, Any]]]]:
    """Each message of ``messages`` (see :func:`each_message`) as its position, its role,
    the role of the message before it (``None`` for the first) and its object blocks."""
    previous_role = None
    for position, message in each_message(body, "messages", not_an_object):
        role = message.get("role")
        yield position, role, previous_role, content_blocks(message)
        previous_role = role


def content_blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The object blocks of a message's ``content`` list (none for a string content)."""
    content = message.get("content")
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []
