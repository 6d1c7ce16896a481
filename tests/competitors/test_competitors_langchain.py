"""LangChain on the comparison scenarios: ``ChatOpenAI(...).bind_tools(...)`` on the
simulator's OpenAI endpoint, read with ``.stream()`` (chunks gathered with ``+``, the
pattern that shows ``tool_calls`` growing) and with ``invoke`` on a streaming model (which
merges the chunks itself). LangChain core has no agent loop; its execution step is
``tool.invoke(tool_call)`` for each of ``message.tool_calls``, which is what the tests run
to count executions.

Tested with langchain-core 1.8.3 and langchain-openai 1.8.1 (on openai 3.63.0). Each test
states what the library does today; when it changes, the test fails and the README table
must change.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    REPLAY_CALL,
    REPLAY_ID,
    REPORT,
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
    from langchain_core.messages import AIMessageChunk
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langchain_openai.chat_models.base import OpenAIConnectionError, OpenAITimeoutError
except ImportError:  # the `compare` group is not installed: every test skips
    ChatOpenAI = None

# a competitor's behaviour: run once, on the main Python (make test-pythons skips it)
pytestmark = pytest.mark.compare


@pytest.fixture(autouse=True)
def _installed() -> None:
    """Skip (or fail under CI) when langchain-openai is missing."""
    need(ChatOpenAI, "langchain-openai")


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


class Tools:
    """LangChain tools that count their runs."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

        @tool
        def write_file(path: str, content: str) -> str:
            """Write a text file."""
            self.runs.append(("write_file", {"path": path, "content": content}))
            return "written"

        @tool
        def get_weather(city: str) -> str:
            """Current weather in a city."""
            self.runs.append(("get_weather", {"city": city}))
            return "sunny"

        @tool
        def record_amounts(amounts: list[int]) -> str:
            """Record a list of amounts."""
            self.runs.append(("record_amounts", {"amounts": amounts}))
            return "recorded"

        self.by_name = {t.name: t for t in (write_file, get_weather, record_amounts)}

    def execute(self, message: Any) -> None:
        """Run every ``tool_call`` of ``message`` the way LangChain tools run them."""
        for call in message.tool_calls:
            self.by_name[call["name"]].invoke(call)


@pytest.fixture
def tools() -> Tools:
    """The test's counting tools."""
    return Tools()


def model(sim: Simulator, tools: Tools, **settings: Any) -> Any:
    """``ChatOpenAI`` on the simulator with the tools bound (no retries)."""
    llm = ChatOpenAI(
        model="gpt-4o",
        base_url=sim.base_url("openai-chat"),
        api_key="test",  # type: ignore[arg-type]
        max_retries=0,
        **settings,
    )
    return llm.bind_tools(list(tools.by_name.values()))


def gathered(sim: Simulator, tools: Tools, **settings: Any) -> Any:
    """``.stream()`` with every chunk added to the previous ones."""
    acc = None
    for chunk in model(sim, tools, **settings).stream(USER):
        acc = chunk if acc is None else acc + chunk
    return acc


def invoked(sim: Simulator, tools: Tools) -> Any:
    """``invoke`` on a streaming model: LangChain merges the chunks itself."""
    return model(sim, tools, streaming=True).invoke(USER)


READERS = {"stream": gathered, "invoke": invoked}


def finish(message: Any) -> Any:
    """The finish reason LangChain records in the message's metadata."""
    return message.response_metadata.get("finish_reason")


# ---------------------------------------------------------------- 1. cut streams


@pytest.mark.parametrize("read", READERS)
def test_cut_raises_openai_connection_error(sim: Simulator, tools: Tools, read: str) -> None:
    """A cut inside the arguments raises OpenAIConnectionError from stream and invoke."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(OpenAIConnectionError):
        READERS[read](sim, tools)


def test_chunks_gathered_before_a_cut_hold_a_valid_looking_call(
    sim: Simulator, tools: Tools
) -> None:
    """The chunks gathered before the cut already merge into a valid ``tool_call`` whose
    content is the cut string (the lenient parse closes it)."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    acc: Any = None
    with pytest.raises(OpenAIConnectionError):
        for chunk in model(sim, tools).stream(USER):
            acc = chunk if acc is None else acc + chunk
    [call] = acc.tool_calls
    assert call["args"]["path"] == WRITE_ARGS["path"]
    assert REPORT.startswith(call["args"]["content"]) and call["args"]["content"] != REPORT
    assert acc.invalid_tool_calls == []


# ------------------------------------------------------------ 3. missing finish


@pytest.mark.parametrize("read", READERS)
def test_missing_finish_is_returned_as_complete(sim: Simulator, tools: Tools, read: str) -> None:
    """A body without a finish chunk gives the call, no finish reason and no error."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    message = READERS[read](sim, tools)
    assert finish(message) is None
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("write_file", WRITE_ARGS)]


@pytest.mark.parametrize("read", READERS)
def test_missing_finish_repairs_cut_arguments_into_a_call_that_runs(
    sim: Simulator, tools: Tools, read: str
) -> None:
    """Without a finish and with cut arguments, the cut JSON is repaired into a valid
    ``tool_call`` (not an invalid one), and running it writes the cut content."""
    sim.add_response(tool_calls=[("write_file", TRUNCATED_ARGS)], faults=["no-terminal"])
    message = READERS[read](sim, tools)
    cut = {"path": WRITE_ARGS["path"], "content": "Line 0: the quarterly fig"}
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [("write_file", cut)]
    assert message.invalid_tool_calls == []
    tools.execute(message)
    assert tools.runs == [("write_file", cut)]


# ---------------------------------------------------------- 2. max_tokens truncation


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(
    ("faults", "profile", "reason"),
    [(["length"], None, "length"), ([], "unterminated-arguments", "tool_calls")],
    ids=["length", "vllm-unterminated"],
)
def test_truncated_call_becomes_a_valid_tool_call_that_runs(
    sim: Simulator,
    tools: Tools,
    read: str,
    faults: list[str],
    profile: str | None,
    reason: str,
) -> None:
    """A token-limit finish (``length``, or vLLM's ``tool_calls`` over cut JSON) leaves the
    finish in metadata and the cut call in ``tool_calls``, valid-looking; it runs."""
    sim.add_response(tool_calls=[WRITE], faults=faults, profile=profile)
    message = READERS[read](sim, tools)
    assert finish(message) == reason
    [call] = message.tool_calls
    assert call["name"] == "write_file"
    assert call["args"]["path"] == WRITE_ARGS["path"]
    assert REPORT.startswith(call["args"]["content"]) and call["args"]["content"] != REPORT
    tools.execute(message)
    assert len(tools.runs) == 1


# ------------------------------------------------------------- 4. parallel calls


@pytest.mark.parametrize("read", READERS)
def test_interleaved_calls_come_out_right(sim: Simulator, tools: Tools, read: str) -> None:
    """Three interleaved calls with correct indexes give the three right calls."""
    sim.add_response(tool_calls=CALLS3)
    message = READERS[read](sim, tools)
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("get_weather", {"city": city}) for city in CITIES
    ]


@pytest.mark.parametrize("read", READERS)
def test_all_index_0_loses_the_later_calls_arguments(
    sim: Simulator, tools: Tools, read: str
) -> None:
    """Every call at index 0: three calls (split on their ids), but the second and third
    lose their arguments (``{}``), their fragments merged into the first call."""
    sim.add_response(tool_calls=CALLS3, profile="all-index-0")
    message = READERS[read](sim, tools)
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("get_weather", {"city": "Lyon"}),
        ("get_weather", {}),
        ("get_weather", {}),
    ]


@pytest.mark.parametrize("read", READERS)
def test_repeated_names_are_concatenated(sim: Simulator, tools: Tools, read: str) -> None:
    """A name re-sent in every chunk is concatenated into ``get_weatherget_weather...``."""
    sim.add_response(tool_calls=CALLS3, profile="repeated-names")
    message = READERS[read](sim, tools)
    names = [c["name"] for c in message.tool_calls]
    assert len(names) == 3
    assert all(name.startswith("get_weatherget_weather") for name in names)


@pytest.mark.parametrize("read", READERS)
def test_missing_index_scatters_the_calls(sim: Simulator, tools: Tools, read: str) -> None:
    """Deltas without ``index``: every fragment stays apart; the three named calls get
    ``{}`` arguments, three nameless ``{}`` calls appear, and the other fragments become
    invalid calls."""
    sim.add_response(tool_calls=CALLS3, profile="no-index")
    message = READERS[read](sim, tools)
    assert [(c["name"], c["args"]) for c in message.tool_calls] == [
        ("get_weather", {}),
        ("", {}),
    ] * 3
    assert len(message.invalid_tool_calls) > 3
    assert all(c["name"] is None for c in message.invalid_tool_calls)


# ------------------------------------------------------------------- 5. previews


def test_gathered_chunks_preview_numbers_that_change(sim: Simulator, tools: Tools) -> None:
    """``tool_calls`` of the gathered chunks (``parse_partial_json`` on every ``+``) show
    numbers cut mid-digits, which later change."""
    sim.add_response(tool_calls=[("record_amounts", {"amounts": AMOUNTS})])
    previews = []
    acc: Any = None
    for chunk in model(sim, tools).stream(USER):
        acc = chunk if acc is None else acc + chunk
        assert isinstance(acc, AIMessageChunk)
        if acc.tool_calls and "amounts" in acc.tool_calls[0]["args"]:
            previews.append(list(acc.tool_calls[0]["args"]["amounts"]))
    assert previews[-1] == AMOUNTS
    changed = changed_numbers(previews, AMOUNTS)
    assert changed
    assert all(str(final).startswith(str(shown)) for shown, final in changed)


# --------------------------------------------------------------- 6. idempotency


def test_a_replayed_call_runs_again(sim: Simulator, tools: Tools, tmp_path: Path) -> None:
    """The same response (same call id and arguments) read twice and run with
    ``tool.invoke(tool_call)`` runs twice: nothing dedupes."""
    recording = record_replay(sim, "openai-chat", tmp_path)
    for _ in range(2):
        sim.add_recording(recording)
        message = gathered(sim, tools)
        assert [c["id"] for c in message.tool_calls] == [REPLAY_ID]
        tools.execute(message)
    assert tools.runs == [("write_file", REPLAY_CALL[1])] * 2


# ----------------------------------------------------------------- 7. deadlines


def test_default_model_has_no_http_timeout_and_an_async_only_chunk_timeout(
    sim: Simulator, tools: Tools
) -> None:
    """By default ChatOpenAI gives its OpenAI client no timeout at all, and its
    ``stream_chunk_timeout`` (120 s) covers async streaming only."""
    llm = ChatOpenAI(model="gpt-4o", base_url=sim.base_url("openai-chat"), api_key="test")  # type: ignore[arg-type]
    assert llm.root_client.timeout is None
    assert llm.stream_chunk_timeout == 120.0


def test_async_stream_chunk_timeout_ends_a_stall(sim: Simulator, tools: Tools) -> None:
    """``astream`` with ``stream_chunk_timeout`` raises StreamChunkTimeoutError (an
    asyncio.TimeoutError) when chunks stop for that long."""
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    llm = model(sim, tools, stream_chunk_timeout=TIMEOUT)

    async def read() -> None:
        async for _ in llm.astream(USER):
            pass

    start = time.perf_counter()
    with pytest.raises(asyncio.TimeoutError) as caught:
        asyncio.run(read())
    elapsed = time.perf_counter() - start
    assert type(caught.value).__name__ == "StreamChunkTimeoutError"
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND


def test_sync_stream_ignores_stream_chunk_timeout(sim: Simulator, tools: Tools) -> None:
    """Sync ``stream`` with ``stream_chunk_timeout`` waits out the whole stall."""
    stall = 1.5
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{stall}"])
    start = time.perf_counter()
    message = gathered(sim, tools, stream_chunk_timeout=TIMEOUT)
    assert time.perf_counter() - start >= stall
    assert len(message.tool_calls) == 1


def test_sync_stream_stall_ends_only_at_the_request_timeout(sim: Simulator, tools: Tools) -> None:
    """Sync ``stream`` ends a stall only through the HTTP read timeout (``timeout=``),
    raised as OpenAITimeoutError."""
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    llm = model(sim, tools, timeout=TIMEOUT)  # built before the clock starts
    start = time.perf_counter()
    with pytest.raises(OpenAITimeoutError):
        for _ in llm.stream(USER):
            pass
    elapsed = time.perf_counter() - start
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND
