"""JSON Schema's names for the types of values.

One vocabulary (``"null"``, ``"boolean"``, ``"string"``, ``"number"``, ``"object"``,
``"array"``) for what an adapter's error message says a payload value is and for the kinds
the structured-output shapes tell apart (a union member is chosen by the kind of value that
arrived). O(1) for a decoded JSON value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["json_type"]

# A decoded JSON value has exactly one of these types (bool before int: one lookup decides).
_EXACT: dict[type, str] = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
    dict: "object",
    list: "array",
}
# Anything else that still reads as JSON: subclasses (an IntEnum is a number), any mapping,
# tuples.
_BY_BASE: tuple[tuple[type, str], ...] = (
    (str, "string"),
    (int, "number"),
    (float, "number"),
    (Mapping, "object"),
    (list, "array"),
    (tuple, "array"),
)


def json_type(value: Any) -> str:
    """JSON Schema's name of ``value``'s type; for a value that is no JSON type at all, its
    Python class name (``"bytes"``), which is what an error message should show."""
    name = _EXACT.get(type(value))
    if name is not None:
        return name
    for base, name in _BY_BASE:
        if isinstance(value, base):
            return name
    return type(value).__name__
