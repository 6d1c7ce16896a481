"""run_turn's contract: what it accepts, what a turn says, which errors reach the caller
(a stream that did not end properly raises its StreamError and runs nothing), and the
caller mistakes it refuses."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

import toolwire
from toolwire import UsageError
from toolwire._turn.run import _TurnRun, _TurnSettings
from toolwire.testing import Simulator
from turn_support import counted_tools

MESSAGES = [{"role": "user", "content": "Weather in Lyon?"}]
LYON = [("get_weather", {"city": "Lyon"})]


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=4) as simulator:
        yield simulator


@pytest.fixture
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    """An OpenAI client on the simulator, without retries of its own."""
    with openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as c:
        yield c


@pytest.fixture
def runs() -> Counter[str]:
    """Tool executions by idempotency key."""
    return Counter()


@pytest.fixture
def tools(runs: Counter[str]) -> toolwire.Toolbox:
    """The counted toolbox."""
    return counted_tools(runs)


@pytest.fixture
def executor(tools: toolwire.Toolbox) -> toolwire.Executor:
    """An executor over the counted toolbox."""
    return toolwire.Executor(tools, scope="contract")


def test_a_tool_turn_runs_its_calls_and_is_not_done(
    sim: Simulator, client: openai.OpenAI, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """A response with calls: they run, the turn is not done, usage is the stream's."""
    sim.add_response(tool_calls=LYON, usage=(50, 9))
    turn = toolwire.run_turn(
        client.chat.completions.create(
            model="m", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        ),
        tools,
        executor=executor,
    )
    assert not turn.done and turn.aborted is None
    assert [o.value for o in turn.outcomes] == ["Sunny in Lyon"]
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (50, 9)
    assert turn.usage is turn.response.usage
    assert [m["role"] for m in turn.messages] == ["assistant", "tool"]


def test_a_text_turn_is_done(
    sim: Simulator, client: openai.OpenAI, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """No call and no rejected call: done, the assistant message is the only message."""
    sim.add_response(text="Sunny.")
    turn = toolwire.run_turn(
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True),
        tools,
        executor=executor,
    )
    assert turn.done and turn.outcomes == []
    assert turn.messages == [{"role": "assistant", "content": "Sunny."}]


@pytest.mark.parametrize(
    ("fault", "error"),
    [
        ("cut:0.7", toolwire.StreamAborted),
        ("length", toolwire.TokenLimitExceeded),
        ("error-event", toolwire.ProviderError),
        ("no-terminal", toolwire.StreamAborted),
    ],
)
def test_a_stream_that_did_not_end_properly_raises_and_runs_nothing(
    sim: Simulator,
    client: openai.OpenAI,
    tools: toolwire.Toolbox,
    executor: toolwire.Executor,
    runs: Counter[str],
    fault: str,
    error: type[toolwire.StreamError],
) -> None:
    """Cut, token limit, error event, no terminal event: the StreamError is raised with
    what arrived in .partial, and no tool ran."""
    sim.add_response(text="On it.", tool_calls=LYON, faults=[fault])
    with pytest.raises(error) as caught:
        toolwire.run_turn(
            lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),
            tools,
            executor=executor,
        )
    assert caught.value.partial is not None and caught.value.partial.format == "openai-chat"
    assert runs == Counter()


def test_a_stall_past_the_idle_deadline_raises_a_timeout(
    sim: Simulator, client: openai.OpenAI, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """A stream that stalls longer than idle_timeout raises StreamTimeout; nothing ran."""
    sim.add_response(text="Checking the weather now.", tool_calls=LYON, faults=["stall:5"])
    with pytest.raises(toolwire.StreamTimeout) as caught:
        toolwire.run_turn(
            client.chat.completions.create(model="m", messages=MESSAGES, stream=True),
            tools,
            executor=executor,
            idle_timeout=0.3,
        )
    assert caught.value.kind == "idle"


@pytest.mark.parametrize("kind", ["chat-manager", "responses-manager", "anthropic-create"])
def test_the_sdks_streams_and_managers_are_accepted(
    sim: Simulator, tools: toolwire.Toolbox, executor: toolwire.Executor, kind: str
) -> None:
    """The SDKs' .stream() managers (entered or not) and create(stream=True) all work."""
    import anthropic

    sim.add_response(tool_calls=LYON)
    definitions = tools.definitions("openai-responses" if kind == "responses-manager" else "openai")
    with (
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t") as oai,
        anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t") as claude,
    ):
        source: Any
        if kind == "chat-manager":
            source = oai.chat.completions.stream(model="m", messages=MESSAGES, tools=definitions)  # type: ignore[arg-type]
        elif kind == "responses-manager":
            source = oai.responses.stream(model="m", input="Weather?", tools=definitions)  # type: ignore[arg-type]
        else:
            source = claude.messages.create(
                model="m",
                max_tokens=100,
                messages=MESSAGES,
                stream=True,  # type: ignore[arg-type]
            )
        turn = toolwire.run_turn(source, tools, executor=executor)
    assert [o.status for o in turn.outcomes] == ["completed"]


def test_httpx_responses_and_iterables_are_accepted(
    sim: Simulator, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """An httpx.Response (or client.stream() manager) and a list of payloads both work."""
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    sim.add_response(tool_calls=[("get_weather", {"city": "Paris"})])
    with httpx.Client(base_url=sim.url) as http:
        turn = toolwire.run_turn(
            http.stream("POST", "/v1/chat/completions", json=body), tools, executor=executor
        )
    assert turn.outcomes[0].value == "Sunny in Paris"
    payloads = [
        {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a",
         "function": {"name": "get_weather", "arguments": '{"city": "Nice"}'}}]}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    turn = toolwire.run_turn(payloads, tools, executor=executor, format="openai")
    assert turn.outcomes[0].value == "Sunny in Nice"


def _nice(call: str, arguments: str = '{"city": "Nice"}') -> list[dict[str, Any]]:
    """An OpenAI chat stream, as payloads, of one get_weather call with ``arguments``."""
    function = {"name": "get_weather", "arguments": arguments}
    return [
        {"id": call, "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": call, "function": function}]}}]},
        {"id": call, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip


def test_the_executor_alone_gives_run_turn_its_tools(
    tools: toolwire.Toolbox, executor: toolwire.Executor, runs: Counter[str]
) -> None:
    """``run_turn(source, executor=...)`` validates, runs and early-aborts with the
    executor's toolbox; the same toolbox given positionally still works."""
    turn = toolwire.run_turn(_nice("c1"), executor=executor, format="openai")
    assert [o.value for o in turn.outcomes] == ["Sunny in Nice"] and sum(runs.values()) == 1
    turn = toolwire.run_turn(_nice("c2"), tools, executor=executor, format="openai")
    assert [o.value for o in turn.outcomes] == ["Sunny in Nice"] and sum(runs.values()) == 2
    bad = toolwire.run_turn(_nice("c3", '{"city": 5, '), executor=executor, format="openai")
    assert bad.aborted is not None and bad.aborted.kind == "invalid_arguments"
    assert sum(runs.values()) == 2


def test_the_async_executor_alone_gives_arun_turn_its_tools(
    tools: toolwire.Toolbox, runs: Counter[str]
) -> None:
    """``await arun_turn(source, executor=...)`` runs the call with the executor's tools."""

    async def payloads() -> Any:
        for payload in _nice("c1"):
            yield payload

    async def run() -> toolwire.Turn:
        executor = toolwire.AsyncExecutor(tools, scope="async-alone")
        return await toolwire.arun_turn(payloads(), executor=executor, format="openai")

    turn = asyncio.run(run())
    assert [o.value for o in turn.outcomes] == ["Sunny in Nice"] and sum(runs.values()) == 1


def test_a_whole_response_is_refused_naming_the_streaming_call(
    sim: Simulator, client: openai.OpenAI, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """A non-streamed ChatCompletion cannot be streamed: the error names the call that
    works."""
    sim.add_response(text="Sunny.")
    whole = client.chat.completions.create(model="m", messages=MESSAGES)  # type: ignore[arg-type]
    with pytest.raises(toolwire.SettingsError, match=r"stream=True"):
        toolwire.run_turn(whole, tools, executor=executor)


def test_a_source_of_the_other_kind_names_the_other_turn_function(
    sim: Simulator, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """An AsyncOpenAI stream given to run_turn is refused, pointing at arun_turn."""

    async def make() -> Any:
        async with openai.AsyncOpenAI(base_url=sim.base_url("openai-chat"), api_key="t") as c:
            stream = c.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # type: ignore[arg-type]
            with pytest.raises(toolwire.SettingsError, match=r"toolwire\.arun_turn\(\)"):
                toolwire.run_turn(stream, tools, executor=executor)
            stream.close()  # the coroutine was never awaited: no request was made

    asyncio.run(make())
    assert sim.requests == []


def test_http_errors_reach_the_caller_as_the_sdks_own_exceptions(
    sim: Simulator, client: openai.OpenAI, tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """A 429 (the client's own retries off) is openai.RateLimitError."""
    sim.add_response(faults=["http:429"])
    with pytest.raises(openai.RateLimitError):
        toolwire.run_turn(
            lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),
            tools,
            executor=executor,
        )


def test_caller_mistakes_are_usage_errors(
    tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """A wrong executor kind names the other function; another toolbox's executor, a bad
    on_event, turn or early_abort are refused before anything is read."""
    source: list[Any] = []
    with pytest.raises(UsageError, match="arun_turn"):
        toolwire.run_turn(source, tools, executor=toolwire.AsyncExecutor(tools, scope="s"))  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="run_turn"):
        asyncio.run(toolwire.arun_turn(source, tools, executor=executor))  # type: ignore[arg-type]
    with pytest.raises(toolwire.SettingsError, match=r"another Toolbox.*executor=executor"):
        toolwire.run_turn(source, counted_tools(Counter()), executor=executor)
    async_executor = toolwire.AsyncExecutor(tools, scope="s")
    with pytest.raises(toolwire.SettingsError, match=r"another Toolbox.*arun_turn\(source"):
        asyncio.run(toolwire.arun_turn(source, toolwire.Toolbox(), executor=async_executor))
    for bad in ({"on_event": 3}, {"turn": ""}, {"early_abort": "yes"}):
        with pytest.raises(UsageError):
            toolwire.run_turn(source, tools, executor=executor, **bad)  # type: ignore[arg-type]


def test_json_events_are_built_only_when_read(
    tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """Early abort or an on_event reader turn JSON events on; otherwise the assembler runs
    preview-only."""

    def plan(*, early_abort: bool = True, on_event: Any = None) -> _TurnRun:
        settings = _TurnSettings(
            format="auto",
            early_abort=early_abort,
            first_event_timeout=600.0,
            idle_timeout=120.0,
            total_timeout=None,
            on_event=on_event,
            turn=None,
            prices=None,
            output=None,
            output_tool=None,
        )
        return _TurnRun(toolwire.StreamHandle, [], tools, executor, toolwire.Executor, settings)

    assert plan().json_events
    assert plan(early_abort=False, on_event=print).json_events
    assert not plan(early_abort=False).json_events
    seen: list[Any] = []
    payloads = [
        {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a",
         "function": {"name": "get_weather", "arguments": '{"city": "Nice"}'}}]}}]},
        {"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    toolwire.run_turn(payloads, tools, executor=executor, early_abort=False, on_event=seen.append)
    args = [e for e in seen if isinstance(e, toolwire.ToolCallArguments)]
    assert args and args[0].json_events


def test_a_cancelled_async_turn_closes_its_stream_and_reraises(
    sim: Simulator, tools: toolwire.Toolbox, runs: Counter[str]
) -> None:
    """Cancelling arun_turn while the stream stalls re-raises CancelledError, after the
    connection was closed; nothing ran."""
    sim.add_response(text="Checking.", tool_calls=LYON, faults=["stall:10"])

    async def run() -> None:
        executor = toolwire.AsyncExecutor(tools, scope="cancelled")
        async with openai.AsyncOpenAI(
            base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0
        ) as client:
            task = asyncio.ensure_future(
                toolwire.arun_turn(
                    client.chat.completions.create(model="m", messages=MESSAGES, stream=True),  # type: ignore[arg-type]
                    tools,
                    executor=executor,
                )
            )
            await asyncio.sleep(0.5)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task

    asyncio.run(run())
    record = sim.requests[0]
    assert record.finished.wait(5) and record.client_closed and not record.completed
    assert runs == Counter()


def test_stream_handles_expose_their_http_response_and_take_json_events(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """stream() keeps the httpx response under an SDK stream (None for an iterable), and
    json_events=False hands out argument events without JSON events."""
    sim.add_response(tool_calls=LYON)
    source = client.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    with toolwire.stream(source, json_events=False) as handle:
        events = list(handle)
    assert handle.http_response is not None
    assert b'"Weather in Lyon?"' in handle.http_response.request.content
    args = [e for e in events if isinstance(e, toolwire.ToolCallArguments)]
    assert args and all(e.json_events == () for e in args)
    with toolwire.stream([]) as empty:
        assert empty.http_response is None


def test_an_unknown_keyword_is_a_type_error_naming_the_function(
    tools: toolwire.Toolbox, executor: toolwire.Executor
) -> None:
    """An unknown keyword is Python's TypeError naming run_turn and the keyword (Python
    3.13 adds a suggestion of the closest name)."""
    with pytest.raises(
        TypeError,
        match=r"^run_turn\(\) got an unexpected keyword argument 'fromat'"
        r"(\. Did you mean 'format'\?)?$",
    ):
        toolwire.run_turn([], tools, executor=executor, fromat="auto")  # type: ignore[call-arg]


def _wipe_turn(fragments: list[str]) -> list[dict[str, Any]]:
    """An Anthropic turn whose one ``wipe_disk`` call carries its input at the start."""
    block = {"type": "tool_use", "id": "toolu_w", "name": "wipe_disk"}
    return [
        {"type": "message_start", "message": {"id": "msg_w", "type": "message",
         "role": "assistant", "model": "claude-test", "content": [],
         "usage": {"input_tokens": 9, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {**block, "input": {"device": "/dev/sdz-scratch"}}},
        *({"type": "content_block_delta", "index": 0,
           "delta": {"type": "input_json_delta", "partial_json": f}} for f in fragments),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 5}},
        {"type": "message_stop"},
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("fragments", "wiped"),
    [([""], ["/dev/sdz-scratch"]), (["", '{"device": "/dev/sda"}'], [])],
)
def test_a_start_input_is_what_the_tool_runs_with_or_nothing_runs(
    fragments: list[str], wiped: list[str]
) -> None:
    """The executor runs a call with its start input, never with the tool's defaults, and
    runs nothing when the fragments contradict the start input."""
    ran: list[str] = []
    box = toolwire.Toolbox()

    @box.tool
    def wipe_disk(device: str = "/dev/sda") -> str:
        """Wipe a disk."""
        ran.append(device)
        return f"wiped {device}"

    executor = toolwire.Executor(box, store=toolwire.MemoryStore(), scope="wipe")
    turn = toolwire.run_turn(_wipe_turn(fragments), box, executor=executor)
    assert ran == wiped
    (outcome,) = turn.outcomes
    if wiped:
        assert (outcome.status, outcome.value) == ("completed", f"wiped {wiped[0]}")
    else:
        assert outcome.status == "rejected" and "contradict" in json.dumps(turn.messages)
