"""JSON-safe, versioned dicts: the rules every ``to_dict`` / ``from_dict`` pair shares."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._errors import UsageError

__all__ = ["DICT_VERSION", "check_version", "jsonable", "plain_map", "read"]

T = TypeVar("T")

DICT_VERSION = 1
"""The version the ``to_dict`` methods write; ``from_dict`` reads it and every older one."""


def check_version(data: Any, what: str) -> dict[str, Any]:
    """``data`` as the dict of a ``what``, refused (``UsageError``) when it is not one or
    comes from a newer toolwire."""
    if not isinstance(data, dict):
        raise UsageError(f"{what}.from_dict() takes a dict, not {type(data).__name__}")
    version = data.get("version", DICT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version > DICT_VERSION:
        raise UsageError(
            f"this {what} dict has version {version!r}; this toolwire reads up to {DICT_VERSION}"
        )
    return data


def read(reader: Callable[[Any], T], data: Any, what: str) -> T:
    """``reader(data)``, with a malformed dict refused as a ``UsageError``."""
    try:
        return reader(data)
    except UsageError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"not the dict of a {what}: {type(exc).__name__}: {exc}") from None


def jsonable(value: Any) -> Any:
    """A JSON value for ``value``: itself when it is one, a pydantic model's JSON form,
    else the value of its JSON text (``json.dumps`` with ``default=str`` refused)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        where, bad = _first_non_json(value, "")
        what = f"{where} is a {type(bad).__name__}" if where else f"a {type(bad).__name__}"
        hint = (
            " (bytes are not encoded: a provider that takes raw bytes, such as Bedrock's "
            "image blocks, would get text back from from_dict; keep such values out of the "
            "dict, e.g. store the file and pass its name)"
            if isinstance(bad, (bytes, bytearray, memoryview))
            else ""
        )
        message = f"{what}, which has no JSON form, so it cannot be kept in a dict{hint}"
        raise UsageError(message) from None


def plain_map(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


def _first_non_json(value: Any, path: str) -> tuple[str, Any]:
    """The path (``[0]["content"]``...) and the first part of ``value`` that JSON cannot
    carry (``("", value)`` when it is ``value`` itself). Iterative: no recursion limit."""
    todo: list[tuple[str, Any]] = [(path, value)]
    while todo:
        where, item = todo.pop()
        if item is None or type(item) in (str, int, bool):
            continue
        if type(item) is float:
            if item != item or item in (float("inf"), float("-inf")):
                return where, item
            continue
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return where, item
            todo.extend((f"{where}[{key!r}]", member) for key, member in reversed(item.items()))
        elif isinstance(item, (list, tuple)):
            todo.extend((f"{where}[{i}]", member) for i, member in reversed(list(enumerate(item))))
        else:
            return where, item
    return path, value
