"""Checks shared by the providers' image and document blocks: base64 text and data URLs."""

from __future__ import annotations

import base64
import binascii
from typing import Any

__all__ = ["data_url_refusal", "is_base64"]


def is_base64(text: Any, *, urlsafe: bool = False) -> bool:
    """Whether ``text`` is non-empty, valid (padded) base64; with ``urlsafe``, the URL-safe
    alphabet is taken too (protobuf JSON reads both: Gemini)."""
    if not isinstance(text, str) or not text:
        return False
    if urlsafe:
        text = text.replace("-", "+").replace("_", "/")
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def data_url_refusal(url: Any, where: str) -> str | None:
    """The refusal of a ``data:<type>;base64,<data>`` URL at ``where``, ``None`` if valid
    (other URLs are not checked)."""
    if not isinstance(url, str) or not url:
        return f"Invalid value for '{where}': expected a URL string."
    if not url.startswith("data:"):
        return None
    header, _, data = url.partition(",")
    if not header.endswith(";base64") or "/" not in header or not is_base64(data):
        return f"Invalid '{where}': expected a base64-encoded data URL."
    return None
