"""The adapter registry: wire-format name -> adapter class, and format detection.

Each adapter lives in its own module and is imported lazily, the first time its format is
used, so ``import toolwire`` stays cheap and one broken adapter cannot break the others.
Every adapter class has a ``format`` attribute and ``translate(payload, event=None) ->
list[Delta]`` (see ``_deltas.py``).

:func:`detect_format` decides ``format="auto"`` from the first payload, using only
structural markers that each wire format always has on its first event (the event
``type`` vocabulary, ``choices``/``object``, ``candidates``, Bedrock's single
``{eventName: {...}}`` shape, Ollama's ``message`` + ``done``). It is O(number of keys).
A payload that matches none raises :class:`StreamFormatError` naming it.

Optional fast path: an adapter may also offer ``fragment(payload) -> (index, text) |
None``, a pure function that recognises a payload consisting of nothing but one argument
fragment for the call at provider index ``index`` (the bulk of a big call) and returns
``None`` for anything else. The assembler then skips building deltas; it must mean
exactly ``[CallDelta(index=index, arguments=text)]`` from ``translate``.
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from .._deltas import Delta
from .._errors import StreamFormatError, UnknownFormat

__all__ = ["FORMATS", "Adapter", "adapter_class", "create_adapter", "detect_format"]

# format -> (module, class name)
_REGISTRY: dict[str, tuple[str, str]] = {
    "openai-chat": ("openai_chat", "OpenAIChatAdapter"),
    "openai-responses": ("openai_responses", "OpenAIResponsesAdapter"),
    "anthropic": ("anthropic", "AnthropicAdapter"),
    "gemini": ("gemini", "GeminiAdapter"),
    "bedrock-converse": ("bedrock", "BedrockConverseAdapter"),
    "ollama": ("ollama", "OllamaAdapter"),
    "cohere": ("cohere", "CohereAdapter"),
}

FORMATS: tuple[str, ...] = tuple(_REGISTRY)
"""Every wire format name toolwire knows (``"auto"`` is not one: it picks one of these)."""

_ANTHROPIC_TYPES = frozenset(
    {
        "message_start",
        "message_delta",
        "message_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "ping",
    }
)
_COHERE_TYPES = frozenset(
    {
        "message-start",
        "message-end",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "debug",
    }
)
_BEDROCK_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
        "internalServerException",
        "modelStreamErrorException",
        "validationException",
        "throttlingException",
        "serviceUnavailableException",
    }
)
_GEMINI_KEYS = ("candidates", "promptFeedback", "usageMetadata")


class Adapter(Protocol):
    """What the assembler needs from an adapter."""

    format: str

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """Translate one payload (``event`` is its SSE event name, if any)."""
        ...


def adapter_class(format: str) -> type[Adapter]:
    """The adapter class for ``format``; :class:`UnknownFormat` for names toolwire lacks."""
    entry = _REGISTRY.get(format)
    if entry is None:
        known = ", ".join(FORMATS)
        raise UnknownFormat(f"unknown format {format!r}; known: auto, {known}")
    module = importlib.import_module(f"{__name__}.{entry[0]}")
    cls: type[Adapter] = getattr(module, entry[1])
    return cls


def create_adapter(format: str, *, choice: int = 0) -> Adapter:
    """A fresh adapter for one stream (``choice`` selects the choice for openai-chat)."""
    cls = adapter_class(format)
    if format == "openai-chat":
        return cls(choice=choice)  # type: ignore[call-arg]
    return cls()


def detect_format(payload: Any, event: str | None = None) -> str:
    """The wire format that ``payload`` (a decoded first event) belongs to.

    Raises :class:`StreamFormatError` when the payload matches no known format.
    """
    if type(payload) is not dict:
        raise StreamFormatError(
            f"cannot detect the format of a {type(payload).__name__} payload", payload=payload
        )
    kind = payload.get("type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "openai-responses"
        if kind in _ANTHROPIC_TYPES:
            return "anthropic"
        if kind in _COHERE_TYPES:
            return "cohere"
        if kind == "error":
            # Anthropic nests an error object; a Responses error event is flat
            return "anthropic" if type(payload.get("error")) is dict else "openai-responses"
    if "choices" in payload or payload.get("object") == "chat.completion.chunk":
        return "openai-chat"
    if any(key in payload for key in _GEMINI_KEYS):
        return "gemini"
    if "done" in payload and ("message" in payload or "model" in payload):
        return "ollama"
    if len(payload) == 1 and next(iter(payload)) in _BEDROCK_EVENTS:
        return "bedrock-converse"
    if "error" in payload:
        # OpenAI-compatible servers (Groq, vLLM, ...) send a bare {"error": {...}}
        return "openai-chat"
    if isinstance(event, str) and event.startswith("response."):
        return "openai-responses"
    shown = ", ".join(sorted(map(str, payload))[:8])
    raise StreamFormatError(
        f"cannot detect the wire format of a payload with keys [{shown}]", payload=payload
    )
