"""Scenarios with provider-run tools and paused turns (Anthropic): served through the real
anthropic client, read by toolwire, and the echo accepted by the request check."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

import toolwire
from toolwire import UsageError
from toolwire.testing import Simulator

SEARCH = {
    "name": "web_search",
    "input": {"query": "Lyon weather"},
    "result": [{"type": "web_search_result", "url": "https://m.example/lyon", "title": "Lyon"}],
}


def _tools() -> toolwire.Toolbox:
    box = toolwire.Toolbox()

    @box.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    return box


def _loop(sim: Simulator, turns: int) -> tuple[list[dict[str, Any]], list[toolwire.Turn]]:
    """The README's loop through the real anthropic client, at most ``turns`` turns."""
    client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
    tools = _tools()
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lyon?"}]
    seen: list[toolwire.Turn] = []
    with toolwire.MemoryStore() as store:
        executor = toolwire.Executor(tools, store=store, scope="server-tools")
        for _ in range(turns):
            stream = client.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=512,
                messages=messages,  # type: ignore[arg-type]
                tools=tools.definitions("anthropic"),  # type: ignore[arg-type]
                stream=True,
            )
            turn = toolwire.run_turn(stream, tools, executor=executor)
            seen.append(turn)
            messages += turn.messages
            if turn.done:
                break
    client.close()
    return messages, seen


def test_a_server_tool_beside_a_client_call_is_echoed_and_never_run() -> None:
    """web_search and its result come back in the assistant turn, in place; only the
    client call runs; every request of the loop passes the check (no 400)."""
    with Simulator(seed=11) as sim:
        sim.add_response(
            text="Searching.",
            server_tools=[SEARCH],
            tool_calls=[{"name": "get_weather", "arguments": {"city": "Lyon"}}],
        )
        sim.add_response(text="Sunny in Lyon.")
        messages, turns = _loop(sim, 3)
    first = turns[0]
    assert [c.name for c in first.response.tool_calls] == ["get_weather"]
    assert [o.name for o in first.outcomes] == ["get_weather"]
    kinds = [b["type"] for b in messages[1]["content"]]
    assert kinds == ["text", "server_tool_use", "web_search_tool_result", "tool_use"]
    use = messages[1]["content"][1]
    assert use["input"] == SEARCH["input"] and use["id"].startswith("srvtoolu_01")
    assert messages[1]["content"][2]["tool_use_id"] == use["id"]
    assert turns[-1].done and turns[-1].response.text == "Sunny in Lyon."


def test_a_paused_turn_goes_back_as_it_is_and_the_loop_goes_on() -> None:
    """finish="pause" with a pending server tool: turn.done is False, the paused turn is the
    last message of the next request (accepted), and the loop ends on the answer."""
    with Simulator(seed=5) as sim:
        pending = {**SEARCH, "result": None}
        sim.add_response(text="Still searching.", server_tools=[pending], finish="pause")
        sim.add_response(text="Sunny in Lyon.")
        _, turns = _loop(sim, 4)
        second = sim.requests[1].body
    assert turns[0].response.paused and not turns[0].done
    assert turns[0].response.raw_finish_reason == "pause_turn"
    assert turns[0].outcomes == []
    assert second["messages"][-1]["role"] == "assistant"
    assert [b["type"] for b in second["messages"][-1]["content"]] == ["text", "server_tool_use"]
    assert len(turns) == 2 and turns[-1].done and turns[-1].response.text == "Sunny in Lyon."


def test_a_paused_turn_is_anthropic_only_and_carries_no_client_call() -> None:
    """A pause with a client call, or a server tool without a name, is a usage error;
    another format refuses to serve either: the client gets the simulator's 500 saying why."""
    with Simulator(seed=1) as sim:
        sim.add_response(text="x", finish="pause")
        client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0)
        with pytest.raises(openai.InternalServerError, match="serves no provider-run tools"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}], stream=True
            )
        client.close()
        with pytest.raises(UsageError, match="paused turn carries no client"):
            sim.add_response(finish="pause", tool_calls=[{"name": "f", "arguments": {}}])
        with pytest.raises(UsageError, match="server tool"):
            sim.add_response(server_tools=[{"input": {}}])
