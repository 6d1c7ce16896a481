"""Anthropic's strict-tool dialect: a tool's JSON Schema rewritten into the subset that a
``"strict": true`` tool accepts, the same subset the anthropic SDK's ``transform_schema``
produces (so that function leaves the result unchanged). Rules: :func:`anthropic_strict_schema`.
"""

from __future__ import annotations

import copy
from collections.abc import Set as AbstractSet
from typing import Any

from ..._core.jsonpointer import parse_fragment
from ..._errors import ToolDefinitionError
from .._definitions import (
    TYPE_KEYWORDS,
    arbitrary_keys,
    declared_types,
    distributed_branches,
    inferred_type,
    json_text,
    merge_all_of,
    one_of_as_any_of,
    resolve_in,
    split_types,
    tuple_to_items,
)

__all__ = ["anthropic_strict_schema"]

# String formats a strict schema may carry (the SDK's SupportedStringFormats).
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
# Annotations with no meaning for the model's output: left out.
_DROPPED = frozenset(
    {
        "title",
        "$schema",
        "$id",
        "$anchor",
        "$comment",
        "$defs",
        "definitions",
        "deprecated",
        "readOnly",
        "writeOnly",
        "discriminator",
        "propertyOrdering",
        "nullable",
    }
)
_SPECIFIC: frozenset[str] = frozenset().union(*TYPE_KEYWORDS.values())
# Keywords every form of a schema accounts for: never noted in the description.
_ALWAYS_USED = frozenset({"type", "description", "anyOf", "enum", "const"})


def anthropic_strict_schema(schema: dict[str, Any], *, where: str = "the schema") -> dict[str, Any]:
    """A copy of ``schema`` in Anthropic's strict-tool subset.

    Kept: ``type`` (one name; a list of names becomes ``anyOf``), ``properties``,
    ``required`` (as given: optional fields stay optional), ``items``, ``enum`` and
    ``const`` of strings, numbers, booleans and null (without ``type``, as the SDK writes
    them), ``anyOf`` (``oneOf`` becomes ``anyOf``, ``allOf`` is merged), ``description``,
    ``format`` (date-time, time, date, duration, email, hostname, uri, ipv4, ipv6, uuid),
    ``minItems`` 0 or 1, and ``$ref`` to the root's ``$defs`` (other references, and
    references with sibling keywords, are inlined). Every object gets
    ``"additionalProperties": false``. Constraints the subset lacks (``minimum``,
    ``pattern``, ``minLength``, other ``minItems``, ``maxItems``, ``default``, other
    formats...) are appended to the description as ``{minimum: 1, maximum: 10}``, as the
    SDK does: the model reads them and the toolbox still enforces them. ``title`` and
    other annotations are dropped. Refused (:class:`ToolDefinitionError`): recursive
    types, objects with arbitrary keys (``dict[str, X]``), values of any type (``{}``,
    ``list`` without item type), ``enum``/``const`` holding objects or arrays.
    """
    return _Strict(schema, where).root(schema)


class _Strict:
    """Rewrites one schema document; ``$defs`` entries are converted once, depth first."""

    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where
        self.defs: dict[str, Any] = {}
        self.active: list[str] = []  # references being converted: one met again is a cycle

    def root(self, schema: dict[str, Any]) -> dict[str, Any]:
        out = self.convert(schema, "#", root=True)
        if "type" not in out or out["type"] != "object":
            raise ToolDefinitionError(
                f"{self.where}: the root of a strict tool schema must be an object"
            )
        if self.defs:
            out["$defs"] = self.defs
        return out

    def fail(self, pointer: str, message: str) -> ToolDefinitionError:
        return ToolDefinitionError(f"{self.where} at {pointer}: {message}")

    def reference(self, schema: dict[str, Any], pointer: str, root: bool) -> dict[str, Any]:
        ref = schema["$ref"]
        if ref in self.active:
            raise self.fail(
                pointer,
                f"the recursive type {ref!r} cannot be expressed in Anthropic strict mode "
                "(recursive schemas are not supported); send this tool without strict",
            )
        where = f"{self.where} at {pointer}"
        target = resolve_in(self.document, ref, where)
        tokens = parse_fragment(ref)
        self.active.append(ref)
        try:
            if len(schema) == 1 and not root and len(tokens) == 2 and tokens[0] == "$defs":
                name = tokens[1]
                if name not in self.defs:
                    self.defs[name] = None  # placeholder: keeps the order of first use
                    self.defs[name] = self.convert(target, ref)
                return {"$ref": ref}
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            if not isinstance(target, dict):
                raise self.fail(pointer, f"$ref {ref!r} does not name a schema object")
            return self.convert({**target, **siblings}, ref, root=root)
        finally:
            self.active.pop()

    def convert(self, schema: Any, pointer: str, *, root: bool = False) -> dict[str, Any]:
        """The strict form of the subschema at ``pointer``."""
        if schema is True or schema == {}:
            raise self.fail(
                pointer, "a value of any type cannot be expressed in Anthropic strict mode"
            )
        if not isinstance(schema, dict):
            raise self.fail(pointer, "strict mode needs a schema object")
        where = f"{self.where} at {pointer}"
        schema = merge_all_of(schema, where)
        if "$ref" in schema:
            return self.reference(schema, pointer, root)
        schema = tuple_to_items(one_of_as_any_of(schema))
        out: dict[str, Any] = {}
        used = _ALWAYS_USED | self.shaped(schema, pointer, out, root)
        description = _noted(schema, used)
        if description is not None:
            out["description"] = description
        return out

    def shaped(
        self, schema: dict[str, Any], pointer: str, out: dict[str, Any], root: bool
    ) -> AbstractSet[str]:
        """Fill ``out`` with the schema's literals, its ``anyOf``, its type list as
        ``anyOf``, or the keywords of its one type; return the keywords used."""
        types = declared_types(schema)
        if "enum" in schema or "const" in schema:
            self.literals(schema, pointer, out)
            return frozenset()
        if "anyOf" in schema:
            out["anyOf"] = self.branches(schema, pointer)
            return _SPECIFIC
        if len(types) > 1:
            branches = split_types(schema, types)
            out["anyOf"] = [self.convert(b, f"{pointer}/type/{i}") for i, b in enumerate(branches)]
            return _SPECIFIC
        kind = types[0] if types else inferred_type(schema)
        if kind is None:
            raise self.fail(
                pointer,
                "a schema without a type cannot be expressed in Anthropic strict mode",
            )
        if kind not in _TYPES:
            raise self.fail(pointer, f"unknown type {kind!r}")
        out["type"] = kind
        return self.typed(kind, schema, pointer, out, root)

    def literals(self, schema: dict[str, Any], pointer: str, out: dict[str, Any]) -> None:
        if "const" in schema:
            if not _primitive(schema["const"]):
                raise self.fail(pointer, "a const object or array cannot be expressed")
            out["const"] = copy.deepcopy(schema["const"])
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise self.fail(pointer, "enum must be a non-empty list")
            if not all(_primitive(v) for v in values):
                raise self.fail(
                    pointer,
                    "an enum holding objects or arrays cannot be expressed in Anthropic strict "
                    "mode (only strings, numbers, booleans and null)",
                )
            out["enum"] = list(values)

    def branches(self, schema: dict[str, Any], pointer: str) -> list[dict[str, Any]]:
        raw = schema["anyOf"]
        if not isinstance(raw, list) or not raw:
            raise self.fail(pointer, "anyOf must be a non-empty list of schemas")
        # Keywords beside anyOf (a type, properties...) apply to every branch.
        branches = distributed_branches(schema, f"{self.where} at {pointer}")
        return [self.convert(branch, f"{pointer}/anyOf/{i}") for i, branch in enumerate(branches)]

    def typed(
        self, kind: str, schema: dict[str, Any], pointer: str, out: dict[str, Any], root: bool
    ) -> AbstractSet[str]:
        """Fill ``out`` with the keywords of type ``kind``; return the keywords used."""
        if kind == "object":
            return self.object(schema, pointer, out, root)
        if kind == "array":
            return self.array(schema, pointer, out)
        if kind == "string" and schema.get("format") in _FORMATS:
            out["format"] = schema["format"]
            return {"format"}
        return frozenset()

    def object(
        self, schema: dict[str, Any], pointer: str, out: dict[str, Any], root: bool
    ) -> AbstractSet[str]:
        if arbitrary_keys(schema, root) or "patternProperties" in schema:
            raise self.fail(
                pointer,
                "an object with arbitrary keys (a dict, or additionalProperties with a "
                "schema) cannot be expressed in Anthropic strict mode; use named fields",
            )
        properties = schema.get("properties", {})
        if not isinstance(properties, dict):
            raise self.fail(pointer, "properties must be an object")
        out["properties"] = {
            name: self.convert(sub, f"{pointer}/properties/{name}")
            for name, sub in properties.items()
        }
        out["additionalProperties"] = False
        if "required" in schema:
            out["required"] = list(schema["required"])
        return {"properties", "additionalProperties", "required"}

    def array(self, schema: dict[str, Any], pointer: str, out: dict[str, Any]) -> AbstractSet[str]:
        if "items" not in schema or schema["items"] is True or schema["items"] == {}:
            raise self.fail(
                pointer,
                "an array of values of any type cannot be expressed in Anthropic strict "
                "mode; give its items a type",
            )
        out["items"] = self.convert(schema["items"], f"{pointer}/items")
        min_items = schema.get("minItems")
        if min_items in (0, 1) and not isinstance(min_items, bool):
            out["minItems"] = min_items
            return {"items", "minItems"}
        return {"items"}


def _noted(schema: dict[str, Any], used: AbstractSet[str]) -> Any:
    """The description, with the keywords the subset lacks appended as ``{minimum: 1}``."""
    notes = {k: v for k, v in schema.items() if k not in used and k not in _DROPPED}
    description = schema.get("description")
    if not notes:
        return description
    shown = ", ".join(f"{k}: {json_text(v)}" for k, v in notes.items())
    note = "{" + shown + "}"
    return f"{description}\n\n{note}" if isinstance(description, str) else note


def _primitive(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))
