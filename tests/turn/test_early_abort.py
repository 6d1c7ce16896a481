"""Early abort's judge, sans-IO: it stops a call exactly when the final validation would
refuse it (never a call that would have run), as early as the schema allows, and the
continuation answers every call the assistant turn repeats."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire import InvalidCall, StreamAssembler, Toolbox
from toolwire._core.response import ContentPart, Partial, PartialCall
from toolwire._providers._messages import turn_messages
from toolwire._turn.early_abort import STOPPED_EARLY, AbortWatch, _walk, continuation

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 5},
        "count": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "point": {"$ref": "#/$defs/Point"},
        "either": {"anyOf": [{"type": "string"}, {"properties": {"x": {"type": "integer"}}}]},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]},
        "opt": {"type": "string"},
    },
    "required": ["name"],
    "additionalProperties": False,
    "$defs": {
        "Point": {
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "y": {"type": "number"},
                "z": {"type": "string"},
            },
            "required": ["x"],
        }
    },
}


def _toolbox() -> Toolbox:
    tools = Toolbox()
    tools.add("raw", SCHEMA, lambda **kwargs: None, description="A raw-schema tool.")

    @tools.tool
    def typed(
        name: str, count: int = 0, tags: list[str] | None = None, opt: str | None = None
    ) -> None:
        """A typed tool."""

    return tools


TOOLS = _toolbox()

_scalars = (
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2) | st.text("ab", max_size=7)
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["x", "y", "z", "w"]), inner, max_size=3)
    ),
    max_leaves=8,
)
_fields = st.sampled_from(["name", "count", "tags", "point", "either", "pair", "opt", "extra"])
arguments = st.dictionaries(_fields, _values, max_size=5)


def _chunks(name: str, text: str, cuts: list[int]) -> list[dict[str, Any]]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    pieces = [text[a:b] for a, b in itertools.pairwise(points) if b > a]
    out = []
    for i, piece in enumerate(pieces):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": piece}}
        if i == 0:
            call = {"index": 0, "id": "call_1", "function": {"name": name, "arguments": piece}}
        out.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def _judge(name: str, args: dict[str, Any], cuts: list[int]) -> tuple[Any, Any, int]:
    """The verdict, the final check, and how many characters had arrived at the verdict."""
    asm = StreamAssembler(format="openai-chat")
    watch = AbortWatch(TOOLS)
    verdict, seen, at = None, 0, 0
    for chunk in _chunks(name, json.dumps(args), cuts):
        for event in asm.feed(chunk):
            if isinstance(event, toolwire.ToolCallArguments):
                seen += len(event.delta)
            if verdict is None and watch.see(event) is not None:
                verdict, at = watch.verdict, seen
    response = asm.close()
    return verdict, TOOLS.check(response.tool_calls[0]), at


@pytest.mark.parametrize("name", ["raw", "typed"])
@given(args=arguments, cuts=st.lists(st.integers(0, 10**4), max_size=10))
def test_a_call_is_stopped_exactly_when_it_could_never_run(
    name: str, args: dict[str, Any], cuts: list[int]
) -> None:
    """Whatever the arguments and their split: a verdict means the final validation
    refuses the call (never a call that would have run), and every call it refuses gets
    one, at the latest when its arguments complete."""
    verdict, check, _ = _judge(name, args, cuts)
    assert (verdict is not None) == isinstance(check, InvalidCall), (verdict, check)


@pytest.mark.parametrize(
    ("args", "path"),
    [
        ({"count": "7", "name": "abc"}, ("count",)),
        ({"tags": ["a", 5, "c"], "name": "abc"}, ("tags", 1)),
        ({"point": {"x": "far", "y": 2}, "name": "abc"}, ("point", "x")),
        ({"pair": [1, 2], "name": "abc"}, ("pair", 1)),
        ({"extra": 1, "name": "abc"}, ("extra",)),
        ({"name": "much too long", "count": 1}, ("name",)),
    ],
)
def test_a_raw_tool_is_stopped_at_the_first_value_that_breaks_its_schema(
    args: dict[str, Any], path: tuple[Any, ...]
) -> None:
    """Through properties, items, prefixItems, $ref and additionalProperties: the verdict
    names the path and comes before the rest of the arguments arrived."""
    text = json.dumps(args)
    verdict, _, at = _judge("raw", args, list(range(0, len(text), 3)))
    assert verdict is not None and verdict.path == path
    assert at < len(text)
    if path == ("extra",):
        assert "unknown property" in verdict.reason and '"name", "count"' in verdict.reason


def test_values_under_a_conditional_or_null_wait() -> None:
    """A value inside an anyOf branch is judged with the whole anyOf value, and a null
    only with the whole arguments."""
    cases = [({"either": {"x": "no"}, "name": "abc"}, ("either",)), ({"name": None}, ())]
    for args, path in cases:
        text = json.dumps(args)
        verdict, check, _ = _judge("raw", args, list(range(0, len(text), 2)))
        assert isinstance(check, InvalidCall) and verdict is not None and verdict.path == path


def test_typed_tools_are_judged_early_on_top_level_fields_only() -> None:
    """A typed tool's top-level field is judged against pydantic's schema as it completes;
    a nested value waits for pydantic, the final judge."""
    text = json.dumps({"count": "7", "name": "abc"})
    verdict, _, at = _judge("typed", {"count": "7", "name": "abc"}, list(range(0, len(text), 2)))
    assert verdict is not None and verdict.path == ("count",) and at < len(text)
    verdict, _, _ = _judge("typed", {"tags": ["a", 5], "name": "abc"}, [4, 9, 13])
    assert verdict is not None and verdict.path in (("tags",), ())


def test_the_walk_follows_only_applicators_that_always_apply() -> None:
    """Pointers through properties, $ref, items; none through anyOf or patternProperties."""
    assert _walk(SCHEMA, ("point", "x")) == ("$defs", "Point", "properties", "x")
    assert _walk(SCHEMA, ("tags", 4)) == ("properties", "tags", "items")
    assert _walk(SCHEMA, ("pair", 0)) == ("properties", "pair", "prefixItems", "0")
    assert _walk(SCHEMA, ("pair", 2)) is None
    assert _walk(SCHEMA, ("either", "x")) is None
    assert _walk(SCHEMA, ("either",)) == ("properties", "either")  # judged whole
    assert _walk({"patternProperties": {"^a": {}}, "additionalProperties": False}, ("b",)) is None
    assert _walk({"$ref": "https://example.com/s.json"}, ("a",)) is None


def _partial_call(index: int, name: str, raw: str, *, ended: bool = False) -> PartialCall:
    return PartialCall(id=f"call_{index}", name=name, raw_arguments=raw, index=index, ended=ended)


def test_the_continuation_answers_every_call_it_repeats() -> None:
    """Complete calls are repeated (skipped, or rejected with their reason), unfinished
    ones dropped, the offending one answered with the reason and the stop; the messages
    pass the answer check in every format."""
    partial = Partial(
        text="On it.",
        reasoning="",
        calls=[
            _partial_call(0, "typed", '{"name": "ok"}'),
            _partial_call(1, "typed", '{"name": 5}'),
            _partial_call(2, "raw", '{"name": "abc", "count": "7"'),
            _partial_call(3, "typed", '{"name": "half'),
            _partial_call(4, "", ""),
        ],
        usage=None,
        raw_finish_reason=None,
        response_id="r1",
        model="m",
        format="openai-chat",
        parts=[
            ContentPart(kind="text", text="On it."),
            *(ContentPart(kind="call", call=i) for i in range(5)),
        ],
    )
    verdict = AbortWatch(TOOLS)
    abort = toolwire.EarlyAbort(
        kind="invalid_arguments", reason="Invalid count.", call_id="call_2", name="raw", index=2,
        path=("count",), partial=partial,
    )  # fmt: skip
    response, outcomes = continuation(partial, abort, TOOLS)
    assert verdict.verdict is None
    assert [(o.call_id, o.status) for o in outcomes] == [
        ("call_0", "skipped"), ("call_1", "rejected"), ("call_2", "rejected"),
    ]  # fmt: skip
    assert outcomes[2].error is not None and outcomes[2].error.startswith(
        f"Invalid count. {STOPPED_EARLY}"
    )
    assert "were dropped" in outcomes[2].error
    assert [c.index for c in response.rejected] == [2]  # its arguments were cut
    assert response.rejected[0].raw_arguments == '{"name": "abc", "count": "7"'
    for fmt in ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse",
                "ollama", "cohere"):  # fmt: skip
        assert turn_messages(response, outcomes, fmt)


@given(cuts=st.lists(st.integers(0, 10**4), max_size=10))
def test_a_repeated_key_stops_the_call_at_that_key(cuts: list[int]) -> None:
    """A key given twice is judged by the fragment that finishes it, whatever the split:
    ``duplicate_key`` with the key's path and offset, and a reason that names it."""
    raw = '{"name": "a", "count": 1, "name": "b", "tags": ["' + "x" * 300 + '"]}'
    second = raw.rindex('"name"')
    closing = second + len('"name"') - 1  # the character that finishes the repeated key
    asm = StreamAssembler(format="openai-chat")
    watch = AbortWatch(TOOLS)
    fed = 0
    for chunk in _chunks("typed", raw, cuts)[:-1]:
        before = fed
        fed += len(chunk["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"])
        for event in asm.feed(chunk):
            watch.see(event)
        if watch.verdict is not None:
            break
    verdict = watch.verdict
    assert verdict is not None and before <= closing < fed
    assert (verdict.kind, verdict.path, verdict.offset) == ("duplicate_key", ("name",), second)
    assert 'give the key "name" more than once' in verdict.reason


def test_the_continuation_sends_a_repeated_key_back_as_it_arrived() -> None:
    """An offending call whose complete arguments repeat a key is repeated as a rejected
    call with its raw text, not as the object ``json.loads`` would make of it."""
    raw = '{"name": "a", "name": "b"}'
    partial = Partial(
        text="", reasoning="", calls=[_partial_call(0, "typed", raw, ended=True)], usage=None,
        raw_finish_reason=None, response_id="r1", model="m", format="openai-chat",
        parts=[ContentPart(kind="call", call=0)],
    )  # fmt: skip
    abort = toolwire.EarlyAbort(
        kind="duplicate_key", reason="Repeated.", call_id="call_0", name="typed", index=0,
        path=("name",), offset=14, partial=partial,
    )  # fmt: skip
    response, outcomes = continuation(partial, abort, TOOLS)
    assert response.tool_calls == []
    assert [c.raw_arguments for c in response.rejected] == [raw]
    assert [o.status for o in outcomes] == ["rejected"]


@pytest.mark.parametrize(
    ("raw", "ended", "expected"),
    [
        ('"echo \\"hi\\"\\nls"', True, 'echo "hi"\nls'),
        ('"echo \\"hi\\"\\nl', False, 'echo "hi"\nl'),
        ('"caf\\u00e', False, "caf"),
    ],
)
def test_the_continuation_echoes_custom_tool_input_as_text(
    raw: str, ended: bool, expected: str
) -> None:
    """A Responses custom tool call, beside or as the offending call, is repeated with its
    input text as it arrived, never the JSON escape its deltas were assembled in."""
    meta = {"type": "custom_tool_call", "item_id": "ct_0"}
    custom = PartialCall(
        id="call_0", name="shell", raw_arguments=raw, index=0, ended=ended, metadata=meta
    )
    other = _partial_call(1, "nope", '{"x": 1}', ended=True)
    for offending in (0, 1):
        partial = Partial(
            text="", reasoning="", calls=[custom, other], usage=None, raw_finish_reason=None,
            response_id="r1", model="m", format="openai-responses",
            parts=[ContentPart(kind="call", call=0), ContentPart(kind="call", call=1)],
        )  # fmt: skip
        abort = toolwire.EarlyAbort(
            kind="unknown_tool", reason="Unknown.", call_id=f"call_{offending}",
            name="x", index=offending, partial=partial,
        )  # fmt: skip
        response, outcomes = continuation(partial, abort, TOOLS)
        items = turn_messages(response, outcomes, "openai-responses")
        custom_items = [i for i in items if i.get("type") == "custom_tool_call"]
        if offending == 1 and not ended:
            assert custom_items == []  # an unfinished call beside the offending one is dropped
            continue
        assert [i["input"] for i in custom_items] == [expected]
        answered = {i["call_id"] for i in items if i.get("type", "").endswith("_output")}
        assert {i["call_id"] for i in items if "call_id" in i and "output" not in i} <= answered
