"""What one streamed response finished as: ``Response`` and its parts, or ``Partial``.

``Response`` exists only for streams that ended properly; every ``StreamError`` carries a
``Partial`` instead, whose calls are evidence of what arrived and never instructions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage as the provider reported it, merged over the stream.

    Counts that the provider did not report are ``None``. ``raw`` keeps the provider's last
    usage objects by their own field names.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One finished tool call whose arguments are complete JSON.

    ``arguments`` is ``json.loads(raw_arguments)``, or ``{}`` when the provider sent no
    argument text at all (validation decides whether that is acceptable for the tool).
    ``id`` is the provider's id or a deterministic synthesised one; ``index`` is the call's
    position in the response. ``metadata`` holds what must be echoed back to the provider
    with the result (Gemini ``thought_signature``, Responses ``item_id``...).
    """

    id: str
    name: str
    arguments: Any
    raw_arguments: str
    index: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False
    """True when the provider sent no id and ``id`` was synthesised by toolwire."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedCall:
    """A call that can never be valid: arguments that are not JSON, or an empty name."""

    id: str
    name: str
    raw_arguments: str
    reason: str
    index: int
    offset: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """A streamed response that ended properly (the provider's terminal event arrived)."""

    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    rejected: list[RejectedCall]
    finish_reason: str
    raw_finish_reason: str | None
    usage: Usage | None
    response_id: str | None
    model: str | None
    format: str | None = None
    created: str | None = None
    """The provider's creation timestamp as sent, where it sends one (Ollama)."""
    """The provider's creation timestamp as sent, where it sends one (Ollama)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialCall:
    """A call as far as it arrived in a stream that did not end properly."""

    id: str
    name: str
    raw_arguments: str
    index: int
    ended: bool
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Partial:
    """What had arrived when a stream failed: the evidence a ``StreamError`` carries."""

    text: str
    reasoning: str
    calls: list[PartialCall]
    usage: Usage | None
    raw_finish_reason: str | None
    response_id: str | None
    model: str | None
    format: str | None = None
    created: str | None = None
