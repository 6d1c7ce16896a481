"""What Bedrock Converse refuses in a request's messages (the simulator's 400).

Roles alternate, starting with ``user``; each ``toolResult`` id matches a ``toolUse`` id of
the previous assistant message, and each ``toolUse`` gets its ``toolResult`` in the next
message (a conversation may end with the assistant's calls, a prefill), except a
``server_tool_use`` call (Nova's built-in tools), which Bedrock ran: its ``toolResult`` is
in the same assistant message and nothing answers it later; a ``toolResult``'s
``image`` and ``document`` blocks name a Converse format and carry base64 ``source.bytes``
(a document a valid ``name``). One pass over the messages: O(size of the body).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._request_reading import Refusal, ServedCalls, each_turn, refusing
from ._media import is_base64

__all__ = ["check_request"]


@refusing
def check_request(body: Mapping[str, Any], _served: ServedCalls) -> None:
    """Raises :class:`Refusal` with the provider's message for what it refuses in ``body``
    (see the module docstring); a conversation may end with the assistant's calls (a
    prefill)."""
    uses: list[str] = []
    for position, role, previous_role, blocks in each_turn(
        body, "messages.{position}: expected an object"
    ):
        _check_role(position, role, previous_role)
        for block in blocks:
            if isinstance(block.get("toolResult"), Mapping):
                _check_result_content(block["toolResult"].get("content"), position)
        _check_answers(position, _client_results(role, blocks), uses)
        uses = _client_uses(role, blocks)


def _client_results(role: Any, blocks: list[Mapping[str, Any]]) -> list[str]:
    """The ``toolResult`` ids of a message, but those of the calls Bedrock ran itself."""
    ran = _server_run(blocks) if role == "assistant" else set()
    return [
        str(b["toolResult"].get("toolUseId"))
        for b in blocks
        if isinstance(b.get("toolResult"), Mapping)
        and str(b["toolResult"].get("toolUseId")) not in ran
    ]


def _client_uses(role: Any, blocks: list[Mapping[str, Any]]) -> list[str]:
    """The ``toolUse`` ids of an assistant message that the next message must answer."""
    if role != "assistant":
        return []
    return [
        str(b["toolUse"].get("toolUseId"))
        for b in blocks
        if isinstance(b.get("toolUse"), Mapping) and b["toolUse"].get("type") != "server_tool_use"
    ]


def _check_role(position: int, role: Any, previous_role: Any) -> None:
    """Roles alternate, starting with ``user``."""
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


def _check_answers(position: int, results: list[str], uses: list[str]) -> None:
    """The ``toolResult`` ids of a message are exactly the previous message's ``toolUse``
    ids."""
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


def _server_run(blocks: list[Mapping[str, Any]]) -> set[str]:
    """The ids of an assistant message's ``server_tool_use`` calls (Nova's built-in tools,
    run by Bedrock): their ``toolResult`` comes in the same message, after the call."""
    ran: set[str] = set()
    for block in blocks:
        use = block.get("toolUse")
        if isinstance(use, Mapping) and use.get("type") == "server_tool_use":
            ran.add(str(use.get("toolUseId")))
    return ran


_IMAGE_FORMATS = ("png", "jpeg", "gif", "webp")
_DOCUMENT_FORMATS = ("pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md")
_DOCUMENT_NAME = re.compile(r"[A-Za-z0-9()\[\]\-]+( [A-Za-z0-9()\[\]\-]+)*")


def _check_result_content(content: Any, position: int) -> None:
    """Raises :class:`Refusal` for a ``toolResult.content`` block Converse refuses."""
    where = f"messages.{position}.content.toolResult.content"
    if not isinstance(content, list):
        raise Refusal(f"{where}: expected a list")
    for block in content:
        if not isinstance(block, Mapping) or len(block) != 1:
            raise Refusal(f"{where}: each content block must have exactly one member")
        for kind, formats in (("image", _IMAGE_FORMATS), ("document", _DOCUMENT_FORMATS)):
            if kind in block:
                _check_media(f"{where}.{kind}", kind, block[kind], formats)


def _check_media(where: str, kind: str, inner: Any, formats: tuple[str, ...]) -> None:
    """An ``image`` or ``document`` block: a Converse format, base64 ``source.bytes`` and,
    for a document, a valid ``name``."""
    if not isinstance(inner, Mapping) or inner.get("format") not in formats:
        raise Refusal(f"{where}.format: Member must satisfy enum value set: [{', '.join(formats)}]")
    source = inner.get("source")
    if not isinstance(source, Mapping) or not is_base64(source.get("bytes")):
        raise Refusal(f"{where}.source.bytes: Invalid base64 data")
    if kind == "document" and not _DOCUMENT_NAME.fullmatch(str(inner.get("name", ""))):
        raise Refusal(
            f"{where}.name: the name can only contain alphanumeric "
            "characters, whitespace characters (no more than one in a row), hyphens, "
            "parentheses, and square brackets"
        )
