"""anthropic-sdk-python on the comparison scenarios: ``client.messages.stream(...)`` with
``get_final_message()`` and its ``input_json`` events, and the beta tool runner
(``client.beta.messages.tool_runner(..., stream=True)``, run with ``thread=False``: the
simulator keeps no server-side threads) counting how often its tool runs.

Tested with anthropic 2.17.0 (on httpx2 2.17.0, jiter 0.19.0), the version ``locks/dev.txt``
names. 2.17.0 wraps a cut and a stall in its own ``APIConnectionError`` and
``APITimeoutError``; 2.14 to 2.16 let httpx2's errors escape raw. Each test states what the
library does today; when it changes, the test fails and the README table must change
(``make compare-latest`` shows which claims a newer release changes).
The parallel-call quirk profiles are OpenAI-chat shapes: Anthropic's protocol streams one
content block at a time, each opened and closed explicitly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic import beta_tool

from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    PARSEABLE_AT_LIMIT,
    RECORD,
    REPLAY_CALL,
    STALL,
    TIMEOUT,
    TRUNCATED_ARGS,
    USER,
    WRITE,
    WRITE_ARGS,
    changed_numbers,
    fresh_simulator,
    record_replay,
)
from toolwire.testing import Simulator

# a competitor's behaviour: run once, on the main Python (make test-pythons skips it)
pytestmark = pytest.mark.compare

MESSAGES: Any = [{"role": "user", "content": USER}]
MODEL = "claude-sonnet-4-6"
TOOLS: Any = [
    {
        "name": "write_file",
        "description": "Write a text file.",
        "input_schema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    }
]


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


@pytest.fixture
def client(sim: Simulator) -> Iterator[anthropic.Anthropic]:
    """An Anthropic client on the simulator, no retries."""
    made = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="test", max_retries=0)
    yield made
    made.close()


def final_message(client: anthropic.Anthropic) -> Any:
    """``messages.stream(...)`` read to its end, then ``get_final_message()``."""
    with client.messages.stream(
        model=MODEL, max_tokens=4096, messages=MESSAGES, tools=TOOLS
    ) as stream:
        for _ in stream:
            pass
        return stream.get_final_message()


def tool_uses(message: Any) -> list[tuple[str, Any]]:
    """(name, input) of every tool_use block."""
    return [(b.name, b.input) for b in message.content if b.type == "tool_use"]


class Runner:
    """The beta tool runner with a ``write_file`` tool that counts its runs."""

    def __init__(self, client: anthropic.Anthropic) -> None:
        self.client = client
        self.runs: list[dict[str, str]] = []

        @beta_tool
        def write_file(path: str, content: str) -> str:
            """Write a text file."""
            self.runs.append({"path": path, "content": content})
            return "written"

        self.tool = write_file

    def run(self) -> Any:
        """One streamed run of the loop; the last message."""
        runner = self.client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=4096,
            messages=MESSAGES,
            tools=[self.tool],
            stream=True,
            thread=False,
        )
        for message_stream in runner:
            for _ in message_stream:
                pass
        return runner.until_done()


@pytest.fixture
def runner(client: anthropic.Anthropic) -> Runner:
    """The tool runner on the test's client."""
    return Runner(client)


# ---------------------------------------------------------------- 1. cut streams


def test_cut_mid_arguments_raises_its_own_connection_error(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """A cut inside the tool input raises anthropic.APIConnectionError, the transport's
    RemoteProtocolError as its cause (improved in 2.17.0: until 2.16 the raw
    httpx2.RemoteProtocolError escaped unwrapped)."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(anthropic.APIConnectionError) as caught:
        final_message(client)
    assert not isinstance(caught.value, anthropic.APITimeoutError)
    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)


def test_cut_leaves_a_plausible_partial_input_in_the_snapshot(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """After a cut, the stream's message snapshot holds the tool_use with a lenient
    partial input: a valid-looking dict that silently lacks the unfinished ``content``."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with (
        pytest.raises(anthropic.APIConnectionError),
        client.messages.stream(model=MODEL, max_tokens=4096, messages=MESSAGES) as stream,
    ):
        for _ in stream:
            pass
    assert tool_uses(stream.current_message_snapshot) == [
        ("write_file", {"path": WRITE_ARGS["path"]})
    ]


def test_runner_does_not_run_a_cut_call(sim: Simulator, runner: Runner) -> None:
    """The tool runner raises the connection error on a cut and runs nothing."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(anthropic.APIConnectionError):
        runner.run()
    assert runner.runs == []


# ------------------------------------------------------------ 3. missing finish


def test_missing_message_stop_is_returned_as_complete(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """A body without message_delta / message_stop gives a final message with stop_reason
    None and the call, without an error."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    message = final_message(client)
    assert message.stop_reason is None
    assert tool_uses(message) == [("write_file", WRITE_ARGS)]


def test_missing_message_stop_turns_cut_input_into_a_plausible_dict(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """Without message_stop and with a cut input, the final tool_use input is a valid-
    looking dict that silently lacks the unfinished ``content``."""
    sim.add_response(tool_calls=[("write_file", TRUNCATED_ARGS)], faults=["no-terminal"])
    message = final_message(client)
    assert tool_uses(message) == [("write_file", {"path": WRITE_ARGS["path"]})]


def test_runner_stops_without_running_when_message_stop_is_missing(
    sim: Simulator, runner: Runner
) -> None:
    """The tool runner treats a missing stop_reason as the end of the run: no error and
    no execution."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    message = runner.run()
    assert message.stop_reason is None
    assert runner.runs == []


# ---------------------------------------------------------- 2. max_tokens truncation


def test_max_tokens_keeps_a_plausible_partial_input(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """stop_reason ``max_tokens`` only gets recorded: no error, and the cut tool_use input
    is a dict made from the lenient partial parse."""
    sim.add_response(tool_calls=[WRITE], faults=["length"])
    message = final_message(client)
    assert message.stop_reason == "max_tokens"
    [(name, arguments)] = tool_uses(message)
    assert name == "write_file"
    assert isinstance(arguments, dict) and arguments != WRITE_ARGS
    assert arguments.get("path") == WRITE_ARGS["path"]


@pytest.mark.parametrize(
    ("arguments", "faults", "finish"),
    [(WRITE_ARGS, ["length"], "auto"), (PARSEABLE_AT_LIMIT, [], "length")],
    ids=["cut", "parseable"],
)
def test_runner_does_not_run_calls_of_a_max_tokens_turn(
    sim: Simulator, runner: Runner, arguments: Any, faults: list[str], finish: str
) -> None:
    """The tool runner ends the run at stop_reason ``max_tokens`` without running the
    call, without an error, even when the input parses."""
    sim.add_response(tool_calls=[("write_file", arguments)], faults=faults, finish=finish)
    message = runner.run()
    assert message.stop_reason == "max_tokens"
    assert runner.runs == []


# ------------------------------------------------------------- 4. parallel calls


def test_parallel_tool_use_blocks_come_out_right(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """Three calls, one content block each, give three right tool_use blocks."""
    sim.add_response(tool_calls=CALLS3)
    message = final_message(client)
    assert tool_uses(message) == [("get_weather", {"city": city}) for city in CITIES]


# ------------------------------------------------------------------- 5. previews


def test_input_json_snapshots_show_numbers_that_change(
    sim: Simulator, client: anthropic.Anthropic
) -> None:
    """The ``input_json`` events' snapshot (jiter partial mode, re-parsed on every delta)
    shows numbers cut mid-digits, which later change."""
    sim.add_response(tool_calls=[RECORD])
    previews = []
    with client.messages.stream(model=MODEL, max_tokens=4096, messages=MESSAGES) as stream:
        for event in stream:
            if event.type == "input_json" and "amounts" in event.snapshot:
                previews.append(list(event.snapshot["amounts"]))
    assert previews[-1] == AMOUNTS
    changed = changed_numbers(previews, AMOUNTS)
    assert changed
    assert all(str(final).startswith(str(shown)) for shown, final in changed)


# --------------------------------------------------------------- 6. idempotency


def test_runner_runs_a_replayed_call_again(sim: Simulator, runner: Runner, tmp_path: Path) -> None:
    """The same response (same tool_use id and input) served twice in one run makes the
    runner run the tool twice: nothing dedupes by call id or arguments."""
    recording = record_replay(sim, "anthropic", tmp_path)
    sim.add_recording(recording)
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    runner.run()
    assert runner.runs == [REPLAY_CALL[1], REPLAY_CALL[1]]


def test_runner_reruns_a_retried_turn(sim: Simulator, runner: Runner, tmp_path: Path) -> None:
    """A turn retried after its follow-up request failed runs the same call again."""
    recording = record_replay(sim, "anthropic", tmp_path)
    sim.add_recording(recording)
    sim.add_response(text="x", faults=["http:500"])
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    with pytest.raises(anthropic.InternalServerError):
        runner.run()
    runner.run()
    assert runner.runs == [REPLAY_CALL[1], REPLAY_CALL[1]]


# ----------------------------------------------------------------- 7. deadlines


def test_stall_ends_only_at_the_http_read_timeout(sim: Simulator) -> None:
    """A stall mid-stream ends at the client's HTTP read timeout, raised as
    anthropic.APITimeoutError (improved in 2.17.0: until 2.16 the raw httpx2.ReadTimeout
    escaped), which is not a TimeoutError; the default read timeout is 600 s."""
    assert anthropic.DEFAULT_TIMEOUT.read == 600
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    with anthropic.Anthropic(
        base_url=sim.base_url("anthropic"), api_key="test", max_retries=0, timeout=TIMEOUT
    ) as client:
        start = time.perf_counter()
        with pytest.raises(anthropic.APITimeoutError) as caught:
            final_message(client)
        elapsed = time.perf_counter() - start
    assert isinstance(caught.value.__cause__, httpx2.ReadTimeout)
    assert not isinstance(caught.value, TimeoutError)
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND
