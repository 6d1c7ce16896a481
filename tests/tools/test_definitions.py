"""Tool definitions per provider: the exact shapes, strict mode (every object closed and
fully required, optional fields nullable, and the toolbox still accepting what a strict
model sends), Gemini's OpenAPI subset, and typed errors for what a format cannot say."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from test_jsonschema import SCHEMAS, values

from toolwire import Toolbox, ToolDefinitionError, UnknownFormat
from toolwire._providers import FORMATS
from toolwire._providers._definitions import strict_schema
from toolwire._providers.gemini.schema import gemini_schema
from toolwire._tools.jsonschema import compile_schema


class Address(BaseModel):
    """Where to ship."""

    city: str
    zip: str | None = None
    floor: int = 0


class Node(BaseModel):
    """A tree node (recursive)."""

    name: str
    children: list[Node] = []


def _tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def ship(
        to: Address,
        speed: Literal["slow", "fast"] = "slow",
        weight: Annotated[float, Field(gt=0, description="kg")] = 1.0,
        notes: list[str] | None = None,
    ) -> str:
        """Ship a parcel."""
        return "ok"

    @tools.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    return tools


SHIP = {
    "type": "object",
    "properties": {"q": {"type": "string", "description": "query"}},
    "required": ["q"],
}


def _declarations(definitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function declarations of Gemini's one Tool."""
    (tool,) = definitions
    declarations: list[dict[str, Any]] = tool["functionDeclarations"]
    return declarations


def _raw() -> Toolbox:
    tools = Toolbox()
    tools.add("search", SHIP, lambda q: q, description="Search.")
    return tools


def test_openai_chat_shape() -> None:
    """openai-chat: type function, function with name, description, parameters."""
    assert _raw().definitions("openai-chat") == [
        {
            "type": "function",
            "function": {"name": "search", "description": "Search.", "parameters": SHIP},
        }
    ]


def test_openai_responses_shape() -> None:
    """openai-responses: flat name/description/parameters with an explicit strict flag."""
    assert _raw().definitions("openai-responses") == [
        {
            "type": "function",
            "name": "search",
            "description": "Search.",
            "parameters": SHIP,
            "strict": False,
        }
    ]


def test_anthropic_shape() -> None:
    """anthropic: name, description, input_schema."""
    assert _raw().definitions("anthropic") == [
        {"name": "search", "description": "Search.", "input_schema": SHIP}
    ]


def test_gemini_shape() -> None:
    """gemini: one Tool whose functionDeclarations have upper-case OpenAPI types."""
    assert _raw().definitions("gemini") == [
        {
            "functionDeclarations": [
                {
                    "name": "search",
                    "description": "Search.",
                    "parameters": {
                        "type": "OBJECT",
                        "properties": {"q": {"type": "STRING", "description": "query"}},
                        "propertyOrdering": ["q"],
                        "required": ["q"],
                    },
                }
            ]
        }
    ]


def test_bedrock_ollama_and_cohere_shapes() -> None:
    """bedrock-converse: toolSpec with inputSchema.json; ollama and cohere: OpenAI chat shape."""
    tools = _raw()
    assert tools.definitions("bedrock-converse") == [
        {"toolSpec": {"name": "search", "description": "Search.", "inputSchema": {"json": SHIP}}}
    ]
    for fmt in ("ollama", "cohere"):
        assert tools.definitions(fmt) == tools.definitions("openai-chat")


def test_strict_flags_per_format() -> None:
    """strict=True adds strict to openai-chat's function, Responses and Anthropic."""
    tools = _raw()
    chat = tools.definitions("openai-chat", strict=True)[0]["function"]
    assert chat["strict"] is True
    assert chat["parameters"]["additionalProperties"] is False
    assert tools.definitions("openai-responses", strict=True)[0]["strict"] is True
    assert tools.definitions("anthropic", strict=True)[0]["strict"] is True
    assert "strict" not in _declarations(tools.definitions("gemini", strict=True))[0]


def test_definitions_are_fresh_copies() -> None:
    """Mutating a definition never changes the tool's schema."""
    tools = _tools()
    before = copy.deepcopy(tools.get("ship").parameters)  # type: ignore[union-attr]
    for fmt in FORMATS.names():
        for strict in (False, True):
            for definition in tools.definitions(fmt, strict=strict):
                definition.clear()
    assert tools.get("ship").parameters == before  # type: ignore[union-attr]


def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _objects(value)


def _keys(schema: Any) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            yield key
            if key in ("properties", "$defs"):
                for sub in value.values():
                    yield from _keys(sub)
            else:
                yield from _keys(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _keys(value)


def test_typed_tool_strict_schema() -> None:
    """A typed tool's strict schema: closed objects, all required, optionals nullable."""
    tools = _tools()
    parameters = tools.definitions("openai-chat", strict=True)[0]["function"]["parameters"]
    for obj in _objects(parameters):
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    props = parameters["properties"]
    assert props["speed"] == {"enum": ["slow", "fast", None], "type": ["string", "null"]}
    assert props["weight"] == {
        "type": ["number", "null"],
        "exclusiveMinimum": 0,
        "description": "kg",
    }
    assert props["notes"] == {
        "anyOf": [{"items": {"type": "string"}, "type": "array"}, {"type": "null"}]
    }
    assert props["to"] == {"$ref": "#/$defs/Address"}
    assert parameters["$defs"]["Address"]["properties"]["floor"] == {"type": ["integer", "null"]}
    assert "default" not in set(_keys(parameters)) and "title" not in set(_keys(parameters))


def test_what_a_strict_model_sends_is_accepted() -> None:
    """Arguments with null for every optional field validate as if they were omitted."""
    tool = _tools().get("ship")
    assert tool is not None
    strict_args = {
        "to": {"city": "Oslo", "zip": None, "floor": None},
        "speed": None,
        "weight": None,
        "notes": None,
    }
    assert tool.validate(strict_args) == tool.validate({"to": {"city": "Oslo"}})


def test_strict_mode_refuses_what_it_cannot_express() -> None:
    """dict parameters and free-form objects in strict mode raise ToolDefinitionError."""
    tools = Toolbox()

    @tools.tool
    def tag(labels: dict[str, int]) -> None:
        """Tag."""

    with pytest.raises(ToolDefinitionError, match="arbitrary keys"):
        tools.definitions("openai-chat", strict=True)
    assert tools.definitions("openai-chat")  # fine without strict


def test_recursive_types_work_in_strict_mode_but_not_in_the_gemini_subset() -> None:
    """OpenAI strict mode keeps $defs and $ref (recursion is fine); Gemini's OpenAPI
    subset cannot inline recursion."""
    tools = Toolbox()

    @tools.tool
    def tree(root: Node) -> None:
        """Walk."""

    strict = tools.definitions("openai-chat", strict=True)[0]["function"]["parameters"]
    assert strict["$defs"]["Node"]["properties"]["children"] == {
        "items": {"$ref": "#/$defs/Node"},
        "type": ["array", "null"],
    }
    with pytest.raises(ToolDefinitionError, match="recursive"):
        gemini_schema(tools.get("tree").parameters)  # type: ignore[union-attr]


_GEMINI_KEYS = {
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


def test_typed_tool_gemini_schema() -> None:
    """Gemini: refs inlined, nullable instead of null unions, enums as strings, no extras."""
    tools = _tools()
    ship, ping = _declarations(tools.definitions("gemini"))
    assert ping == {"name": "ping", "description": "Ping."}
    parameters = ship["parameters"]
    assert set(_keys(parameters)) - set(parameters["properties"]) - {"city", "zip", "floor"} <= (
        _GEMINI_KEYS
    )
    props = parameters["properties"]
    assert props["to"]["type"] == "OBJECT"
    assert props["to"]["properties"]["zip"] == {"type": "STRING", "nullable": True}
    assert props["speed"] == {"type": "STRING", "enum": ["slow", "fast"], "format": "enum"}
    assert props["weight"] == {"type": "NUMBER", "description": "kg", "minimum": 0}
    assert props["notes"] == {"type": "ARRAY", "items": {"type": "STRING"}, "nullable": True}
    assert parameters["required"] == ["to"]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["integer", "null"]}, {"type": "INTEGER", "nullable": True}),
        ({"type": ["integer", "string"]}, {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]}),
        ({"const": "x"}, {"type": "STRING", "enum": ["x"], "format": "enum"}),
        ({"enum": [1, 2]}, {"description": "Allowed values: 1, 2."}),
        ({"type": "string", "format": "uri"}, {"type": "STRING"}),
        ({"type": "string", "format": "date-time"}, {"type": "STRING", "format": "date-time"}),
        (
            {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
        ),
        ({"allOf": [{"type": "integer", "minimum": 1}]}, {"type": "INTEGER", "minimum": 1}),
        (
            {"prefixItems": [{"type": "integer"}, {"type": "string"}], "type": "array"},
            {
                "type": "ARRAY",
                "items": {"anyOf": [{"type": "INTEGER"}, {"type": "STRING"}]},
                "minItems": 2,
                "maxItems": 2,
            },
        ),
        (
            {"properties": {"a": {"items": {"type": "string"}}}},
            {
                "type": "OBJECT",
                "properties": {"a": {"type": "ARRAY", "items": {"type": "STRING"}}},
                "propertyOrdering": ["a"],
            },
        ),
        (
            {"type": "object", "additionalProperties": {"type": "integer"}, "title": "T"},
            {"type": "OBJECT"},
        ),
    ],
)
def test_gemini_rewrites(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    """Each JSON Schema construct maps onto Gemini's subset as documented."""
    assert gemini_schema(schema) == expected


def test_gemini_refuses_names_it_cannot_take() -> None:
    """A tool name starting with a digit or '-' cannot be declared for Gemini."""
    tools = Toolbox()
    tools.add("1st", {"type": "object"}, lambda: None)
    with pytest.raises(ToolDefinitionError, match="Gemini"):
        tools.definitions("gemini")
    assert tools.definitions("anthropic")[0]["name"] == "1st"


@pytest.mark.parametrize("fmt", ["openai-chatt", "OpenAI-Chat", "bedrock", "", None])
def test_unknown_formats_raise_unknown_format(fmt: Any) -> None:
    """An unknown format name raises UnknownFormat (a ValueError)."""
    with pytest.raises(UnknownFormat) as info:
        _tools().definitions(fmt)
    assert isinstance(info.value, ValueError)


# --------------------------------------------------------------------------- properties


def _wrap(schema: dict[str, Any], required: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": {"p": schema}}
    if required:
        out["required"] = ["p"]
    return out


def _has(schema: Any, key: str) -> bool:
    return key in set(_keys(schema))


def _strict_shaped(schema: dict[str, Any], value: Any) -> Any:
    """What a strict-mode model sends for ``value``: every missing property as null."""
    if isinstance(value, dict) and "properties" in schema:
        return {
            name: _strict_shaped(sub, value[name]) if name in value else None
            for name, sub in schema["properties"].items()
        }
    if isinstance(value, list) and "items" in schema:
        return [_strict_shaped(schema["items"], v) for v in value]
    return value


@settings(max_examples=150)
@given(data=st.data(), schema=SCHEMAS, required=st.booleans())
def test_strict_schemas_close_every_object_and_keep_toolbox_acceptance(
    data: st.DataObject, schema: dict[str, Any], required: bool
) -> None:
    """Strict: every object closed and fully required; a strict-shaped value passes both."""
    full = _wrap(schema, required)
    original = copy.deepcopy(full)
    converted = strict_schema(full)
    assert full == original  # never mutated
    for obj in _objects(converted):
        assert obj["additionalProperties"] is False
        assert obj["required"] == list(obj["properties"])
    assert not _has(converted, "oneOf") and not _has(converted, "minLength")
    if _has(full, "anyOf"):
        return  # which branch a value came from is not tracked by _strict_shaped
    value = data.draw(values(full))
    shaped = _strict_shaped(full, value)
    assert compile_schema(converted).errors(shaped) == []
    tools = Toolbox()
    tool = tools.add("t", full, lambda **kw: kw)
    tool.validate(shaped)  # the toolbox reads the nulls as "not given"


@settings(max_examples=150)
@given(schema=SCHEMAS, required=st.booleans())
def test_gemini_schemas_use_only_the_subset(schema: dict[str, Any], required: bool) -> None:
    """Gemini output has only subset keywords, upper-case types and never a null type."""
    converted = gemini_schema(_wrap(schema, required))
    text = json.dumps(converted)
    assert '"$ref"' not in text and '"null"' not in text and "additionalProperties" not in text

    def walk(node: Any, in_props: bool = False) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not in_props:
                    assert key in _GEMINI_KEYS, key
                if key == "type":
                    assert value in {"STRING", "INTEGER", "NUMBER", "BOOLEAN", "OBJECT", "ARRAY"}
                if key == "enum":
                    assert all(isinstance(v, str) for v in value)
                walk(value, key == "properties" and not in_props)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(converted)


def test_tools_without_parameters_are_strict_empty_objects() -> None:
    """A raw tool with a bare object schema becomes a closed empty object in strict mode."""
    tools = Toolbox()
    tools.add("now", {"type": "object"}, lambda: "12:00")
    (definition,) = tools.definitions("openai-responses", strict=True)
    assert definition["parameters"] == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }
    assert _declarations(tools.definitions("gemini")) == [{"name": "now", "description": ""}]


def test_strict_mode_inlines_references_that_carry_siblings() -> None:
    """A $ref with a description is inlined in strict mode; a bare $ref stays a reference."""
    tools = Toolbox()

    @tools.tool
    def send(to: Annotated[Address, "destination"], back: Address) -> None:
        """Send."""

    assert tools.get("send").parameters["properties"]["to"] == {  # type: ignore[union-attr]
        "$ref": "#/$defs/Address",
        "description": "destination",
    }
    strict = tools.definitions("openai-chat", strict=True)[0]["function"]["parameters"]
    inlined = strict["properties"]["to"]
    assert "$ref" not in inlined and inlined["description"] == "destination"
    assert inlined["additionalProperties"] is False
    assert inlined["required"] == ["city", "zip", "floor"]
    assert strict["properties"]["back"] == {"$ref": "#/$defs/Address"}


def test_definitions_read_refs_as_validation_does() -> None:
    """A percent-encoded ``$ref`` resolves in definitions as in validation; a bad one is typed."""
    schema = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/a%25b"}},
        "required": ["p"],
        "$defs": {"a%b": {"type": "integer"}},
    }
    assert gemini_schema(schema)["properties"]["p"]["type"] == "INTEGER"
    assert compile_schema(schema).errors({"p": "x"})
    with pytest.raises(ToolDefinitionError, match="%XX"):
        gemini_schema({**schema, "properties": {"p": {"$ref": "#/$defs/a%b"}}})


# ------------------------------------------------------------------ Anthropic strict


def _anthropic_strict(tools: Toolbox) -> list[dict[str, Any]]:
    """The strict input schemas, each checked to be what the anthropic SDK would send."""
    from anthropic import transform_schema

    schemas = [d["input_schema"] for d in tools.definitions("anthropic", strict=True)]
    for schema in schemas:
        assert transform_schema(copy.deepcopy(schema)) == schema
    return schemas


def test_anthropic_strict_schemas_are_what_the_sdk_sends() -> None:
    """Nested models, optional fields, enums and constrained lists come out in the SDK's
    strict subset: optional fields stay optional, constraints move into the description."""
    ship, ping = _anthropic_strict(_tools())
    assert ping == {"type": "object", "properties": {}, "additionalProperties": False}
    assert ship["required"] == ["to"] and ship["additionalProperties"] is False
    props = ship["properties"]
    assert props["to"] == {"$ref": "#/$defs/Address"}
    assert ship["$defs"]["Address"] == {
        "type": "object",
        "description": "Where to ship.",
        "properties": {
            "city": {"type": "string"},
            "zip": {
                "anyOf": [{"type": "string"}, {"type": "null"}],
                "description": "{default: null}",
            },
            "floor": {"type": "integer", "description": "{default: 0}"},
        },
        "additionalProperties": False,
        "required": ["city"],
    }
    assert props["speed"] == {"enum": ["slow", "fast"], "description": '{default: "slow"}'}
    assert props["weight"] == {
        "type": "number",
        "description": "kg\n\n{default: 1.0, exclusiveMinimum: 0}",
    }


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        (
            {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 4},
            {"type": "array", "items": {"type": "string"},
             "description": "{minItems: 2, maxItems: 4}"},
        ),
        (
            {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1},
            {"type": "array", "items": {"type": "integer", "description": "{minimum: 1}"},
             "minItems": 1},
        ),
        (
            {"type": ["integer", "null"], "maximum": 9, "description": "n"},
            {"anyOf": [{"type": "integer", "description": "{maximum: 9}"}, {"type": "null"}],
             "description": "n"},
        ),
        (
            {"type": "string", "pattern": "^[a-z]+$", "format": "email"},
            {"type": "string", "format": "email", "description": '{pattern: "^[a-z]+$"}'},
        ),
        ({"type": "string", "format": "byte"},
         {"type": "string", "description": '{format: "byte"}'}),
        ({"const": "x", "type": "string"}, {"const": "x"}),
        ({"oneOf": [{"type": "string"}, {"type": "integer", "multipleOf": 5}]},
         {"anyOf": [{"type": "string"}, {"type": "integer", "description": "{multipleOf: 5}"}]}),
        ({"allOf": [{"type": "string", "minLength": 1}], "title": "T", "default": "a"},
         {"type": "string", "description": '{default: "a", minLength: 1}'}),
    ],
)  # fmt: skip
def test_anthropic_strict_rewrites(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    """Each construct becomes what the SDK's transform_schema leaves unchanged."""
    tools = Toolbox()
    tools.add("t", _wrap(schema, True), lambda p: p)
    (converted,) = _anthropic_strict(tools)
    assert converted["properties"]["p"] == expected


def test_anthropic_strict_refuses_recursive_types_naming_tool_and_path() -> None:
    """A recursive model cannot be a strict Anthropic tool: the error names both."""
    tools = Toolbox()

    @tools.tool
    def tree(root: Node) -> None:
        """Walk."""

    with pytest.raises(ToolDefinitionError) as info:
        tools.definitions("anthropic", strict=True)
    message = str(info.value)
    assert "'tree'" in message and "recursive" in message
    assert "#/$defs/Node/properties/children/items" in message
    assert tools.definitions("anthropic")[0]["input_schema"]["$defs"]  # fine without strict


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({"enum": [{"a": 1}, "b"]}, "enum holding objects"),
        ({"type": "array"}, "array of values of any type"),
        ({"type": "array", "items": {}}, "array of values of any type"),
        ({"description": "anything"}, "without a type"),
    ],
)
def test_anthropic_strict_refuses_what_its_subset_cannot_say(
    schema: dict[str, Any], words: str
) -> None:
    """Schemas the SDK's transformer cannot take raise ToolDefinitionError at their path."""
    tools = Toolbox()
    tools.add("t", _wrap(schema, True), lambda p: p)
    with pytest.raises(ToolDefinitionError, match=words) as info:
        tools.definitions("anthropic", strict=True)
    assert "tool 't' at #/properties/p" in str(info.value)


@settings(max_examples=100)
@given(data=st.data(), schema=SCHEMAS, required=st.booleans())
def test_anthropic_strict_schemas_pass_the_sdk_and_accept_every_valid_value(
    data: st.DataObject, schema: dict[str, Any], required: bool
) -> None:
    """Whatever the schema, the strict form is a fixed point of the SDK's transformer and
    accepts every value the original accepts (the toolbox enforces the rest)."""
    from anthropic import transform_schema

    from toolwire._providers.anthropic.schema import anthropic_strict_schema

    full = _wrap(schema, required)
    converted = anthropic_strict_schema(full)
    assert transform_schema(copy.deepcopy(converted)) == converted
    for obj in _objects(converted):
        assert obj["additionalProperties"] is False
    assert compile_schema(converted).errors(data.draw(values(full))) == []


# ------------------------------------------------------- Gemini, as google-genai takes it


def _genai_tools(definitions: list[dict[str, Any]]) -> list[Any]:
    """The definitions validated as google-genai's GenerateContentConfig(tools=...)."""
    from google.genai import types

    config = types.GenerateContentConfig(tools=definitions)  # type: ignore[arg-type]
    assert config.tools is not None
    return list(config.tools)


def test_gemini_definitions_are_what_google_genai_tools_takes() -> None:
    """One Tool with every declaration, plain and recursive tools alike."""
    tools = _tools()

    @tools.tool
    def tree(root: Node) -> None:
        """Walk."""

    (tool,) = _genai_tools(tools.definitions("gemini"))
    ship, ping, walk = tool.function_declarations
    assert ship.parameters.properties["to"].properties["city"].type == "STRING"
    assert ping.parameters is None and ping.parameters_json_schema is None
    assert walk.parameters is None
    assert walk.parameters_json_schema["$defs"]["Node"]["properties"]["children"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Node"},
    }
    assert _genai_tools(Toolbox().definitions("gemini")) == []


def test_gemini_uses_json_schema_only_where_the_subset_cannot_say_it() -> None:
    """Recursive types and dicts go as parametersJsonSchema; everything else as parameters."""
    tools = Toolbox()

    @tools.tool
    def tag(labels: dict[str, int], note: str = "") -> None:
        """Tag."""

    (tool,) = tools.definitions("gemini")
    (declaration,) = tool["functionDeclarations"]
    assert "parameters" not in declaration
    assert declaration["parametersJsonSchema"] == {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
            "note": {"type": "string"},
        },
        "propertyOrdering": ["labels", "note"],
        "required": ["labels"],
    }
    assert "parameters" in _declarations(_raw().definitions("gemini"))[0]


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": ["integer", "null"], "exclusiveMinimum": 0},
         {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}),
        ({"enum": ["a", None]}, {"anyOf": [{"enum": ["a"], "type": "string"}, {"type": "null"}]}),
        ({"enum": [True, 1]}, {"description": "Allowed values: true, 1."}),
        ({"const": 3}, {"enum": [3], "type": "number"}),
        ({"type": "string", "format": "uri", "pattern": "x", "title": "T"}, {"type": "string"}),
        ({"prefixItems": [{"type": "integer"}], "items": False, "minItems": 1},
         {"type": "array", "prefixItems": [{"type": "integer"}], "minItems": 1}),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]},
         {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
        ({"$ref": "#/$defs/D", "description": "d"},
         {"anyOf": [{"$ref": "#/$defs/D"}], "description": "d"}),
    ],
)  # fmt: skip
def test_gemini_json_schema_rewrites(schema: dict[str, Any], expected: dict[str, Any]) -> None:
    """Each construct maps onto the keywords parametersJsonSchema reads, as documented."""
    from toolwire._providers.gemini.schema import gemini_json_schema

    document = {**_wrap(schema, True), "$defs": {"D": {"type": "integer"}}}
    assert gemini_json_schema(document)["properties"]["p"] == expected


@settings(max_examples=100)
@given(data=st.data(), schema=SCHEMAS, required=st.booleans())
def test_gemini_json_schemas_validate_in_google_genai_and_accept_every_valid_value(
    data: st.DataObject, schema: dict[str, Any], required: bool
) -> None:
    """The JSON Schema form is a valid FunctionDeclaration and accepts what the original does."""
    from google.genai import types

    from toolwire._providers.gemini.schema import gemini_json_schema

    full = _wrap(schema, required)
    converted = gemini_json_schema(full)
    types.FunctionDeclaration(name="t", parameters_json_schema=converted)
    assert compile_schema(converted).errors(data.draw(values(full))) == []
