"""What Anthropic Messages refuses in a request's messages (the simulator's 400).

Roles are ``user`` and ``assistant``, alternating, starting with ``user`` (stricter than
today's API, which merges consecutive turns, so a request that passes here passes there);
the message after an assistant ``tool_use`` is a user message whose ``tool_result`` blocks
answer each ``tool_use`` id and come first; a ``tool_result`` answers a ``tool_use`` of the
message right before it; a ``tool_result``'s list content holds only ``text``, ``image``
(base64 of a supported type) and ``document`` blocks. An assistant ``thinking`` block
carries its ``signature``, and a signature the simulator made must still match the thinking
text and the blocks before it (``_thinking_seal``). A request that continues a message
thread (``thread: {"type": "continue", "previous_message_id": ...}``, the beta the SDK's
tool runner uses by default) starts after that served message: its ``tool_use`` ids are
what the first user message answers. One pass over the messages, each simulator signature
hashing the blocks before its thinking block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import Refusal, ServedCalls, each_turn, refusing
from .._thinking_seal import unsealed
from ._media import is_base64

__all__ = ["check_request"]


@refusing
def check_request(body: Mapping[str, Any], served: ServedCalls) -> None:
    """Raises :class:`Refusal` with the provider's message for what it refuses in ``body``
    (see the module docstring)."""
    previous_tools = _thread_calls(body, served)
    for position, role, previous_role, blocks in each_turn(
        body, "messages.{position}: Input should be a valid dictionary"
    ):
        _check_role(position, role, previous_role)
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if previous_tools:
            _check_answers(position, role, blocks, results, previous_tools)
        _check_blocks(position, role, blocks)
        _check_known_results(position, results, previous_tools)
        previous_tools = [
            str(b.get("id")) for b in blocks if role == "assistant" and b.get("type") == "tool_use"
        ]


def _check_role(position: int, role: Any, previous_role: Any) -> None:
    """Roles are ``user`` and ``assistant``, alternating, starting with ``user``."""
    if role not in ("user", "assistant"):
        raise Refusal(f"messages.{position}.role: Input should be 'user' or 'assistant'")
    if position == 0 and role != "user":
        raise Refusal('messages: first message must use the "user" role')
    if role == previous_role:
        raise Refusal(
            f'messages.{position}: roles must alternate between "user" and '
            '"assistant", but found multiple "' + str(role) + '" roles in a row'
        )


def _check_answers(
    position: int,
    role: Any,
    blocks: list[Mapping[str, Any]],
    results: list[Any],
    previous_tools: list[str],
) -> None:
    """The message after ``tool_use`` blocks is a user message whose ``tool_result`` blocks
    answer each of them and come first."""
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


def _check_blocks(position: int, role: Any, blocks: list[Mapping[str, Any]]) -> None:
    """Each assistant ``thinking`` block and each ``tool_result``'s content."""
    for index, block in enumerate(blocks):
        if role == "assistant" and block.get("type") == "thinking":
            _check_thinking(f"messages.{position}.content.{index}", block, blocks[:index])
        if block.get("type") == "tool_result":
            _check_result_content(block.get("content"), f"messages.{position}.content.{index}")


def _check_thinking(at: str, block: Mapping[str, Any], before: list[Mapping[str, Any]]) -> None:
    """An assistant ``thinking`` block carries a signature that still seals it."""
    signature = block.get("signature")
    if not isinstance(signature, str) or not signature:
        raise Refusal(f"{at}.thinking.signature: Field required")
    if unsealed(signature, block.get("thinking"), before):
        raise Refusal(
            f"{at}: Invalid `signature` in "
            "`thinking` block (the thinking, or a block before it, was changed)"
        )


def _check_known_results(position: int, results: list[Any], previous_tools: list[str]) -> None:
    """Each ``tool_result`` answers a ``tool_use`` of the message right before it."""
    for result in results:
        if result not in previous_tools:
            raise Refusal(
                f"messages.{position}.content: unexpected `tool_use_id` found in "
                f"`tool_result` blocks: {result}. Each `tool_result` block must have a "
                "corresponding `tool_use` block in the previous message."
            )


def _thread_calls(body: Mapping[str, Any], served: ServedCalls) -> list[str]:
    """The ``tool_use`` ids of the served message a continued thread goes on from (``[]``
    without a thread to continue)."""
    thread = body.get("thread")
    if not isinstance(thread, Mapping) or thread.get("type") != "continue":
        return []
    previous = thread.get("previous_message_id")
    calls = served(previous) if isinstance(previous, str) else None
    if calls is None:
        raise Refusal(f"thread.previous_message_id: message {previous!r} was not found")
    return sorted(calls)


_IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _check_result_content(content: Any, where: str) -> None:
    """A ``tool_result``'s content: a string, or a list of text, image and document blocks."""
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Refusal(f"{where}.content: Input should be a valid string or list")
    for index, block in enumerate(content):
        _check_result_block(f"{where}.content.{index}", block)


def _check_result_block(at: str, block: Any) -> None:
    """One block of a ``tool_result``'s list: non-empty text, an image or a document."""
    kind = block.get("type") if isinstance(block, Mapping) else None
    if kind == "text":
        if not isinstance(block.get("text"), str) or not block["text"]:
            raise Refusal(f"{at}.text: text content blocks must be non-empty")
        return
    if kind not in ("image", "document"):
        raise Refusal(
            f"{at}: Input tag {kind!r} found using 'type' does not match any of the "
            "expected tags: 'text', 'image', 'search_result', 'document'"
        )
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise Refusal(f"{at}.source: Field required")
    _check_source(at, kind, source)


def _check_source(at: str, kind: str, source: Mapping[str, Any]) -> None:
    """An image's or document's ``source``: base64 of a supported type, a document's text,
    or a reference (url, file, content)."""
    if source.get("type") == "base64":
        allowed = _IMAGE_TYPES if kind == "image" else ("application/pdf",)
        if source.get("media_type") not in allowed:
            raise Refusal(
                f"{at}.source.media_type: Input should be " + " or ".join(repr(a) for a in allowed)
            )
        if not is_base64(source.get("data")):
            raise Refusal(f"{at}.source.data: The {kind} data is not valid base64")
    elif source.get("type") == "text" and kind == "document":
        if not isinstance(source.get("data"), str):
            raise Refusal(f"{at}.source.data: Input should be a valid string")
    elif source.get("type") not in ("url", "file", "content"):
        raise Refusal(f"{at}.source: Input tag {source.get('type')!r} is not a source type")
