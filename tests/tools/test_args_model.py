"""A pydantic model as a tool's whole argument schema (``Toolbox.add_model`` and
``@tools.tool(args_model=True)``): the model's fields are the parameters in every provider
format, validation is strict and closed at the top, and the function receives the model
instance built once at check time."""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, model_validator

from toolwire import (
    ArgumentsInvalid,
    Executor,
    MemoryStore,
    Response,
    Toolbox,
    ToolCall,
    ToolContext,
    ToolDefinitionError,
)
from toolwire._providers import FORMATS
from toolwire._tools.toolbox import InvalidCall, ValidCall


class Address(BaseModel):
    """A postal address."""

    city: str
    zip: str | None = None


class NewUser(BaseModel):
    """A user to create."""

    name: Annotated[str, Field(description="full name", min_length=1)]
    age: int
    role: Literal["admin", "member"] = "member"
    address: Address | None = None


def _ctx() -> ToolContext:
    return ToolContext(idempotency_key="k", deadline=None, call_id="c", tool_name="t", scope="s")


def _call(name: str, arguments: Any) -> ToolCall:
    return ToolCall(
        id="c1", name=name, arguments=arguments, raw_arguments=json.dumps(arguments), index=0
    )


def _toolbox(received: list[Any]) -> Toolbox:
    tools = Toolbox()

    def create_user(user: NewUser, ctx: ToolContext) -> str:
        """Create a user account."""
        received.append((user, ctx))
        return user.name

    tools.add_model(NewUser, create_user)

    @tools.tool(args_model=True, name="invite")
    def invite_user(user: NewUser) -> str:
        received.append((user, None))
        return user.name

    @tools.tool
    def nested(user: NewUser) -> str:
        """Keeps today's nesting."""
        return user.name

    return tools


def _parameters(definition: dict[str, Any], fmt: str) -> dict[str, Any]:
    """The parameters schema inside one provider's tool definition."""
    if fmt in ("openai-chat", "ollama", "cohere"):
        return definition["function"]["parameters"]  # type: ignore[no-any-return]
    if fmt == "anthropic":
        return definition["input_schema"]  # type: ignore[no-any-return]
    if fmt == "bedrock-converse":
        return definition["toolSpec"]["inputSchema"]["json"]  # type: ignore[no-any-return]
    return definition["parameters"]  # type: ignore[no-any-return]


def test_the_models_fields_are_the_parameters() -> None:
    """The schema is the model's: its fields at the top level, closed, no title."""
    tools = _toolbox([])
    for name in ("create_user", "invite"):
        tool = tools.get(name)
        assert tool is not None
        assert list(tool.parameters["properties"]) == ["name", "age", "role", "address"]
        assert tool.parameters["required"] == ["name", "age"]
        assert tool.parameters["additionalProperties"] is False
        assert "title" not in tool.parameters and "description" not in tool.parameters
        assert tool.parameters["properties"]["name"]["description"] == "full name"
        assert tool.required == ("name", "age")
    assert tools.get("create_user").description == "Create a user account."  # type: ignore[union-attr]
    assert tools.get("invite").description == "A user to create."  # type: ignore[union-attr]
    assert list(tools.get("nested").parameters["properties"]) == ["user"]  # type: ignore[union-attr]


@pytest.mark.parametrize("fmt", FORMATS.names())
def test_every_format_shows_the_fields_at_the_top_level(fmt: str) -> None:
    """Each provider's definition lists the model's fields as the tool's parameters."""
    definitions = {d_name: d for d_name, d in _named(_toolbox([]).definitions(fmt), fmt)}
    for name in ("create_user", "invite"):
        params = _parameters(definitions[name], fmt)
        assert set(params["properties"]) == {"name", "age", "role", "address"}


def test_strict_definitions_keep_the_fields_at_the_top_level() -> None:
    """OpenAI strict mode: every field required, optional ones nullable, still top level."""
    (definition,) = [
        d
        for d in _toolbox([]).definitions("openai-chat", strict=True)
        if d["function"]["name"] == "create_user"
    ]
    params = definition["function"]["parameters"]
    assert params["required"] == ["name", "age", "role", "address"]
    assert params["additionalProperties"] is False


def _named(definitions: list[dict[str, Any]], fmt: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    if fmt == "gemini":
        definitions = [d for tool in definitions for d in tool["functionDeclarations"]]
    for d in definitions:
        if "function" in d:
            out.append((d["function"]["name"], d))
        elif "toolSpec" in d:
            out.append((d["toolSpec"]["name"], d))
        else:
            out.append((d["name"], d))
    return out


def test_check_then_invoke_passes_the_model_instance() -> None:
    """The function gets a ``NewUser`` (and the context where declared), built at check."""
    received: list[Any] = []
    tools = _toolbox(received)
    for name in ("create_user", "invite"):
        checked = tools.check(_call(name, {"name": "Ann", "age": 31, "address": {"city": "Oslo"}}))
        assert isinstance(checked, ValidCall)
        assert checked.arguments == {
            "name": "Ann",
            "age": 31,
            "role": "member",
            "address": {"city": "Oslo", "zip": None},
        }
        ctx = _ctx()
        assert checked.tool.invoke(checked.arguments, ctx) == "Ann"
        user, got_ctx = received[-1]
        assert type(user) is NewUser and user.address == Address(city="Oslo")
        assert got_ctx is (ctx if name == "create_user" else None)


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"name": "Ann", "age": "31"}, "at age: expected a valid integer"),
        ({"name": "Ann"}, "at age: this required property is missing"),
        ({"name": "", "age": 1}, "at name: string should have at least 1 character"),
        ({"name": "Ann", "age": 1, "nick": "a"}, "at nick: unknown property (not allowed here)"),
        ({"name": "Ann", "age": 1, "role": "root"}, "at role: expected 'admin' or 'member'"),
        ({"name": "Ann", "age": 1, "address": {"zip": "1"}}, "at address.city: this required"),
    ],
)
def test_invalid_arguments_get_messages_for_the_model(arguments: Any, fragment: str) -> None:
    """Strict types, required and unknown fields are reported at their paths."""
    result = _toolbox([]).check(_call("create_user", arguments))
    assert isinstance(result, InvalidCall)
    assert fragment in result.reason, result.reason
    assert result.reason.startswith('Invalid arguments for tool "create_user": at ')


def test_unknown_arguments_list_the_fields() -> None:
    """An unknown argument's message names the model's fields."""
    with pytest.raises(ArgumentsInvalid) as info:
        _toolbox([]).get("create_user").validate({"name": "A", "age": 1, "x": 1})  # type: ignore[union-attr]
    assert '"name", "age", "role", "address"' in str(info.value)


def test_a_model_that_allows_extra_keeps_it() -> None:
    """``extra="allow"`` is the model's own choice: extra arguments reach the instance."""

    class Open(BaseModel):
        model_config = ConfigDict(extra="allow")
        a: int

    tools = Toolbox()
    tool = tools.add_model(Open, lambda m: m.model_extra, name="open")
    assert tool.parameters.get("additionalProperties", True) is True
    args = tool.validate({"a": 1, "b": 2})
    assert tool.invoke(args, _ctx()) == {"b": 2}


def test_optional_nulls_mean_not_given() -> None:
    """``null`` for an optional field that cannot be null is dropped, as for typed tools."""
    tool = _toolbox([]).get("create_user")
    assert tool is not None
    assert tool.validate({"name": "A", "age": 1, "role": None}) == tool.validate(
        {"name": "A", "age": 1}
    )


def _bad_functions() -> list[Any]:
    def two(a: NewUser, b: int) -> None: ...

    def not_a_model(a: int) -> None: ...

    def defaulted(a: NewUser = NewUser(name="x", age=1)) -> None: ...  # noqa: B008

    def none() -> None: ...

    return [two, not_a_model, defaulted, none]


@pytest.mark.parametrize("fn", _bad_functions(), ids=lambda f: f.__name__)
def test_args_model_needs_one_model_parameter(fn: Any) -> None:
    """``args_model=True`` on anything but one model parameter is a ToolDefinitionError."""
    tools = Toolbox()
    with pytest.raises(ToolDefinitionError, match=fn.__name__):
        tools.tool(args_model=True)(fn)
    assert len(tools) == 0


@pytest.mark.parametrize("model", [dict, int, NewUser(name="x", age=1), "NewUser"])
def test_add_model_needs_a_model_class(model: Any) -> None:
    """``add_model`` with anything but a BaseModel subclass is a ToolDefinitionError."""
    with pytest.raises(ToolDefinitionError):
        Toolbox().add_model(model, lambda m: m, name="t")


class Counted(BaseModel):
    """Counts how often it is validated."""

    n: int
    runs: int = 0

    @model_validator(mode="after")
    def _count(self) -> Counted:
        VALIDATIONS.append(self.n)
        return self


VALIDATIONS: list[int] = []


def test_a_checked_call_is_validated_once() -> None:
    """ValidCall.invoke() and Executor.run() run on the model check() built; Tool.invoke()
    given the (plain dict) arguments validates them again."""
    tools = Toolbox()

    @tools.tool
    def nested(item: Counted) -> int:
        return item.n

    tools.add_model(Counted, lambda c: c.n, name="whole")
    for name, arguments in (("nested", {"item": {"n": 4}}), ("whole", {"n": 4})):
        VALIDATIONS.clear()
        checked = tools.check(_call(name, arguments))
        assert isinstance(checked, ValidCall)
        assert type(checked.arguments) is dict
        assert checked.invoke(_ctx()) == 4
        assert VALIDATIONS == [4], name
        assert checked.tool.invoke(checked.arguments, _ctx()) == 4
        assert VALIDATIONS == [4, 4], name
        VALIDATIONS.clear()
        response = Response(
            text="",
            reasoning="",
            tool_calls=[_call(name, arguments)],
            rejected=[],
            finish_reason="tool_calls",
            raw_finish_reason="tool_calls",
            usage=None,
            response_id=f"resp_{name}",
            model="m",
        )
        [outcome] = Executor(tools, store=MemoryStore(), scope="s").run(response)
        assert (outcome.status, outcome.value) == ("completed", 4)
        assert VALIDATIONS == [4], name


@given(
    name=st.text(min_size=1, max_size=8),
    age=st.integers(-(10**6), 10**6),
    role=st.sampled_from(["admin", "member"]),
    city=st.none() | st.text(max_size=5),
)
def test_valid_fields_round_trip_into_the_model(
    name: str, age: int, role: str, city: str | None
) -> None:
    """Any valid field values reach the function as the model pydantic itself would build."""
    received: list[Any] = []
    tool = _toolbox(received).get("create_user")
    assert tool is not None
    arguments: dict[str, Any] = {"name": name, "age": age, "role": role}
    if city is not None:
        arguments["address"] = {"city": city}
    tool.invoke(tool.validate(arguments), _ctx())
    assert received[-1][0] == NewUser.model_validate(arguments)
