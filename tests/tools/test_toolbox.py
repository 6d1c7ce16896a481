"""Registering tools: schemas from type hints (pydantic as the oracle), docstrings, the
injected context, sync and async invocation, raw-schema tools, result JSON, checking the
calls of a response, and typed errors for tools that cannot be described."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import json
import uuid
from typing import Annotated, Any, Literal

import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from conftest import load_expected
from toolwire import (
    RejectedCall,
    Response,
    Tool,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolDefinitionError,
    ToolwireError,
    UsageError,
)
from toolwire._tools.toolbox import ArgumentsInvalid, InvalidCall, ValidCall


class Color(enum.Enum):
    """A colour."""

    RED = "red"
    BLUE = "blue"


class Address(BaseModel):
    """A postal address."""

    city: str
    zip: str | None = None


@dataclasses.dataclass
class Point:
    """A point."""

    x: int
    y: int = 0


class Movie(TypedDict):
    """A movie."""

    title: str
    year: int


def _ctx(call_id: str = "c1", deadline: float | None = None) -> ToolContext:
    return ToolContext(
        idempotency_key="key-1", deadline=deadline, call_id=call_id, tool_name="t", scope="s"
    )


def _call(name: str, arguments: Any, index: int = 0, raw: str | None = None) -> ToolCall:
    text = json.dumps(arguments) if raw is None else raw
    return ToolCall(
        id=f"call_{index}", name=name, arguments=arguments, raw_arguments=text, index=index
    )


def _property_schema(annotation: Any) -> dict[str, Any]:
    tools = Toolbox()

    def fn(value: annotation) -> None:  # type: ignore[valid-type]
        """Take one value."""

    fn.__annotations__ = {"value": annotation, "return": None}
    tools.tool(fn)
    return tools.get("fn").parameters  # type: ignore[union-attr]


# --------------------------------------------------------------------------- schemas


@pytest.mark.parametrize(
    "annotation",
    [
        str,
        int,
        float,
        bool,
        type(None),
        int | None,
        list[str],
        tuple[int, str],
        dict[str, int],
        set[str],
        Literal["a", "b"],
        Color,
        Address,
        Point,
        Movie,
        int | str,
        datetime.datetime,
        uuid.UUID,
        Any,
    ],
)
def test_each_hint_gets_pydantics_schema(annotation: Any) -> None:
    """Each supported hint's property schema is what pydantic says (titles aside)."""
    schema = _property_schema(annotation)
    oracle = pydantic.TypeAdapter(annotation).json_schema()
    prop = schema["properties"]["value"]
    defs = schema.get("$defs", {})
    if "$ref" in prop:
        # Named types (models, enums, dataclasses) live in $defs: compare the definition.
        name = prop["$ref"].rsplit("/", 1)[-1]
        assert prop == {"$ref": f"#/$defs/{name}"}
        oracle.pop("$defs", None)
        for field in oracle.get("properties", {}).values():
            field.pop("title", None)  # toolwire leaves out derived field titles
        if "properties" in oracle and not issubclass(annotation, BaseModel):
            # Extra keys are forbidden in dataclasses and TypedDicts too; models keep their own.
            oracle.setdefault("additionalProperties", False)
        assert defs[name] == oracle
    else:
        oracle.pop("title", None)
        oracle_defs = oracle.pop("$defs", {})
        assert prop == oracle
        assert set(defs) == set(oracle_defs)
    assert schema["required"] == ["value"]
    assert schema["additionalProperties"] is False
    assert "title" not in schema


def test_description_defaults_annotated_and_docstring_args() -> None:
    """Descriptions come from Annotated text, Field(...) and a Google-style Args section."""
    tools = Toolbox()

    @tools.tool
    def search(
        query: Annotated[str, "what to look for"],
        limit: Annotated[int, Field(ge=1, le=50, description="max results")] = 10,
        exact: bool = False,
        lang: str = Field("en", max_length=2),
    ) -> list[str]:
        """Search the index.

        More detail that is not part of the description.

        Args:
            query: ignored, Annotated wins.
            exact (bool): match whole words
                only, never stems.
            lang: two-letter code.

        Returns:
            The hits.
        """
        return []

    tool = tools.get("search")
    assert tool is not None
    assert tool.description == "Search the index."
    props = tool.parameters["properties"]
    assert props["query"] == {"type": "string", "description": "what to look for"}
    assert props["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 50,
        "default": 10,
        "description": "max results",
    }
    assert props["exact"]["description"] == "match whole words only, never stems."
    assert props["lang"] == {
        "type": "string",
        "maxLength": 2,
        "default": "en",
        "description": "two-letter code.",
    }
    assert tool.parameters["required"] == ["query"]
    assert tool.required == ("query",)


def test_numpy_docstring_parameters() -> None:
    """A NumPy-style Parameters section documents parameters too."""
    tools = Toolbox()

    @tools.tool
    def area(width: float, height: float) -> float:
        """Compute an area.

        Parameters
        ----------
        width : float
            The width, in metres.
        height : float
            The height.

        Returns
        -------
        float
        """
        return width * height

    props = tools.get("area").parameters["properties"]  # type: ignore[union-attr]
    assert props["width"]["description"] == "The width, in metres."
    assert props["height"]["description"] == "The height."


def test_sphinx_and_epydoc_docstring_parameters() -> None:
    """Sphinx/reST ``:param name:`` and Epydoc ``@param name:`` fields document parameters,
    continuation lines joined; the description is the whole first paragraph."""
    tools = Toolbox()

    @tools.tool
    def mail(to: str, subject: str) -> str:
        """Send a mail
        to one recipient.

        :param to: the recipient's
            address.
        :param str subject: one line.
        :returns: the message id.
        """
        return to

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two numbers.

        @param a: the first.
        @param b: the second.
        """
        return a + b

    mail_props = tools.get("mail").parameters["properties"]  # type: ignore[union-attr]
    assert mail_props["to"]["description"] == "the recipient's address."
    assert mail_props["subject"]["description"] == "one line."
    assert tools.get("mail").description == "Send a mail to one recipient."  # type: ignore[union-attr]
    add_props = tools.get("add").parameters["properties"]  # type: ignore[union-attr]
    assert (add_props["a"]["description"], add_props["b"]["description"]) == (
        "the first.",
        "the second.",
    )


def test_name_description_and_options_can_be_given() -> None:
    """``@tools.tool(...)`` sets name, description, idempotent and timeout; returns the fn."""
    tools = Toolbox()

    def fetch(url: str) -> str:
        return url

    returned = tools.tool(name="web-fetch", description="Fetch.", idempotent=True, timeout=2)(fetch)
    assert returned is fetch
    tool = tools.get("web-fetch")
    assert tool is not None
    assert (tool.name, tool.description, tool.idempotent, tool.timeout) == (
        "web-fetch",
        "Fetch.",
        True,
        2.0,
    )
    assert "web-fetch" in tools and len(tools) == 1 and list(tools) == [tool]
    assert tools.get("fetch") is None


def test_parameter_names_that_clash_with_pydantic_work() -> None:
    """Parameter names like ``json``, ``schema`` or ``_private`` are kept as given."""
    tools = Toolbox()

    @tools.tool
    def odd(json: str, schema: int, model_config: bool, _private: int = 1) -> dict[str, Any]:
        """Odd names."""
        return {"json": json, "schema": schema, "mc": model_config, "p": _private}

    tool = tools.get("odd")
    assert tool is not None
    assert list(tool.parameters["properties"]) == ["json", "schema", "model_config", "_private"]
    args = tool.validate({"json": "j", "schema": 2, "model_config": True})
    assert tool.invoke(args, _ctx()) == {"json": "j", "schema": 2, "mc": True, "p": 1}


# --------------------------------------------------------------------------- bad definitions


def _bad_signatures() -> list[Any]:
    def star_args(*values: int) -> None: ...

    def star_kwargs(**values: int) -> None: ...

    def positional_only(a: int, /) -> None: ...

    def unannotated(a) -> None: ...  # type: ignore[no-untyped-def]

    def unresolvable(a: NoSuchType) -> None: ...  # type: ignore[name-defined]  # noqa: F821

    def not_a_pydantic_type(a: object()) -> None: ...  # type: ignore[valid-type]

    def two_contexts(a: ToolContext, b: ToolContext) -> None: ...

    return [
        star_args,
        star_kwargs,
        positional_only,
        unannotated,
        unresolvable,
        not_a_pydantic_type,
        two_contexts,
    ]


@pytest.mark.parametrize("fn", _bad_signatures(), ids=lambda f: f.__name__)
def test_functions_that_cannot_be_described_raise_tool_definition_error(fn: Any) -> None:
    """*args, **kwargs, positional-only, missing or bad annotations: ToolDefinitionError."""
    tools = Toolbox()
    with pytest.raises(ToolDefinitionError) as info:
        tools.tool(fn)
    assert fn.__name__ in str(info.value)
    assert len(tools) == 0


@pytest.mark.parametrize("name", ["", "a b", "x" * 65, "naïve", "a.b", None, 5])
def test_invalid_names_are_refused(name: Any) -> None:
    """Names outside ``^[a-zA-Z0-9_-]{1,64}$`` raise ToolDefinitionError, both ways."""
    tools = Toolbox()
    with pytest.raises(ToolDefinitionError):
        tools.tool(name=name)(lambda: None)
    with pytest.raises(ToolDefinitionError):
        tools.add(name, {"type": "object"}, lambda: None)


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), "5", True])
def test_bad_timeouts_and_flags_are_refused(timeout: Any) -> None:
    """A timeout that is not a positive number of seconds is a ToolDefinitionError."""
    tools = Toolbox()

    def f() -> None: ...

    with pytest.raises(ToolDefinitionError):
        tools.tool(f, timeout=timeout) if False else tools.tool(timeout=timeout)(f)
    with pytest.raises(ToolDefinitionError):
        tools.tool(idempotent="yes")(f)  # type: ignore[arg-type]


def test_registering_a_name_twice_is_refused() -> None:
    """The same name twice (typed or raw) raises ToolDefinitionError; the first stays."""
    tools = Toolbox()

    @tools.tool
    def ping() -> str:
        return "pong"

    first = tools.get("ping")
    with pytest.raises(ToolDefinitionError, match="already registered"):
        tools.tool(name="ping")(lambda: None)
    with pytest.raises(ToolDefinitionError, match="already registered"):
        tools.add("ping", {"type": "object"}, lambda: None)
    assert tools.get("ping") is first


@pytest.mark.parametrize(
    "parameters",
    [
        {"type": "array"},
        {"type": "object", "properties": {"a": {"type": "nope"}}},
        ["not", "a", "dict"],
        {"type": "object", "properties": {"a": {"default": float("nan")}}},
        {"type": "object", "required": "a"},
    ],
)
def test_bad_raw_schemas_are_refused(parameters: Any) -> None:
    """A raw schema that is not a valid object schema raises ToolDefinitionError."""
    with pytest.raises(ToolDefinitionError) as info:
        Toolbox().add("raw", parameters, lambda **kw: kw)
    assert "tool 'raw'" in str(info.value) or "invalid JSON Schema at" in str(info.value)


def test_bad_raw_schema_messages_say_what_is_wrong() -> None:
    """Schema errors keep their own message; too-deep schemas say so."""
    with pytest.raises(ToolDefinitionError, match=r"invalid JSON Schema at #/properties/a: "):
        Toolbox().add("raw", {"properties": {"a": {"type": "nope"}}}, lambda **kw: kw)
    deep: dict[str, Any] = {"type": "object"}
    node = deep
    for _ in range(3000):
        node["properties"] = {"a": {"type": "object"}}
        node = node["properties"]["a"]
    with pytest.raises(ToolDefinitionError, match="nested too deeply"):
        Toolbox().add("deep", deep, lambda **kw: kw)


def test_tools_are_immutable() -> None:
    """A registered Tool cannot be changed."""
    tools = Toolbox()
    tool = tools.add("t", {"type": "object"}, lambda: 1)
    with pytest.raises(AttributeError):
        tool.name = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del tool.timeout
    assert isinstance(tool, Tool)


# --------------------------------------------------------------------------- invocation


def test_context_is_injected_and_never_in_the_schema() -> None:
    """A ``ctx: ToolContext`` parameter gets the context and is not a parameter."""
    tools = Toolbox()
    seen: list[ToolContext] = []

    @tools.tool
    def charge(amount: int, ctx: ToolContext) -> str:
        """Charge."""
        seen.append(ctx)
        return ctx.idempotency_key

    tool = tools.get("charge")
    assert tool is not None
    assert list(tool.parameters["properties"]) == ["amount"]
    ctx = _ctx()
    assert tool.invoke(tool.validate({"amount": 3}), ctx) == "key-1"
    assert seen == [ctx]
    with pytest.raises(ArgumentsInvalid):
        tool.validate({"amount": 3, "ctx": {}})


def test_context_remaining_time() -> None:
    """``remaining()`` is the time left before the deadline, never negative, None without."""
    assert _ctx().remaining() is None
    ctx = _ctx(deadline=100.0)
    assert ctx.remaining(now=90.0) == 10.0
    assert ctx.remaining(now=200.0) == 0.0
    assert ctx.remaining() is not None


def test_sync_invocation_gets_declared_python_types() -> None:
    """Invoke turns validated JSON into models, dataclasses, enums, tuples, sets, datetimes."""
    tools = Toolbox()
    received: dict[str, Any] = {}

    @tools.tool
    def rich(
        address: Address,
        point: Point,
        color: Color,
        pair: tuple[int, str],
        tags: set[str],
        when: datetime.datetime,
        movie: Movie,
    ) -> None:
        """Take rich types."""
        received.update(locals())

    tool = tools.get("rich")
    assert tool is not None and not tool.is_async
    args = tool.validate(
        {
            "address": {"city": "Oslo"},
            "point": {"x": 1},
            "color": "blue",
            "pair": [1, "a"],
            "tags": ["b", "a", "b"],
            "when": "2024-01-02T03:04:05Z",
            "movie": {"title": "M", "year": 1931},
        }
    )
    assert args["tags"] == ["a", "b"]
    assert args["address"] == {"city": "Oslo", "zip": None}
    assert json.loads(json.dumps(args)) == args
    assert tool.invoke(args, _ctx()) is None
    assert received["address"] == Address(city="Oslo")
    assert received["point"] == Point(x=1, y=0)
    assert received["color"] is Color.BLUE
    assert received["pair"] == (1, "a")
    assert received["tags"] == {"a", "b"}
    assert received["when"] == datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    assert received["movie"] == {"title": "M", "year": 1931}


def test_async_invocation_returns_a_coroutine() -> None:
    """An ``async def`` tool is marked async and ``invoke`` returns its coroutine."""
    tools = Toolbox()

    @tools.tool
    async def slow(n: int, ctx: ToolContext) -> dict[str, Any]:
        """Async."""
        await asyncio.sleep(0)
        return {"n": n, "call": ctx.call_id}

    tool = tools.get("slow")
    assert tool is not None and tool.is_async
    coroutine = tool.invoke(tool.validate({"n": 2}), _ctx("c9"))
    assert asyncio.iscoroutine(coroutine)
    assert asyncio.run(coroutine) == {"n": 2, "call": "c9"}


def test_raw_schema_tools_validate_and_call_with_keywords() -> None:
    """``add`` compiles the schema once and calls fn(**arguments), with ctx= if declared."""
    tools = Toolbox()
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "lines": {"type": "integer", "minimum": 1}},
        "required": ["path"],
        "additionalProperties": False,
    }

    def read(path: str, lines: int = 10, ctx: ToolContext | None = None) -> str:
        return f"{path}:{lines}:{ctx.call_id if ctx else None}"

    tool = tools.add("read", schema, read, description="Read a file.")
    assert tool.parameters == schema and tool.parameters is not schema
    assert tool.required == ("path",)
    args = tool.validate({"path": "a.py", "lines": None})
    assert args == {"path": "a.py"}
    assert tool.invoke(args, _ctx("c7")) == "a.py:10:c7"
    with pytest.raises(ArgumentsInvalid, match=r"at lines: expected a number at least 1"):
        tool.validate({"path": "a.py", "lines": 0})
    plain = tools.add("plain", {"properties": {"a": {"type": "integer"}}}, lambda a: a * 2)
    assert plain.parameters["type"] == "object"
    assert plain.invoke(plain.validate({"a": 4}), _ctx()) == 8


def test_async_raw_tools_and_async_callable_objects_are_async() -> None:
    """A raw tool with an async callable (function or object) is async."""

    class Handler:
        async def __call__(self, **kwargs: Any) -> Any:
            return kwargs

    async def handler(**kwargs: Any) -> Any:
        return kwargs

    tools = Toolbox()
    assert tools.add("a", {"type": "object"}, handler).is_async
    tool = tools.add("b", {"type": "object"}, Handler())
    assert tool.is_async
    assert asyncio.run(tool.invoke({"x": 1}, _ctx())) == {"x": 1}


# --------------------------------------------------------------------------- result JSON


def test_result_json_serialises_common_return_values() -> None:
    """Models, dataclasses, enums, sets, tuples and dates become compact, sorted JSON."""
    tool = Toolbox().add("t", {"type": "object"}, lambda: None)
    value = {
        "model": Address(city="Oslo"),
        "point": Point(x=1),
        "color": Color.RED,
        "tags": {"b", "a"},
        "pair": (1, "x"),
        "when": datetime.date(2024, 1, 2),
        "text": "ünï",
        "n": 1.5,
    }
    assert tool.result_json(value) == (
        '{"color":"red","model":{"city":"Oslo","zip":null},"n":1.5,"pair":[1,"x"],'
        '"point":{"x":1,"y":0},"tags":["a","b"],"text":"ünï","when":"2024-01-02"}'
    )
    assert tool.result_json("hello") == '"hello"'
    assert tool.result_json(None) == "null"


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [object(), float("nan"), {"a": float("inf")}, {(1, 2): 1}, _deep_list(5000), {"k": [object()]}],
)
def test_result_json_raises_type_error_for_unserialisable_values(value: Any) -> None:
    """A value JSON cannot carry raises TypeError."""
    tool = Toolbox().add("t", {"type": "object"}, lambda: None)
    with pytest.raises(TypeError):
        tool.result_json(value)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4),
    max_leaves=20,
)


@given(value=_JSON, seed=st.randoms())
def test_result_json_is_deterministic_for_equal_values(value: Any, seed: Any) -> None:
    """Equal values (dicts in any key order, sets in any order) give the same bytes."""
    tool = Toolbox().add("t", {"type": "object"}, lambda: None)

    def shuffled(v: Any) -> Any:
        if isinstance(v, dict):
            items = list(v.items())
            seed.shuffle(items)
            return {k: shuffled(x) for k, x in items}
        if isinstance(v, list):
            return [shuffled(x) for x in v]
        return v

    text = tool.result_json(value)
    assert tool.result_json(shuffled(value)) == text
    assert json.loads(text) == value
    strings = [str(x) for x in range(seed.randint(0, 6))]
    other = list(strings)
    seed.shuffle(other)
    assert tool.result_json(set(strings)) == tool.result_json(frozenset(other))


# --------------------------------------------------------------------------- checking calls


def _toolbox() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def transfer(amount: int, to: str) -> dict[str, Any]:
        """Move money."""
        return {"ok": True}

    @tools.tool
    def now() -> str:
        """The time."""
        return "12:00"

    return tools


def test_valid_call_carries_tool_and_validated_arguments() -> None:
    """A known tool with fitting arguments gives a ValidCall."""
    tools = _toolbox()
    result = tools.check(_call("transfer", {"amount": 5, "to": "bob"}))
    assert isinstance(result, ValidCall)
    assert result.tool is tools.get("transfer")
    assert result.arguments == {"amount": 5, "to": "bob"}


def test_unknown_tool_lists_the_known_tools() -> None:
    """An unknown tool name gives an InvalidCall naming it and listing the tools."""
    result = _toolbox().check(_call("tranfser", {}))
    assert isinstance(result, InvalidCall)
    assert result.reason == (
        'There is no tool named "tranfser". The available tools are: "transfer", "now".'
    )
    empty = Toolbox().check(_call("x", {}))
    assert isinstance(empty, InvalidCall) and "There are no tools available." in empty.reason


def test_rejected_calls_become_invalid_calls_for_the_model() -> None:
    """A RejectedCall (bad JSON, empty name) is an InvalidCall with an actionable reason."""
    tools = _toolbox()
    bad_json = RejectedCall(
        id="c", name="transfer", raw_arguments='{"amount": 5,', reason="unexpected end", index=0
    )
    result = tools.check(bad_json)
    assert isinstance(result, InvalidCall) and result.call is bad_json
    assert result.reason == (
        'The arguments of the call to tool "transfer" are not valid JSON (unexpected end). '
        "Call it again with the arguments as one complete JSON object."
    )
    nameless = RejectedCall(id="c", name="", raw_arguments="{}", reason="empty name", index=0)
    reason = tools.check(nameless).reason  # type: ignore[union-attr]
    assert reason.startswith("The tool call has no tool name") and '"transfer"' in reason
    unknown = RejectedCall(id="c", name="nope", raw_arguments="{", reason="cut", index=0)
    assert "no tool named" in tools.check(unknown).reason  # type: ignore[union-attr]


def test_empty_arguments_are_accepted_only_without_required_parameters() -> None:
    """``""`` becomes ``{}`` for a tool without required parameters, else an InvalidCall."""
    tools = _toolbox()
    ok = tools.check(_call("now", {}, raw=""))
    assert isinstance(ok, ValidCall) and ok.arguments == {}
    bad = tools.check(_call("transfer", {}, raw=""))
    assert isinstance(bad, InvalidCall)
    assert bad.reason == (
        'The call to tool "transfer" had empty arguments, but "transfer" requires "amount", '
        '"to". Call it again with a JSON object holding them.'
    )
    explicit = tools.check(_call("transfer", {}, raw="{}"))
    assert isinstance(explicit, InvalidCall) and "required property is missing" in explicit.reason


def test_check_response_orders_valid_and_rejected_calls_by_index() -> None:
    """check_response covers tool_calls and rejected, ordered by call index."""
    tools = _toolbox()
    response = Response(
        text="",
        reasoning="",
        tool_calls=[_call("now", {}, index=2), _call("transfer", {"amount": "5", "to": "x"}, 0)],
        rejected=[RejectedCall(id="r", name="now", raw_arguments="{", reason="cut", index=1)],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=None,
        model=None,
    )
    results = tools.check_response(response)
    assert [r.call.index for r in results] == [0, 1, 2]
    assert [type(r).__name__ for r in results] == ["InvalidCall", "InvalidCall", "ValidCall"]


def test_check_rejects_things_that_are_not_calls() -> None:
    """check, check_response and definitions raise typed toolwire errors for wrong input."""
    tools = _toolbox()
    with pytest.raises(UsageError, match="ToolCall or RejectedCall") as info:
        tools.check({"name": "now"})  # type: ignore[arg-type]
    assert isinstance(info.value, ToolwireError)
    with pytest.raises(UsageError, match="takes a Response"):
        tools.check_response([])  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="strict"):
        tools.definitions("openai-chat", strict="yes")  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="description"):
        tools.tool(name="d", description=5)(lambda: None)  # type: ignore[arg-type]
    assert tools.get(["now"]) is None  # type: ignore[arg-type]
    assert ["now"] not in tools


def test_arguments_invalid_is_a_typed_toolwire_value_error() -> None:
    """ArgumentsInvalid is a ToolwireError and a ValueError carrying the violations."""
    tool = _toolbox().get("transfer")
    assert tool is not None
    with pytest.raises(ArgumentsInvalid) as info:
        tool.validate({"amount": 1})
    assert isinstance(info.value, ToolwireError) and isinstance(info.value, ValueError)
    assert info.value.tool == "transfer"
    assert [v.path for v in info.value.violations] == [("to",)]


def test_recorded_corpus_calls_follow_the_empty_arguments_rule(corpus_dir: Any) -> None:
    """Every recorded call with complete arguments checks; "" follows the required rule."""
    expected = load_expected()
    checked = empty = 0
    for recording in expected.values():
        for recorded in recording.get("tool_calls") or []:
            if not recorded["arguments_valid_json"]:
                continue
            raw = recorded["arguments_raw"] or ""
            arguments = json.loads(raw) if raw.strip() else {}
            call = ToolCall(
                id=recorded["id"] or "x",
                name=recorded["name"],
                arguments=arguments,
                raw_arguments=raw,
                index=0,
            )
            lenient = Toolbox()
            lenient.add(recorded["name"], {"type": "object"}, lambda **kw: kw)
            result = lenient.check(call)
            assert isinstance(result, ValidCall) and result.arguments == arguments
            needy = Toolbox()
            needy.add(recorded["name"], {"type": "object", "required": ["q"]}, lambda **kw: kw)
            assert isinstance(needy.check(call), InvalidCall)
            checked += 1
            empty += not raw.strip()
    assert checked >= 40
    assert empty >= 2


def test_raw_schemas_are_copied_at_registration() -> None:
    """Changing the caller's schema dict afterwards changes neither schema nor validation."""
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    tool = Toolbox().add("t", schema, lambda **kw: kw)
    schema["properties"]["a"]["type"] = "string"
    assert tool.parameters["properties"]["a"] == {"type": "integer"}
    assert tool.validate({"a": 1}) == {"a": 1}


def test_callables_without_a_name_need_one() -> None:
    """A callable without ``__name__`` (a partial) must be registered with ``name=``."""
    import functools

    def add(a: int, b: int) -> int:
        return a + b

    tools = Toolbox()
    with pytest.raises(ToolDefinitionError, match="name="):
        tools.tool(functools.partial(add, b=1))
    tools.tool(name="inc")(functools.partial(add, b=1))
    tool = tools.get("inc")
    assert tool is not None
    assert tool.invoke(tool.validate({"a": 1}), _ctx()) == 2


def test_deeply_nested_or_non_json_arguments_are_arguments_invalid() -> None:
    """Absurd nesting and Python-only values give ArgumentsInvalid from validate and invoke."""
    tools = _toolbox()
    tool = tools.add("free", {"type": "object"}, lambda **kw: kw)
    deep: Any = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(ArgumentsInvalid, match="nested too deeply"):
        tool.validate({"a": deep})
    with pytest.raises(ArgumentsInvalid):
        tool.invoke({"a": {1, 2}}, _ctx())
    transfer = tools.get("transfer")
    assert transfer is not None
    with pytest.raises(ArgumentsInvalid):
        transfer.invoke({"amount": float("nan"), "to": "x"}, _ctx())


def test_parsed_arguments_win_over_empty_raw_text() -> None:
    """Empty raw text with parsed arguments (whole-call formats) uses the arguments."""
    result = _toolbox().check(_call("transfer", {"amount": 1, "to": "x"}, raw=""))
    assert isinstance(result, ValidCall) and result.arguments == {"amount": 1, "to": "x"}


def test_callable_objects_are_typed_tools() -> None:
    """An object with an annotated ``__call__`` registers from that method's hints."""

    class Multiply:
        """Multiply by a factor."""

        def __call__(self, x: int) -> int:
            return 3 * x

    tools = Toolbox()
    tools.tool(name="triple")(Multiply())
    tool = tools.get("triple")
    assert tool is not None
    assert tool.parameters["properties"] == {"x": {"type": "integer"}}
    assert tool.invoke(tool.validate({"x": 2}), _ctx()) == 6


def test_local_types_resolve_under_postponed_annotations() -> None:
    """Types defined inside a function resolve although annotations are strings."""

    class Local(BaseModel):
        """Defined in this function only."""

        n: int

    tools = Toolbox()

    @tools.tool
    def direct(item: Local) -> int:
        """Direct decoration."""
        return item.n

    @tools.tool(name="called")
    def with_options(item: Local) -> int:
        """Decoration with options."""
        return item.n + 1

    for name, expected in (("direct", 2), ("called", 3)):
        tool = tools.get(name)
        assert tool is not None
        assert tool.invoke(tool.validate({"item": {"n": 2}}), _ctx()) == expected


def test_tool_context_lives_in_a_leaf_module_without_an_import_cycle() -> None:
    """``_context`` imports nothing from toolwire; ``_schema`` loads without ``_toolbox``."""
    import subprocess
    import sys

    code = (
        "import sys, toolwire._tools.schema, toolwire._tools.context as c; "
        "assert 'toolwire._tools.toolbox' not in sys.modules, 'cycle'; "
        "import ast, inspect; tree = ast.parse(inspect.getsource(c)); "
        "assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert ToolContext.__module__ == "toolwire._tools.context"
