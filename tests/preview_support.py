"""The monotonic-preview relation that the parser, assembler and output tests share."""

from __future__ import annotations

from typing import Any

from toolwire import MISSING


def is_prefix(a: Any, b: Any) -> bool:
    """The contract's "prefix": same type; strings by startswith; lists by length and
    element-wise prefix; dicts by key subset with prefix values; other scalars equal.
    MISSING is a prefix of everything."""
    if a is MISSING:
        return True
    if b is MISSING or type(a) is not type(b):
        return False
    if isinstance(a, str):
        return b.startswith(a)
    if isinstance(a, list):
        return len(a) <= len(b) and all(is_prefix(x, y) for x, y in zip(a, b, strict=False))
    if isinstance(a, dict):
        return all(k in b and is_prefix(v, b[k]) for k, v in a.items())
    return bool(a == b)
