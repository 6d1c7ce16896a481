"""Tool definitions: the shapes and schema rewrites that several providers share, strict mode
included.

A tool's schema is never modified: each format gets a fresh copy, and validation uses the
original. Linear in the size of the schemas.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._core.jsonpointer import resolve_ref
from .._errors import ToolDefinitionError

if TYPE_CHECKING:
    from .._core.providers import ToolSpec

__all__ = [
    "TYPE_KEYWORDS",
    "arbitrary_keys",
    "declaration",
    "declared_types",
    "distributed_branches",
    "function_definition",
    "inferred_type",
    "json_text",
    "lift_exclusive_bounds",
    "merge_all_of",
    "one_of_as_any_of",
    "parameters_for",
    "resolve_in",
    "schema_types",
    "split_types",
    "strict_schema",
    "tuple_to_items",
]

_STRICT_KEEP = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "$ref",
        "$defs",
        "definitions",
        "description",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
_STRICT_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


def parameters_for(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """The tool's parameter schema: a strict-mode copy (:func:`strict_schema`) when
    ``strict``, else a plain deep copy."""
    if strict:
        return strict_schema(tool.parameters, where=f"tool {tool.name!r}")
    return copy.deepcopy(tool.parameters)


def declaration(tool: ToolSpec, strict: bool, schema_key: str) -> dict[str, Any]:
    """``{"name", "description", schema_key: the parameter schema}``, plus ``"strict":
    true`` with a strict-mode schema when ``strict``: the function declaration that OpenAI
    wraps in ``{"type": "function"}`` and Anthropic sends as it is (``input_schema``)."""
    out: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        schema_key: parameters_for(tool, strict),
    }
    if strict:
        out["strict"] = True
    return out


def function_definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """OpenAI's function tool, ``{"type": "function", "function": {"name", "description",
    "parameters"}}``, plus ``"strict": true`` inside ``function`` when ``strict``."""
    return {"type": "function", "function": declaration(tool, strict, "parameters")}


# --------------------------------------------------------------------------- shared


def resolve_in(document: dict[str, Any], ref: Any, where: str) -> Any:
    """Follow ``ref`` with toolwire's one JSON-pointer resolver (the validator's too), so
    that definitions and validation read every ``$ref`` the same way."""
    if not isinstance(ref, str):
        raise ToolDefinitionError(f"{where}: $ref {ref!r} is not a string")
    try:
        return resolve_ref(document, ref)
    except ToolDefinitionError as exc:
        raise ToolDefinitionError(f"{where}: {exc}") from None


def schema_types(schema: dict[str, Any]) -> list[str]:
    """The type names of a schema's ``type`` (a name or a list of names; none without)."""
    raw = schema.get("type")
    if isinstance(raw, str):
        return [raw]
    if isinstance(raw, list):
        return [t for t in raw if isinstance(t, str)]
    return []


# Keywords that concern one type only: what goes with each branch when a type list is split.
_NUMBER_KEYWORDS = frozenset(
    {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)
TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "object": frozenset(
        {
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "propertyNames",
            "minProperties",
            "maxProperties",
            "dependentRequired",
            "propertyOrdering",
        }
    ),
    "array": frozenset({"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}),
    "string": frozenset({"format", "pattern", "minLength", "maxLength"}),
    "number": _NUMBER_KEYWORDS,
    "integer": _NUMBER_KEYWORDS,
}


def split_types(schema: dict[str, Any], types: list[str]) -> list[dict[str, Any]]:
    """One schema per name in ``types``, each with the keywords of its type (the
    ``anyOf`` branches a type list stands for); the other keywords stay with the caller."""
    return [
        {"type": t, **{k: v for k, v in schema.items() if k in TYPE_KEYWORDS.get(t, ())}}
        for t in types
    ]


def _admits_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return schema is True
    if "null" in schema_types(schema) or schema.get("nullable") is True:
        return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and any(_admits_null(b) for b in branches):
            return True
    return None in schema.get("enum", [1]) or ("const" in schema and schema["const"] is None)


def merge_all_of(schema: dict[str, Any], where: str) -> dict[str, Any]:
    """Fold ``allOf`` into its parent: exact for one part, for objects a union of fields."""
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return schema
    merged = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        if not isinstance(part, dict):
            raise ToolDefinitionError(f"{where}: allOf must hold schemas")
        for key, value in part.items():
            _merge_keyword(merged, key, value, where)
    return merged


def _merge_keyword(merged: dict[str, Any], key: str, value: Any, where: str) -> None:
    """Add one keyword of an ``allOf`` part to ``merged``: fields and required names
    unite, annotations keep the first, any other keyword must agree."""
    if key == "properties" and isinstance(value, dict):
        merged["properties"] = {**merged.get("properties", {}), **value}
    elif key == "required" and isinstance(value, list):
        merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
    elif key in merged and merged[key] != value and key not in ("description", "title"):
        raise ToolDefinitionError(
            f"{where}: allOf parts disagree on {key!r}; this schema cannot be "
            "rewritten without allOf"
        )
    else:
        merged.setdefault(key, value)


def one_of_as_any_of(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``oneOf`` said as ``anyOf`` (no dialect here has ``oneOf``: the
    toolbox still enforces exactly one); other schemas unchanged."""
    if "oneOf" not in schema:
        return schema
    return {**{k: v for k, v in schema.items() if k != "oneOf"}, "anyOf": schema["oneOf"]}


def declared_types(schema: dict[str, Any]) -> list[str]:
    """The schema's type names once each, ``"null"`` added for ``nullable: true``."""
    types = list(dict.fromkeys(schema_types(schema)))
    if schema.get("nullable") is True and types and "null" not in types:
        types.append("null")
    return types


def inferred_type(schema: dict[str, Any]) -> str | None:
    """The type a schema without ``type`` has by its keywords: ``object`` or ``array``."""
    if "properties" in schema or "additionalProperties" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    return None


def arbitrary_keys(schema: dict[str, Any], root: bool) -> bool:
    """Whether an object schema allows keys it does not name (a ``dict``): a schema for
    ``additionalProperties``, ``true``, or no ``properties`` and not closed. The root of a
    tool without parameters (``{"type": "object"}``) is not: a strict dialect closes it
    as an empty object, the model can then only send ``{}``, which the original accepts."""
    extra = schema.get("additionalProperties")
    free_form = "properties" not in schema and extra is not False and not root
    return isinstance(extra, dict) or extra is True or free_form


_SPECIFIC_KEYWORDS: frozenset[str] = frozenset().union(*TYPE_KEYWORDS.values())


def distributed_branches(schema: dict[str, Any], where: str) -> Iterator[Any]:
    """The ``anyOf`` branches, each with the keywords beside ``anyOf`` that apply to every
    branch (a type, properties...) merged in."""
    rest = {k: v for k, v in schema.items() if k == "type" or k in _SPECIFIC_KEYWORDS}
    for branch in schema["anyOf"]:
        if rest and isinstance(branch, dict):
            branch = merge_all_of({**rest, "allOf": [branch]}, where)
        yield branch


def lift_exclusive_bounds(schema: dict[str, Any], out: dict[str, Any]) -> None:
    """``exclusiveMinimum``/``exclusiveMaximum`` as ``minimum``/``maximum`` in ``out``,
    where ``out`` has no bound of its own (for dialects without exclusive bounds)."""
    for key, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        value = schema.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            out.setdefault(bound, value)


def json_text(value: Any) -> str:
    """``value`` as JSON text, for a description (non-ASCII kept as it is)."""
    return json.dumps(value, ensure_ascii=False)


def tuple_to_items(schema: dict[str, Any]) -> dict[str, Any]:
    """A tuple schema (``prefixItems``) as ``items`` with the members as ``anyOf`` and, for
    a closed tuple, fixed ``minItems``/``maxItems``; other schemas unchanged."""
    prefix = schema.get("prefixItems")
    if not isinstance(prefix, list):
        return schema
    out = {k: v for k, v in schema.items() if k != "prefixItems"}
    distinct: list[Any] = []
    for member in prefix:
        if member not in distinct:
            distinct.append(member)
    if len(distinct) == 1:
        out["items"] = distinct[0]
    elif distinct:
        out["items"] = {"anyOf": distinct}
    if "items" not in schema or schema.get("items") is False:
        out.setdefault("minItems", len(prefix))
        out.setdefault("maxItems", len(prefix))
    return out


# --------------------------------------------------------------------------- strict


def strict_schema(schema: dict[str, Any], *, where: str = "the schema") -> dict[str, Any]:
    """A strict-mode compatible copy of ``schema`` (see the module docstring)."""
    converted: dict[str, Any] = _Strict(schema, where).convert(schema, "#", root=True)
    return converted


class _Strict:
    """Rewrites one schema document for OpenAI strict mode."""

    def __init__(self, document: dict[str, Any], where: str) -> None:
        self.document = document
        self.where = where

    def convert(self, schema: Any, pointer: str, *, root: bool = False) -> Any:
        """The strict-mode form of the subschema at ``pointer``."""
        where = f"{self.where} at {pointer}"
        schema = self.normalised(schema, where)
        out = {
            key: self.keyword(key, value, pointer)
            for key, value in schema.items()
            if _strict_kept(key, value)
        }
        if "object" in schema_types(schema) or "properties" in schema:
            _close_object(schema, out, where, root)
        if root and "anyOf" in out:
            raise ToolDefinitionError(f"{where}: the root of a strict schema must be an object")
        return out

    def normalised(self, schema: Any, where: str) -> dict[str, Any]:
        """``schema`` checked, its ``allOf`` merged, a ``$ref`` with siblings inlined,
        ``oneOf`` as ``anyOf`` and a tuple as ``items``."""
        if schema is True or schema == {}:
            raise ToolDefinitionError(
                f"{where}: a value of any type cannot be expressed in strict mode"
            )
        if not isinstance(schema, dict):
            raise ToolDefinitionError(f"{where}: strict mode needs a schema object")
        schema = merge_all_of(schema, where)
        if "$ref" in schema and len(schema) > 1:
            # OpenAI rejects a $ref with sibling keywords (even a description): inline it.
            # One level only, so recursive types keep their reference further down.
            siblings = {k: v for k, v in schema.items() if k != "$ref"}
            target = resolve_in(self.document, schema["$ref"], where)
            schema = merge_all_of({**target, **siblings}, where)
        return tuple_to_items(one_of_as_any_of(schema))

    def keyword(self, key: str, value: Any, pointer: str) -> Any:
        """The strict form of one kept keyword's value: subschemas converted, the rest
        copied."""
        if key in ("properties", "$defs", "definitions"):
            return {
                name: self.convert(sub, f"{pointer}/{key}/{name}") for name, sub in value.items()
            }
        if key == "items":
            return self.convert(value, f"{pointer}/items")
        if key == "anyOf":
            return [self.convert(b, f"{pointer}/anyOf/{i}") for i, b in enumerate(value)]
        return copy.deepcopy(value)


def _strict_kept(key: str, value: Any) -> bool:
    """Whether strict mode keeps the keyword (``additionalProperties`` is decided apart)."""
    if key == "format":
        return value in _STRICT_FORMATS
    return key in _STRICT_KEEP and key != "additionalProperties"


def _close_object(schema: dict[str, Any], out: dict[str, Any], where: str, root: bool) -> None:
    """Close the object ``out``: no other keys, every field required, the optional ones
    nullable instead."""
    if arbitrary_keys(schema, root):
        raise ToolDefinitionError(
            f"{where}: an object with arbitrary keys (a dict, or additionalProperties "
            "with a schema) cannot be expressed in strict mode; use named fields"
        )
    out["additionalProperties"] = False
    properties: dict[str, Any] = out.get("properties", {})
    required = set(schema.get("required", []))
    for name, sub in list(properties.items()):
        if name not in required:
            properties[name] = _nullable(sub)
    out["properties"] = properties
    out["required"] = list(properties)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _admits_null(schema):
        return schema
    out = dict(schema)
    raw = out.get("type")
    if isinstance(raw, (str, list)) and not {"$ref", "anyOf", "const"} & out.keys():
        out["type"] = [*([raw] if isinstance(raw, str) else raw), "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    description = out.pop("description", None)
    branches = out["anyOf"] if "anyOf" in out and len(out) == 1 else [out]
    wrapped: dict[str, Any] = {"anyOf": [*branches, {"type": "null"}]}
    if description is not None:
        wrapped["description"] = description
    return wrapped
