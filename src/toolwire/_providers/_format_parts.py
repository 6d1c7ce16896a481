"""What several formats write alike: the user message holding plain text."""

from __future__ import annotations

from typing import Any

__all__ = ["text_user_message"]


def text_user_message(text: str) -> dict[str, Any]:
    """A user message holding ``text`` as its content (what toolwire itself tells the
    model): ``{"role": "user", "content": text}``."""
    return {"role": "user", "content": text}
