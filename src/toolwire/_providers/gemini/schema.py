"""Gemini's schema dialect: a tool's JSON Schema rewritten into the Gemini API's subset.

The tool's schema is never modified (each definition gets a fresh copy); every ``$ref`` is
inlined; a schema the subset cannot say (a recursive type, a ``dict``) is sent whole as
``parametersJsonSchema`` instead. Linear in the inlined result.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..._core.jsonpointer import parse_fragment
from ..._errors import ToolDefinitionError
from .._definitions import (
    declared_types,
    distributed_branches,
    inferred_type,
    json_text,
    lift_exclusive_bounds,
    merge_all_of,
    one_of_as_any_of,
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
# Kept keywords copied as they are (the others are rewritten or written apart).
_GEMINI_COPIED = _GEMINI_KEEP - {
    "type",
    "nullable",
    "description",
    "enum",
    "anyOf",
    "format",
    "properties",
    "items",
    "propertyOrdering",
}

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

    def convert(self, schema: Any, pointer: str, active: Sequence[str]) -> dict[str, Any]:
        """The Gemini form of the subschema at ``pointer``; ``active`` are refs being inlined."""
        where = f"{self.where} at {pointer}"
        if schema is True or schema == {}:
            return {}
        if not isinstance(schema, dict):
            raise ToolDefinitionError(f"{where}: expected a schema object")
        if "$ref" in schema:
            return self.reference(schema, where, active)
        schema = tuple_to_items(one_of_as_any_of(merge_all_of(schema, where)))
        out: dict[str, Any] = {}
        if self.kinds(schema, pointer, active, out):
            out["nullable"] = True
        description = _literals(schema, out)
        if description:
            out["description"] = description
        self.keywords(schema, pointer, active, out)
        lift_exclusive_bounds(schema, out)
        if out.get("type") == "OBJECT" and "properties" not in out:
            out.pop("propertyOrdering", None)
        return out

    def kinds(
        self, schema: dict[str, Any], pointer: str, active: Sequence[str], out: dict[str, Any]
    ) -> bool:
        """Write the schema's type (a list of types as ``anyOf``) and its ``anyOf``
        branches; return whether it admits ``null``."""
        types = schema_types(schema)
        nullable = schema.get("nullable") is True or "null" in types
        types = [t for t in types if t != "null"]
        if "anyOf" in schema:
            nullable = self.branches(schema["anyOf"], pointer, active, out) or nullable
        elif not types:
            types = _shape_type(schema)
        _write_type(types, out)
        return nullable

    def reference(
        self, schema: dict[str, Any], where: str, active: Sequence[str]
    ) -> dict[str, Any]:
        """The referenced schema inlined, with the ``$ref``'s sibling keywords."""
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

    def branches(
        self, raw: list[Any], pointer: str, active: Sequence[str], out: dict[str, Any]
    ) -> bool:
        """Write the ``anyOf`` branches into ``out`` (one branch as the schema itself),
        a ``null`` branch left out; return whether there was one."""
        branches = [b for b in raw if not _is_null_schema(b)]
        converted = [
            self.convert(b, f"{pointer}/anyOf/{i}", active) for i, b in enumerate(branches)
        ]
        if len(converted) == 1:
            out.update(converted[0])
        elif converted:
            out["anyOf"] = converted
        return len(branches) < len(raw)

    def keywords(
        self, schema: dict[str, Any], pointer: str, active: Sequence[str], out: dict[str, Any]
    ) -> None:
        """Write the keywords the subset keeps that ``out`` does not hold yet."""
        for key, value in schema.items():
            if key in out:
                continue
            if key in _GEMINI_COPIED:
                out[key] = copy.deepcopy(value)
            elif key == "format" and value in ("enum", "date-time"):
                out[key] = value
            elif key == "properties":
                out[key] = {
                    name: self.convert(sub, f"{pointer}/properties/{name}", active)
                    for name, sub in value.items()
                }
                out["propertyOrdering"] = list(value)
            elif key == "items":
                out[key] = self.convert(value, f"{pointer}/items", active)


def _shape_type(schema: dict[str, Any]) -> list[str]:
    """Gemini needs a type on every schema: the type a schema without one has by its
    shape, as JSON Schema writers often leave it out."""
    if "properties" in schema:
        return ["object"]
    if "items" in schema:
        return ["array"]
    return []


def _write_type(types: list[str], out: dict[str, Any]) -> None:
    if len(types) == 1:
        out["type"] = _GEMINI_TYPES[types[0]]
    elif len(types) > 1:
        out["anyOf"] = [{"type": _GEMINI_TYPES[t]} for t in types]


def _literals(schema: dict[str, Any], out: dict[str, Any]) -> Any:
    """Write ``const``/``enum`` into ``out``: strings as a string enum, other values noted
    in the description, which is returned."""
    description = schema.get("description")
    values = _enum_values(schema, out)
    if values is None:
        return description
    if all(isinstance(v, str) for v in values):
        out["type"] = "STRING"
        out["enum"] = values
        out["format"] = "enum"
        return description
    return _with_allowed_values(description, values)


def _enum_values(schema: dict[str, Any], out: dict[str, Any]) -> list[Any] | None:
    """The values of ``const`` or ``enum`` (``null`` left out, ``out`` made nullable)."""
    if "const" in schema:
        return [schema["const"]]
    raw = schema.get("enum")
    if not isinstance(raw, list):
        return None
    values = [v for v in raw if v is not None]
    if len(values) < len(raw):
        out["nullable"] = True
    return values


def _with_allowed_values(description: Any, values: list[Any]) -> str:
    """The description with ``Allowed values: ...`` appended (values the dialect's
    ``enum`` cannot hold)."""
    shown = ", ".join(json_text(v) for v in values)
    note = f"Allowed values: {shown}."
    return f"{description} {note}" if description else note


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null" and len(schema) == 1


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
    if isinstance(node, list):
        return any(_free_objects(v) for v in node)
    if not isinstance(node, dict):
        return False
    if node.get("type") == "OBJECT" and not node.get("properties") and not top:
        return True
    return any(_free_objects(v) for v in _subschemas(node))


def _subschemas(node: dict[str, Any]) -> Iterator[Any]:
    properties = node.get("properties")
    if isinstance(properties, dict):
        yield from properties.values()
    for key in ("items", "anyOf"):
        if key in node:
            yield node[key]


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
        schema = one_of_as_any_of(schema)
        description = schema.get("description")
        types = declared_types(schema)
        literals = _literal_values(schema)
        if literals is not None:
            out, expressed = self.literals(schema, literals, types, pointer)
            if not expressed:
                description = _with_allowed_values(description, literals)
        else:
            out = self.shaped(schema, types, pointer)
        if description:
            out["description"] = description
        return out

    def shaped(self, schema: dict[str, Any], types: list[str], pointer: str) -> dict[str, Any]:
        """A schema without literals: its ``anyOf``, its type list as ``anyOf``, or the
        keywords of its one type."""
        out: dict[str, Any] = {}
        if "anyOf" in schema:
            where = f"{self.where} at {pointer}"
            out["anyOf"] = [
                self.convert(branch, f"{pointer}/anyOf/{i}")
                for i, branch in enumerate(distributed_branches(schema, where))
            ]
        elif len(types) > 1:
            out["anyOf"] = [
                self.convert(b, f"{pointer}/type/{i}")
                for i, b in enumerate(split_types(schema, types))
            ]
        else:
            self.typed(types[0] if types else None, schema, pointer, out)
        return out

    def literals(
        self, schema: dict[str, Any], literals: list[Any], types: list[str], pointer: str
    ) -> tuple[dict[str, Any], bool]:
        """An ``enum`` of its strings and numbers (``null`` an ``anyOf`` branch) and
        ``True``; for other values the schema without them and ``False`` (the caller notes
        them in the description)."""
        values = [v for v in literals if v is not None]
        expressed = all(_enum_value(v) for v in values)
        out = self.literal_form(schema, values if expressed else [], types, pointer)
        if len(values) < len(literals):
            out = {"anyOf": [out, {"type": "null"}]} if out else {"type": "null"}
        return out, expressed

    def literal_form(
        self, schema: dict[str, Any], values: list[Any], types: list[str], pointer: str
    ) -> dict[str, Any]:
        """An ``enum`` of ``values``; without them, the schema of the literals' types
        (the literals left for the description), or nothing."""
        typed = [t for t in types if t != "null"]
        if values:
            return _json_enum(values, typed)
        if not typed:
            return {}
        plain = {k: v for k, v in schema.items() if k not in ("enum", "const", "description")}
        return self.convert({**plain, "type": typed if len(typed) > 1 else typed[0]}, pointer)

    def typed(
        self, kind: str | None, schema: dict[str, Any], pointer: str, out: dict[str, Any]
    ) -> None:
        """Write the schema of one type (or none): its type and the keywords kept."""
        kind = inferred_type(schema) if kind is None else kind
        if kind is not None:
            out["type"] = kind
        for key, value in schema.items():
            write = _JSON_KEYWORDS.get(key)
            if write is not None:
                write(self, key, value, pointer, out)
        lift_exclusive_bounds(schema, out)

    def copied(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        out[key] = copy.deepcopy(value)

    def format(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        if value in _JSON_FORMATS:
            out[key] = value

    def properties(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        if isinstance(value, dict):
            out[key] = {
                name: self.convert(sub, f"{pointer}/properties/{name}")
                for name, sub in value.items()
            }
            out["propertyOrdering"] = list(value)

    def additional(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        if isinstance(value, bool):
            out[key] = value
        else:
            out[key] = self.convert(value, f"{pointer}/additionalProperties")

    def items(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        if value is not False:
            out[key] = self.convert(value, f"{pointer}/items")

    def prefix_items(self, key: str, value: Any, pointer: str, out: dict[str, Any]) -> None:
        if isinstance(value, list):
            out[key] = [self.convert(v, f"{pointer}/prefixItems/{i}") for i, v in enumerate(value)]

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


# How ``_Json.typed`` writes each keyword it keeps; the others are dropped.
_JSON_KEYWORDS: dict[str, Callable[[_Json, str, Any, str, dict[str, Any]], None]] = {
    **dict.fromkeys(_JSON_COPIED, _Json.copied),
    "format": _Json.format,
    "properties": _Json.properties,
    "additionalProperties": _Json.additional,
    "items": _Json.items,
    "prefixItems": _Json.prefix_items,
}


def _literal_values(schema: dict[str, Any]) -> list[Any] | None:
    """The values a ``const`` or an ``enum`` allows; ``None`` for neither."""
    if "const" in schema:
        return [schema["const"]]
    if isinstance(schema.get("enum"), list):
        return list(schema["enum"])
    return None


def _json_enum(values: list[Any], typed: list[str]) -> dict[str, Any]:
    """An ``enum`` of strings and numbers, typed ``string`` or numeric where it is one."""
    out: dict[str, Any] = {"enum": values}
    if all(isinstance(v, str) for v in values):
        out["type"] = "string"
    elif not any(isinstance(v, str) for v in values):
        out["type"] = typed[0] if typed in (["integer"], ["number"]) else "number"
    return out


def _enum_value(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)
