"""Three-turn conversations through each provider's real SDK client and the simulator:
each next request sends ``messages += turn.messages`` and the simulator, which checks
requests as the provider does, accepts every one; parallel calls run once each, a turn
with an invalid call runs nothing and is answered in full."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

import toolwire
from simulator_support import Clients
from toolwire.testing import Simulator
from turn_support import FORMATS, TEXT_ARGUMENTS, Conversation, counted_tools, refused


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator; no connection may stay open once the clients are closed."""
    with Simulator(seed=5) as simulator:
        yield simulator


@pytest.fixture
def clients(sim: Simulator) -> Iterator[Clients]:
    """The seven SDK clients, closed after the test."""
    made = Clients(sim)
    yield made
    made.close()


def _invalid(fmt: str) -> Any:
    """Arguments that can never run: text that stops being JSON where the wire carries
    text, a value of the wrong type where it carries objects."""
    return '{"city": "Nice",}' if fmt in TEXT_ARGUMENTS else {"city": 5}


def _script(sim: Simulator, fmt: str) -> None:
    sim.add_response(
        reasoning="Two cities: two calls.",
        text="Checking both.",
        tool_calls=[("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Paris"})],
    )
    sim.add_response(
        reasoning="Nice as well.",
        tool_calls=[("get_weather", {"city": "Nice"}), ("get_weather", _invalid(fmt))],
    )
    sim.add_response(text="Sunny in Lyon and in Paris.")


def tool_results_in(fmt: str, body: dict[str, Any]) -> int:
    """How many tool results a request body carries, in ``fmt``'s own shape."""
    if fmt in ("openai-chat", "cohere", "ollama"):
        return sum(1 for m in body["messages"] if m.get("role") == "tool")
    if fmt == "openai-responses":
        return sum(1 for i in body["input"] if i.get("type") == "function_call_output")
    if fmt == "gemini":
        parts = [p for turn in body["contents"] for p in turn.get("parts", [])]
        return sum(1 for p in parts if "functionResponse" in p)
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    if fmt == "anthropic":
        return sum(1 for b in blocks if b.get("type") == "tool_result")
    return sum(1 for b in blocks if "toolResult" in b)


@pytest.mark.parametrize("early_abort", [True, False], ids=["early-abort", "read-to-end"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_three_turns_through_the_real_client_are_accepted(
    sim: Simulator, clients: Clients, fmt: str, early_abort: bool
) -> None:
    """Parallel calls, then a turn with an invalid call, then the answer: every request
    is accepted, each call ran once, the invalid turn ran nothing and answered both calls."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope=f"conversation-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    _script(sim, fmt)
    turns = []
    for _ in range(3):
        turn = toolwire.run_turn(
            conversation.request(), tools, executor=executor, early_abort=early_abort
        )
        conversation.messages += turn.messages
        turns.append(turn)
        if turn.done:
            break
    assert refused(sim) == []
    assert [r.served for r in sim.requests] == ["response"] * 3
    assert [t.done for t in turns] == [False, False, True]
    assert [o.status for o in turns[0].outcomes] == ["completed", "completed"]
    assert [o.value for o in turns[0].outcomes] == ["Sunny in Lyon", "Sunny in Paris"]
    assert sorted(runs.values()) == [1, 1]  # two keys, one execution each
    second = turns[1]
    assert [o.status for o in second.outcomes] == ["skipped", "rejected"]
    assert (second.aborted is not None) is early_abort
    if fmt != "openai-chat":  # the others take reasoning back (signed where they sign it)
        echoed = json.dumps(second.messages)
        assert "Nice as well." in echoed
        assert ("signature" in echoed) is (fmt in ("anthropic", "bedrock-converse"))
    assert turns[2].response.text == "Sunny in Lyon and in Paris."
    assert tool_results_in(fmt, sim.requests[-1].body) == 4


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "openai-responses"])
def test_async_turns_through_the_async_clients_are_accepted(sim: Simulator, fmt: str) -> None:
    """arun_turn with AsyncOpenAI / AsyncAnthropic: the same three turns, all accepted."""
    import anthropic
    import openai

    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    _script(sim, fmt)

    async def converse() -> list[toolwire.Turn]:
        executor = toolwire.AsyncExecutor(tools, scope=f"async-{fmt}")
        messages: list[Any] = [{"role": "user", "content": "Weather in Lyon and Paris?"}]
        definitions = tools.definitions(fmt)
        if fmt == "anthropic":
            client: Any = anthropic.AsyncAnthropic(
                base_url=sim.base_url(fmt), api_key="test", max_retries=0
            )

            def request() -> Any:
                return client.messages.stream(
                    model="m", max_tokens=1024, messages=messages, tools=definitions
                )
        else:
            client = openai.AsyncOpenAI(base_url=sim.base_url(fmt), api_key="test", max_retries=0)

            def request() -> Any:
                if fmt == "openai-responses":
                    return client.responses.create(
                        model="m", input=messages, tools=definitions, stream=True
                    )
                return client.chat.completions.create(
                    model="m", messages=messages, tools=definitions, stream=True
                )

        turns = []
        async with client:
            while True:
                turn = await toolwire.arun_turn(request, tools, executor=executor)
                messages += turn.messages
                turns.append(turn)
                if turn.done:
                    return turns

    turns = asyncio.run(converse())
    assert refused(sim) == []
    assert len(turns) == 3 and turns[1].aborted is not None
    assert sorted(runs.values()) == [1, 1]
