"""The built-in providers: one package per wire format, listed once in ``FORMATS``.

Each package holds what production needs of its format (detection, the adapter, tool
definitions, the assistant turn and the tool results) and its ``PROVIDER`` entry; the
simulator's side of a format (encoder, request checks, endpoints) lives in
``toolwire.testing``, in its own table. ``FORMATS`` below is the one table: a literal, in
detection order. There is no registration: code that looks a format up takes the table
from its caller (``StreamAssembler(formats=...)``; ``FORMATS`` by default), so a test
passes its own table instead of changing this one.

Nothing outside ``_providers`` (and ``toolwire.testing``) names a format: no other room
imports a format's package (``_providers.<format>``) or knows its wire shapes. What one
format alone has reaches other rooms through its :class:`Provider` (custom tools, the
calls the client runs), and formats do not import each other: shared shapes live in the
shared modules here (``_openai_shapes``, ``_content_blocks``, ``_definitions``,
``_payload``). ``make lint`` checks both rules (import-linter contracts).

An adapter only translates its format into the assembler's deltas. The correlation rules
live in the assembler (``_core/assembler.py``), once for every format:

- a tool-call fragment is routed by provider id, then by index, then to the latest open
  call;
- a fragment without a name never opens a new call; a fragment with a new id and a name at
  an index already taken opens a new one;
- id and name are set once, never concatenated (providers repeat them in every chunk);
- indexes are hints: they may be missing, start at 1, be sparse, or be 0 for every call;
- empty argument text becomes ``{}`` only at validation, for tools without required
  parameters;
- a call is final only on the provider's terminal event (``finish_reason``,
  ``message_stop``, ``response.completed``, ``messageStop``, ``done``), never because its
  buffer parses; where the format also ends each call on its own (``fragment_start`` /
  ``CallDelta(start=True)``, then ``end``), a call that never got its end is not final;
- finish reasons are judged from what arrived: ``stop`` with calls is a tool turn;
  ``length`` and friends are a token-limit error even when the provider says
  ``tool_calls``.
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
