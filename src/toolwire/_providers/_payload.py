"""Typed reads from decoded provider payloads, shared by the adapters.

A payload that breaks its format always becomes a ``StreamFormatError`` naming the field,
never a ``KeyError``/``TypeError`` from inside toolwire. O(1) per read.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._core.json_types import json_type as type_name
from .._errors import StreamFormatError

_T = TypeVar("_T")

__all__ = [
    "dump_arguments",
    "ensure_dict",
    "error_text",
    "escape_surrogates",
    "fail",
    "opt_bool",
    "opt_count",
    "opt_dict",
    "opt_list",
    "opt_str",
    "req_count",
    "req_dict",
    "req_str",
    "type_name",
]


def fail(message: str, payload: Any) -> StreamFormatError:
    """A ``StreamFormatError`` for ``payload``; the caller raises it (``raise fail(...)``)."""
    return StreamFormatError(message, payload=payload)


def ensure_dict(value: Any, where: str, payload: Any) -> dict[str, Any]:
    """``value`` itself as a JSON object, or a format error naming ``where``."""
    if not isinstance(value, dict):
        raise fail(f"{where} must be an object, got {type_name(value)}", payload)
    return value


def _wrong(
    obj: Mapping[str, Any], key: str, want: str, where: str, payload: Any
) -> StreamFormatError:
    return fail(f"{where}.{key} must be {want}, got {type_name(obj[key])}", payload)


def _missing(key: str, where: str, payload: Any) -> StreamFormatError:
    return fail(f"{where}.{key} is missing", payload)


_Read = Callable[[Mapping[str, Any], str, str, Any], _T]
"""A typed read of ``obj[key]``: ``(obj, key, where, payload)`` to the value."""


def _optional(kind: type[_T], want: str) -> _Read[_T | None]:
    """The ``opt_*`` read of one JSON type: ``obj[key]`` when it is a ``kind``, ``None``
    when absent or null, a format error saying that it must be ``want`` otherwise."""

    def read(obj: Mapping[str, Any], key: str, where: str, payload: Any) -> _T | None:
        """``obj[key]`` as a ``kind``, ``None`` when absent or null."""
        value = obj.get(key)
        if value is None or isinstance(value, kind):
            return value
        raise _wrong(obj, key, want, where, payload)

    return read


def _required(kind: type[_T], want: str) -> _Read[_T]:
    """The ``req_*`` read of one JSON type: ``obj[key]`` when it is a ``kind``, a format
    error saying that it is missing when absent or null, or that it must be ``want``."""

    def read(obj: Mapping[str, Any], key: str, where: str, payload: Any) -> _T:
        """``obj[key]`` as a ``kind``; absent, null or another type is a format error."""
        value = obj.get(key)
        if isinstance(value, kind):
            return value
        if value is None:
            raise _missing(key, where, payload)
        raise _wrong(obj, key, want, where, payload)

    return read


opt_dict: _Read[dict[str, Any] | None] = _optional(dict, "an object")
"""``obj[key]`` as an object, ``None`` when absent or null."""

req_dict: _Read[dict[str, Any]] = _required(dict, "an object")
"""``obj[key]`` as an object; absent, null or another type is a format error."""

opt_list: _Read[list[Any] | None] = _optional(list, "an array")
"""``obj[key]`` as an array, ``None`` when absent or null."""

opt_str: _Read[str | None] = _optional(str, "a string")
"""``obj[key]`` as a string, ``None`` when absent or null."""

req_str: _Read[str] = _required(str, "a string")
"""``obj[key]`` as a string; absent, null or another type is a format error."""

opt_bool: _Read[bool | None] = _optional(bool, "a boolean")
"""``obj[key]`` as a boolean, ``None`` when absent or null."""


def opt_count(obj: Mapping[str, Any], key: str, where: str, payload: Any) -> int | None:
    """``obj[key]`` as a non-negative integer (a count or an index), ``None`` when absent.

    A float with an integral value (``12.0``, as some JSON encoders write counts) is
    accepted and converted; booleans, fractions and negative numbers are format errors.
    """
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value.is_integer():
        return int(value)
    raise _wrong(obj, key, "a non-negative integer", where, payload)


def req_count(obj: Mapping[str, Any], key: str, where: str, payload: Any) -> int:
    """``obj[key]`` as a non-negative integer; absent or null is a format error."""
    value = opt_count(obj, key, where, payload)
    if value is None:
        raise _missing(key, where, payload)
    return value


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """JSON text with every lone surrogate written as a ``\\uXXXX`` escape.

    ``json.dumps(..., ensure_ascii=False)`` copies a lone surrogate (which ``json.loads``
    accepts from ``"\\ud83d"``) into its output as a raw code point, and such a string
    cannot be encoded as UTF-8. The escape means the same JSON value and is always
    encodable. Only strings that contain a surrogate pay for the substitution.
    """
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def dump_arguments(value: Any, where: str, payload: Any) -> str:
    """Serialise an argument object that a provider sent as JSON (not as JSON text).

    Compact separators and ``ensure_ascii=False``: the text is toolwire's, not the
    provider's, so it is made as short as possible and keeps non-ASCII characters
    readable; ``json.loads`` of it gives back ``value`` exactly. Values that JSON cannot
    carry (NaN, infinities, non-string keys, foreign objects) are a format error.
    """
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise fail(f"{where} cannot be serialised as JSON: {exc}", payload) from exc
    return escape_surrogates(text)


def error_text(error: Mapping[str, Any], label: str, fallback: str, payload: Any) -> str:
    """``"label: message"`` from an error object's ``message`` and its ``label`` member
    (Anthropic's ``type``, Google's ``status``), whichever of them it has, or
    ``fallback``."""
    message = opt_str(error, "message", "error", payload)
    kind = opt_str(error, label, "error", payload)
    if message and kind:
        return f"{kind}: {message}"
    return message or kind or fallback
