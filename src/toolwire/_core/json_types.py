"""JSON Schema's names for the types of values, and its equality of values.

One vocabulary (``"null"``, ``"boolean"``, ``"string"``, ``"number"``, ``"object"``,
``"array"``) for what an adapter's error message says a payload value is and for the kinds
the structured-output shapes tell apart (a union member is chosen by the kind of value that
arrived). O(1) for a decoded JSON value. :func:`json_equal` is the one JSON equality (of
schema keywords, and of a call's arguments stated twice).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["json_canonical", "json_equal", "json_type"]

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


def json_canonical(value: Any) -> Any:
    """A hashable form of a JSON value under JSON equality (``1 == 1.0``, ``true != 1``)."""
    if value is None:
        return ("null",)
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("num", value)
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer():
            return ("num", int(value))
        return ("num", value)
    if isinstance(value, str):
        return ("str", value)
    if isinstance(value, list):
        return ("arr", tuple(json_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("obj", frozenset((str(k), json_canonical(v)) for k, v in value.items()))
    return ("py", id(value))  # not a JSON value: equal only to itself


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal the way JSON Schema compares them: objects by their
    members in any order, arrays item by item, numbers by value (``1 == 1.0``), and a
    boolean never equal to a number."""
    return bool(json_canonical(a) == json_canonical(b))
