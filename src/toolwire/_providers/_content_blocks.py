"""The next request's messages in the content-block shape of Anthropic and Bedrock, written once.

Linear in the size of the response or the results.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.messages import Call, turn_parts
from .._core.response import ContentPart, Response

__all__ = ["assistant_blocks", "user_blocks"]

Block = dict[str, Any]


def assistant_blocks(
    response: Response,
    *,
    call: Callable[[Call], Block],
    text: Callable[[str], Block],
    reasoning: Callable[[str, Any], Block],
) -> list[Block]:
    """The assistant message with ``response``'s blocks in order: ``call(c)`` per call,
    ``text(t)`` per non-empty text (with the fields of its ``block_fields`` data, such as
    Anthropic ``citations``), ``reasoning(t, signature)`` per reasoning part that has
    a ``signature`` (one without cannot be sent back and is left out), and every ``item``
    part's data as it came. A response with no block to send gives ``[]``."""
    content: list[Block] = []
    for part, made in turn_parts(response):
        if made is not None:
            content.append(call(made))
        else:
            content.extend(_part_blocks(part, text, reasoning))
    return [{"role": "assistant", "content": content}] if content else []


def _part_blocks(
    part: ContentPart,
    text: Callable[[str], Block],
    reasoning: Callable[[str, Any], Block],
) -> list[Block]:
    """The block of one part that is not a call, or none (see :func:`assistant_blocks`)."""
    if part.kind == "text" and part.text:
        fields = part.data.get("block_fields") if part.data else None
        return [{**text(part.text), **fields} if fields else text(part.text)]
    if part.kind == "reasoning" and part.data.get("signature"):
        return [reasoning(part.text, part.data["signature"])]
    if part.kind == "item":
        return [dict(part.data)]
    return []


def user_blocks(blocks: list[Block]) -> list[Block]:
    """One user message carrying ``blocks`` (the tool results); no blocks give ``[]``."""
    return [{"role": "user", "content": blocks}] if blocks else []
