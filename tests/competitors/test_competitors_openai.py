"""openai-python on the comparison scenarios: the Chat Completions stream helper
(``client.chat.completions.stream(...)`` and ``get_final_completion()``), its accumulator
``ChatCompletionStreamState``, and the Responses tool runner
(``openai.lib.responses_tool_runner.ResponsesToolRunner``, shipped in the package but not
exported from ``openai`` nor described in its README) where a row is about execution.

Tested with openai 3.63.0 (on httpx2 2.17.0, jiter 0.19.0). Each test states what the
library does today; when it changes, the test fails and the README table must change.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai.lib.responses_tool_runner import (
    RegisteredFunction,
    ResponsesToolCheckpoint,
    ResponsesToolLedger,
    ResponsesToolRunner,
    ToolRunnerError,
)
from openai.lib.streaming.chat import ChatCompletionStreamState

from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    PARSEABLE_AT_LIMIT,
    RECORD,
    REPLAY_CALL,
    REPLAY_ID,
    STALL,
    TIMEOUT,
    TRUNCATED_ARGS,
    USER,
    WRITE,
    WRITE_ARGS,
    WRITE_SCHEMA,
    changed_numbers,
    fresh_simulator,
    openai_tools,
    record_replay,
)
from toolwire.testing import Simulator

# a competitor's behaviour: run once, on the main Python (make test-pythons skips it)
pytestmark = pytest.mark.compare

MESSAGES: Any = [{"role": "user", "content": USER}]
FULL = json.dumps(WRITE_ARGS, separators=(",", ":"))


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


@pytest.fixture
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    """An OpenAI client on the simulator's chat endpoint, no retries."""
    made = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    yield made
    made.close()


def helper(client: openai.OpenAI, *, strict: bool = False) -> tuple[Any, list[Any]]:
    """The stream helper read to its end: (``get_final_completion()``, the events that are
    not chunks or argument deltas)."""
    events = []
    with client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, tools=openai_tools(strict=strict)
    ) as stream:
        for event in stream:
            if event.type not in ("chunk", "tool_calls.function.arguments.delta"):
                events.append(event)
        return stream.get_final_completion(), events


def calls_of(completion: Any) -> list[tuple[str, str]]:
    """(name, raw arguments) of every call in a completion's first choice."""
    return [
        (call.function.name, call.function.arguments)
        for call in completion.choices[0].message.tool_calls or []
    ]


# ---------------------------------------------------------------- 1. cut streams


def test_cut_mid_arguments_raises_api_connection_error(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """A connection cut inside the arguments makes the helper raise APIConnectionError."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    with pytest.raises(openai.APIConnectionError):
        helper(client)


def test_accumulator_hands_out_the_cut_call_as_final(sim: Simulator, client: openai.OpenAI) -> None:
    """After a cut, ChatCompletionStreamState.get_final_completion() returns the call with
    its truncated arguments and finish_reason None, without an error."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    state = ChatCompletionStreamState()
    stream = client.chat.completions.create(
        model="gpt-4o", messages=MESSAGES, tools=openai_tools(), stream=True
    )
    with pytest.raises(openai.APIConnectionError):
        for chunk in stream:
            state.handle_chunk(chunk)
    completion = state.get_final_completion()
    [(name, arguments)] = calls_of(completion)
    assert name == "write_file"
    assert completion.choices[0].finish_reason is None
    assert FULL.startswith(arguments) and len(arguments) < len(FULL)


# ------------------------------------------------------------ 3. missing finish


def test_missing_finish_is_returned_as_complete(sim: Simulator, client: openai.OpenAI) -> None:
    """A body that ends without a finish chunk is returned as a final completion with
    finish_reason None and the call, without an error."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    completion, _ = helper(client)
    assert completion.choices[0].finish_reason is None
    assert calls_of(completion) == [("write_file", FULL)]


def test_missing_finish_returns_unterminated_arguments(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """Without a finish and with cut arguments, a non-strict tool's call comes back with
    its unterminated arguments, without an error."""
    sim.add_response(tool_calls=[("write_file", TRUNCATED_ARGS)], faults=["no-terminal"])
    completion, _ = helper(client)
    assert calls_of(completion) == [("write_file", TRUNCATED_ARGS)]


def test_missing_finish_with_a_strict_tool_raises_json_decode_error(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """With a strict tool, unterminated arguments raise json.JSONDecodeError (not an SDK
    error) from get_final_completion()."""
    sim.add_response(tool_calls=[("write_file", TRUNCATED_ARGS)], faults=["no-terminal"])
    with pytest.raises(json.JSONDecodeError):
        helper(client, strict=True)


# ---------------------------------------------------------- 2. max_tokens truncation


def test_length_finish_raises_after_the_done_event_fired(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """finish_reason ``length`` makes get_final_completion() raise LengthFinishReasonError,
    but the ``arguments.done`` event has already fired with the truncated arguments."""
    sim.add_response(tool_calls=[WRITE], faults=["length"])
    done: list[Any] = []
    with client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, tools=openai_tools()
    ) as stream:
        done.extend(e for e in stream if e.type == "tool_calls.function.arguments.done")
        with pytest.raises(openai.LengthFinishReasonError):
            stream.get_final_completion()
    [event] = done
    assert FULL.startswith(event.arguments) and len(event.arguments) < len(FULL)


def test_length_finish_with_a_strict_tool_raises_while_streaming(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """With a strict tool, LengthFinishReasonError is raised by the iteration itself, at
    the finish chunk, before any ``arguments.done`` event."""
    sim.add_response(tool_calls=[WRITE], faults=["length"])
    seen: list[str] = []
    with (
        client.chat.completions.stream(
            model="gpt-4o", messages=MESSAGES, tools=openai_tools(strict=True)
        ) as stream,
        pytest.raises(openai.LengthFinishReasonError),
    ):
        seen.extend(event.type for event in stream)
    assert "tool_calls.function.arguments.done" not in seen


def test_length_finish_with_parseable_arguments_raises(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """finish_reason ``length`` raises LengthFinishReasonError even when the arguments
    parse."""
    sim.add_response(tool_calls=[("write_file", PARSEABLE_AT_LIMIT)], finish="length")
    with pytest.raises(openai.LengthFinishReasonError):
        helper(client)


def test_vllm_unterminated_arguments_returned_as_a_tool_call(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """vLLM's finish ``tool_calls`` over cut JSON: a non-strict tool's call is returned
    with the unterminated arguments and no error."""
    sim.add_response(tool_calls=[WRITE], profile="unterminated-arguments")
    completion, _ = helper(client)
    assert completion.choices[0].finish_reason == "tool_calls"
    [(name, arguments)] = calls_of(completion)
    assert name == "write_file"
    assert FULL.startswith(arguments) and len(arguments) < len(FULL)


def test_vllm_unterminated_arguments_with_a_strict_tool_raise_json_decode_error(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """The same stream with a strict tool raises json.JSONDecodeError (not an SDK error)."""
    sim.add_response(tool_calls=[WRITE], profile="unterminated-arguments")
    with pytest.raises(json.JSONDecodeError):
        helper(client, strict=True)


# ------------------------------------------------------------- 4. parallel calls


def test_interleaved_calls_are_right_but_done_events_fire_early(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """Three interleaved calls assemble right, but every ``arguments.done`` event fires
    when another index shows up, with the call's arguments still incomplete."""
    sim.add_response(tool_calls=CALLS3)
    completion, events = helper(client)
    wanted = [("get_weather", json.dumps({"city": c}, separators=(",", ":"))) for c in CITIES]
    assert calls_of(completion) == wanted
    done = [e.arguments for e in events if e.type == "tool_calls.function.arguments.done"]
    assert len(done) == 3
    assert all(
        full.startswith(text) and text != full for text, (_, full) in zip(done, wanted, strict=True)
    )


def test_all_index_0_merges_the_calls_into_one(sim: Simulator, client: openai.OpenAI) -> None:
    """Every call at index 0 (Ollama /v1, Groq): one call whose id, name and arguments are
    the three concatenated."""
    sim.add_response(tool_calls=CALLS3, profile="all-index-0")
    completion, _ = helper(client)
    [call] = completion.choices[0].message.tool_calls
    assert call.function.name == "get_weather" * 3
    assert call.function.arguments == "".join(
        json.dumps({"city": c}, separators=(",", ":")) for c in CITIES
    )


def test_repeated_names_are_concatenated(sim: Simulator, client: openai.OpenAI) -> None:
    """A name re-sent in every chunk (MiniMax via NIM) is concatenated: three calls named
    ``get_weatherget_weather...``, none matching the tool."""
    sim.add_response(tool_calls=CALLS3, profile="repeated-names")
    completion, _ = helper(client)
    names = [name for name, _ in calls_of(completion)]
    assert len(names) == 3
    assert all(name.startswith("get_weatherget_weather") for name in names)


def test_missing_index_raises_type_error(sim: Simulator, client: openai.OpenAI) -> None:
    """Tool-call deltas without ``index`` (Gemini's OpenAI endpoint) crash the helper with
    a TypeError."""
    sim.add_response(tool_calls=CALLS3, profile="no-index")
    with pytest.raises(TypeError, match="list indices must be integers"):
        helper(client)


# ------------------------------------------------------------------- 5. previews


def test_strict_tool_preview_shows_numbers_that_change(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """A strict tool's ``parsed_arguments`` preview (jiter partial mode) shows numbers cut
    mid-digits, which later change (``12`` while ``12345`` arrives)."""
    sim.add_response(tool_calls=[RECORD])
    previews = []
    with client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, tools=openai_tools(strict=True)
    ) as stream:
        for event in stream:
            if event.type == "tool_calls.function.arguments.delta":
                shown = event.parsed_arguments
                if isinstance(shown, dict) and "amounts" in shown:
                    previews.append(list(shown["amounts"]))
    assert previews[-1] == AMOUNTS
    changed = changed_numbers(previews, AMOUNTS)
    assert changed
    assert all(str(final).startswith(str(shown)) for shown, final in changed)


def test_plain_tool_has_no_preview(sim: Simulator, client: openai.OpenAI) -> None:
    """A non-strict tool gets no parsed preview: ``parsed_arguments`` stays None."""
    sim.add_response(tool_calls=[RECORD])
    with client.chat.completions.stream(
        model="gpt-4o", messages=MESSAGES, tools=openai_tools()
    ) as stream:
        shown = [
            event.parsed_arguments
            for event in stream
            if event.type == "tool_calls.function.arguments.delta"
        ]
    assert shown and all(value is None for value in shown)


# ----------------------------------------------------------------- 7. deadlines


def test_stall_ends_only_at_the_http_read_timeout(sim: Simulator) -> None:
    """A stall mid-stream ends at the client's HTTP read timeout as APITimeoutError (an
    APIConnectionError, not a TimeoutError); the default read timeout is 600 s."""
    assert openai.DEFAULT_TIMEOUT.read == 600
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    with openai.OpenAI(
        base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0, timeout=TIMEOUT
    ) as client:
        start = time.perf_counter()
        with pytest.raises(openai.APITimeoutError) as caught:
            helper(client)
        elapsed = time.perf_counter() - start
    assert isinstance(caught.value, openai.APIConnectionError)
    assert not isinstance(caught.value, TimeoutError)
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND


# -------------------------------- the Responses tool runner (rows 1, 2, 3 and 6)

RUNNER_TOOL: Any = {
    "type": "function",
    "name": "write_file",
    "parameters": WRITE_SCHEMA,
    "strict": True,
}


class Runner:
    """A ResponsesToolRunner with one registered ``write_file`` that counts its runs."""

    def __init__(self, sim: Simulator) -> None:
        self.runs: list[dict[str, object]] = []
        self.client = openai.OpenAI(
            base_url=sim.base_url("openai-responses"), api_key="test", max_retries=0
        )

    def execute(self, arguments: dict[str, object]) -> str:
        self.runs.append(arguments)
        return "written"

    def run(self, ledger: ResponsesToolLedger | None = None) -> Any:
        """One streamed run of the loop, to the model's final answer."""
        runner = ResponsesToolRunner(
            functions=[RegisteredFunction(tool=RUNNER_TOOL, execute=self.execute)]
        )
        params: Any = {"model": "gpt-5", "input": USER}
        return runner.run(self.client, params, stream=True, ledger=ledger)


@pytest.fixture
def runner(sim: Simulator) -> Iterator[Runner]:
    """The Responses runner on the simulator's Responses endpoint."""
    made = Runner(sim)
    yield made
    made.client.close()


@pytest.mark.parametrize(
    ("arguments", "faults", "finish"),
    [
        (WRITE_ARGS, ["cut:0.5"], "auto"),
        (WRITE_ARGS, ["no-terminal"], "auto"),
        (WRITE_ARGS, ["length"], "auto"),
        (PARSEABLE_AT_LIMIT, [], "length"),
    ],
    ids=["cut", "no-terminal", "length", "length-parseable"],
)
def test_responses_runner_refuses_unfinished_turns(
    sim: Simulator, runner: Runner, arguments: Any, faults: list[str], finish: str
) -> None:
    """The Responses runner raises ToolRunnerError and runs nothing for a cut stream, a
    stream without ``response.completed`` and a token-limit (``incomplete``) response."""
    sim.add_response(tool_calls=[("write_file", arguments)], faults=faults, finish=finish)
    sim.add_response(text="Done.")
    with pytest.raises(ToolRunnerError, match="stopped before completion"):
        runner.run()
    assert runner.runs == []


def test_responses_runner_reruns_a_retried_turn(
    sim: Simulator, runner: Runner, tmp_path: Path
) -> None:
    """Without a ledger, a turn retried after its follow-up request failed runs the same
    call (same call id, same arguments) a second time."""
    recording = record_replay(sim, "openai-responses", tmp_path)
    sim.add_recording(recording)
    sim.add_response(text="x", faults=["http:500"])
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    with pytest.raises(ToolRunnerError):
        runner.run()
    runner.run()
    assert runner.runs == [REPLAY_CALL[1], REPLAY_CALL[1]]


def test_responses_runner_refuses_a_response_replayed_within_the_run(
    sim: Simulator, runner: Runner, tmp_path: Path
) -> None:
    """Within one run, the same response served again (same output item and call ids) is
    refused with ToolRunnerError, after the first execution."""
    recording = record_replay(sim, "openai-responses", tmp_path)
    sim.add_recording(recording)
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    with pytest.raises(ToolRunnerError, match="must be unique"):
        runner.run()
    assert len(runner.runs) == 1


def test_responses_runner_ledger_resume_skips_the_executed_call(
    sim: Simulator, runner: Runner, tmp_path: Path
) -> None:
    """With a ResponsesToolLedger, a retried turn resumed from the last checkpoint does not
    run the call again: it sends the recorded output and carries on."""
    recording = record_replay(sim, "openai-responses", tmp_path)
    sim.add_recording(recording)
    sim.add_response(text="x", faults=["http:500"])
    sim.add_response(text="Done.")
    saved: list[ResponsesToolCheckpoint] = []
    with pytest.raises(ToolRunnerError):
        runner.run(ResponsesToolLedger(run_id="turn-1", save=saved.append))
    final = runner.run(
        ResponsesToolLedger(run_id="turn-1", save=saved.append, resume_from=saved[-1])
    )
    assert final.output_text == "Done."
    assert len(runner.runs) == 1
    assert REPLAY_ID in saved[-1]["attempted_call_ids"]
