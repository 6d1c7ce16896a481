"""Raw JSON Schemas (tool parameters given as a dict), validated by jsonschema-rs and explained
in toolwire's own words.

Validity is the engine's answer for the declared draft; no schema is ever fetched; no
``RecursionError`` escapes. Validation is linear in the value times the applying subschemas.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Union
from urllib.parse import urljoin

import jsonschema_rs
from jsonschema_rs import ValidationErrorKind as Kind

from .._core.json_types import json_canonical as _canonical
from .._core.json_types import json_equal
from .._core.jsonpointer import format_fragment, format_pointer, resolve
from .._core.partial_json import DEFAULT_MAX_DEPTH
from .._errors import ToolDefinitionError

__all__ = [
    "BASE_URI",
    "MAX_DEPTH",
    "MAX_SCHEMA_DEPTH",
    "PathPart",
    "SchemaValidator",
    "Violation",
    "compile_schema",
    "describe_value",
    "format_path",
    "json_equal",
    "scan_json",
]

PathPart = Union[str, int]  # noqa: UP007 (a runtime alias; Python 3.10 syntax)
Path = tuple[PathPart, ...]
Retriever = Callable[[str], Any]

BASE_URI = "urn:toolwire:schema"
"""Where a tool's schema document lives for the engine; relative ``$ref``\\s resolve from it."""

MAX_DEPTH = DEFAULT_MAX_DEPTH
"""The deepest nesting of containers a value may have: the partial-JSON parser's limit."""

MAX_SCHEMA_DEPTH = 200
"""The deepest nesting of a schema document (the engine reads schemas up to about 250)."""

# The engine turns an error's instance into Python with a recursion limit of 255: errors
# about values nested deeper than this cannot be listed.
_REPORT_DEPTH = 250

_DRAFTS = {
    "https://json-schema.org/draft/2020-12/schema": jsonschema_rs.Draft202012,
    "https://json-schema.org/draft/2019-09/schema": jsonschema_rs.Draft201909,
    "http://json-schema.org/draft-07/schema": jsonschema_rs.Draft7,
    "http://json-schema.org/draft-06/schema": jsonschema_rs.Draft6,
    "http://json-schema.org/draft-04/schema": jsonschema_rs.Draft4,
}
_VALIDATOR_CLASSES: dict[int, type[jsonschema_rs.Validator]] = {
    jsonschema_rs.Draft202012: jsonschema_rs.Draft202012Validator,
    jsonschema_rs.Draft201909: jsonschema_rs.Draft201909Validator,
    jsonschema_rs.Draft7: jsonschema_rs.Draft7Validator,
    jsonschema_rs.Draft6: jsonschema_rs.Draft6Validator,
    jsonschema_rs.Draft4: jsonschema_rs.Draft4Validator,
}

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "object": "an object",
    "array": "an array",
    "null": "null",
}

_BOUND_WORDS = {
    "minimum": "at least",
    "maximum": "at most",
    "exclusiveMinimum": "greater than",
    "exclusiveMaximum": "less than",
}
_COUNT_WORDS = {
    "minItems": ("at least", "item", "an array"),
    "maxItems": ("at most", "item", "an array"),
    "minProperties": ("at least", "property", "an object"),
    "maxProperties": ("at most", "property", "an object"),
}

# Keywords whose value is one subschema, a list of them, or a name -> subschema map. Used to
# find every subschema without knowing the draft (a keyword a draft does not know is walked
# too, which only matters for the ``nullable`` rewrite, where it is harmless).
_ONE = (
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "items",
)
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_NAMED = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """One way in which a value breaks its schema: where (``path``) and what (``message``)."""

    path: Path
    message: str

    def __str__(self) -> str:
        """The violation as one sentence for a model: ``at a.b: expected ...``."""
        return f"at {format_path(self.path)}: {self.message}"


def format_path(path: Sequence[PathPart]) -> str:
    """Render a JSON path for a reader: ``items[2].name``, ``["a b"]``; the root is named."""
    if not path:
        return "the top level of the arguments"
    out: list[str] = []
    for part in path:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif part.isidentifier() and part.isascii():
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{_quote(part)}]")
    return "".join(out)


def _quote(text: str, limit: int = 60) -> str:
    """A short double-quoted rendering of ``text`` (escaped as JSON, cut with an ellipsis)."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    escaped = cut.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _literal(value: Any) -> str | None:
    """``null``, ``true`` or ``false`` for those values (by identity: ``1`` is not
    ``true``), else ``None``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return None


def describe_value(value: Any) -> str:
    """Say what a value is, for an error message: ``the string "5"``, ``an array of 3 items``."""
    literal = _literal(value)
    if literal is not None:
        return literal
    if isinstance(value, str):
        return f"the string {_quote(value)}"
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, list):
        n = len(value)
        return f"an array of {n} item{'' if n == 1 else 's'}"
    if isinstance(value, dict):
        n = len(value)
        return f"an object with {n} key{'' if n == 1 else 's'}"
    return f"a value of Python type {type(value).__name__} (not a JSON value)"


_PLAIN_SCALARS = frozenset({str, int, bool, type(None)})


def scan_json(value: Any, limit: int = MAX_DEPTH) -> tuple[Violation | None, int]:
    """The first part of ``value`` that is not JSON (or nests deeper than ``limit``), and the
    depth of the deepest container (0 for a scalar).

    JSON values are what ``json.loads`` gives: ``dict`` with ``str`` keys, ``list``, ``str``,
    ``int``, finite ``float``, ``bool`` and ``None``. Iterative: any depth is safe to scan.
    The common case (plain ``json.loads`` output) takes a fast pass that builds no paths;
    anything else is scanned again, slowly, to name the offending path.
    """
    plain = _PLAIN_SCALARS
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            # Keys are left to the engine, which refuses a key that is not a string.
            children = item.values()
        elif kind is list:
            children = item
        elif kind in plain or (kind is float and math.isfinite(item)):
            continue
        else:
            return _scan_slowly(value, limit)
        if depth > limit:
            return _scan_slowly(value, limit)
        if depth > deepest:
            deepest = depth
        for child in children:
            child_kind = type(child)
            if child_kind in plain:
                continue
            if child_kind is float and math.isfinite(child):
                continue
            stack.append((child, depth + 1))
    return None, deepest


def _scan_slowly(value: Any, limit: int) -> tuple[Violation | None, int]:
    """:func:`scan_json` with paths, for values that are not plain JSON (or too deep)."""
    deepest = 0
    stack: list[tuple[Any, Path]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if item is None or isinstance(item, (str, bool, int)):
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                return Violation(path=path, message=f"{item!r} is not a JSON number"), deepest
            continue
        if isinstance(item, (list, dict)):
            depth = len(path) + 1
            if depth > limit:
                message = f"the value is nested too deeply (more than {limit} levels)"
                return Violation(path=(), message=message), depth
            deepest = max(deepest, depth)
            if isinstance(item, list):
                stack.extend((v, (*path, i)) for i, v in enumerate(item))
                continue
            for key, v in item.items():
                if not isinstance(key, str):
                    return Violation(path=path, message=f"the key {key!r} is not a string"), deepest
                stack.append((v, (*path, key)))
            continue
        return Violation(path=path, message=f"got {describe_value(item)}"), deepest
    return None, deepest


def _refuse_remote(uri: str) -> Any:
    raise LookupError(
        f"toolwire does not fetch schemas ({uri}); put the definition in the schema's $defs"
    )


def compile_schema(
    schema: Any, *, max_errors: int = 10, retriever: Retriever | None = None
) -> SchemaValidator:
    """Compile ``schema`` (a dict or a boolean) into a :class:`SchemaValidator`.

    ``retriever(uri)`` returns the document for a remote reference (tests serve the
    JSON-Schema-Test-Suite's ``remotes/`` this way); without one, remote references are
    refused. Raises :class:`ToolDefinitionError` for a schema that cannot be used.
    """
    if not isinstance(schema, (dict, bool)):
        raise ToolDefinitionError(
            f"invalid JSON Schema at #: a schema must be an object or a boolean, not {schema!r}"
        )
    _check_schema_depth(schema)
    prepared = _rewrite_nullable(schema)
    fetch = retriever or _refuse_remote
    draft = _draft_of(prepared, fetch)
    try:
        registry = jsonschema_rs.Registry([(BASE_URI, prepared)], draft=draft, retriever=fetch)
        validator = _VALIDATOR_CLASSES[draft](
            prepared, base_uri=BASE_URI, registry=registry, retriever=fetch, validate_formats=False
        )
    except jsonschema_rs.ValidationError as exc:
        raise _schema_error(exc) from None
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        raise _schema_error(exc) from None
    return SchemaValidator(schema, prepared, draft, registry, validator, fetch, max_errors)


def _check_schema_depth(schema: Any) -> None:
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            raise ToolDefinitionError(
                f"invalid JSON Schema: it is nested too deeply (more than {MAX_SCHEMA_DEPTH} "
                "levels)"
            )
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node)


def _subschemas(schema: dict[str, Any]) -> Iterator[tuple[tuple[str | int, ...], Any]]:
    """Every direct subschema of ``schema`` with its relative location."""
    for key in _ONE:
        if key in schema and isinstance(schema[key], (dict, bool)):
            yield (key,), schema[key]
    for key in _MANY:
        if isinstance(schema.get(key), list):
            for i, sub in enumerate(schema[key]):
                yield (key, i), sub
    for key in _NAMED:
        if isinstance(schema.get(key), dict):
            for name, sub in schema[key].items():
                yield (key, name), sub
    dependencies = schema.get("dependencies")
    if isinstance(dependencies, dict):
        for name, sub in dependencies.items():
            if isinstance(sub, (dict, bool)):
                yield ("dependencies", name), sub


def _rewrite_nullable(schema: Any) -> Any:
    """A private deep copy of ``schema`` in which ``nullable: true`` adds ``null`` to ``type``."""
    document = copy.deepcopy(schema)
    stack = [document]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        if node.get("nullable") is True and "type" in node:
            types = node["type"]
            if isinstance(types, str) and types != "null":
                node["type"] = [types, "null"]
            elif isinstance(types, list) and "null" not in types:
                node["type"] = [*types, "null"]
        stack.extend(sub for _, sub in _subschemas(node))
    return document


def _draft_of(schema: Any, fetch: Retriever) -> int:
    """The draft a document is written in: its ``$schema``, followed through custom
    meta-schemas (which ``fetch`` must serve) to one of the drafts; 2020-12 without one."""
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    seen: list[str] = []
    while declared is not None:
        key = declared.rstrip("#") if isinstance(declared, str) else None
        if key in _DRAFTS:
            return _DRAFTS[key]
        if key is None or key in seen or len(seen) >= 8:
            break
        seen.append(key)
        try:
            meta = fetch(key)
        except Exception:  # a retriever's own failure: reported as the unknown $schema
            break
        declared = meta.get("$schema") if isinstance(meta, dict) else None
    if declared is None and not seen:
        return jsonschema_rs.Draft202012
    raise ToolDefinitionError(
        f"invalid JSON Schema at #: $schema {schema.get('$schema')!r} is not a draft toolwire "
        f"reads (it reads {', '.join(_DRAFTS)}; without $schema, 2020-12; toolwire does not "
        "fetch custom meta-schemas)"
    )


def _schema_error(exc: Exception) -> ToolDefinitionError:
    """A ToolDefinitionError for what the engine refused, located in the schema."""
    text = str(getattr(exc, "message", "") or exc).split("\n\nFailed validating")[0].strip()
    if "Recursion limit" in text:
        return ToolDefinitionError("invalid JSON Schema: it is nested too deeply")
    path = list(getattr(exc, "instance_path", []) or [])
    if isinstance(exc, jsonschema_rs.ValidationError) and path and isinstance(path[-1], str):
        keyword = path.pop()
        where = "#" + format_pointer(path)
        return ToolDefinitionError(
            f"invalid JSON Schema at {where}: the value of {keyword!r} is invalid: {text}"
        )
    return ToolDefinitionError(f"invalid JSON Schema at #{format_pointer(path)}: {text}")


def _type_phrase(types: Sequence[str]) -> str:
    words = [_TYPE_WORDS.get(t, t) for t in types]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _render_value(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    literal = _literal(value)
    if literal is not None:
        return literal
    if isinstance(value, (int, float)):
        return repr(value)
    return "an object" if isinstance(value, dict) else "an array"


def _at(value: Any, path: Sequence[PathPart]) -> Any:
    for part in path:
        value = value[part]
    return value


def _plural(n: int, noun: str) -> str:
    if n == 1:
        return noun
    return "properties" if noun == "property" else noun + "s"


class SchemaValidator:
    """A compiled JSON Schema; build it with :func:`compile_schema`.

    ``errors(value)`` lists what is wrong (empty when valid), ``is_valid(value)`` says
    whether it is valid, ``strip_optional_nulls(value)`` removes ``null`` values of
    optional properties whose schema does not admit ``null`` (how OpenAI strict mode says
    "not given"), and ``at(pointer)`` validates against one sub-schema. ``schema`` is the
    schema as given; ``draft`` is the engine's number for its draft (4, 6, 7, 19, 20).
    """

    __slots__ = (
        "_engine",
        "_fetch",
        "_prepared",
        "_registry",
        "_strip",
        "_subvalidators",
        "draft",
        "max_errors",
        "schema",
    )

    def __init__(
        self,
        schema: Any,
        prepared: Any,
        draft: int,
        registry: jsonschema_rs.Registry,
        engine: jsonschema_rs.Validator,
        fetch: Retriever,
        max_errors: int,
    ) -> None:
        self.schema = schema
        self.draft = draft
        self.max_errors = max_errors
        self._prepared = prepared
        self._registry = registry
        self._engine = engine
        self._fetch = fetch
        self._subvalidators: dict[str, SchemaValidator] = {}
        self._strip = _StripPlanner(self).plan()

    # ------------------------------------------------------------------ validation

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` is a JSON value that conforms to the schema."""
        problem, _ = scan_json(value)
        return problem is None and self._judge(value) is None

    def _judge(self, value: Any) -> Violation | bool | None:
        """``None`` when valid, ``False`` when invalid, a violation when not JSON after all."""
        try:
            return None if self._engine.is_valid(value) else False
        except ValueError:  # a key that is not a string: name it
            problem, _ = _scan_slowly(value, MAX_DEPTH)
            return problem or Violation(path=(), message="the value is not JSON")

    def errors(self, value: Any, *, scanned: bool = False) -> list[Violation]:
        """Every violation of the schema by ``value`` (at most ``max_errors``), or ``[]``.

        ``scanned=True``: the caller has already checked ``value`` with :func:`scan_json`
        (JSON, within :data:`MAX_DEPTH`), so it is not scanned again.
        """
        problem, depth = (None, 0) if scanned else scan_json(value)
        if problem is not None:
            return [problem]
        verdict = self._judge(value)
        if verdict is None:
            return []
        if isinstance(verdict, Violation):
            return [verdict]
        try:
            found = list(self._engine.iter_errors(value))
        except ValueError:  # the engine's recursion limit on an error's instance
            return [self._too_deep_to_report(depth or scan_json(value)[1])]
        out: list[Violation] = []
        for error in found:
            out.extend(self._render(error, value))
            if len(out) >= self.max_errors * 4:
                break
        return _dedupe(out)[: self.max_errors] or [
            self._too_deep_to_report(depth or scan_json(value)[1])
        ]

    def _too_deep_to_report(self, depth: int) -> Violation:
        return Violation(
            path=(),
            message=f"the value does not fit the schema, and it nests {depth} levels deep, "
            f"too deep for a detailed report (at most {_REPORT_DEPTH})",
        )

    def at(self, pointer: Sequence[str | int]) -> SchemaValidator:
        """A validator for the sub-schema at ``pointer`` (reference tokens) of the document.

        The sub-schema is compiled in the document's context: its ``$ref``\\s, ``$id``\\s and
        draft are those of the document. Cached per pointer. Raises
        :class:`ToolDefinitionError` when nothing is there.
        """
        key = format_fragment(pointer)
        found = self._subvalidators.get(key)
        if found is None:
            target = resolve(self._prepared, [str(p) for p in pointer])
            wrapper = {"$ref": BASE_URI + key}
            try:
                engine = _VALIDATOR_CLASSES[self.draft](
                    wrapper, registry=self._registry, retriever=self._fetch, validate_formats=False
                )
            except (jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError, ValueError) as e:
                raise _schema_error(e) from None
            found = SchemaValidator(
                target, target, self.draft, self._registry, engine, self._fetch, self.max_errors
            )
            self._subvalidators[key] = found
        return found

    def strip_optional_nulls(self, value: Any) -> Any:
        """A copy of ``value`` without ``null``s where the schema means "absent".

        A property set to ``null`` is removed when it is not required and its own schema
        rejects ``null``; this follows ``properties``, ``items``, ``prefixItems``,
        ``additionalProperties``, ``allOf``, ``$ref`` and the one non-null branch of an
        ``anyOf``/``oneOf`` (``Optional[Model]``); other union branches are not followed.
        Parts the schema does not describe are returned unchanged (shared, not copied).
        """
        return self._strip.apply(value)

    # ------------------------------------------------------------------ messages

    def _keyword_schema(self, error: jsonschema_rs.ValidationError) -> dict[str, Any] | None:
        """The schema object holding the keyword that failed (for its sibling keywords)."""
        try:
            location = error.absolute_keyword_location or ""
            uri = location.split("#", 1)[0]
            if uri in ("", BASE_URI):
                resource: Any = self._prepared
            else:
                resource = self._registry.resolver(BASE_URI).lookup(uri).contents
            found = resolve(resource, [str(p) for p in error.schema_path[:-1]])
        except (ToolDefinitionError, jsonschema_rs.ReferencingError, ValueError):
            return None
        return found if isinstance(found, dict) else None

    def _render(self, error: jsonschema_rs.ValidationError, root: Any) -> list[Violation]:
        """The violations one engine error stands for, worded by its kind (see ``_WORDING``)."""
        path: Path = tuple(error.instance_path)
        value = _at(root, path)
        failure = _Failure(
            error=error,
            kind=error.kind,
            root=root,
            path=path,
            value=value,
            keyword=str(error.schema_path[-1]) if error.schema_path else "",
            got=describe_value(value),
        )
        word = _WORDING.get(type(error.kind), _word_other)
        return word(self, failure)

    def _dependency_trigger(
        self, error: jsonschema_rs.ValidationError, value: Any, missing: str, keyword: str
    ) -> str | None:
        schema = self._keyword_schema(error)
        rules = schema.get(keyword) if schema else None
        if not isinstance(rules, dict) or not isinstance(value, dict):
            return None
        for trigger, needed in rules.items():
            if trigger in value and isinstance(needed, list) and missing in needed:
                return str(trigger)
        return None

    def _contains_count(
        self, error: jsonschema_rs.ValidationError, schema: dict[str, Any], value: Any
    ) -> int | None:
        """How many items of ``value`` match the failed ``contains`` (``None``: unknown)."""
        if "contains" not in schema or not isinstance(value, list):
            return None
        if not (error.absolute_keyword_location or "").startswith(BASE_URI + "#"):
            return None
        try:
            check = self.at([*error.schema_path[:-1], "contains"])
        except ToolDefinitionError:
            return None
        return sum(1 for item in value if check.is_valid(item))

    def _contains_message(self, error: jsonschema_rs.ValidationError, value: Any) -> str:
        schema = self._keyword_schema(error) or {}
        least = schema.get("minContains", 1)
        most = schema.get("maxContains")
        count = self._contains_count(error, schema, value)
        # The engine names either bound; the count says which one was broken.
        got = "" if count is None else f", got {count}"
        if most is not None and count is not None and count > most:
            return f"expected at most {most} item(s) matching the 'contains' schema{got}"
        if count is None and error.schema_path and error.schema_path[-1] == "maxContains":
            return f"expected between {least} and {most} item(s) matching the 'contains' schema"
        return f"expected at least {least} item(s) matching the 'contains' schema{got}"

    def _alternatives_message(
        self,
        context: list[list[jsonschema_rs.ValidationError]],
        value: Any,
        root: Any,
        path: Path,
    ) -> str:
        # When every branch failed only on its type at this very place, one sentence says
        # it all ("expected an integer or null"); otherwise list each branch's first
        # complaint.
        types = _branch_types(context, path)
        if types:
            return f"expected {' or '.join(types)}, got {describe_value(value)}"
        reasons: list[str] = []
        for i, branch in enumerate(context[:5]):
            rendered = self._render(branch[0], root) if branch else []
            if rendered:
                first = rendered[0]
                text = first.message if first.path == path else str(first)
                reasons.append(f"({i + 1}) {text}")
        listing = "; ".join(reasons)
        return f"{describe_value(value)} matches none of the allowed alternatives: {listing}"


def _branch_types(context: list[list[jsonschema_rs.ValidationError]], path: Path) -> list[str]:
    """The expected types, when every branch failed only on its type at ``path``; else ``[]``."""
    firsts = [branch[0] for branch in context if branch]
    if not firsts or len(firsts) != len(context):
        return []
    if not all(isinstance(e.kind, Kind.Type) and tuple(e.instance_path) == path for e in firsts):
        return []
    words: list[str] = []
    for e in firsts:
        phrase = _type_phrase(e.kind.types)  # type: ignore[attr-defined]
        if phrase not in words:
            words.append(phrase)
    return words


@dataclass(frozen=True, slots=True, kw_only=True)
class _Failure:
    """One error of the engine, with what its wording needs: where, what was there, the rule."""

    error: jsonschema_rs.ValidationError
    kind: Any
    root: Any
    path: Path
    value: Any
    keyword: str
    got: str

    def one(self, message: str, where: Path | None = None) -> list[Violation]:
        """One violation, at the failure's place unless ``where`` names another."""
        return [Violation(path=self.path if where is None else where, message=message)]


# Each wording takes the validator (for the failed keyword's schema and sub-validators) and
# the failure, and returns its violations. ``_WORDING`` picks one by the error's kind.


def _word_type(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"expected {_type_phrase(f.kind.types)}, got {f.got}")


def _word_required(v: SchemaValidator, f: _Failure) -> list[Violation]:
    where = (*f.path, f.kind.property)
    if f.keyword in ("dependentRequired", "dependencies"):
        trigger = v._dependency_trigger(f.error, f.value, f.kind.property, f.keyword)
        if trigger is not None:
            return f.one(f"this property is required when {_quote(trigger)} is given", where)
    return f.one("this required property is missing", where)


def _word_additional_properties(v: SchemaValidator, f: _Failure) -> list[Violation]:
    parent = v._keyword_schema(f.error) or {}
    names = list(parent.get("properties", {}))[:30]
    known = ", ".join(_quote(str(n)) for n in names) or "none"
    message = f"unknown property (not allowed here); the known properties are: {known}"
    return [Violation(path=(*f.path, key), message=message) for key in f.kind.unexpected]


def _word_unevaluated_properties(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return [
        Violation(path=(*f.path, key), message="unknown property (not allowed here)")
        for key in f.kind.unexpected
    ]


def _word_unevaluated_items(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    # ``unexpected`` holds the items as JSON text, not their positions.
    shown = ", ".join(str(v)[:60] for v in list(f.kind.unexpected)[:5])
    return f.one(f"this array has items that no schema here allows: {shown}")


def _word_false_schema(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    path = f.path
    if f.keyword in ("items", "additionalItems") and path and isinstance(path[-1], int):
        array = _at(f.root, path[:-1])
        return f.one(f"expected at most {path[-1]} items, got {len(array)}", path[:-1])
    return f.one("no value is allowed here")


def _word_additional_items(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"expected at most {f.kind.limit} items, got {len(f.value)}")


def _word_enum(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    options = list(f.kind.options)
    if not options:
        return f.one(f"no value is allowed here (the enum is empty); got {f.got}")
    listing = ", ".join(_render_value(o) for o in options[:20])
    if len(options) > 20:
        listing += f", … ({len(options)} in all)"
    return f.one(f"expected one of {listing}; got {f.got}")


def _word_constant(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"expected exactly {_render_value(f.kind.expected_value)}, got {f.got}")


def _word_bound(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    limit = f.kind.as_dict().get("limit")
    return f.one(f"expected a number {_BOUND_WORDS[f.kind.name]} {limit!r}, got {f.value!r}")


def _word_multiple_of(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"expected a multiple of {f.kind.multiple_of!r}, got {f.got}")


def _word_min_length(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    n = len(f.value)
    return f.one(
        f"expected a string of at least {f.kind.limit} characters, got "
        f"{n} {_plural(n, 'character')}"
    )


def _word_max_length(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(
        f"expected a string of at most {f.kind.limit} characters, got {len(f.value)} characters"
    )


def _word_pattern(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"expected a string matching the pattern {f.kind.pattern!r}, got {f.got}")


def _word_count(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    bound, noun, what = _COUNT_WORDS[f.kind.name]
    n = int(f.kind.as_dict().get("limit", 0))
    return f.one(f"expected {what} with {bound} {n} {_plural(n, noun)}, got {len(f.value)}")


def _word_unique_items(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    seen: dict[Any, int] = {}
    for i, item in enumerate(f.value):
        canon = _canonical(item)
        if canon in seen:
            return f.one(
                f"expected unique items, but this one repeats item {seen[canon]}", (*f.path, i)
            )
        seen[canon] = i
    return f.one("expected unique items")


def _word_contains(v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(v._contains_message(f.error, f.value))


def _word_not(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"{f.got} is not allowed here (it matches a forbidden schema)")


def _word_property_names(v: SchemaValidator, f: _Failure) -> list[Violation]:
    inner = f.kind.error
    name = inner.instance if isinstance(inner.instance, str) else None
    where = (*f.path, name) if name is not None else f.path
    detail = v._render(inner, name) if name is not None else []
    reason = detail[0].message if detail else inner.message
    return f.one(f"this property name is not allowed: {reason}", where)


def _word_no_alternative(v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(v._alternatives_message(f.kind.context, f.value, f.root, f.path))


def _word_several_alternatives(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    passed = sum(1 for branch in f.kind.context if not branch) or "several"
    return f.one(
        f"{f.got} matches {passed} of the allowed alternatives, but exactly one must match"
    )


def _word_costly_pattern(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    return f.one(f"{f.got} could not be checked against the pattern (it is too costly)")


def _word_other(_v: SchemaValidator, f: _Failure) -> list[Violation]:
    text = f.error.message.split("\n")[0]
    return f.one(f"{text} (the {f.keyword or f.kind.name!r} rule of the schema)")


_WORDING: dict[type, Callable[[SchemaValidator, _Failure], list[Violation]]] = {
    Kind.Type: _word_type,
    Kind.Required: _word_required,
    Kind.AdditionalProperties: _word_additional_properties,
    Kind.UnevaluatedProperties: _word_unevaluated_properties,
    Kind.UnevaluatedItems: _word_unevaluated_items,
    Kind.FalseSchema: _word_false_schema,
    Kind.AdditionalItems: _word_additional_items,
    Kind.Enum: _word_enum,
    Kind.Constant: _word_constant,
    Kind.Minimum: _word_bound,
    Kind.Maximum: _word_bound,
    Kind.ExclusiveMinimum: _word_bound,
    Kind.ExclusiveMaximum: _word_bound,
    Kind.MultipleOf: _word_multiple_of,
    Kind.MinLength: _word_min_length,
    Kind.MaxLength: _word_max_length,
    Kind.Pattern: _word_pattern,
    Kind.MinItems: _word_count,
    Kind.MaxItems: _word_count,
    Kind.MinProperties: _word_count,
    Kind.MaxProperties: _word_count,
    Kind.UniqueItems: _word_unique_items,
    Kind.Contains: _word_contains,
    Kind.Not: _word_not,
    Kind.PropertyNames: _word_property_names,
    Kind.AnyOf: _word_no_alternative,
    Kind.OneOfNotValid: _word_no_alternative,
    Kind.OneOfMultipleValid: _word_several_alternatives,
    Kind.BacktrackLimitExceeded: _word_costly_pattern,
    Kind.RegexEngineFailure: _word_costly_pattern,
}


def _dedupe(violations: list[Violation]) -> list[Violation]:
    seen: set[tuple[Path, str]] = set()
    out: list[Violation] = []
    for v in violations:
        key = (v.path, v.message)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


class _StripPlan:
    """What :meth:`SchemaValidator.strip_optional_nulls` does for one subschema.

    ``can_drop`` says whether this plan or one below it can drop anything at all (set by
    :meth:`settle`), so that values with nothing to strip are walked only where a null
    could be dropped, and returned unchanged without a copy.
    """

    __slots__ = ("can_drop", "descend", "drop_if_null", "extra", "items", "prefix", "props")

    def __init__(self) -> None:
        self.props: dict[str, _StripPlan] = {}
        self.drop_if_null: frozenset[str] = frozenset()
        self.extra: _StripPlan | None = None
        self.items: _StripPlan | None = None
        self.prefix: list[_StripPlan] = []
        self.can_drop = True
        self.descend: tuple[tuple[str, _StripPlan], ...] = ()

    def _children(self) -> list[_StripPlan]:
        found = [*self.props.values(), *self.prefix]
        found += [p for p in (self.extra, self.items) if p is not None]
        return found

    def settle(self) -> None:
        """Compute ``can_drop`` for every plan reachable from this one (recursion-safe)."""
        plans: list[_StripPlan] = []
        seen: set[int] = set()
        stack = [self]
        while stack:
            plan = stack.pop()
            if id(plan) in seen:
                continue
            seen.add(id(plan))
            plans.append(plan)
            stack.extend(plan._children())
        for plan in plans:
            plan.can_drop = bool(plan.drop_if_null)
        changed = True
        while changed:  # a fixpoint: recursive plans share objects
            changed = False
            for plan in plans:
                if not plan.can_drop and any(c.can_drop for c in plan._children()):
                    plan.can_drop = changed = True
        for plan in plans:
            plan.descend = tuple((k, sub) for k, sub in plan.props.items() if sub.can_drop)

    def _finds_a_null(self, value: Any) -> bool:
        """Whether applying this plan to ``value`` would drop anything."""
        stack: list[tuple[Any, _StripPlan]] = [(value, self)]
        while stack:
            item, plan = stack.pop()
            if type(item) is dict or isinstance(item, dict):
                for key in plan.drop_if_null:
                    if key in item and item[key] is None:
                        return True
                plan._push_members(item, stack)
            elif isinstance(item, list):
                plan._push_items(item, stack)
        return False

    def _push_members(self, item: dict[str, Any], stack: list[tuple[Any, _StripPlan]]) -> None:
        """Queue the members of ``item`` below which something could be dropped."""
        for key, sub in self.descend:
            child = item.get(key)
            if isinstance(child, (dict, list)):
                stack.append((child, sub))
        extra = self.extra
        if extra is not None and extra.can_drop:
            for key, child in item.items():
                if key not in self.props and isinstance(child, (dict, list)):
                    stack.append((child, extra))

    def _push_items(self, item: list[Any], stack: list[tuple[Any, _StripPlan]]) -> None:
        """Queue the items of ``item`` below which something could be dropped."""
        prefix = self.prefix
        for i, child in enumerate(item):
            sub_plan = prefix[i] if i < len(prefix) else self.items
            if sub_plan is not None and sub_plan.can_drop and isinstance(child, (dict, list)):
                stack.append((child, sub_plan))

    def merge(self, other: _StripPlan) -> None:
        """Add what ``other`` strips to what this plan strips."""
        for name, sub in other.props.items():
            self.props.setdefault(name, sub)
        self.drop_if_null = self.drop_if_null | other.drop_if_null
        self.extra = self.extra or other.extra
        self.items = self.items or other.items
        self.prefix = self.prefix or other.prefix

    def _active(self, value: Any) -> bool:
        if isinstance(value, dict):
            return bool(self.props or self.drop_if_null or self.extra)
        if isinstance(value, list):
            return bool(self.items or self.prefix)
        return False

    def apply(self, value: Any) -> Any:
        """``value`` with the optional nulls this plan knows about removed (iteratively)."""
        if not self.can_drop or not self._finds_a_null(value):
            return value
        holder: list[Any] = [value]
        stack: list[_Copy] = [(value, self, holder, 0)]
        while stack:
            item, plan, parent, key = stack.pop()
            if not plan._active(item):
                continue
            if isinstance(item, dict):
                parent[key] = plan._copy_object(item, stack)
            else:
                parent[key] = plan._copy_array(item, stack)
        return holder[0]

    def _copy_object(self, item: dict[str, Any], stack: list[_Copy]) -> dict[str, Any]:
        """``item`` without the nulls this plan drops; members to strip below are queued."""
        out: dict[str, Any] = {}
        for k, v in item.items():
            if v is None and k in self.drop_if_null:
                continue
            out[k] = v
            sub = self.props.get(k, self.extra)
            if sub is not None and isinstance(v, (dict, list)):
                stack.append((v, sub, out, k))
        return out

    def _copy_array(self, item: list[Any], stack: list[_Copy]) -> list[Any]:
        """A copy of ``item``; items to strip below are queued."""
        prefix = self.prefix
        copied = list(item)
        for i, v in enumerate(item):
            sub_plan = prefix[i] if i < len(prefix) else self.items
            if sub_plan is not None and isinstance(v, (dict, list)):
                stack.append((v, sub_plan, copied, i))
        return copied


# One pending copy of :meth:`_StripPlan.apply`: the value, its plan, and where its copy goes
# (the container and the key or index in it).
_Copy = tuple[Any, _StripPlan, Any, Any]


class _StripPlanner:
    """Builds the null-stripping plan of a document, following ``$ref`` by the engine's rules.

    A plain reference shares its target's plan object (keyed by its absolute URI), which is
    what lets a recursive type (a tree) strip at every depth. Whether a property's schema
    admits ``null`` is asked of the engine, through a ``{"$ref": <its absolute URI>}``
    wrapper, so the property's own references resolve in its document. A location the walk
    cannot name (below an ``$anchor`` reference) is never stripped.
    """

    def __init__(self, owner: SchemaValidator) -> None:
        self.owner = owner
        self.seen: dict[str, _StripPlan] = {}

    def plan(self) -> _StripPlan:
        """The plan for the whole document."""
        try:
            resolver = self.owner._registry.resolver(BASE_URI)
            plan = self._plan(self.owner._prepared, resolver, BASE_URI + "#")
            plan.settle()
            return plan
        except (jsonschema_rs.ReferencingError, jsonschema_rs.ValidationError, ValueError):
            return _StripPlan()  # a schema the engine compiled but we cannot walk: no stripping

    def _admits_null(self, location: str | None) -> bool:
        if location is None:
            return True  # unknown: keep the null, let validation judge it
        engine = _VALIDATOR_CLASSES[self.owner.draft](
            {"$ref": location},
            registry=self.owner._registry,
            retriever=self.owner._fetch,
            validate_formats=False,
        )
        return engine.is_valid(None)

    def _plan(self, schema: Any, resolver: jsonschema_rs.Resolver, where: str | None) -> _StripPlan:
        if not isinstance(schema, dict):
            return _StripPlan()
        ident = schema.get("$id") if self.owner.draft != jsonschema_rs.Draft4 else schema.get("id")
        if isinstance(ident, str) and where != BASE_URI + "#":
            resolver = resolver.lookup(ident).resolver
        plan = _StripPlan()
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = self._referenced(ref, resolver)
            if not _is_shaped(schema):
                return target
            plan.merge(target)
        walk = _SchemaWalk(self, schema, resolver, where)
        walk.add_branches(plan)
        walk.add_properties(plan)
        walk.add_containers(plan)
        return plan

    def _referenced(self, ref: str, resolver: jsonschema_rs.Resolver) -> _StripPlan:
        """The plan of the target of ``ref``, shared by every reference to it."""
        target_uri = _absolute(resolver.base_uri, ref)
        key = target_uri or f"{resolver.base_uri} {ref}"
        if key not in self.seen:
            self.seen[key] = _StripPlan()
            target = resolver.lookup(ref)
            located = target_uri if target_uri and _is_pointer_uri(target_uri) else None
            self.seen[key].merge(self._plan(target.contents, target.resolver, located))
        return self.seen[key]


class _SchemaWalk:
    """One schema object being planned: its planner, where it is (``None``: a location the
    walk cannot name) and the resolver its references are read with."""

    __slots__ = ("planner", "resolver", "schema", "where")

    def __init__(
        self,
        planner: _StripPlanner,
        schema: dict[str, Any],
        resolver: jsonschema_rs.Resolver,
        where: str | None,
    ) -> None:
        self.planner = planner
        self.schema = schema
        self.resolver = resolver
        self.where = where

    def sub(self, schema: Any, *tokens: str | int) -> _StripPlan:
        """The plan of the subschema ``schema`` found at ``tokens`` below this one."""
        return self.planner._plan(schema, self.resolver, _child(self.where, *tokens))

    def add_branches(self, plan: _StripPlan) -> None:
        """Merge in every ``allOf`` part, and the one real branch of an ``anyOf``/``oneOf``."""
        all_of = self.schema.get("allOf")
        for i, part in enumerate(all_of if isinstance(all_of, list) else []):
            plan.merge(self.sub(part, "allOf", i))
        for keyword in ("anyOf", "oneOf"):
            branches = self.schema.get(keyword)
            if isinstance(branches, list):
                # ``Optional[Model]``: one real branch besides null is unambiguous.
                real = [i for i, b in enumerate(branches) if not _is_null_schema(b)]
                if len(real) == 1:
                    plan.merge(self.sub(branches[real[0]], keyword, real[0]))

    def add_properties(self, plan: _StripPlan) -> None:
        """Plan each property; an optional one whose schema rejects ``null`` drops it."""
        props = self.schema.get("properties")
        if not isinstance(props, dict):
            return
        listed = self.schema.get("required", [])
        required = set(listed) if isinstance(listed, list) else set()
        drop: set[str] = set(plan.drop_if_null)
        for name, sub in props.items():
            location = _child(self.where, "properties", name)
            plan.props[name] = self.planner._plan(sub, self.resolver, location)
            if name not in required and not self.planner._admits_null(location):
                drop.add(name)
        plan.drop_if_null = frozenset(drop)

    def add_containers(self, plan: _StripPlan) -> None:
        """Plan ``additionalProperties``, ``items`` and ``prefixItems``."""
        extra = self.schema.get("additionalProperties")
        if isinstance(extra, dict):
            plan.extra = self.sub(extra, "additionalProperties")
        items = self.schema.get("items")
        if isinstance(items, dict):
            plan.items = self.sub(items, "items")
        prefix = self.schema.get("prefixItems")
        if isinstance(prefix, list):
            plan.prefix = [self.sub(s, "prefixItems", i) for i, s in enumerate(prefix)]


_SHAPING = ("properties", "items", "prefixItems", "allOf", "anyOf", "oneOf")


def _is_shaped(schema: dict[str, Any]) -> bool:
    """Whether ``schema`` says more than its ``$ref`` about what to strip."""
    return any(k in schema for k in _SHAPING) or isinstance(
        schema.get("additionalProperties"), dict
    )


def _child(where: str | None, *tokens: str | int) -> str | None:
    """The absolute location below ``where`` (``None``: unknown, and so is the child)."""
    return None if where is None else where + format_fragment(tokens)[1:]


def _absolute(base: str, ref: str) -> str | None:
    """The absolute URI of ``ref`` read in a resource at ``base`` (``None`` if unknown)."""
    if ref.startswith("#"):
        return base.split("#", 1)[0] + ref
    if ":" in ref.split("/", 1)[0]:
        return ref if "#" in ref else ref + "#"
    if base.startswith("urn:"):
        return None
    joined = urljoin(base, ref)
    return joined if "#" in joined else joined + "#"


def _is_pointer_uri(uri: str) -> bool:
    fragment = uri.split("#", 1)[1] if "#" in uri else ""
    return fragment == "" or fragment.startswith("/")


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"
