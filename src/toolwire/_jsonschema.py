"""A compiled validator for raw JSON Schemas (tool parameters given as a dict).

Strategy: :func:`compile_schema` walks the schema once and turns every subschema into a
:class:`_Node` holding a tuple of small check closures, one per keyword, with everything that
can be precomputed (enum sets, compiled regular expressions, required lists, resolved
``$ref`` targets) captured in the closures. Validating a value then only runs those
closures; the schema dict is never consulted again.

Guarantees:

- Types are JSON types, strictly: ``"5"`` is not an integer, ``true`` is not a number,
  ``1.5`` is not an integer; an integer is accepted where a number is expected and a float
  with no fractional part (``1.0``) counts as an integer, as JSON Schema says. ``NaN`` and
  infinities are not numbers. Only ``dict``, ``list``, ``str``, ``int``, ``float``, ``bool``
  and ``None`` are JSON values; anything else fails the type check with a clear message.
- Equality (``enum``, ``const``, ``uniqueItems``) is JSON equality: ``1 == 1.0`` but
  ``true != 1``; objects compare by keys and values regardless of order.
- Every error names the JSON path of the offending value (``items[2].name``), what was
  expected and what was received, in words a model can act on. At most ``max_errors``
  errors are collected per validation.
- Supported keywords: ``type`` (a name or a list of names), ``nullable`` (OpenAPI 3.0),
  ``properties``, ``required``, ``additionalProperties`` (bool or schema),
  ``patternProperties``, ``propertyNames``, ``minProperties``, ``maxProperties``,
  ``dependentRequired``, ``dependentSchemas``, ``dependencies``, ``items`` (schema, or a
  list as in draft 4), ``prefixItems``, ``additionalItems``, ``contains`` with
  ``minContains``/``maxContains``, ``minItems``, ``maxItems``, ``uniqueItems``, ``enum``,
  ``const``, ``minimum``, ``maximum``, ``exclusiveMinimum``/``exclusiveMaximum`` (number
  form, and the draft-4 boolean form), ``multipleOf`` (exact, in decimal arithmetic),
  ``minLength``, ``maxLength`` (in code points), ``pattern`` (Python ``re.search``;
  ECMA-262 patterns that Python reads differently are not translated), ``anyOf``,
  ``oneOf``, ``allOf``, ``not``, ``if``/``then``/``else``, boolean schemas, and ``$ref`` to
  any JSON pointer inside the document (``#``, ``#/$defs/...``, ``#/definitions/...``),
  recursive references included.
- Ignored, as annotations: ``format``, ``title``, ``description``, ``default``,
  ``examples``, ``$schema``, ``$id``, ``$comment``, ``deprecated``, ``readOnly``,
  ``writeOnly``, ``contentMediaType``/``contentEncoding`` and every unknown keyword.
- Refused with ``ToolDefinitionError`` at compile time (never silently weakened):
  ``unevaluatedProperties``, ``unevaluatedItems``, ``$dynamicRef``, ``$recursiveRef``,
  references outside the document, malformed keyword values and invalid patterns.

Not guaranteed: annotation-dependent semantics (``unevaluated*``), and format assertions.

Complexity: compiling is linear in the size of the schema. Validating is linear in the size
of the value times the number of subschemas that apply to each part of it; ``anyOf`` /
``oneOf`` multiply by their branch count, and ``uniqueItems`` costs ``O(n)`` expected (a
canonical, hashable form of each item is built once).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Union

from ._errors import ToolDefinitionError

__all__ = [
    "PathPart",
    "SchemaValidator",
    "Violation",
    "compile_schema",
    "describe_value",
    "format_path",
    "json_equal",
]

PathPart = Union[str, int]  # noqa: UP007 (a runtime alias; Python 3.10 syntax)
Path = tuple[PathPart, ...]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean (true or false)",
    "object": "an object",
    "array": "an array",
    "null": "null",
}

_UNSUPPORTED = ("unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef")


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
        elif _IDENTIFIER.match(part):
            out.append(f".{part}" if out else part)
        else:
            out.append(f"[{_quote(part)}]")
    return "".join(out)


def _quote(text: str, limit: int = 60) -> str:
    """A short double-quoted rendering of ``text`` (escaped as JSON, cut with an ellipsis)."""
    cut = text if len(text) <= limit else text[:limit] + "…"
    escaped = cut.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def describe_value(value: Any) -> str:
    """Say what a value is, for an error message: ``the string "5"``, ``an array of 3 items``."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
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


def _json_type(value: Any) -> str | None:
    """The JSON type name of ``value`` (``"integer"`` for whole numbers), ``None`` if not JSON."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return "integer" if value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


def _canonical(value: Any) -> Any:
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
        return ("arr", tuple(_canonical(v) for v in value))
    if isinstance(value, dict):
        return ("obj", frozenset((str(k), _canonical(v)) for k, v in value.items()))
    # Not a JSON value: equal only to itself.
    return ("py", id(value))


def json_equal(a: Any, b: Any) -> bool:
    """Whether two JSON values are equal the way JSON Schema compares them."""
    return bool(_canonical(a) == _canonical(b))


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (not isinstance(value, float) or math.isfinite(value))
    )


def _decimal(value: int | float) -> Decimal:
    # str() of a float is its shortest repr, which is what the model wrote in JSON.
    return Decimal(str(value)) if isinstance(value, float) else Decimal(value)


# A check appends violations for ``value`` at ``path`` to ``out``.
Check = Callable[[Any, Path, list[Violation]], None]


class _Node:
    """One compiled subschema: a tuple of checks, run in order."""

    __slots__ = ("always_false", "checks", "type_words")

    def __init__(self) -> None:
        self.checks: tuple[Check, ...] = ()
        self.always_false = False
        self.type_words: str | None = None

    def run(self, value: Any, path: Path, out: list[Violation]) -> None:
        """Append every violation of this subschema by ``value``."""
        for check in self.checks:
            check(value, path, out)

    def ok(self, value: Any) -> bool:
        """Whether ``value`` satisfies this subschema (stops at nothing, but cheap enough)."""
        out: list[Violation] = []
        self.run(value, (), out)
        return not out


class SchemaValidator:
    """A compiled JSON Schema; build it with :func:`compile_schema`.

    ``errors(value)`` lists what is wrong (empty when valid), ``is_valid(value)`` says
    whether it is valid, and ``strip_optional_nulls(value)`` removes ``null`` values of
    optional properties whose schema does not admit ``null`` (how OpenAI strict mode says
    "not given").
    """

    __slots__ = ("_root", "_strippers", "max_errors", "schema")

    def __init__(self, schema: Any, root: _Node, strippers: _StripPlan, max_errors: int) -> None:
        self.schema = schema
        self._root = root
        self._strippers = strippers
        self.max_errors = max_errors

    def errors(self, value: Any) -> list[Violation]:
        """Every violation of the schema by ``value`` (at most ``max_errors``), or ``[]``."""
        out: list[Violation] = []
        self._root.run(value, (), out)
        return _dedupe(out)[: self.max_errors]

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` conforms to the schema."""
        return self._root.ok(value)

    def strip_optional_nulls(self, value: Any) -> Any:
        """A copy of ``value`` without ``null``s where the schema means "absent".

        A property set to ``null`` is removed when it is not required and its own schema
        rejects ``null``; this follows ``properties``, ``items``, ``prefixItems``,
        ``additionalProperties``, ``allOf`` and ``$ref`` and the one non-null
        branch of an ``anyOf``/``oneOf`` (``Optional[Model]``); other union branches are not
        followed. Values the schema does not describe are returned unchanged.
        """
        return self._strippers.apply(value)


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
    """What :meth:`SchemaValidator.strip_optional_nulls` does for one subschema."""

    __slots__ = ("drop_if_null", "extra", "items", "prefix", "props")

    def __init__(self) -> None:
        self.props: dict[str, _StripPlan] = {}
        self.drop_if_null: frozenset[str] = frozenset()
        self.extra: _StripPlan | None = None
        self.items: _StripPlan | None = None
        self.prefix: list[_StripPlan] = []

    def apply(self, value: Any) -> Any:
        """Return ``value`` with the optional nulls this plan knows about removed."""
        if isinstance(value, dict):
            if not (self.props or self.drop_if_null or self.extra):
                return value
            out: dict[str, Any] = {}
            for k, v in value.items():
                if v is None and k in self.drop_if_null:
                    continue
                plan = self.props.get(k, self.extra)
                out[k] = plan.apply(v) if plan is not None else v
            return out
        if isinstance(value, list):
            if not (self.items or self.prefix):
                return value
            result = []
            for i, v in enumerate(value):
                plan = self.prefix[i] if i < len(self.prefix) else self.items
                result.append(plan.apply(v) if plan is not None else v)
            return result
        return value


def compile_schema(schema: Any, *, max_errors: int = 10) -> SchemaValidator:
    """Compile ``schema`` (a dict or a boolean) into a :class:`SchemaValidator`.

    Raises :class:`ToolDefinitionError` for a schema that is malformed, uses a refused
    keyword, or references something outside itself.
    """
    compiler = _Compiler(schema)
    root = compiler.node(schema, "#")
    compiler.resolve_pending()
    strip = compiler.strip_plan(schema, "#", {})
    return SchemaValidator(schema, root, strip, max_errors)


def _bad(pointer: str, message: str) -> ToolDefinitionError:
    return ToolDefinitionError(f"invalid JSON Schema at {pointer}: {message}")


def _resolve_pointer(document: Any, ref: str, where: str) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise _bad(where, f"$ref {ref!r} points outside the schema (only '#...' is supported)")
    target = document
    fragment = ref[1:]
    if fragment == "":
        return target
    if not fragment.startswith("/"):
        raise _bad(where, f"$ref {ref!r} is not a JSON pointer (anchors are not supported)")
    for raw in fragment[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            raise _bad(where, f"$ref {ref!r} does not resolve inside the schema")
    return target


def _type_phrase(types: Sequence[str]) -> str:
    words = [_TYPE_WORDS[t] for t in types]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


class _Compiler:
    """Turns a schema document into nodes; ``$ref`` targets are compiled once and shared."""

    def __init__(self, document: Any) -> None:
        self.document = document
        self.by_pointer: dict[str, _Node] = {}
        self.pending: list[tuple[str, str]] = []

    # ------------------------------------------------------------------ helpers

    def _non_negative_int(self, schema: dict[str, Any], key: str, where: str) -> int | None:
        raw = schema.get(key)
        if raw is None:
            return None
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw < 0:
            raise _bad(where, f"{key} must be a non-negative integer, not {raw!r}")
        if isinstance(raw, float) and not raw.is_integer():
            raise _bad(where, f"{key} must be a non-negative integer, not {raw!r}")
        return int(raw)

    def _number(self, schema: dict[str, Any], key: str, where: str) -> int | float | None:
        raw = schema.get(key)
        if raw is None or (isinstance(raw, bool) and key.startswith("exclusive")):
            return None
        if not _is_number(raw):
            raise _bad(where, f"{key} must be a number, not {raw!r}")
        return raw  # type: ignore[no-any-return]

    def _schema_list(self, schema: dict[str, Any], key: str, where: str) -> list[Any]:
        raw = schema[key]
        if not isinstance(raw, list) or not raw:
            raise _bad(where, f"{key} must be a non-empty array of schemas")
        return raw

    def _ref_node(self, pointer: str) -> _Node:
        node = self.by_pointer.get(pointer)
        if node is None:
            # A placeholder filled in by resolve_pending: this is what makes recursive
            # schemas compile without infinite descent.
            node = _Node()
            self.by_pointer[pointer] = node
            self.pending.append((pointer, pointer))
        return node

    def resolve_pending(self) -> None:
        """Compile every ``$ref`` target that was referenced but not compiled yet."""
        while self.pending:
            pointer, _ = self.pending.pop()
            target = _resolve_pointer(self.document, pointer, pointer)
            compiled = self._compile(target, pointer)
            placeholder = self.by_pointer[pointer]
            placeholder.checks = compiled.checks
            placeholder.always_false = compiled.always_false
            placeholder.type_words = compiled.type_words

    # ------------------------------------------------------------------ compile

    def node(self, schema: Any, where: str) -> _Node:
        """Compile the subschema found at JSON pointer ``where``."""
        return self._compile(schema, where)

    def _compile(self, schema: Any, where: str) -> _Node:
        node = _Node()
        if schema is True:
            return node
        if schema is False:
            node.always_false = True

            def never(value: Any, path: Path, out: list[Violation]) -> None:
                out.append(Violation(path=path, message="no value is allowed here"))

            node.checks = (never,)
            return node
        if not isinstance(schema, dict):
            raise _bad(where, f"a schema must be an object or a boolean, not {schema!r}")
        for key in _UNSUPPORTED:
            if key in schema:
                raise _bad(where, f"the keyword {key!r} is not supported")

        checks: list[Check] = []
        if "$ref" in schema:
            ref = schema["$ref"]
            _resolve_pointer(self.document, ref, where)  # fail early on a bad pointer
            target = self._ref_node(ref)

            def check_ref(value: Any, path: Path, out: list[Violation]) -> None:
                target.run(value, path, out)

            checks.append(check_ref)

        type_check, type_words = self._compile_type(schema, where)
        node.type_words = type_words
        if type_check is not None:
            checks.append(type_check)
        checks.extend(self._compile_values(schema, where))
        checks.extend(self._compile_numbers(schema, where))
        checks.extend(self._compile_strings(schema, where))
        checks.extend(self._compile_arrays(schema, where))
        checks.extend(self._compile_objects(schema, where))
        checks.extend(self._compile_combinators(schema, where))
        node.checks = tuple(checks)
        return node

    def _compile_type(self, schema: dict[str, Any], where: str) -> tuple[Check | None, str | None]:
        if "type" not in schema:
            return None, None
        raw = schema["type"]
        names = [raw] if isinstance(raw, str) else raw
        if not isinstance(names, list) or not names:
            raise _bad(where, f"type must be a type name or a list of them, not {raw!r}")
        for name in names:
            if name not in _TYPE_WORDS:
                raise _bad(where, f"unknown type {name!r}")
        if schema.get("nullable") is True and "null" not in names:
            names = [*names, "null"]
        allowed = frozenset(names)
        if "number" in allowed:
            allowed = allowed | {"integer"}
        words = _type_phrase(names)

        def check_type(value: Any, path: Path, out: list[Violation]) -> None:
            actual = _json_type(value)
            if actual is None or actual not in allowed:
                if isinstance(value, float) and not math.isfinite(value):
                    got = f"the non-finite number {value!r} (JSON has no such number)"
                else:
                    got = describe_value(value)
                out.append(Violation(path=path, message=f"expected {words}, got {got}"))

        return check_type, words

    def _compile_values(self, schema: dict[str, Any], where: str) -> list[Check]:
        checks: list[Check] = []
        if "enum" in schema:
            options = schema["enum"]
            if not isinstance(options, list) or not options:
                raise _bad(where, "enum must be a non-empty array")
            allowed = frozenset(_canonical(o) for o in options)
            listing = ", ".join(_render(o) for o in options[:20])
            if len(options) > 20:
                listing += f", … ({len(options)} in all)"

            def check_enum(value: Any, path: Path, out: list[Violation]) -> None:
                if _canonical(value) not in allowed:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected one of {listing}; got {describe_value(value)}",
                        )
                    )

            checks.append(check_enum)
        if "const" in schema:
            const = _canonical(schema["const"])
            shown = _render(schema["const"])

            def check_const(value: Any, path: Path, out: list[Violation]) -> None:
                if _canonical(value) != const:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected exactly {shown}, got {describe_value(value)}",
                        )
                    )

            checks.append(check_const)
        return checks

    def _compile_numbers(self, schema: dict[str, Any], where: str) -> list[Check]:
        bounds: list[tuple[int | float, bool, bool]] = []  # (limit, is_lower, exclusive)
        minimum = self._number(schema, "minimum", where)
        maximum = self._number(schema, "maximum", where)
        ex_min = schema.get("exclusiveMinimum")
        ex_max = schema.get("exclusiveMaximum")
        if minimum is not None:
            bounds.append((minimum, True, ex_min is True))
        if maximum is not None:
            bounds.append((maximum, False, ex_max is True))
        for key, is_lower in (("exclusiveMinimum", True), ("exclusiveMaximum", False)):
            limit = self._number(schema, key, where)
            if limit is not None:
                bounds.append((limit, is_lower, True))
        checks: list[Check] = []
        for limit, is_lower, exclusive in bounds:
            checks.append(_bound_check(limit, is_lower, exclusive))
        if "multipleOf" in schema:
            raw = schema["multipleOf"]
            if not _is_number(raw) or raw <= 0:
                raise _bad(where, f"multipleOf must be a number greater than 0, not {raw!r}")
            step = _decimal(raw)

            def check_multiple(value: Any, path: Path, out: list[Violation]) -> None:
                if not _is_number(value):
                    return
                try:
                    fits = _decimal(value) % step == 0
                except InvalidOperation:  # quotient too large for the context: not exact
                    fits = False
                if not fits:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected a multiple of {raw!r}, got {describe_value(value)}",
                        )
                    )

            checks.append(check_multiple)
        return checks

    def _compile_strings(self, schema: dict[str, Any], where: str) -> list[Check]:
        checks: list[Check] = []
        min_len = self._non_negative_int(schema, "minLength", where)
        max_len = self._non_negative_int(schema, "maxLength", where)
        if min_len is not None or max_len is not None:
            lo = min_len or 0
            hi = max_len

            def check_length(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, str):
                    return
                n = len(value)
                if n < lo:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected a string of at least {lo} characters, "
                            f"got {n} characters",
                        )
                    )
                elif hi is not None and n > hi:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected a string of at most {hi} characters, "
                            f"got {n} characters",
                        )
                    )

            checks.append(check_length)
        if "pattern" in schema:
            pattern = schema["pattern"]
            if not isinstance(pattern, str):
                raise _bad(where, f"pattern must be a string, not {pattern!r}")
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise _bad(
                    where, f"pattern {pattern!r} is not a valid regular expression: {exc}"
                ) from None

            def check_pattern(value: Any, path: Path, out: list[Violation]) -> None:
                if isinstance(value, str) and regex.search(value) is None:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected a string matching the pattern {pattern!r}, "
                            f"got {describe_value(value)}",
                        )
                    )

            checks.append(check_pattern)
        return checks

    def _compile_arrays(self, schema: dict[str, Any], where: str) -> list[Check]:
        checks: list[Check] = []
        prefix: list[_Node] = []
        rest: _Node | None = None
        items = schema.get("items")
        if "prefixItems" in schema:
            raw = schema["prefixItems"]
            if not isinstance(raw, list):
                raise _bad(where, "prefixItems must be an array of schemas")
            prefix = [self._compile(s, f"{where}/prefixItems/{i}") for i, s in enumerate(raw)]
            if items is not None:
                rest = self._compile(items, f"{where}/items")
        elif isinstance(items, list):  # draft 4 tuple form
            prefix = [self._compile(s, f"{where}/items/{i}") for i, s in enumerate(items)]
            if "additionalItems" in schema:
                rest = self._compile(schema["additionalItems"], f"{where}/additionalItems")
        elif items is not None:
            rest = self._compile(items, f"{where}/items")
        if prefix or rest is not None:
            n_prefix = len(prefix)

            def check_items(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, list):
                    return
                for i, item in enumerate(value):
                    if i < n_prefix:
                        prefix[i].run(item, (*path, i), out)
                    elif rest is not None:
                        if rest.always_false:
                            out.append(
                                Violation(
                                    path=path,
                                    message=f"expected at most {n_prefix} items, got {len(value)}",
                                )
                            )
                            return
                        rest.run(item, (*path, i), out)

            checks.append(check_items)
        min_items = self._non_negative_int(schema, "minItems", where)
        max_items = self._non_negative_int(schema, "maxItems", where)
        if min_items is not None or max_items is not None:
            checks.append(_count_check(list, "item", min_items, max_items, "an array"))
        if schema.get("uniqueItems") is True:

            def check_unique(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, list):
                    return
                seen: dict[Any, int] = {}
                for i, item in enumerate(value):
                    key = _canonical(item)
                    if key in seen:
                        out.append(
                            Violation(
                                path=(*path, i),
                                message=f"expected unique items, but this one repeats "
                                f"item {seen[key]}",
                            )
                        )
                        return
                    seen[key] = i

            checks.append(check_unique)
        if "contains" in schema:
            contains = self._compile(schema["contains"], f"{where}/contains")
            lo_c = self._non_negative_int(schema, "minContains", where)
            hi_c = self._non_negative_int(schema, "maxContains", where)
            least = 1 if lo_c is None else lo_c

            def check_contains(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, list):
                    return
                n = sum(1 for item in value if contains.ok(item))
                if n < least:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected at least {least} item(s) matching the "
                            f"'contains' schema, got {n}",
                        )
                    )
                elif hi_c is not None and n > hi_c:
                    out.append(
                        Violation(
                            path=path,
                            message=f"expected at most {hi_c} item(s) matching the "
                            f"'contains' schema, got {n}",
                        )
                    )

            checks.append(check_contains)
        return checks

    def _compile_objects(self, schema: dict[str, Any], where: str) -> list[Check]:
        checks: list[Check] = []
        required = schema.get("required", [])
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            raise _bad(where, "required must be an array of strings")
        if required:
            names = tuple(dict.fromkeys(required))

            def check_required(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, dict):
                    return
                for name in names:
                    if name not in value:
                        out.append(
                            Violation(
                                path=(*path, name),
                                message="this required property is missing",
                            )
                        )

            checks.append(check_required)
        props_raw = schema.get("properties", {})
        if not isinstance(props_raw, dict):
            raise _bad(where, "properties must be an object of schemas")
        props = {
            name: self._compile(sub, f"{where}/properties/{_escape(name)}")
            for name, sub in props_raw.items()
        }
        patterns: list[tuple[re.Pattern[str], _Node]] = []
        pattern_raw = schema.get("patternProperties", {})
        if not isinstance(pattern_raw, dict):
            raise _bad(where, "patternProperties must be an object of schemas")
        for pat, sub in pattern_raw.items():
            try:
                regex = re.compile(pat)
            except re.error as exc:
                raise _bad(
                    where, f"patternProperties key {pat!r} is not a valid regex: {exc}"
                ) from None
            patterns.append((regex, self._compile(sub, f"{where}/patternProperties/{pat}")))
        extra_raw = schema.get("additionalProperties", True)
        extra = None if extra_raw is True else self._compile(extra_raw, f"{where}/additional")
        known = ", ".join(_quote(p) for p in list(props)[:30]) or "none"
        if props or patterns or extra is not None:

            def check_properties(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, dict):
                    return
                for key, item in value.items():
                    node = props.get(key)
                    matched = node is not None
                    if node is not None:
                        node.run(item, (*path, key), out)
                    for regex, pnode in patterns:
                        if isinstance(key, str) and regex.search(key):
                            matched = True
                            pnode.run(item, (*path, key), out)
                    if not matched and extra is not None:
                        if extra.always_false:
                            out.append(
                                Violation(
                                    path=(*path, key),
                                    message="unknown property (not allowed here); "
                                    f"the known properties are: {known}",
                                )
                            )
                        else:
                            extra.run(item, (*path, key), out)

            checks.append(check_properties)
        if "propertyNames" in schema:
            names_node = self._compile(schema["propertyNames"], f"{where}/propertyNames")

            def check_names(value: Any, path: Path, out: list[Violation]) -> None:
                if not isinstance(value, dict):
                    return
                for key in value:
                    sub: list[Violation] = []
                    names_node.run(key, (*path, key), sub)
                    if sub:
                        out.append(
                            Violation(
                                path=(*path, key),
                                message=f"this property name is not allowed: {sub[0].message}",
                            )
                        )

            checks.append(check_names)
        min_p = self._non_negative_int(schema, "minProperties", where)
        max_p = self._non_negative_int(schema, "maxProperties", where)
        if min_p is not None or max_p is not None:
            checks.append(_count_check(dict, "property", min_p, max_p, "an object"))
        checks.extend(self._compile_dependencies(schema, where))
        return checks

    def _compile_dependencies(self, schema: dict[str, Any], where: str) -> list[Check]:
        req_deps: dict[str, list[str]] = {}
        schema_deps: dict[str, _Node] = {}
        for key in ("dependentRequired", "dependentSchemas", "dependencies"):
            raw = schema.get(key)
            if raw is None:
                continue
            if not isinstance(raw, dict):
                raise _bad(where, f"{key} must be an object")
            for prop, dep in raw.items():
                if isinstance(dep, list) and key != "dependentSchemas":
                    if not all(isinstance(d, str) for d in dep):
                        raise _bad(where, f"{key}/{prop} must list property names")
                    req_deps[prop] = dep
                elif key != "dependentRequired":
                    schema_deps[prop] = self._compile(dep, f"{where}/{key}/{prop}")
                else:
                    raise _bad(where, f"dependentRequired/{prop} must be an array of names")
        if not req_deps and not schema_deps:
            return []

        def check_dependencies(value: Any, path: Path, out: list[Violation]) -> None:
            if not isinstance(value, dict):
                return
            for prop, needed in req_deps.items():
                if prop in value:
                    for name in needed:
                        if name not in value:
                            out.append(
                                Violation(
                                    path=(*path, name),
                                    message=f"this property is required when "
                                    f"{_quote(prop)} is given",
                                )
                            )
            for prop, node in schema_deps.items():
                if prop in value:
                    node.run(value, path, out)

        return [check_dependencies]

    def _compile_combinators(self, schema: dict[str, Any], where: str) -> list[Check]:
        checks: list[Check] = []
        if "allOf" in schema:
            parts = [
                self._compile(s, f"{where}/allOf/{i}")
                for i, s in enumerate(self._schema_list(schema, "allOf", where))
            ]

            def check_all(value: Any, path: Path, out: list[Violation]) -> None:
                for part in parts:
                    part.run(value, path, out)

            checks.append(check_all)
        for key in ("anyOf", "oneOf"):
            if key in schema:
                branches = [
                    self._compile(s, f"{where}/{key}/{i}")
                    for i, s in enumerate(self._schema_list(schema, key, where))
                ]
                checks.append(_alternatives_check(branches, exactly_one=key == "oneOf"))
        if "not" in schema:
            negated = self._compile(schema["not"], f"{where}/not")

            def check_not(value: Any, path: Path, out: list[Violation]) -> None:
                if negated.ok(value):
                    out.append(
                        Violation(
                            path=path,
                            message=f"{describe_value(value)} is not allowed here "
                            "(it matches a forbidden schema)",
                        )
                    )

            checks.append(check_not)
        if "if" in schema:
            cond = self._compile(schema["if"], f"{where}/if")
            then = self._compile(schema["then"], f"{where}/then") if "then" in schema else None
            other = self._compile(schema["else"], f"{where}/else") if "else" in schema else None

            def check_if(value: Any, path: Path, out: list[Violation]) -> None:
                branch = then if cond.ok(value) else other
                if branch is not None:
                    branch.run(value, path, out)

            checks.append(check_if)
        return checks

    # ------------------------------------------------------------------ null stripping

    def strip_plan(self, schema: Any, where: str, seen: dict[str, _StripPlan]) -> _StripPlan:
        """Build the plan that removes optional nulls for ``schema`` (recursion-safe)."""
        if not isinstance(schema, dict):
            return _StripPlan()
        ref = schema.get("$ref")
        shaped = any(
            k in schema for k in ("properties", "items", "prefixItems", "allOf", "anyOf", "oneOf")
        )
        shaped = shaped or isinstance(schema.get("additionalProperties"), dict)
        if isinstance(ref, str) and not shaped:
            # A plain reference shares its target's plan object, which is what lets a
            # recursive type (a tree of nodes) strip at every depth.
            if ref not in seen:
                seen[ref] = _StripPlan()
                built = self.strip_plan(_resolve_pointer(self.document, ref, where), ref, seen)
                _merge_plan(seen[ref], built)
            return seen[ref]
        plan = _StripPlan()
        if isinstance(ref, str):
            _merge_plan(plan, self.strip_plan({"$ref": ref}, where, seen))
        for i, part in enumerate(schema.get("allOf", [])):
            _merge_plan(plan, self.strip_plan(part, f"{where}/allOf/{i}", seen))
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list):
                # ``Optional[Model]``: one real branch besides null is unambiguous.
                real = [b for b in branches if not _is_null_schema(b)]
                if len(real) == 1:
                    index = branches.index(real[0])
                    _merge_plan(plan, self.strip_plan(real[0], f"{where}/{key}/{index}", seen))
        props = schema.get("properties")
        if isinstance(props, dict):
            required = set(schema.get("required", []))
            drop: set[str] = set(plan.drop_if_null)
            for name, sub in props.items():
                sub_where = f"{where}/properties/{_escape(name)}"
                plan.props[name] = self.strip_plan(sub, sub_where, seen)
                if name not in required:
                    node = self._compile(sub, sub_where)
                    self.resolve_pending()
                    if not node.ok(None):
                        drop.add(name)
            plan.drop_if_null = frozenset(drop)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            plan.extra = self.strip_plan(extra, f"{where}/additionalProperties", seen)
        items = schema.get("items")
        if isinstance(items, dict):
            plan.items = self.strip_plan(items, f"{where}/items", seen)
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            plan.prefix = [
                self.strip_plan(s, f"{where}/prefixItems/{i}", seen) for i, s in enumerate(prefix)
            ]
        return plan


def _is_null_schema(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _merge_plan(into: _StripPlan, other: _StripPlan) -> None:
    for name, sub in other.props.items():
        into.props.setdefault(name, sub)
    into.drop_if_null = into.drop_if_null | other.drop_if_null
    into.extra = into.extra or other.extra
    into.items = into.items or other.items
    into.prefix = into.prefix or other.prefix


def _escape(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _render(value: Any) -> str:
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "an object" if isinstance(value, dict) else "an array"


def _bound_check(limit: int | float, is_lower: bool, exclusive: bool) -> Check:
    if is_lower:
        words = f"greater than {limit!r}" if exclusive else f"at least {limit!r}"
    else:
        words = f"less than {limit!r}" if exclusive else f"at most {limit!r}"

    def check_bound(value: Any, path: Path, out: list[Violation]) -> None:
        if not _is_number(value):
            return
        if is_lower:
            bad = value <= limit if exclusive else value < limit
        else:
            bad = value >= limit if exclusive else value > limit
        if bad:
            out.append(Violation(path=path, message=f"expected a number {words}, got {value!r}"))

    return check_bound


def _count_check(kind: type[Any], noun: str, lo: int | None, hi: int | None, what: str) -> Check:
    def plural(n: int) -> str:
        return noun if n == 1 else ("properties" if noun == "property" else noun + "s")

    def check_count(value: Any, path: Path, out: list[Violation]) -> None:
        if not isinstance(value, kind):
            return
        n = len(value)
        if lo is not None and n < lo:
            out.append(
                Violation(
                    path=path,
                    message=f"expected {what} with at least {lo} {plural(lo)}, got {n}",
                )
            )
        elif hi is not None and n > hi:
            out.append(
                Violation(
                    path=path,
                    message=f"expected {what} with at most {hi} {plural(hi)}, got {n}",
                )
            )

    return check_count


def _alternatives_check(branches: list[_Node], *, exactly_one: bool) -> Check:
    def check_alternatives(value: Any, path: Path, out: list[Violation]) -> None:
        failures: list[list[Violation]] = []
        passed = 0
        for branch in branches:
            sub: list[Violation] = []
            branch.run(value, path, sub)
            if sub:
                failures.append(sub)
            else:
                passed += 1
                if not exactly_one:
                    return
        if exactly_one and passed == 1:
            return
        if exactly_one and passed > 1:
            out.append(
                Violation(
                    path=path,
                    message=f"{describe_value(value)} matches {passed} of the allowed "
                    "alternatives, but exactly one must match",
                )
            )
            return
        out.append(_explain_alternatives(value, path, branches, failures))

    return check_alternatives


def _explain_alternatives(
    value: Any, path: Path, branches: list[_Node], failures: list[list[Violation]]
) -> Violation:
    # When every branch has a type and the value has none of them, one sentence says it
    # all ("expected an integer or null"); otherwise list each branch's first complaint.
    words = [b.type_words for b in branches]
    if all(words) and all(f and f[0].path == path and "expected" in f[0].message for f in failures):
        type_failures = all(
            f[0].message.startswith(f"expected {w},") for f, w in zip(failures, words, strict=True)
        )
        if type_failures:
            joined = " or ".join(w for w in words if w)
            return Violation(path=path, message=f"expected {joined}, got {describe_value(value)}")
    reasons = "; ".join(
        f"({i + 1}) {str(f[0]) if f[0].path != path else f[0].message}"
        for i, f in enumerate(failures[:5])
    )
    return Violation(
        path=path,
        message=f"{describe_value(value)} matches none of the allowed alternatives: {reasons}",
    )
