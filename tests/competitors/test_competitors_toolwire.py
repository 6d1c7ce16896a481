"""toolwire on the comparison scenarios (the README table's toolwire column): the same
simulator streams the competitor modules run, read through the real ``openai`` and
``anthropic`` clients with ``toolwire.stream`` and executed with ``toolwire.Executor``.

Every stream that did not end properly raises its ``StreamError`` and executes nothing;
parallel calls come out right under every quirk profile; previews never show a value that
changes later; a replayed turn runs its tool once; a stall ends in a typed ``StreamTimeout``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import toolwire
from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    PARSEABLE_AT_LIMIT,
    PROFILES,
    RECORD,
    STALL,
    TIMEOUT,
    TRUNCATED_ARGS,
    USER,
    WRITE,
    WRITE_ARGS,
    fresh_simulator,
    record_replay,
)
from toolwire.testing import Simulator

FORMATS = ("openai-chat", "anthropic")


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


class Ran(list[tuple[str, dict[str, Any]]]):
    """Every tool execution, in order: (tool name, arguments)."""


@pytest.fixture
def ran() -> Ran:
    """The executions of this test's tools."""
    return Ran()


@pytest.fixture
def tools(ran: Ran) -> toolwire.Toolbox:
    """``write_file``, ``get_weather`` and ``record_amounts``, each recording its runs."""
    box = toolwire.Toolbox()

    @box.tool
    def write_file(path: str, content: str) -> str:
        """Write a text file."""
        ran.append(("write_file", {"path": path, "content": content}))
        return "written"

    @box.tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        ran.append(("get_weather", {"city": city}))
        return "sunny"

    @box.tool
    def record_amounts(amounts: list[int]) -> str:
        """Record a list of amounts."""
        ran.append(("record_amounts", {"amounts": amounts}))
        return "recorded"

    return box


class Clients:
    """The ``openai`` and ``anthropic`` clients pointed at one simulator, no retries."""

    def __init__(self, sim: Simulator) -> None:
        self.openai = openai.OpenAI(
            base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0
        )
        self.anthropic = anthropic.Anthropic(
            base_url=sim.base_url("anthropic"), api_key="test", max_retries=0
        )

    def open(self, fmt: str) -> Any:
        """A streamed request through ``fmt``'s own SDK client (the source toolwire reads)."""
        messages: Any = [{"role": "user", "content": USER}]
        if fmt == "openai-chat":
            return self.openai.chat.completions.create(
                model="gpt-4o", messages=messages, stream=True
            )
        return self.anthropic.messages.create(
            model="claude-sonnet-4-6", max_tokens=4096, messages=messages, stream=True
        )

    def close(self) -> None:
        """Close both connection pools."""
        self.openai.close()
        self.anthropic.close()


@pytest.fixture
def clients(sim: Simulator) -> Iterator[Clients]:
    """Both SDK clients, closed after the test."""
    made = Clients(sim)
    yield made
    made.close()


def turn(
    clients: Clients, fmt: str, executor: toolwire.Executor, **deadlines: Any
) -> list[toolwire.Outcome]:
    """One model turn: the stream read by ``toolwire.stream``, then ``executor.run``."""
    with toolwire.stream(clients.open(fmt), **deadlines) as handle:
        for _ in handle:
            pass
    return executor.run(handle.response)


@pytest.fixture
def executor(tools: toolwire.Toolbox) -> toolwire.Executor:
    """An executor on a private memory store."""
    return toolwire.Executor(tools, scope="compare", timeout=10)


# ---------------------------------------------------------------- 1. cut streams


@pytest.mark.parametrize("fmt", FORMATS)
def test_cut_mid_arguments_raises_stream_aborted_and_runs_nothing(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran, fmt: str
) -> None:
    """A connection cut inside a call's arguments raises StreamAborted; no tool runs."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(toolwire.StreamAborted) as caught:
        turn(clients, fmt, executor)
    [call] = caught.value.partial.calls
    # the cut landed inside the arguments (the same bytes the competitor modules get)
    assert call.name == "write_file"
    assert 0 < len(call.raw_arguments) < len(json.dumps(WRITE_ARGS))
    with pytest.raises(json.JSONDecodeError):
        json.loads(call.raw_arguments)
    assert ran == []


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("arguments", [WRITE_ARGS, TRUNCATED_ARGS], ids=["complete", "cut"])
def test_clean_end_without_finish_raises_stream_aborted(
    sim: Simulator,
    clients: Clients,
    executor: toolwire.Executor,
    ran: Ran,
    fmt: str,
    arguments: Any,
) -> None:
    """A body that ends cleanly without the finish / message_stop raises StreamAborted,
    whether the arguments parse or not; no tool runs."""
    sim.add_response(tool_calls=[("write_file", arguments)], faults=["no-terminal"])
    with pytest.raises(toolwire.StreamAborted):
        turn(clients, fmt, executor)
    assert ran == []


# ---------------------------------------------------------- 2. max_tokens truncation


@pytest.mark.parametrize("fmt", FORMATS)
def test_token_limit_mid_call_raises_token_limit_exceeded(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran, fmt: str
) -> None:
    """The provider's token-limit finish with cut arguments raises TokenLimitExceeded."""
    sim.add_response(tool_calls=[WRITE], faults=["length"])
    with pytest.raises(toolwire.TokenLimitExceeded):
        turn(clients, fmt, executor)
    assert ran == []


@pytest.mark.parametrize("fmt", FORMATS)
def test_token_limit_with_parseable_arguments_still_refused(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran, fmt: str
) -> None:
    """A token-limit finish is refused even when the arguments happen to parse."""
    sim.add_response(tool_calls=[("write_file", PARSEABLE_AT_LIMIT)], finish="length")
    with pytest.raises(toolwire.TokenLimitExceeded):
        turn(clients, fmt, executor)
    assert ran == []


def test_vllm_unterminated_arguments_with_finish_tool_calls_refused(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran
) -> None:
    """vLLM's finish ``tool_calls`` over cut JSON is judged a token-limit error."""
    sim.add_response(tool_calls=[WRITE], profile="unterminated-arguments")
    with pytest.raises(toolwire.TokenLimitExceeded):
        turn(clients, "openai-chat", executor)
    assert ran == []


# ------------------------------------------------------------- 4. parallel calls


@pytest.mark.parametrize("profile", [None, *PROFILES])
def test_parallel_calls_come_out_right_under_every_profile(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran, profile: str | None
) -> None:
    """Three interleaved calls, and the all-index-0, repeated-names and no-index shapes,
    give the three calls with their own names and arguments, each run once."""
    sim.add_response(tool_calls=CALLS3, profile=profile)
    outcomes = turn(clients, "openai-chat", executor)
    assert [o.status for o in outcomes] == ["completed"] * 3
    # the executor runs the three at once, so they finish in any order
    assert sorted(ran, key=str) == sorted((("get_weather", {"city": c}) for c in CITIES), key=str)


# ------------------------------------------------------------------- 5. previews


@pytest.mark.parametrize("fmt", FORMATS)
def test_previews_never_show_a_value_that_changes(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """Live previews of 40 numbers split across fragments never show a number that
    later changes: each preview is a prefix of the final list."""
    sim.add_response(tool_calls=[RECORD])
    previews: list[list[int]] = []
    asm = toolwire.StreamAssembler(format=fmt)
    # the SDK's events one by one, each preview read before the next event is fed
    with clients.open(fmt) as sdk_stream:
        for payload in sdk_stream:
            for event in asm.feed(payload):
                if isinstance(event, toolwire.ToolCallArguments):
                    shown = event.preview
                    if isinstance(shown, dict) and "amounts" in shown:
                        previews.append(list(shown["amounts"]))
    assert asm.close().tool_calls[0].arguments == {"amounts": AMOUNTS}
    assert len(previews) > 5
    assert all(shown == AMOUNTS[: len(shown)] for shown in previews)
    assert any(0 < len(shown) < len(AMOUNTS) for shown in previews)


# --------------------------------------------------------------- 6. idempotency


def test_replayed_turn_runs_the_tool_once(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran, tmp_path: Path
) -> None:
    """The same response served twice (a retried turn) runs its tool once; the second
    outcome is ``replayed`` with the stored value."""
    recording = record_replay(sim, "openai-chat", tmp_path)
    for _ in range(2):
        sim.add_recording(recording)
    first = turn(clients, "openai-chat", executor)
    second = turn(clients, "openai-chat", executor)
    assert [o.status for o in first] == ["completed"]
    assert [o.status for o in second] == ["replayed"]
    assert second[0].value == first[0].value
    assert len(ran) == 1


def test_replayed_turn_after_a_restart_runs_the_tool_once(
    sim: Simulator, clients: Clients, tools: toolwire.Toolbox, ran: Ran, tmp_path: Path
) -> None:
    """A new executor on the same SQLite store (a restarted process) replays the stored
    outcome instead of running the tool again."""
    recording = record_replay(sim, "openai-chat", tmp_path)
    for _ in range(2):
        sim.add_recording(recording)
    path = tmp_path / "toolwire.db"
    statuses = []
    for _ in range(2):
        store = toolwire.SQLiteStore(str(path))
        try:
            executor = toolwire.Executor(tools, store=store, scope="compare", timeout=10)
            statuses += [o.status for o in turn(clients, "openai-chat", executor)]
        finally:
            store.close()
    assert statuses == ["completed", "replayed"]
    assert len(ran) == 1


def test_a_regenerated_call_is_a_new_call(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran
) -> None:
    """The same arguments in a new response (new response and call ids: the model asked
    again) are a new call and run again; only a replay of the same response is deduped."""
    for _ in range(2):
        sim.add_response(tool_calls=[WRITE])
    statuses = [o.status for _ in range(2) for o in turn(clients, "openai-chat", executor)]
    assert statuses == ["completed", "completed"]
    assert ran == [WRITE, WRITE]


# ----------------------------------------------------------------- 7. deadlines


def test_stall_mid_stream_ends_in_an_idle_stream_timeout(
    sim: Simulator, clients: Clients, executor: toolwire.Executor, ran: Ran
) -> None:
    """A stall mid-body raises StreamTimeout(kind="idle") at the idle deadline."""
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    start = time.perf_counter()
    with pytest.raises(toolwire.StreamTimeout) as caught:
        turn(clients, "openai-chat", executor, idle_timeout=TIMEOUT)
    elapsed = time.perf_counter() - start
    assert caught.value.kind == "idle"
    assert isinstance(caught.value, TimeoutError)
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND
    assert ran == []


def test_stall_before_the_first_event_ends_in_a_first_event_timeout(
    sim: Simulator, clients: Clients, executor: toolwire.Executor
) -> None:
    """Headers then silence raises StreamTimeout(kind="first_event") at that deadline."""
    sim.add_response(tool_calls=[WRITE], faults=[f"stall-first:{STALL}"])
    start = time.perf_counter()
    with pytest.raises(toolwire.StreamTimeout) as caught:
        turn(clients, "openai-chat", executor, first_event_timeout=TIMEOUT)
    assert caught.value.kind == "first_event"
    assert time.perf_counter() - start < TIMEOUT + BOUND
