"""The simulator's thinking signatures: a thinking block, and the blocks before it, must come
back as served; toolwire's echo does, a changed thinking text or a block moved before it
does not."""

from __future__ import annotations

import copy
from typing import Any

import anthropic
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire.testing import Simulator
from toolwire.testing._formats import check_request
from toolwire.testing._thinking_seal import seal, unsealed


def _no_calls(response_id: str) -> set[str] | None:
    return None


def _tools() -> toolwire.Toolbox:
    box = toolwire.Toolbox()

    @box.tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    return box


def _second_request() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The request body after a thinking + tool turn echoed by ``run_turn``, and the
    simulator's verdict on it (sent through the real anthropic client)."""
    with Simulator(seed=3) as sim:
        sim.add_response(
            reasoning="The user wants Lyon's weather; I will call the tool.",
            tool_calls=[{"name": "get_weather", "arguments": {"city": "Lyon"}}],
        )
        sim.add_response(text="Sunny in Lyon.")
        client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lyon?"}]
        tools = _tools()
        with toolwire.MemoryStore() as store:
            executor = toolwire.Executor(tools, store=store, scope="seal-test")
            turn = toolwire.run_turn(
                client.messages.create(
                    model="claude-sonnet-4-6",
                    max_tokens=512,
                    messages=messages,  # type: ignore[arg-type]
                    tools=tools.definitions("anthropic"),  # type: ignore[arg-type]
                    stream=True,
                ),
                tools,
                executor=executor,
            )
        messages += turn.messages
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=512,
            messages=messages,  # type: ignore[arg-type]
            tools=tools.definitions("anthropic"),  # type: ignore[arg-type]
        )
        client.close()
        body = sim.requests[-1].body
    return body, messages


def test_the_echoed_thinking_turn_is_accepted_and_each_change_refused() -> None:
    """toolwire's echo passes; a changed thinking text, a block put before the thinking
    block, or an edited block before it each get the simulator's 400."""
    body, messages = _second_request()
    assistant = messages[1]["content"]
    assert assistant[0]["type"] == "thinking" and assistant[0]["signature"].startswith("twsim1.")
    assert check_request("anthropic", body, _no_calls) is None

    changed = copy.deepcopy(body)
    changed["messages"][1]["content"][0]["thinking"] += " "
    moved = copy.deepcopy(body)
    moved["messages"][1]["content"].insert(0, {"type": "text", "text": "Let me think."})
    for mutated in (changed, moved):
        problem = check_request("anthropic", mutated, _no_calls)
        assert problem is not None and "Invalid `signature`" in problem


@given(
    nonce=st.text(st.characters(codec="utf-8", exclude_characters="."), max_size=8),
    thinking=st.text(max_size=40),
    before=st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text()})),
    other=st.text(max_size=40),
)
def test_a_seal_holds_exactly_for_what_it_sealed(
    nonce: str, thinking: str, before: list[dict[str, Any]], other: str
) -> None:
    """A seal verifies for its own thinking and blocks (None-valued keys ignored), and
    fails for any other thinking text or blocks; a foreign signature is never judged."""
    signature = seal(nonce, thinking, before)
    assert not unsealed(signature, thinking, [{**b, "citations": None} for b in before])
    assert unsealed(signature, thinking + "x", before)
    if other != thinking:
        assert unsealed(signature, other, before)
    assert unsealed(signature, thinking, [*before, {"type": "text", "text": ""}])
    assert not unsealed("EqQBCgIYAhIM" + nonce, other, before)
