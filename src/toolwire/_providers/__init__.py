"""The built-in providers: one package per wire format, listed once in the literal ``FORMATS``
(detection order; no registration: lookups take a table from their caller, so a test passes
its own, ``StreamAssembler(formats=Formats(TOY, *FORMATS))``).

Nothing outside ``_providers`` (and ``toolwire.testing``) names a format: no other room
imports a format's package, and what one format alone has reaches them through its
:class:`Provider`. Formats do not import each other: shared shapes live in the shared
modules here (``_openai_shapes``, ``_content_blocks``, ``_definitions``, ``_payload``,
``_format_parts``, which builds each format's ``PROVIDER`` from its parts).

An adapter only translates; the assembler applies the correlation rules, once for all:
route a fragment by provider id, then index, then to the latest open call; a fragment
without a name never opens a call, one with a new id and a name at a taken index does; id
and name are set once, never concatenated; indexes are hints (missing, from 1, sparse, all
0); empty arguments become ``{}`` only at validation, for tools without required
parameters; a call is final only on the provider's terminal event, never because its buffer
parses, and where the format ends each call itself (``CallDelta(start=True)`` ... ``end``),
not without that end; ``stop`` with calls is a tool turn, ``length`` a token-limit error.
"""

from __future__ import annotations

from .._core.providers import Formats
from . import (
    anthropic,
    bedrock_converse,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)

__all__ = ["FORMATS"]

FORMATS = Formats(
    openai_responses.PROVIDER,
    anthropic.PROVIDER,
    cohere.PROVIDER,
    openai_chat.PROVIDER,
    gemini.PROVIDER,
    ollama.PROVIDER,
    bedrock_converse.PROVIDER,
)
"""Every built-in wire format, in detection order (a format that could claim another's
first payload comes before it: Responses and Anthropic before OpenAI chat)."""
