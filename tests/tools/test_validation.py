"""Validating the model's arguments: strict JSON types, extra arguments, optional nulls,
messages that name the field path, and the property that any JSON input either validates
or raises ``ArgumentsInvalid`` (never an internal error)."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from toolwire import Toolbox, ToolCall, ToolContext
from toolwire._tools.toolbox import ArgumentsInvalid, InvalidCall, ValidCall


class Item(BaseModel):
    """One order line."""

    sku: str
    qty: Annotated[int, Field(ge=1)]
    note: str | None = None
    gift: bool = False


def _tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def order(
        items: list[Item],
        price: float,
        count: int = 1,
        mode: Literal["fast", "cheap"] = "fast",
        maybe: int | None = 3,
        tags: dict[str, int] | None = None,
    ) -> None:
        """Place an order."""

    tools.add(
        "raw_order",
        {
            "type": "object",
            "properties": {
                "items": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {
                            "sku": {"type": "string"},
                            "qty": {"type": "integer", "minimum": 1},
                            "note": {"type": ["string", "null"]},
                            "gift": {"type": "boolean"},
                        },
                        "required": ["sku", "qty"],
                        "additionalProperties": False,
                    },
                },
                "price": {"type": "number"},
                "count": {"type": "integer"},
                "mode": {"enum": ["fast", "cheap"]},
                "maybe": {"type": ["integer", "null"]},
            },
            "required": ["items", "price"],
            "additionalProperties": False,
        },
        lambda **kw: kw,
    )
    return tools


TOOLS = _tools()
BOTH = ["order", "raw_order"]
GOOD = {"items": [{"sku": "a", "qty": 2}], "price": 9.5}


def _reason(tool: str, arguments: Any) -> str:
    result = TOOLS.check(
        ToolCall(
            id="c", name=tool, arguments=arguments, raw_arguments=json.dumps(arguments), index=0
        )
    )
    assert isinstance(result, InvalidCall), result
    return result.reason


@pytest.mark.parametrize("tool", BOTH)
@pytest.mark.parametrize(
    ("patch", "path"),
    [
        ({"price": "9.5"}, "price"),
        ({"price": True}, "price"),
        ({"count": "5"}, "count"),
        ({"count": 1.5}, "count"),
        ({"count": False}, "count"),
        ({"mode": "slow"}, "mode"),
        ({"items": {"sku": "a"}}, "items"),
        ({"items": [{"sku": "a", "qty": 0}]}, "items[0].qty"),
        ({"items": [{"sku": 1, "qty": 1}]}, "items[0].sku"),
        ({"items": [{"sku": "a", "qty": 1}, {"qty": 1}]}, "items[1].sku"),
        ({"items": [{"sku": "a", "qty": 1, "gift": "yes"}]}, "items[0].gift"),
        ({"maybe": "3"}, "maybe"),
    ],
)
def test_strict_types_are_enforced_and_the_path_is_named(
    tool: str, patch: dict[str, Any], path: str
) -> None:
    """No string-to-number, bool-to-int or float-to-int coercion; the message names the path."""
    reason = _reason(tool, {**GOOD, **patch})
    assert reason.startswith(f'Invalid arguments for tool "{tool}": at {path}: ')
    assert reason.endswith(f'Call "{tool}" again with corrected arguments.')


@pytest.mark.parametrize("tool", BOTH)
def test_integers_are_accepted_for_floats(tool: str) -> None:
    """An integer is a valid number for a float parameter."""
    result = TOOLS.get(tool).validate({**GOOD, "price": 10})  # type: ignore[union-attr]
    assert result["price"] == 10


@pytest.mark.parametrize("tool", BOTH)
def test_extra_arguments_are_rejected(tool: str) -> None:
    """An unknown argument is an error that lists the known parameters."""
    reason = _reason(tool, {**GOOD, "discount": 5})
    assert "at discount: unknown property (not allowed here)" in reason
    assert '"items", "price", "count", "mode", "maybe"' in reason


@pytest.mark.parametrize("tool", BOTH)
def test_missing_required_arguments_are_named(tool: str) -> None:
    """Each missing required argument is reported at its own path."""
    reason = _reason(tool, {})
    assert "at items: this required property is missing" in reason
    assert "at price: this required property is missing" in reason


@pytest.mark.parametrize("tool", BOTH)
def test_null_for_an_optional_non_nullable_argument_means_not_given(tool: str) -> None:
    """``null`` for an optional argument that cannot be null is dropped (strict-mode style)."""
    checked = TOOLS.get(tool)
    assert checked is not None
    with_nulls = checked.validate(
        {
            "items": [{"sku": "a", "qty": 2, "gift": None, "note": None}],
            "price": 9.5,
            "count": None,
            "mode": None,
            "maybe": None,
        }
    )
    without = checked.validate(
        {"items": [{"sku": "a", "qty": 2, "note": None}], "price": 9.5, "maybe": None}
    )
    assert with_nulls == without
    assert with_nulls["maybe"] is None  # nullable: null is a real value here


@pytest.mark.parametrize("tool", BOTH)
def test_null_for_a_required_argument_is_an_error(tool: str) -> None:
    """``null`` is never "absent" for a required argument."""
    assert "at price:" in _reason(tool, {**GOOD, "price": None})


@pytest.mark.parametrize("tool", BOTH)
@pytest.mark.parametrize("arguments", [[1, 2], "x", 5, None])
def test_arguments_must_be_an_object(tool: str, arguments: Any) -> None:
    """Arguments that are not a JSON object are an error at the top level."""
    reason = _reason(tool, arguments)
    assert "at the top level of the arguments: expected a JSON object" in reason


@pytest.mark.parametrize("tool", BOTH)
@pytest.mark.parametrize(
    "bad", [math.nan, math.inf, {1: "a"}, {"a": {1, 2}}, {"a": (1,)}, {"a": object()}]
)
def test_values_that_are_not_json_are_rejected_clearly(tool: str, bad: Any) -> None:
    """NaN, infinities, non-string keys and Python-only types raise ArgumentsInvalid."""
    checked = TOOLS.get(tool)
    assert checked is not None
    with pytest.raises(ArgumentsInvalid):
        checked.validate({**GOOD, "price": bad})


def test_typed_defaults_are_filled_and_raw_arguments_are_kept() -> None:
    """Typed tools return every parameter (defaults filled); raw tools what was sent."""
    typed = TOOLS.get("order")
    raw = TOOLS.get("raw_order")
    assert typed is not None and raw is not None
    assert typed.validate(GOOD) == {
        "items": [{"sku": "a", "qty": 2, "note": None, "gift": False}],
        "price": 9.5,
        "count": 1,
        "mode": "fast",
        "maybe": 3,
        "tags": None,
    }
    assert raw.validate(GOOD) == GOOD


def test_union_errors_read_as_one_sentence() -> None:
    """A value that fits no member of a union gets one "expected X or Y" message."""
    tools = Toolbox()

    @tools.tool
    def pick(choice: int | list[str]) -> None:
        """Pick."""

    with pytest.raises(ArgumentsInvalid) as info:
        tools.get("pick").validate({"choice": "x"})  # type: ignore[union-attr]
    assert str(info.value) == (
        'Invalid arguments for tool "pick": at choice: expected a valid integer or a valid '
        'array, got the string "x". Call "pick" again with corrected arguments.'
    )


def test_invoke_revalidates_what_it_is_given() -> None:
    """``invoke`` with arguments that do not fit raises ArgumentsInvalid, never TypeError."""
    tool = TOOLS.get("order")
    assert tool is not None
    ctx = ToolContext(idempotency_key="k", deadline=None, call_id="c", tool_name="o", scope="s")
    with pytest.raises(ArgumentsInvalid):
        tool.invoke({"items": "nope"}, ctx)
    with pytest.raises(ArgumentsInvalid):
        TOOLS.get("raw_order").invoke([1], ctx)  # type: ignore[union-attr]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda c: (
        st.lists(c, max_size=3)
        | st.dictionaries(
            st.sampled_from(["items", "price", "count", "mode", "maybe", "sku", "qty", "x"]),
            c,
            max_size=4,
        )
    ),
    max_leaves=15,
)


@settings(max_examples=300)
@given(arguments=_JSON, tool=st.sampled_from(BOTH))
def test_any_json_validates_or_raises_arguments_invalid(arguments: Any, tool: str) -> None:
    """For any JSON input, check() gives a ValidCall or an InvalidCall, never an exception."""
    result = TOOLS.check(
        ToolCall(
            id="c", name=tool, arguments=arguments, raw_arguments=json.dumps(arguments), index=0
        )
    )
    assert isinstance(result, (ValidCall, InvalidCall))
    if isinstance(result, InvalidCall):
        assert result.reason.startswith(f'Invalid arguments for tool "{tool}": at ')


_ITEM = st.fixed_dictionaries(
    {"sku": st.text(max_size=4), "qty": st.integers(1, 10**6)},
    optional={"note": st.none() | st.text(max_size=3), "gift": st.booleans()},
)
_VALID = st.fixed_dictionaries(
    {
        "items": st.lists(_ITEM, max_size=3),
        "price": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-100, 100),
    },
    optional={
        "count": st.integers(),
        "mode": st.sampled_from(["fast", "cheap"]),
        "maybe": st.none() | st.integers(),
    },
)


@given(arguments=_VALID, tool=st.sampled_from(BOTH))
def test_valid_arguments_validate_idempotently_into_plain_json(arguments: Any, tool: str):
    """Valid arguments pass; the result is plain JSON and validating it again changes nothing."""
    checked = TOOLS.get(tool)
    assert checked is not None
    once = checked.validate(arguments)
    assert json.loads(json.dumps(once)) == once
    assert checked.validate(once) == once


def test_patterns_only_pydantic_reads_still_validate() -> None:
    """A Field pattern Python's re cannot compile still registers and validates via pydantic."""
    tools = Toolbox()

    @tools.tool
    def greet(name: Annotated[str, Field(pattern=r"^\p{L}+$")], times: int = 1) -> None:
        """Greet."""

    tool = tools.get("greet")
    assert tool is not None
    assert tool.validate({"name": "Åsa"}) == {"name": "Åsa", "times": 1}
    with pytest.raises(ArgumentsInvalid, match="at name: string should match pattern"):
        tool.validate({"name": "x1"})


def _nested_lists(depth: int, leaf: Any = 1) -> Any:
    """``depth`` nested arrays around ``leaf`` (built without recursion)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


_TREE_SCHEMA = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/T"}},
    "required": ["tree"],
    "additionalProperties": False,
    "$defs": {
        "T": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/T"}}]}
    },
}


@pytest.mark.parametrize("leaf", [1, "x"])
def test_raw_tools_judge_arguments_at_the_parsers_depth_limit(leaf: Any) -> None:
    """1,000 levels (the parser's limit, the arguments object included) validate or get a
    typed error; nothing deeper than the limit reaches the engine."""
    tools = Toolbox()
    tool = tools.add("tree", _TREE_SCHEMA, lambda tree: tree)
    arguments = {"tree": _nested_lists(999, leaf)}
    if leaf == 1:
        assert tool.invoke(tool.validate(arguments), _ctx()) == arguments["tree"]
    else:
        with pytest.raises(ArgumentsInvalid, match="too deep for a detailed report"):
            tool.validate(arguments)
    with pytest.raises(ArgumentsInvalid, match=r"nested too deeply \(more than 1000 levels\)"):
        tool.validate({"tree": _nested_lists(1000, leaf)})


def test_raw_tool_messages_stay_precise_below_deep_values() -> None:
    """A shallow mistake beside a deep (valid) value is still reported at its path."""
    tools = Toolbox()
    tool = tools.add(
        "t",
        {"type": "object", "properties": {"a": {}, "b": {"type": "integer"}}},
        lambda **kw: kw,
    )
    with pytest.raises(ArgumentsInvalid, match='at b: expected an integer, got the string "1"'):
        tool.validate({"a": _nested_lists(900), "b": "1"})


def _ctx() -> ToolContext:
    return ToolContext(idempotency_key="k", deadline=None, call_id="c", tool_name="t", scope="s")


class Tree(BaseModel):
    """A recursive model."""

    kids: list[Tree] = []


def test_typed_tools_judge_deep_arguments_with_a_typed_error() -> None:
    """Typed tools validate to pydantic's JSON depth (200) and give ArgumentsInvalid beyond,
    up to and past the parser's 1,000 levels; never a RecursionError."""
    tools = Toolbox()

    @tools.tool
    def grow(tree: Tree, blob: Any = None) -> int:
        """Grow a tree."""
        return len(tree.kids)

    tool = tools.get("grow")
    assert tool is not None
    tree: dict[str, Any] = {"kids": []}
    for _ in range(98):  # 99 levels of 2 containers: 199 with the arguments object
        tree = {"kids": [tree]}
    assert tool.invoke(tool.validate({"tree": tree}), _ctx()) == 1
    for depth in (200, 999, 1000, 5000):
        with pytest.raises(ArgumentsInvalid, match="nested too deeply"):
            tool.validate({"tree": {"kids": []}, "blob": _nested_lists(depth)})
