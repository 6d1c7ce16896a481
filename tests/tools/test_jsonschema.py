"""The compiled JSON Schema validator: each keyword, error paths and messages, and the
property that generated conforming values pass while values mutated to break one
constraint fail at the mutated place."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import ToolDefinitionError
from toolwire._tools.jsonschema import compile_schema, describe_value, format_path, json_equal

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT7 = "http://json-schema.org/draft-07/schema#"

# --------------------------------------------------------------------------- generators
# A schema strategy paired with two functions: ``values(schema)`` draws conforming values,
# ``breakers(schema)`` draws values that break that very subschema (never anyOf nodes).

_NAMES = st.sampled_from(["a", "b", "c", "name", "x_1", "with space", "ünï"])


def _string_schema() -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        lo = draw(st.integers(0, 3))
        if draw(st.booleans()):
            schema["minLength"] = lo
        if draw(st.booleans()):
            schema["maxLength"] = lo + draw(st.integers(0, 4))
        if draw(st.booleans()):
            schema["pattern"] = "^[a-z]*$"
        return schema

    return build()


def _integer_schema() -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        step = draw(st.sampled_from([1, 2, 5]))
        a = draw(st.integers(-50, 50))
        b = a + draw(st.integers(0, 20))
        schema: dict[str, Any] = {"type": "integer", "minimum": a * step, "maximum": b * step}
        if step != 1:
            schema["multipleOf"] = step
        if draw(st.booleans()):
            schema["type"] = ["integer", "null"]
        return schema

    return build()


def _number_schema() -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        lo = draw(st.floats(-1e6, 1e6))
        hi = lo + draw(st.floats(0, 1e3))
        key = draw(st.sampled_from(["exclusiveMinimum", "minimum"]))
        return {"type": "number", key: lo - 1, "maximum": hi}

    return build()


_SCALARS = st.one_of(
    _string_schema(),
    _integer_schema(),
    _number_schema(),
    st.just({"type": "boolean"}),
    st.just({"type": "null"}),
    st.lists(st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.booleans()), min_size=1)
    .map(lambda vs: list({json.dumps(v): v for v in vs}.values()))
    .map(lambda vs: {"enum": vs}),
    st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3)).map(lambda v: {"const": v}),
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def array(draw: st.DrawFn) -> dict[str, Any]:
        item = draw(children)
        lo = draw(st.integers(0, 2))
        schema: dict[str, Any] = {"type": "array", "items": item}
        if draw(st.booleans()):
            schema["minItems"] = lo
        if draw(st.booleans()):
            schema["maxItems"] = lo + draw(st.integers(0, 3))
        return schema

    @st.composite
    def obj(draw: st.DrawFn) -> dict[str, Any]:
        props = draw(st.dictionaries(_NAMES, children, max_size=4))
        required = [n for n in props if draw(st.booleans())]
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        if draw(st.booleans()):
            schema["additionalProperties"] = False
        return schema

    any_of = st.lists(children, min_size=2, max_size=3).map(lambda bs: {"anyOf": bs})
    return st.one_of(array(), obj(), any_of)


SCHEMAS = st.recursive(_SCALARS, _extend, max_leaves=8)


def values(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that conform to ``schema`` (built by the generators above)."""
    if "$ref" in schema:
        return values(schema["$defs"]["D"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    if "anyOf" in schema:
        return st.one_of([values(b) for b in schema["anyOf"]])
    kind = schema["type"]
    if kind == "string":
        lo = schema.get("minLength", 0)
        hi = schema.get("maxLength", lo + 5)
        return st.text("abcz", min_size=lo, max_size=hi)
    if kind in ("integer", ["integer", "null"]):
        step = schema.get("multipleOf", 1)
        ints = st.integers(schema["minimum"] // step, schema["maximum"] // step).map(
            lambda k: k * step
        )
        return st.one_of(ints, st.none()) if kind == ["integer", "null"] else ints
    if kind == "number":
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 0) + 1e-3)
        return st.floats(lo, schema["maximum"])
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 3)
        return st.lists(values(schema["items"]), min_size=lo, max_size=hi)
    props = schema["properties"]
    required = schema.get("required", [])
    return st.fixed_dictionaries(
        {n: values(props[n]) for n in required},
        optional={n: values(s) for n, s in props.items() if n not in required},
    )


def breakers(schema: dict[str, Any]) -> list[Any]:
    """Values that each break ``schema`` itself (empty for ``anyOf``, whose branches vary)."""
    if "$ref" in schema:
        return breakers(schema["$defs"]["D"])
    if "enum" in schema:
        return ["not-in-the-enum", [], {}]
    if "const" in schema:
        return ["not-the-const", 1.5]
    if "anyOf" in schema:
        return []
    kind = schema["type"]
    out: list[Any] = []
    if kind == "string":
        out += [1, None, ["a"]]
        if "maxLength" in schema:
            out.append("a" * (schema["maxLength"] + 1))
        if schema.get("minLength", 0) > 0:
            out.append("a" * (schema["minLength"] - 1))
        if "pattern" in schema:
            out.append("Z" * max(schema.get("minLength", 1), 1))
    elif kind in ("integer", ["integer", "null"]):
        step = schema.get("multipleOf", 1)
        out += ["5", True, 1.5, {}, schema["maximum"] + step, schema["minimum"] - step]
        if step != 1:
            out.append(schema["minimum"] + 1)
    elif kind == "number":
        out += ["1.0", False, schema["maximum"] + 1.0, None]
    elif kind == "boolean":
        out += [0, "true", None]
    elif kind == "null":
        out += [0, "", False]
    elif kind == "array":
        out += [{}, "[]"]
        if "maxItems" in schema:
            out.append(["x"] * (schema["maxItems"] + 1))
    else:
        out += [[], "{}", None]
        if schema.get("required"):
            out.append({})
        if schema.get("additionalProperties") is False:
            out.append({"zz_not_a_property": 1})
    return out


def _mutation_sites(schema: dict[str, Any], value: Any, path: tuple[Any, ...] = ()):
    """Every (path, subschema) in ``value`` reached without crossing an ``anyOf``."""
    if "$ref" in schema:
        yield from _mutation_sites(schema["$defs"]["D"], value, path)
        return
    if "anyOf" in schema:
        return
    yield path, schema
    if schema.get("type") == "array" and isinstance(value, list):
        for i, item in enumerate(value):
            yield from _mutation_sites(schema["items"], item, (*path, i))
    if schema.get("type") == "object" and isinstance(value, dict):
        for name, item in value.items():
            sub = schema["properties"].get(name)
            if sub is not None:
                yield from _mutation_sites(sub, item, (*path, name))


def _replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, *rest = path
    if isinstance(value, list):
        copy = list(value)
        copy[head] = _replace(value[head], tuple(rest), new)
        return copy
    copy_d = dict(value)
    copy_d[head] = _replace(value[head], tuple(rest), new)
    return copy_d


def _with_ref(schema: dict[str, Any], use_ref: bool) -> dict[str, Any]:
    return {"$defs": {"D": schema}, "$ref": "#/$defs/D"} if use_ref else schema


# --------------------------------------------------------------------------- properties


@settings(max_examples=150)
@given(data=st.data(), schema=SCHEMAS, use_ref=st.booleans())
def test_generated_conforming_values_are_accepted(data: st.DataObject, schema, use_ref) -> None:
    """A value generated to conform to a generated schema validates with no errors."""
    full = _with_ref(schema, use_ref)
    value = data.draw(values(full))
    validator = compile_schema(full)
    assert validator.errors(value) == []
    assert validator.is_valid(value)


@settings(max_examples=200)
@given(data=st.data(), schema=SCHEMAS, use_ref=st.booleans())
def test_values_broken_at_one_place_are_rejected_there(data: st.DataObject, schema, use_ref):
    """Replacing one part of a valid value by a constraint breaker is reported at that path."""
    full = _with_ref(schema, use_ref)
    value = data.draw(values(full))
    sites = [(p, s) for p, s in _mutation_sites(full, value) if breakers(s)]
    if not sites:
        return
    path, sub = data.draw(st.sampled_from(sites))
    bad = data.draw(st.sampled_from(breakers(sub)))
    mutated = _replace(value, path, bad)
    errors = compile_schema(full).errors(mutated)
    assert errors, (full, mutated)
    assert any(e.path[: len(path)] == path for e in errors), (errors, path)
    for e in errors:
        assert str(e).startswith("at ")


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c)))
def test_json_equality_is_reflexive_and_distinguishes_booleans(value: Any) -> None:
    """Every JSON value equals itself; ``true`` never equals ``1``."""
    assert json_equal(value, value)
    assert not json_equal(True, 1)
    assert json_equal(1, 1.0)


# --------------------------------------------------------------------------- keywords


def _errs(schema: Any, value: Any) -> list[str]:
    return [str(e) for e in compile_schema(schema).errors(value)]


@pytest.mark.parametrize(
    ("schema", "good", "bad"),
    [
        ({"type": "integer"}, [1, -3, 2.0, 10**30], [1.5, "1", True, None, math.inf]),
        ({"type": "number"}, [1, 1.5, -0.0], ["1", False, math.nan, math.inf]),
        ({"type": ["string", "null"]}, ["", None], [0, []]),
        ({"type": "string", "nullable": True}, ["a", None], [1]),
        ({"type": "boolean"}, [True, False], [0, 1, "true"]),
        ({"type": "array"}, [[], [1]], [(), {}, "x"]),
        ({"type": "object"}, [{}, {"a": 1}], [[], None]),
        ({"enum": [1, "a", None]}, [1, 1.0, "a", None], [True, "b", 2]),
        ({"const": {"a": [1, 2]}}, [{"a": [1, 2.0]}], [{"a": [2, 1]}, {"a": [1, 2], "b": 1}]),
        ({"minimum": 1, "maximum": 3}, [1, 3, "x"], [0, 3.5]),
        ({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, [2, 1.5], [1, 3]),
        ({"$schema": DRAFT4, "minimum": 1, "exclusiveMinimum": True}, [2], [1]),
        ({"multipleOf": 0.1}, [0.3, 1, 0.7], [0.35]),
        ({"multipleOf": 3}, [9, -3, 0], [10]),
        ({"minLength": 2, "maxLength": 3}, ["ab", "😀😀"], ["a", "abcd"]),
        ({"pattern": "^a+$"}, ["aa", 5], ["ab", ""]),
        ({"minItems": 1, "maxItems": 2}, [[1], [1, 2]], [[], [1, 2, 3]]),
        ({"uniqueItems": True}, [[1, "1", True], [{"a": 1}, {"a": 2}]], [[1, 1.0], [[1], [1]]]),
        ({"minProperties": 1, "maxProperties": 1}, [{"a": 1}], [{}, {"a": 1, "b": 2}]),
        ({"prefixItems": [{"type": "integer"}], "items": False}, [[1], []], [["x"], [1, 2]]),
        (
            {"$schema": DRAFT7, "items": [{"type": "integer"}], "additionalItems": False},
            [[1]],
            [[1, 2]],
        ),
        ({"enum": []}, [], [1, None]),
        ({"properties": {"a": {}}, "unevaluatedProperties": False}, [{"a": 1}], [{"b": 1}]),
        ({"contains": {"type": "string"}, "maxContains": 1}, [[1, "a"]], [[1], ["a", "b"]]),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, [1, "a"], [None, 1.5]),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, [-1, 0.5, "x"], [1, 2.0]),
        ({"allOf": [{"minimum": 0}, {"maximum": 1}]}, [0, 1], [-1, 2]),
        ({"not": {"type": "string"}}, [1, None], ["a"]),
        (
            {"if": {"type": "integer"}, "then": {"minimum": 0}, "else": {"type": "string"}},
            [1, "a"],
            [-1, None],
        ),
        ({"propertyNames": {"pattern": "^[a-z]+$"}}, [{"ab": 1}], [{"A": 1}]),
        (
            {"patternProperties": {"^x": {"type": "integer"}}, "additionalProperties": False},
            [{"x1": 1}],
            [{"x1": "a"}, {"y": 1}],
        ),
        ({"dependentRequired": {"a": ["b"]}}, [{"a": 1, "b": 2}, {"b": 1}], [{"a": 1}]),
        ({"dependencies": {"a": {"required": ["c"]}}}, [{"a": 1, "c": 1}], [{"a": 1}]),
        (True, [1, None, {}], []),
        (False, [], [1, None]),
        ({"format": "email", "title": "t", "x-unknown": 1}, ["not an email"], []),
    ],
)
def test_each_keyword_accepts_and_rejects(schema: Any, good: list[Any], bad: list[Any]) -> None:
    """Each supported keyword accepts the values it allows and rejects the others."""
    validator = compile_schema(schema)
    for value in good:
        assert validator.errors(value) == [], value
    for value in bad:
        assert validator.errors(value), value


def test_refs_to_defs_definitions_and_recursion() -> None:
    """``$ref`` resolves ``#/$defs``, ``#/definitions`` and recursive references."""
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/Node"}, "n": {"$ref": "#/definitions/N"}},
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["kids"],
            }
        },
        "definitions": {"N": {"type": "integer"}},
    }
    validator = compile_schema(schema)
    assert validator.errors({"tree": {"kids": [{"kids": []}]}, "n": 1}) == []
    errors = validator.errors({"tree": {"kids": [{"kids": [{}]}]}, "n": "1"})
    assert [str(e) for e in errors] == [
        "at tree.kids[0].kids[0].kids: this required property is missing",
        'at n: expected an integer, got the string "1"',
    ]


def test_error_messages_name_path_expected_and_received() -> None:
    """A violation says where, what was expected and what arrived, in plain words."""
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"qty": {"type": "integer", "minimum": 1}},
                    "additionalProperties": False,
                },
            }
        },
    }
    errors = _errs(schema, {"items": [{"qty": 1}, {"qty": 0, "qtty": 2}]})
    assert errors == [
        "at items[1].qty: expected a number at least 1, got 0",
        'at items[1].qtty: unknown property (not allowed here); the known properties are: "qty"',
    ]


def test_alternatives_are_explained_in_one_sentence() -> None:
    """A value matching no ``anyOf`` branch gets one readable explanation."""
    assert _errs({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "3") == [
        'at the top level of the arguments: expected an integer or null, got the string "3"'
    ]
    (message,) = _errs({"anyOf": [{"type": "integer", "minimum": 5}, {"type": "string"}]}, 1)
    assert "matches none of the allowed alternatives" in message
    assert "at least 5" in message


def test_max_errors_bounds_the_report() -> None:
    """No more than ``max_errors`` violations are reported."""
    validator = compile_schema({"type": "array", "items": {"type": "string"}}, max_errors=3)
    assert len(validator.errors(list(range(50)))) == 3


def test_non_json_python_values_get_a_clear_message() -> None:
    """Python values that JSON cannot carry fail the type check with a clear message."""
    (message,) = _errs({"type": "array"}, (1, 2))
    assert "not a JSON value" in message


def test_strip_optional_nulls_follows_properties_items_refs_and_optionals() -> None:
    """Nulls of optional non-nullable properties are removed at every depth; others stay."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": ["integer", "null"]},
            "req": {"type": "integer"},
            "list": {"type": "array", "items": {"$ref": "#/$defs/M"}},
            "opt": {"anyOf": [{"$ref": "#/$defs/M"}, {"type": "null"}]},
        },
        "required": ["req"],
        "$defs": {"M": {"type": "object", "properties": {"m": {"type": "string"}}}},
    }
    validator = compile_schema(schema)
    stripped = validator.strip_optional_nulls(
        {"a": None, "b": None, "req": None, "list": [{"m": None}], "opt": {"m": None}}
    )
    assert stripped == {"b": None, "req": None, "list": [{}], "opt": {}}


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "strng"},
        {"type": []},
        {"required": "a"},
        {"properties": []},
        {"minLength": -1},
        {"maxItems": 1.5},
        {"pattern": "("},
        {"patternProperties": {"(": {}}},
        {"multipleOf": 0},
        {"minimum": "1"},
        {"anyOf": []},
        {"$ref": "http://example.com/schema"},
        {"$ref": "#/$defs/Missing"},
        {"$ref": "#anchor"},
        {"$schema": "http://json-schema.org/draft-03/schema#"},
        {"$schema": 7},
        {"minimum": 1, "exclusiveMinimum": True},
        {"items": [{"type": "integer"}]},
        {"properties": {"a": 5}},
        "not a schema",
    ],
)
def test_malformed_or_unsupported_schemas_raise_tool_definition_error(schema: Any) -> None:
    """A malformed schema or a refused keyword is a ToolDefinitionError at compile time."""
    with pytest.raises(ToolDefinitionError):
        compile_schema(schema)


def test_paths_and_values_are_described_for_readers() -> None:
    """Paths render as ``a.b[0]["c d"]``; values as what they are."""
    assert format_path(()) == "the top level of the arguments"
    assert format_path(("a", "b", 0, "c d")) == 'a.b[0]["c d"]'
    assert describe_value("x" * 100).endswith('…"')
    assert describe_value([1]) == "an array of 1 item"
    assert describe_value({"a": 1, "b": 2}) == "an object with 2 keys"
    assert describe_value(1.5) == "the number 1.5"


# --------------------------------------------------------------------------- regressions
# Schemas the hand-written validator answered wrongly without a word.


def test_an_embedded_id_changes_the_base_of_its_references() -> None:
    """``$ref`` inside a subschema with ``$id`` resolves against that ``$id``."""
    schema = {
        "$defs": {
            "outer": {"type": "integer"},
            "inner": {
                "$id": "http://example.com/inner",
                "$defs": {"outer": {"type": "string"}},
                "$ref": "#/$defs/outer",
            },
        },
        "$ref": "#/$defs/inner",
    }
    validator = compile_schema(schema)
    assert validator.is_valid("text")
    assert not validator.is_valid(1)


def test_percent_encoded_pointers_are_decoded() -> None:
    """``#/$defs/a%25b`` names the key ``a%b``."""
    schema = {"$defs": {"a%b": {"type": "integer"}}, "$ref": "#/$defs/a%25b"}
    validator = compile_schema(schema)
    assert validator.is_valid(1)
    assert [str(e) for e in validator.errors("x")] == [
        'at the top level of the arguments: expected an integer, got the string "x"'
    ]


def test_draft_7_ignores_the_siblings_of_a_ref() -> None:
    """In draft 7 ``$ref`` overrides its siblings; in 2020-12 both apply."""
    body = {"definitions": {"n": {"type": "integer"}}, "$ref": "#/definitions/n", "minimum": 5}
    assert compile_schema({"$schema": DRAFT7, **body}).is_valid(1)
    assert not compile_schema(body).is_valid(1)


def test_remote_references_are_refused_without_fetching() -> None:
    """A reference to another document is a ToolDefinitionError; nothing is fetched."""
    fetched: list[str] = []

    def spy(uri: str) -> Any:
        fetched.append(uri)
        raise LookupError(uri)

    with pytest.raises(ToolDefinitionError, match="toolwire does not fetch"):
        compile_schema({"$ref": "http://127.0.0.1:9/schema.json"})
    with pytest.raises(ToolDefinitionError):
        compile_schema({"$ref": "http://127.0.0.1:9/schema.json"}, retriever=spy)
    assert fetched == ["http://127.0.0.1:9/schema.json"]


def test_sub_schemas_validate_in_the_documents_context() -> None:
    """``at(pointer)`` checks a subtree against the sub-schema there, its refs included."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
        "$defs": {"Item": {"type": "object", "required": ["sku"]}},
    }
    validator = compile_schema(schema)
    item = validator.at(["properties", "items", "items"])
    assert item.is_valid({"sku": "a"})
    assert [str(e) for e in item.errors({})] == ["at sku: this required property is missing"]
    assert validator.at(["properties", "items", "items"]) is item
    with pytest.raises(ToolDefinitionError, match="does not resolve"):
        validator.at(["properties", "nope"])


@settings(max_examples=100)
@given(data=st.data(), schema=SCHEMAS)
def test_sub_schema_validators_agree_with_the_whole(data: st.DataObject, schema: Any) -> None:
    """A value valid for ``{"properties": {"x": S}}`` at ``x`` is valid for ``at(x)``, and
    a value invalid for ``S`` makes the whole invalid."""
    whole = compile_schema({"type": "object", "properties": {"x": schema}, "required": ["x"]})
    part = whole.at(["properties", "x"])
    value = data.draw(values(schema))
    assert part.is_valid(value) and whole.is_valid({"x": value})
    for bad in breakers(schema):
        assert part.is_valid(bad) == whole.is_valid({"x": bad})


def test_schemas_nested_too_deeply_are_refused() -> None:
    """A schema deeper than the engine reads is a ToolDefinitionError, not a crash."""
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(5000):
        node["items"] = {}
        node = node["items"]
    with pytest.raises(ToolDefinitionError, match="nested too deeply"):
        compile_schema(deep)
