"""The formats the simulator serves, and the encoder that writes each one.

The encoders are imported on first use (``encoder_for``), so building scenarios needs
none of them. Lookup is O(1).
"""

from __future__ import annotations

import importlib

from .._errors import UnknownFormat
from .._wire_writing import Encoder

__all__ = ["FORMATS", "encoder_for"]

_ENCODERS: dict[str, tuple[str, str]] = {
    "openai-chat": ("_encode_openai_chat", "OpenAIChatEncoder"),
    "openai-responses": ("_encode_openai_responses", "OpenAIResponsesEncoder"),
    "anthropic": ("_encode_anthropic", "AnthropicEncoder"),
    "gemini": ("_encode_gemini", "GeminiEncoder"),
    "bedrock-converse": ("_encode_bedrock", "BedrockEncoder"),
    "ollama": ("_encode_ollama", "OllamaEncoder"),
    "cohere": ("_encode_cohere", "CohereEncoder"),
}
FORMATS: tuple[str, ...] = tuple(_ENCODERS)


def encoder_for(format: str) -> Encoder:
    """The encoder of ``format``; :class:`~toolwire.UnknownFormat` for other names."""
    entry = _ENCODERS.get(format)
    if entry is None:
        raise UnknownFormat(f"the simulator has no encoder for {format!r}; known: {FORMATS}")
    module = importlib.import_module(f"{__package__}.{entry[0]}")
    encoder: Encoder = getattr(module, entry[1])()
    return encoder
