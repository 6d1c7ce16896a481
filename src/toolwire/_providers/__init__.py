"""The built-in providers: one package per wire format, listed once in ``BUILTINS``.

Each package holds what production needs of its format (detection, the adapter, tool
definitions, the assistant turn and the tool results) and its ``PROVIDER`` entry; the
simulator's side of a format (encoder, request checks, endpoints) lives in
``toolwire.testing``. Importing this package fills the core's provider table.
"""

from __future__ import annotations

from .._core.providers import Provider, install
from . import (
    anthropic,
    bedrock_converse,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)

__all__ = ["BUILTINS"]

BUILTINS: tuple[Provider, ...] = (
    openai_responses.PROVIDER,
    anthropic.PROVIDER,
    cohere.PROVIDER,
    openai_chat.PROVIDER,
    gemini.PROVIDER,
    ollama.PROVIDER,
    bedrock_converse.PROVIDER,
)

install(BUILTINS)
