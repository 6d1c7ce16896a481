"""Custom tools (OpenAI Responses): free-form text input with an optional grammar, their
definitions, the input previewed as text while it streams, and a run through the real
openai client and the simulator."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from adapter_support import assemble_bytes, assemble_every_way, sse_body
from drivers_support import splits
from responses_support import CUSTOM, CUSTOM_DELTAS, response_events, sse
from simulator_support import Clients
from toolwire.testing import Simulator

GRAMMAR = {"syntax": "lark", "definition": 'start: "echo " WORD\n%import common.WORD'}


def _tools(seen: list[str] | None = None) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    def shell(text: str) -> str:
        if seen is not None:
            seen.append(text)
        return f"ran {text}"

    tools.custom("shell", shell, description="Run a shell line.", grammar=GRAMMAR)
    return tools


def test_definitions_write_the_custom_shape_with_its_format() -> None:
    """A custom tool is ``{"type": "custom", "name", "description", "format"}``, a grammar
    as ``{"type": "grammar", "syntax", "definition"}``, plain text as ``{"type": "text"}``."""
    tools = _tools()
    tools.custom("note", lambda text: text)
    assert tools.definitions("openai-responses") == [
        {"type": "custom", "name": "shell", "description": "Run a shell line.",
         "format": {"type": "grammar", **GRAMMAR}},
        {"type": "custom", "name": "note", "description": "", "format": {"type": "text"}},
    ]  # fmt: skip


def test_custom_tools_elsewhere_and_bad_grammars_are_refused() -> None:
    """Another format has no custom tools; a grammar without syntax or definition is a
    ToolDefinitionError."""
    with pytest.raises(toolwire.ToolDefinitionError, match="only in openai-responses"):
        _tools().definitions("openai-chat")
    for bad in ({"syntax": "peg", "definition": "x"}, {"syntax": "regex"}, "start: x"):
        with pytest.raises(toolwire.ToolDefinitionError, match="grammar"):
            toolwire.Toolbox().custom("x", lambda text: text, grammar=bad)  # type: ignore[arg-type]


def _previews(events: list[Any]) -> list[Any]:
    return [e.preview for e in events if isinstance(e, toolwire.ToolCallArguments)]


def test_the_input_is_previewed_as_text_while_it_streams() -> None:
    """Each argument event's preview is the input text so far (never its JSON escape),
    whole and byte by byte."""
    response, events = assemble_every_way(response_events([CUSTOM], CUSTOM_DELTAS))
    previews = _previews(events)
    assert previews and all(isinstance(p, str) and CUSTOM["input"].startswith(p) for p in previews)
    assert previews[-1] == CUSTOM["input"]
    assert _tools().check(response.tool_calls[0]).arguments == CUSTOM["input"]  # type: ignore[union-attr]


@given(st.lists(st.integers(0, 3000), max_size=12))
def test_the_preview_is_text_at_any_split(cuts: list[int]) -> None:
    """At Hypothesis-chosen splits the previews are prefixes of the input text and the
    call is of kind ``custom_tool_call``."""
    body = sse_body(response_events([CUSTOM], CUSTOM_DELTAS))
    response, events = assemble_bytes(splits(body, cuts))
    assert all(CUSTOM["input"].startswith(p) for p in _previews(events))
    assert response.tool_calls[0].arguments == CUSTOM["input"]
    assert response.tool_calls[0].kind == "custom_tool_call"


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=9) as simulator:
        yield simulator


def test_a_custom_tool_runs_with_its_text_through_the_real_client(
    sim: Simulator, tmp_path: Path
) -> None:
    """The custom tool gets the input text, its result is a custom_tool_call_output, and
    the next request (tools= the custom definition) is accepted."""
    path = tmp_path / "custom.sse"
    path.write_bytes(sse(response_events([CUSTOM], CUSTOM_DELTAS)))
    sim.add_recording(path)
    sim.add_response(text="Done.")
    seen: list[str] = []
    tools = _tools(seen)
    clients = Clients(sim)
    try:
        executor = toolwire.Executor(tools, scope="custom-tools")
        messages: list[Any] = [{"role": "user", "content": "say hi"}]

        def request() -> Any:
            return clients.openai.responses.create(
                model="m", input=messages, tools=tools.definitions("openai-responses"),
                stream=True,
            )  # fmt: skip

        turn = toolwire.run_turn(request(), tools, executor=executor)
        assert seen == [CUSTOM["input"]]
        answer = [m for m in turn.messages if m.get("type") == "custom_tool_call_output"]
        assert answer == [
            {"type": "custom_tool_call_output", "call_id": "call_c", "output": 'ran echo "hi"'}
        ]
        messages += turn.messages
        last = toolwire.run_turn(request(), tools, executor=executor)
        assert [r.error for r in sim.requests if r.served == "refused"] == []
        assert last.done
    finally:
        clients.close()
