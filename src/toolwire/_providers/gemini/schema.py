"""Gemini's schema dialect: a tool's JSON Schema rewritten into the Gemini API's subset.

The tool's ``parameters`` schema is never modified: each definition gets a fresh copy
(``_definitions`` holds the strategy, strict mode and the rewriting pieces several
dialects share; this one is Gemini's alone, so it lives in Gemini's package).

Strategy (:func:`gemini_schema`, the OpenAPI 3.0 subset of the Gemini API's ``Schema``,
checked against the Gemini and Vertex AI ``Schema`` reference): every ``$ref`` is inlined
(a recursive type cannot be: ``ToolDefinitionError``); types are the upper-case enum names
(``"STRING"``); a type list or ``anyOf`` with ``null`` becomes ``"nullable": true``;
``oneOf`` becomes ``anyOf``, ``allOf`` is merged; ``const`` becomes a one-value ``enum``;
string ``enum``\\s get ``"format": "enum"``, a non-string ``enum`` is not expressible and is
moved into the description; ``format`` is kept only for ``enum`` and ``date-time`` (the
only formats the Gemini Developer API accepts); ``exclusiveMinimum``/``exclusiveMaximum``
become ``minimum``/``maximum``; tuples become ``items`` with ``anyOf``; objects get
``propertyOrdering``. Kept: ``type``, ``format``, ``description``, ``nullable``, ``enum``,
``items``, ``minItems``, ``maxItems``, ``properties``, ``required``, ``minProperties``,
``maxProperties``, ``minLength``, ``maxLength``, ``pattern``, ``minimum``, ``maximum``,
``anyOf``, ``propertyOrdering``. Dropped: ``$schema``, ``$defs``, ``title``, ``default``,
``additionalProperties``, ``examples`` and every other keyword. A missing ``type`` is
inferred from ``properties`` (object) or ``items`` (array). A nested object with arbitrary
keys (``dict[str, X]``) can only be sent as ``{"type": "OBJECT"}`` (assumed accepted; the
subset has no way to describe its values).

Complexity: linear in the size of the inlined result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from ..._errors import ToolDefinitionError
from .._definitions import merge_all_of, resolve_in, schema_types, tuple_to_items

__all__ = ["gemini_schema"]

_GEMINI_KEEP = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "items",
        "minItems",
        "maxItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "propertyOrdering",
    }
)

_GEMINI_TYPES = {
    "string": "STRING",
    "integer": "INTEGER",
    "number": "NUMBER",
    "boolean": "BOOLEAN",
    "object": "OBJECT",
    "array": "ARRAY",
}


def gemini_schema(schema: dict[str, Any], *, where: str = "the schema") -> dict[str, Any]:
    """A copy of ``schema`` in the Gemini API's OpenAPI 3.0 subset (see the module docstring)."""
    return _Gemini(schema, where).convert(schema, "#", ())


class _Gemini:
    """Rewrites one schema document into Gemini's OpenAPI subset, inlining references."""

    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where

    def convert(self, schema: Any, pointer: str, active: Sequence[str]) -> dict[str, Any]:  # noqa: C901  one pass over a subschema's keywords, one branch per keyword
        """The Gemini form of the subschema at ``pointer``; ``active`` are refs being inlined."""
        where = f"{self.where} at {pointer}"
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            raise ToolDefinitionError(f"{where}: expected a schema object")
        if "$ref" in schema:
            ref = schema["$ref"]
            if ref in active:
                raise ToolDefinitionError(
                    f"{where}: the recursive type {ref!r} cannot be expressed for Gemini, "
                    "whose schemas have no references"
                )
            target = resolve_in(self.document, ref, where)
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            return self.convert({**target, **siblings}, ref, [*active, ref])
        schema = merge_all_of(schema, where)
        if "oneOf" in schema:
            schema = {**{k: v for k, v in schema.items() if k != "oneOf"}, "anyOf": schema["oneOf"]}
        schema = tuple_to_items(schema)
        out: dict[str, Any] = {}
        nullable = schema.get("nullable") is True
        types = schema_types(schema)
        if "null" in types:
            nullable = True
            types = [t for t in types if t != "null"]
        if "anyOf" in schema:
            branches = [b for b in schema["anyOf"] if not _is_null_schema(b)]
            if len(branches) < len(schema["anyOf"]):
                nullable = True
            converted = [
                self.convert(b, f"{pointer}/anyOf/{i}", active) for i, b in enumerate(branches)
            ]
            if len(converted) == 1:
                out.update(converted[0])
            elif converted:
                out["anyOf"] = converted
        if not types and "anyOf" not in schema:
            # Gemini needs a type on every schema: infer it from the shape, as JSON
            # Schema writers often leave it out.
            if "properties" in schema:
                types = ["object"]
            elif "items" in schema:
                types = ["array"]
        if len(types) == 1:
            out["type"] = _GEMINI_TYPES[types[0]]
        elif len(types) > 1:
            out["anyOf"] = [{"type": _GEMINI_TYPES[t]} for t in types]
        if nullable:
            out["nullable"] = True
        description = schema.get("description")
        enum_values: list[Any] | None = None
        if "const" in schema:
            enum_values = [schema["const"]]
        elif isinstance(schema.get("enum"), list):
            enum_values = [v for v in schema["enum"] if v is not None]
            if len(enum_values) < len(schema["enum"]):
                out["nullable"] = True
        if enum_values is not None:
            if all(isinstance(v, str) for v in enum_values):
                out["type"] = "STRING"
                out["enum"] = enum_values
                out["format"] = "enum"
            else:
                shown = ", ".join(_json_text(v) for v in enum_values)
                note = f"Allowed values: {shown}."
                description = f"{description} {note}" if description else note
        if description:
            out["description"] = description
        for key, value in schema.items():
            if key not in _GEMINI_KEEP or key in out or key in ("description", "enum", "anyOf"):
                continue
            if key in ("type", "nullable"):
                continue
            if key == "format":
                if value in ("enum", "date-time"):
                    out[key] = value
            elif key == "properties":
                out[key] = {
                    name: self.convert(sub, f"{pointer}/properties/{name}", active)
                    for name, sub in value.items()
                }
                out["propertyOrdering"] = list(value)
            elif key == "items":
                out[key] = self.convert(value, f"{pointer}/items", active)
            elif key == "propertyOrdering":
                continue
            else:
                out[key] = copy.deepcopy(value)
        for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = schema.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.setdefault(bound, value)
        if out.get("type") == "OBJECT" and "properties" not in out:
            out.pop("propertyOrdering", None)
        return out


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
