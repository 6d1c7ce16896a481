"""Deep arguments end to end: streamed, validated, keyed, run and replayed through
``run_turn`` and the executor at every depth the call's parser reads (1,000 containers)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import toolwire

PARSER_DEPTH = 1000
TREE = {
    "type": "object",
    "properties": {"tree": {"$ref": "#/$defs/T"}},
    "required": ["tree"],
    "$defs": {
        "T": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/T"}}]}
    },
}


class Chain(BaseModel):
    """A recursive model."""

    child: Chain | None = None


def _toolbox() -> toolwire.Toolbox:
    tools = toolwire.Toolbox()
    tools.add("tree", TREE, lambda tree: _depth(tree))
    tools.add("free", {"type": "object"}, lambda **kw: _depth(kw["tree"]))

    @tools.tool
    def walk(chain: Chain) -> int:
        """Count the links."""
        count = 1
        while chain.child is not None:
            chain, count = chain.child, count + 1
        return count

    return tools


def _depth(value: Any) -> int:
    count = 0
    while isinstance(value, list):
        value, count = value[0], count + 1
    return count


def _lists(depth: int) -> str:
    """Arguments of ``depth`` nested containers: the object, then arrays around ``1``."""
    return '{"tree": ' + "[" * (depth - 1) + "1" + "]" * (depth - 1) + "}"


def _chunks(name: str, pieces: list[str]) -> list[dict[str, Any]]:
    """OpenAI chat chunks of one call to ``name`` whose arguments stream as ``pieces``."""
    head = {"id": "chatcmpl-deep", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    start = {"index": 0, "id": "call_1", "type": "function"}
    out = [
        {
            **head,
            "choices": [
                {
                    "index": 0,
                    "delta": {
                        "role": "assistant",
                        "tool_calls": [{**start, "function": {"name": name, "arguments": ""}}],
                    },
                }
            ],
        }
    ]
    out += [
        {
            **head,
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}
            ],
        }
        for p in pieces
    ]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    return [text[i:j] for i, j in itertools.pairwise(bounds)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["tree", "free"]),
    st.sampled_from([300, 999, PARSER_DEPTH]),
    st.lists(st.integers(0, 2000), max_size=20),
)
def test_raw_schema_arguments_run_and_replay_at_every_depth_the_parser_reads(
    name: str, depth: int, cuts: list[int]
) -> None:
    """Arguments as deep as the parser reads, streamed whole or at any splits, run once
    (their idempotency key canonicalises them) and replay on the same turn again."""
    tools = _toolbox()
    executor = toolwire.Executor(tools, store=toolwire.MemoryStore(), scope="deep")
    text = _lists(depth)
    for pieces, status in (([text], "completed"), (_pieces(text, cuts), "replayed")):
        turn = toolwire.run_turn(_chunks(name, pieces), tools, executor=executor)
        [outcome] = turn.outcomes
        assert (outcome.status, outcome.value) == (status, depth - 1), outcome.error


@pytest.mark.parametrize("name", ["tree", "free", "walk"])
def test_arguments_beyond_the_parsers_limit_are_a_rejected_call(name: str) -> None:
    """One container more than the parser reads is a rejected call that says so (the turn
    stops early and tells the model), never a ``RecursionError``."""
    tools = _toolbox()
    executor = toolwire.Executor(tools, scope="deep")
    text = _lists(PARSER_DEPTH + 1)
    turn = toolwire.run_turn(_chunks(name, [text]), tools, executor=executor)
    [outcome] = turn.outcomes
    assert outcome.status == "rejected"
    assert "containers nest deeper than max_depth=1000" in str(outcome.error)


def test_typed_arguments_deeper_than_pydantic_reads_are_a_rejected_call() -> None:
    """A typed tool takes arguments as deep as pydantic reads them (200 containers); deeper
    ones, up to the parser's limit, are its documented ``ArgumentsInvalid`` through the
    turn, never a crash."""
    tools = _toolbox()
    executor = toolwire.Executor(tools, scope="deep")
    for depth in (201, 999, PARSER_DEPTH):
        links = '{"chain": ' + '{"child": ' * (depth - 2) + "{}" + "}" * (depth - 1)
        turn = toolwire.run_turn(_chunks("walk", [links]), tools, executor=executor)
        [outcome] = turn.outcomes
        assert outcome.status == "rejected"
        assert "nested too deeply (more than 200 levels)" in str(outcome.error)
    shallow = '{"chain": ' + '{"child": ' * 198 + "{}" + "}" * 199
    turn = toolwire.run_turn(_chunks("walk", [shallow]), tools, executor=executor)
    assert [(o.status, o.value) for o in turn.outcomes] == [("completed", 199)]
