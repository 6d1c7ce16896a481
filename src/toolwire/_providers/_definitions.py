"""Tool definitions: the shapes and schema rewrites that several providers share, strict mode
included.

A tool's schema is never modified: each format gets a fresh copy, and validation uses the
original. Linear in the size of the schemas.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from .._core.jsonpointer import resolve_ref
from .._errors import ToolDefinitionError

if TYPE_CHECKING:
    from .._core.providers import ToolSpec

__all__ = [
    "TYPE_KEYWORDS",
    "declaration",
    "function_definition",
    "merge_all_of",
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
            if key == "properties" and isinstance(value, dict):
                merged.setdefault("properties", {})
                merged["properties"] = {**merged["properties"], **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = list(dict.fromkeys([*merged.get("required", []), *value]))
            elif key in merged and merged[key] != value and key not in ("description", "title"):
                raise ToolDefinitionError(
                    f"{where}: allOf parts disagree on {key!r}; this schema cannot be "
                    "rewritten without allOf"
                )
            else:
                merged.setdefault(key, value)
    return merged


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
            schema = {**target, **siblings}
            schema = merge_all_of(schema, where)
        if "oneOf" in schema:
            schema = {**{k: v for k, v in schema.items() if k != "oneOf"}, "anyOf": schema["oneOf"]}
        schema = tuple_to_items(schema)
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key not in _STRICT_KEEP:
                continue
            if key == "format" and value not in _STRICT_FORMATS:
                continue
            if key in ("properties", "$defs", "definitions"):
                out[key] = {
                    name: self.convert(sub, f"{pointer}/{key}/{name}")
                    for name, sub in value.items()
                }
            elif key == "items":
                out[key] = self.convert(value, f"{pointer}/items")
            elif key == "anyOf":
                out[key] = [self.convert(b, f"{pointer}/anyOf/{i}") for i, b in enumerate(value)]
            elif key == "additionalProperties":
                continue  # decided below
            else:
                out[key] = copy.deepcopy(value)
        types = schema_types(schema)
        is_object = "object" in types or "properties" in schema
        if is_object:
            extra = schema.get("additionalProperties")
            # The root of a tool without parameters ({"type": "object"}) is closed as an
            # empty object: the model can then only send {}, which the original accepts.
            free_form = "properties" not in schema and extra is not False and not root
            if isinstance(extra, dict) or extra is True or free_form:
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
        if root and "anyOf" in out:
            raise ToolDefinitionError(f"{where}: the root of a strict schema must be an object")
        return out


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if _admits_null(schema):
        return schema
    out = dict(schema)
    raw = out.get("type")
    if isinstance(raw, str) and "$ref" not in out and "anyOf" not in out and "const" not in out:
        out["type"] = [raw, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    if isinstance(raw, list) and "$ref" not in out and "anyOf" not in out and "const" not in out:
        out["type"] = [*raw, "null"]
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
        return out
    description = out.pop("description", None)
    if "anyOf" in out and len(out) == 1:
        wrapped: dict[str, Any] = {"anyOf": [*out["anyOf"], {"type": "null"}]}
    else:
        wrapped = {"anyOf": [out, {"type": "null"}]}
    if description is not None:
        wrapped["description"] = description
    return wrapped
