"""Retries of a turn's request are the SDK client's (``max_retries``): run_turn makes the
request once, raises the SDK's own exception when the client gives up, and never makes a
begun stream again."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

import toolwire
from toolwire.testing import Simulator
from turn_support import counted_tools

MESSAGES = [{"role": "user", "content": "Weather in Lyon?"}]


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=9) as simulator:
        yield simulator


def _tools() -> tuple[toolwire.Toolbox, toolwire.Executor, Counter[str]]:
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    return tools, toolwire.Executor(tools, scope="retry"), runs


def test_a_failing_request_is_made_as_often_as_the_client_retries(sim: Simulator) -> None:
    """A 503 that persists: the openai client's default two retries make three requests in
    all (not three per attempt of a second policy), then openai.InternalServerError."""
    tools, executor, runs = _tools()
    for _ in range(9):
        sim.add_response(faults=["http:503"])
    with (
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t") as client,
        pytest.raises(openai.InternalServerError),
    ):
        toolwire.run_turn(
            lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),  # type: ignore[arg-type]
            tools,
            executor=executor,
        )
    assert [r.status for r in sim.requests] == [503, 503, 503]
    assert runs == Counter()


def test_an_anthropic_manager_is_retried_by_its_client_once_per_request(sim: Simulator) -> None:
    """anthropic's messages.stream() makes its request when entered: a 529 there is retried
    by the client (max_retries=1 here: two requests), the turn then runs on the answer."""
    tools, executor, _ = _tools()
    sim.add_response(faults=["http:529"])
    sim.add_response(faults=["http:529"])
    sim.add_response(text="Sunny.")
    client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=1)
    with pytest.raises(anthropic.APIStatusError) as caught:
        toolwire.run_turn(
            lambda: client.messages.stream(model="m", max_tokens=100, messages=MESSAGES),  # type: ignore[arg-type]
            tools,
            executor=executor,
        )
    assert caught.value.status_code == 529
    assert [r.status for r in sim.requests] == [529, 529]
    turn = toolwire.run_turn(
        client.messages.stream(model="m", max_tokens=100, messages=MESSAGES),  # type: ignore[arg-type]
        tools,
        executor=executor,
    )
    assert turn.done and turn.response.text == "Sunny."
    client.close()


def test_retry_is_no_longer_an_option() -> None:
    """retry= is not a parameter: Python's TypeError names it (the SDK clients retry)."""
    tools, executor, _ = _tools()
    with pytest.raises(TypeError, match="unexpected keyword argument 'retry'"):
        toolwire.run_turn([], tools, executor=executor, retry=object())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'retry'"):
        asyncio.run(
            toolwire.arun_turn(
                [],
                tools,
                executor=toolwire.AsyncExecutor(tools, scope="r"),
                retry=None,  # type: ignore[call-arg]
            )
        )


def test_a_cut_stream_is_not_made_again(sim: Simulator) -> None:
    """A stream that began is a StreamError: raised, with nothing run, one request made
    (the client retries only before the body)."""
    tools, executor, runs = _tools()
    sim.add_response(tool_calls=[("get_weather", {"city": "Lyon"})], faults=["cut:0.6"])
    with (
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t") as client,
        pytest.raises(toolwire.StreamAborted) as caught,
    ):
        toolwire.run_turn(
            lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),  # type: ignore[arg-type]
            tools,
            executor=executor,
        )
    assert caught.value.partial is not None
    assert len(sim.requests) == 1 and runs == Counter()


@pytest.mark.parametrize("opened", ["send", "stream-manager"])
def test_an_httpx_response_with_an_error_status_is_raised_with_its_body(
    sim: Simulator, opened: str
) -> None:
    """An httpx response with an error status (client.send(..., stream=True) or
    client.stream(...)) is not read as a stream: raised once as httpx.HTTPStatusError with
    its body read, and its connection released."""
    tools, executor, _ = _tools()
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    sim.add_response(faults=["http:503"])
    with httpx.Client(base_url=sim.url) as http:

        def request() -> Any:
            if opened == "send":
                built = http.build_request("POST", "/v1/chat/completions", json=body)
                return http.send(built, stream=True)
            return http.stream("POST", "/v1/chat/completions", json=body)

        with pytest.raises(httpx.HTTPStatusError) as caught:
            toolwire.run_turn(request, tools, executor=executor)
        assert caught.value.response.status_code == 503 and "error" in caught.value.response.text
    assert [r.status for r in sim.requests] == [503]
    assert sim.wait_for_connections_closed(5)


def test_async_turns_make_the_request_once_too(sim: Simulator) -> None:
    """arun_turn with an AsyncOpenAI client (max_retries=1) and a 502 that persists: two
    requests, then the SDK's error."""
    tools = counted_tools(Counter())
    for _ in range(4):
        sim.add_response(faults=["http:502"])

    async def run() -> None:
        executor = toolwire.AsyncExecutor(tools, scope="async-retry")
        async with openai.AsyncOpenAI(
            base_url=sim.base_url("openai-chat"), api_key="t", max_retries=1
        ) as client:
            await toolwire.arun_turn(
                lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),  # type: ignore[arg-type]
                tools,
                executor=executor,
            )

    with pytest.raises(openai.InternalServerError):
        asyncio.run(run())
    assert [r.status for r in sim.requests] == [502, 502]
