"""What each format package hands the table, written once: its :class:`Provider`, built from
the parts every format defines under the same names, and the user message most formats write
alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._core.providers import Provider

__all__ = ["PARTS", "format_provider", "text_user_message"]

PARTS = ("detect", "adapter", "definition", "tool_results", "assistant_turn", "user_message")
"""The parts every format package defines at its top level, named as the :class:`Provider`
fields they fill."""


def format_provider(name: str, parts: Mapping[str, Any], **options: Any) -> Provider:
    """The :class:`Provider` named ``name``, its :data:`PARTS` taken from ``parts`` (the
    format package's ``globals()``) and what only this format has from ``options`` (any
    other ``Provider`` field). A missing or non-callable part raises ``TypeError`` at
    import, not at the first stream."""
    found: dict[str, Any] = {part: parts.get(part) for part in PARTS}
    missing = [part for part, value in found.items() if not callable(value)]
    if missing:
        raise TypeError(f"format {name!r} defines no callable {', '.join(missing)}")
    return Provider(name=name, **found, **options)


def text_user_message(text: str) -> dict[str, Any]:
    """A user message holding ``text`` as its content (what toolwire itself tells the
    model): ``{"role": "user", "content": text}``."""
    return {"role": "user", "content": text}
