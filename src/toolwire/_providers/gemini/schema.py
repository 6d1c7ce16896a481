"""Gemini's schema dialect: a tool's JSON Schema rewritten into the Gemini API's subset.

The tool's schema is never modified (each definition gets a fresh copy); every ``$ref`` is
inlined; a schema the subset cannot say (a recursive type, a ``dict``) is sent whole as
``parametersJsonSchema`` instead. Linear in the inlined result.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from ..._core.jsonpointer import parse_fragment
from ..._errors import ToolDefinitionError
from .._definitions import (
    TYPE_KEYWORDS,
    merge_all_of,
    resolve_in,
    schema_types,
    split_types,
    tuple_to_items,
)

__all__ = ["gemini_json_schema", "gemini_schema", "subset_schema"]


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

    def __init__(self, document: dict[str, Any], where: str, *, lenient: bool = False) -> None:
        self.document = document
        self.where = where
        self.lenient = lenient  # a recursive type sets ``cyclic`` instead of raising
        self.cyclic = False

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
                if self.lenient:
                    self.cyclic = True
                    return {}
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


def subset_schema(schema: dict[str, Any], *, where: str = "the schema") -> dict[str, Any] | None:
    """:func:`gemini_schema` of ``schema``, or ``None`` when the subset cannot say it: a
    recursive type, or an object with arbitrary keys (``dict[str, X]``, which could only
    become a bare ``OBJECT``, its values undescribed)."""
    rewriter = _Gemini(schema, where, lenient=True)
    converted = rewriter.convert(schema, "#", ())
    if rewriter.cyclic or _free_objects(converted, top=True):
        return None
    return converted


def _free_objects(node: Any, top: bool = False) -> bool:
    if isinstance(node, dict):
        if node.get("type") == "OBJECT" and not node.get("properties") and not top:
            return True
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                if any(_free_objects(v) for v in value.values()):
                    return True
            elif key in ("items", "anyOf") and _free_objects(value):
                return True
    elif isinstance(node, list):
        return any(_free_objects(v) for v in node)
    return False


# ------------------------------------------------------------------ JSON Schema form

# What parametersJsonSchema honours (the Gemini API's list for JSON Schema).
_JSON_FORMATS = frozenset({"date-time", "date", "time"})
_JSON_COPIED = frozenset({"minItems", "maxItems", "minimum", "maximum", "required"})


def gemini_json_schema(schema: dict[str, Any], *, where: str = "the schema") -> dict[str, Any]:
    """A copy of ``schema`` for ``parametersJsonSchema``, in the keywords the Gemini API
    reads there: ``$defs`` and ``$ref`` (to the root's ``$defs``; other references are
    inlined, and a ``$ref`` with sibling keywords becomes a one-branch ``anyOf``, as the API
    allows nothing beside a ``$ref``), ``type`` (a list of names becomes ``anyOf``),
    ``format`` (date-time, date, time), ``description``, ``enum`` (strings and numbers:
    ``null`` becomes an ``anyOf`` branch, other values move into the description),
    ``items``, ``prefixItems``, ``minItems``, ``maxItems``, ``minimum``, ``maximum``
    (``exclusiveMinimum``/``exclusiveMaximum`` become them), ``anyOf`` (``oneOf`` becomes
    ``anyOf``, ``allOf`` is merged), ``properties`` (with ``propertyOrdering``),
    ``additionalProperties`` and ``required``. Every other keyword is dropped. Recursive
    types keep their reference: the API unrolls them a few levels."""
    return _Json(schema, where).root(schema)


class _Json:
    """Rewrites one schema document for ``parametersJsonSchema``."""

    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where
        self.defs: dict[str, Any] = {}
        self.active: list[str] = []  # inlined references: one met again is a cycle

    def root(self, schema: dict[str, Any]) -> dict[str, Any]:
        out = self.convert(schema, "#")
        if self.defs:
            out["$defs"] = self.defs
        return out

    def convert(self, schema: Any, pointer: str) -> dict[str, Any]:
        where = f"{self.where} at {pointer}"
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            raise ToolDefinitionError(f"{where}: expected a schema object")
        schema = merge_all_of(schema, where)
        if "$ref" in schema:
            return self.reference(schema, pointer)
        if "oneOf" in schema:
            schema = {**{k: v for k, v in schema.items() if k != "oneOf"}, "anyOf": schema["oneOf"]}
        out: dict[str, Any] = {}
        description = schema.get("description")
        types = list(dict.fromkeys(schema_types(schema)))
        if schema.get("nullable") is True and types and "null" not in types:
            types.append("null")
        literals: list[Any] | None = None
        if "const" in schema:
            literals = [schema["const"]]
        elif isinstance(schema.get("enum"), list):
            literals = list(schema["enum"])
        if literals is not None:
            out, expressed = self.literals(schema, literals, types, pointer)
            if not expressed:
                shown = ", ".join(_json_text(v) for v in literals)
                note = f"Allowed values: {shown}."
                description = f"{description} {note}" if description else note
        elif "anyOf" in schema:
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "description")}
            rest = {k: v for k, v in rest.items() if k == "type" or _specific(k)}
            branches = []
            for i, branch in enumerate(schema["anyOf"]):
                if rest and isinstance(branch, dict):
                    branch = merge_all_of({**rest, "allOf": [branch]}, where)
                branches.append(self.convert(branch, f"{pointer}/anyOf/{i}"))
            out["anyOf"] = branches
        elif len(types) > 1:
            out["anyOf"] = [
                self.convert(b, f"{pointer}/type/{i}")
                for i, b in enumerate(split_types(schema, types))
            ]
        else:
            self.typed(types[0] if types else None, schema, pointer, out)
        if description:
            out["description"] = description
        return out

    def literals(
        self, schema: dict[str, Any], literals: list[Any], types: list[str], pointer: str
    ) -> tuple[dict[str, Any], bool]:
        """An ``enum`` of its strings and numbers (``null`` an ``anyOf`` branch) and
        ``True``; for other values the schema without them and ``False`` (the caller notes
        them in the description)."""
        values = [v for v in literals if v is not None]
        typed = [t for t in types if t != "null"]
        out: dict[str, Any] = {}
        expressed = all(_enum_value(v) for v in values)
        if values and expressed:
            out["enum"] = values
            if all(isinstance(v, str) for v in values):
                out["type"] = "string"
            elif not any(isinstance(v, str) for v in values):
                out["type"] = typed[0] if typed in (["integer"], ["number"]) else "number"
        elif typed:
            plain = {k: v for k, v in schema.items() if k not in ("enum", "const", "description")}
            out = self.convert({**plain, "type": typed if len(typed) > 1 else typed[0]}, pointer)
        if len(values) < len(literals):
            out = {"anyOf": [out, {"type": "null"}]} if out else {"type": "null"}
        return out, expressed

    def typed(
        self, kind: str | None, schema: dict[str, Any], pointer: str, out: dict[str, Any]
    ) -> None:
        if kind is None:
            if "properties" in schema or "additionalProperties" in schema:
                kind = "object"
            elif "items" in schema or "prefixItems" in schema:
                kind = "array"
        if kind is not None:
            out["type"] = kind
        for key, value in schema.items():
            if key in _JSON_COPIED:
                out[key] = copy.deepcopy(value)
            elif key == "format" and value in _JSON_FORMATS:
                out[key] = value
            elif key == "properties" and isinstance(value, dict):
                out[key] = {
                    name: self.convert(sub, f"{pointer}/properties/{name}")
                    for name, sub in value.items()
                }
                out["propertyOrdering"] = list(value)
            elif key == "additionalProperties":
                if isinstance(value, bool):
                    out[key] = value
                else:
                    out[key] = self.convert(value, f"{pointer}/additionalProperties")
            elif key == "items" and value is not False:
                out[key] = self.convert(value, f"{pointer}/items")
            elif key == "prefixItems" and isinstance(value, list):
                out[key] = [
                    self.convert(v, f"{pointer}/prefixItems/{i}") for i, v in enumerate(value)
                ]
        for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            value = schema.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out.setdefault(bound, value)

    def reference(self, schema: dict[str, Any], pointer: str) -> dict[str, Any]:
        ref = schema["$ref"]
        where = f"{self.where} at {pointer}"
        target = resolve_in(self.document, ref, where)
        tokens = parse_fragment(ref)
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        if len(tokens) == 2 and tokens[0] == "$defs" and pointer != "#":
            name = tokens[1]
            if name not in self.defs:
                self.defs[name] = None  # placeholder: a recursive use sees it taken
                self.defs[name] = self.convert(target, ref)
            if not siblings:
                return {"$ref": ref}
            out = self.convert({k: v for k, v in siblings.items()}, pointer)
            return {"anyOf": [{"$ref": ref}], **out}
        if ref in self.active:
            raise ToolDefinitionError(
                f"{where}: the recursive type {ref!r} is not under the root's $defs; "
                "Gemini's JSON Schema can only refer to those"
            )
        self.active.append(ref)
        try:
            return self.convert({**target, **siblings}, ref)
        finally:
            self.active.pop()


_SPECIFIC_KEYS: frozenset[str] = frozenset().union(*TYPE_KEYWORDS.values())


def _specific(key: str) -> bool:
    return key in _SPECIFIC_KEYS


def _enum_value(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)
