"""pydantic-ai on the comparison scenarios: an ``Agent`` on ``OpenAIChatModel`` pointed at
the simulator's OpenAI endpoint, with counting tools, run with streamed model requests
(``run_sync`` with an ``event_stream_handler``, and ``run_stream``). ``retries=0`` so that
a call the agent would send back to the model for another try ends the run at once with
``UnexpectedModelBehavior``; with retries, the same call is not run either.

Tested with pydantic-ai-slim 2.78.0 (openai extra, on openai 3.63.0). Each test states
what the library does today; when it changes, the test fails and the README table must
change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    PARSEABLE_AT_LIMIT,
    REPLAY_CALL,
    STALL,
    TIMEOUT,
    TRUNCATED_ARGS,
    USER,
    WRITE,
    WRITE_ARGS,
    changed_numbers,
    fresh_simulator,
    need,
    record_replay,
)
from toolwire.testing import Simulator

try:
    from pydantic_ai import Agent, IncompleteToolCall
    from pydantic_ai.exceptions import (
        ModelConnectionError,
        ModelHTTPError,
        ModelTimeoutError,
        UnexpectedModelBehavior,
    )
    from pydantic_ai.messages import PartDeltaEvent, ToolCallPartDelta
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
except ImportError:  # the `compare` group is not installed: every test skips
    Agent = None

# a competitor's behaviour: run once, on the main Python (make test-pythons skips it)
pytestmark = pytest.mark.compare


@pytest.fixture(autouse=True)
def _installed() -> None:
    """Skip (or fail under CI) when pydantic-ai is missing."""
    need(Agent, "pydantic-ai-slim")


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


class Amounts(BaseModel):
    """A structured output, for the output-tool preview."""

    amounts: list[int]


class Harness:
    """An agent with ``write_file`` and ``get_weather`` tools that count their runs, and the
    events its streamed model requests produced. Each run gets its own OpenAI client (no
    retries), made and closed inside that run's event loop."""

    def __init__(self, sim: Simulator, **agent_settings: Any) -> None:
        self.sim = sim
        self.runs: list[tuple[str, dict[str, Any]]] = []
        self.events: list[Any] = []
        self.agent: Any = Agent(retries=0, **agent_settings)

        @self.agent.tool_plain
        def write_file(path: str, content: str) -> str:
            """Write a text file."""
            self.runs.append(("write_file", {"path": path, "content": content}))
            return "written"

        @self.agent.tool_plain
        def get_weather(city: str) -> str:
            """Current weather in a city."""
            self.runs.append(("get_weather", {"city": city}))
            return "sunny"

    async def _handler(self, _ctx: Any, events: AsyncIterable[Any]) -> None:
        async for event in events:
            self.events.append(event)

    def _with_model(self, body: Callable[[Any], Awaitable[Any]]) -> Any:
        async def go() -> Any:
            client = openai.AsyncOpenAI(
                base_url=self.sim.base_url("openai-chat"), api_key="test", max_retries=0
            )
            try:
                provider = OpenAIProvider(openai_client=client)
                return await body(OpenAIChatModel("gpt-4o", provider=provider))
            finally:
                await client.close()

        return asyncio.run(go())

    def run(self, **settings: Any) -> Any:
        """``agent.run`` with streamed model requests (an event stream handler); the output."""

        async def body(model: Any) -> Any:
            result = await self.agent.run(
                USER, model=model, event_stream_handler=self._handler, **settings
            )
            return result.output

        return self._with_model(body)

    def run_stream(self) -> Any:
        """``agent.run_stream`` to its output."""

        async def body(model: Any) -> Any:
            async with self.agent.run_stream(USER, model=model) as result:
                return await result.get_output()

        return self._with_model(body)

    def previews(self) -> list[list[int]]:
        """``run_stream`` of a structured output; every ``stream_output`` preview."""

        async def body(model: Any) -> list[list[int]]:
            previews = []
            async with self.agent.run_stream(USER, model=model) as result:
                async for output in result.stream_output(debounce_by=None):
                    previews.append(list(output.amounts))
            return previews

        previews: list[list[int]] = self._with_model(body)
        return previews


@pytest.fixture
def harness(sim: Simulator) -> Harness:
    """The test's agent."""
    return Harness(sim)


MODES = ("run", "run_stream")


def run(harness: Harness, mode: str) -> Any:
    """The agent run in ``mode``."""
    return harness.run() if mode == "run" else harness.run_stream()


# ---------------------------------------------------------------- 1. cut streams


@pytest.mark.parametrize("mode", MODES)
def test_cut_raises_model_connection_error(sim: Simulator, harness: Harness, mode: str) -> None:
    """A cut inside the arguments raises ModelConnectionError; no tool runs."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(ModelConnectionError):
        run(harness, mode)
    assert harness.runs == []


# ------------------------------------------------------------ 3. missing finish


@pytest.mark.parametrize("mode", MODES)
def test_missing_finish_runs_the_call(sim: Simulator, harness: Harness, mode: str) -> None:
    """A body that ends without a finish chunk is treated as complete: the call runs and
    the agent carries on."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    sim.add_response(text="Done.")
    assert run(harness, mode) == "Done."
    assert harness.runs == [("write_file", WRITE_ARGS)]


@pytest.mark.parametrize("mode", MODES)
def test_missing_finish_with_cut_arguments_is_not_run(
    sim: Simulator, harness: Harness, mode: str
) -> None:
    """Without a finish and with cut arguments, the invalid JSON goes to the retry path
    (here UnexpectedModelBehavior, as retries=0); the call does not run."""
    sim.add_response(tool_calls=[("write_file", TRUNCATED_ARGS)], faults=["no-terminal"])
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        run(harness, mode)
    assert harness.runs == []


# ---------------------------------------------------------- 2. max_tokens truncation


@pytest.mark.parametrize("mode", MODES)
def test_length_with_cut_arguments_raises_incomplete_tool_call(
    sim: Simulator, harness: Harness, mode: str
) -> None:
    """finish_reason ``length`` with unparseable arguments raises IncompleteToolCall."""
    sim.add_response(tool_calls=[WRITE], faults=["length"])
    with pytest.raises(IncompleteToolCall):
        run(harness, mode)
    assert harness.runs == []


@pytest.mark.parametrize("mode", MODES)
def test_length_with_parseable_arguments_runs_the_call(
    sim: Simulator, harness: Harness, mode: str
) -> None:
    """finish_reason ``length`` with arguments that parse and validate: the call runs."""
    sim.add_response(tool_calls=[("write_file", PARSEABLE_AT_LIMIT)], finish="length")
    sim.add_response(text="Done.")
    assert run(harness, mode) == "Done."
    assert len(harness.runs) == 1


@pytest.mark.parametrize("mode", MODES)
def test_vllm_unterminated_arguments_are_not_run(
    sim: Simulator, harness: Harness, mode: str
) -> None:
    """vLLM's finish ``tool_calls`` over cut JSON: the invalid JSON goes to the retry path;
    the call does not run."""
    sim.add_response(tool_calls=[WRITE], profile="unterminated-arguments")
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries"):
        run(harness, mode)
    assert harness.runs == []


# ------------------------------------------------------------- 4. parallel calls


@pytest.mark.parametrize("profile", [None, "no-index"])
def test_interleaved_and_index_less_calls_run_right(
    sim: Simulator, harness: Harness, profile: str | None
) -> None:
    """Three interleaved calls, and the same without ``index``, run the three right
    calls."""
    sim.add_response(tool_calls=CALLS3, profile=profile)
    sim.add_response(text="Done.")
    harness.run()
    assert sorted(harness.runs, key=str) == sorted(
        (("get_weather", {"city": c}) for c in CITIES), key=str
    )


@pytest.mark.parametrize(
    ("profile", "name"),
    [("all-index-0", "get_weather" * 3), ("repeated-names", "get_weather" * 5)],
)
def test_shared_index_and_repeated_names_concatenate_the_name(
    sim: Simulator, harness: Harness, profile: str, name: str
) -> None:
    """Every call at index 0 merges the calls into one; a name re-sent in every chunk is
    concatenated. Either way the name matches no tool and nothing runs."""
    sim.add_response(tool_calls=CALLS3, profile=profile)
    with pytest.raises(UnexpectedModelBehavior, match=f"Tool '{name}' exceeded"):
        harness.run()
    assert harness.runs == []


# ------------------------------------------------------------------- 5. previews


def test_function_tool_arguments_stream_as_raw_text(sim: Simulator, harness: Harness) -> None:
    """A function tool's arguments stream as raw text deltas; there is no parsed preview."""
    sim.add_response(tool_calls=[WRITE])
    sim.add_response(text="Done.")
    harness.run()
    deltas = [
        event.delta
        for event in harness.events
        if isinstance(event, PartDeltaEvent) and isinstance(event.delta, ToolCallPartDelta)
    ]
    assert len(deltas) > 5
    assert all(isinstance(d.args_delta, str) for d in deltas)


def test_output_tool_preview_shows_numbers_that_change(sim: Simulator) -> None:
    """A structured output's streamed preview (``stream_output``) shows numbers cut
    mid-digits, which later change."""
    sim.add_response(tool_calls=[("final_result", {"amounts": AMOUNTS})])
    previews = Harness(sim, output_type=Amounts).previews()
    assert previews[-1] == AMOUNTS
    changed = changed_numbers(previews, AMOUNTS)
    assert changed
    assert all(str(final).startswith(str(shown)) for shown, final in changed)


# --------------------------------------------------------------- 6. idempotency


def test_a_replayed_call_runs_again_in_the_same_run(
    sim: Simulator, harness: Harness, tmp_path: Path
) -> None:
    """The same response (same call id and arguments) served twice in one run makes the
    agent run the tool twice."""
    recording = record_replay(sim, "openai-chat", tmp_path)
    sim.add_recording(recording)
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    harness.run()
    assert harness.runs == [REPLAY_CALL[:2]] * 2


def test_a_retried_turn_runs_the_call_again(
    sim: Simulator, harness: Harness, tmp_path: Path
) -> None:
    """A run retried after its follow-up request failed runs the same call again."""
    recording = record_replay(sim, "openai-chat", tmp_path)
    sim.add_recording(recording)
    sim.add_response(text="x", faults=["http:500"])
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    with pytest.raises(ModelHTTPError, match="500"):
        harness.run()
    harness.run()
    assert harness.runs == [REPLAY_CALL[:2]] * 2


# ----------------------------------------------------------------- 7. deadlines


def test_stall_ends_at_the_request_timeout(sim: Simulator, harness: Harness) -> None:
    """A stall mid-stream ends at the ``timeout`` model setting (an HTTP read timeout,
    600 s by default) as ModelTimeoutError (a ModelConnectionError, not a TimeoutError)."""
    provider = OpenAIProvider(base_url=sim.base_url("openai-chat"), api_key="test")
    assert provider.client.timeout.read == 600
    asyncio.run(provider.client.close())
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    start = time.perf_counter()
    with pytest.raises(ModelTimeoutError) as caught:
        harness.run(model_settings={"timeout": TIMEOUT})
    elapsed = time.perf_counter() - start
    assert isinstance(caught.value, ModelConnectionError)
    assert not isinstance(caught.value, TimeoutError)
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND
    assert harness.runs == []
