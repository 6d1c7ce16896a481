"""Early abort through the real SDK clients and the simulator: once a call can never run,
the turn stops reading and closes the connection before the rest of the body was sent;
nothing runs; the continuation is accepted by the provider's request checks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

import toolwire
from simulator_support import Clients
from toolwire.testing import RecordedRequest, Simulator
from turn_support import FORMATS, TEXT_ARGUMENTS, Conversation, counted_tools, refused

CONTENT = "print('hello, world')\n" * 400  # about 9 KB of arguments the model would stream
DRIP = ["drip:20000"]  # 20 KB/s: a model streaming fast, yet slower than the turn reacts


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=5) as simulator:
        yield simulator


@pytest.fixture
def clients(sim: Simulator) -> Iterator[Clients]:
    """The seven SDK clients, closed after the test."""
    made = Clients(sim)
    yield made
    made.close()


def _bad_write(fmt: str) -> list[Any]:
    """A response whose first call can never run (``path`` is a number). Where arguments
    stream as text, ``path`` comes first and the big ``content`` after it; where each
    call arrives whole, two big valid calls follow it."""
    if fmt in TEXT_ARGUMENTS:
        return [("write_file", {"path": 42, "content": CONTENT})]
    return [
        ("write_file", {"path": 42, "content": "x"}),
        ("write_file", {"path": "a.py", "content": CONTENT}),
        ("write_file", {"path": "b.py", "content": CONTENT}),
    ]


def _closed_early(sim: Simulator) -> RecordedRequest:
    """The first request, once the simulator is done with it; it must have been left by
    the client with part of its body unsent."""
    record = sim.requests[0]
    assert record.finished.wait(10)
    assert record.client_closed and not record.completed, record.notes
    assert record.bytes_sent < record.body_bytes, (record.bytes_sent, record.body_bytes)
    return record


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_invalid_value_stops_the_stream_and_the_continuation_is_accepted(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """A completed argument that violates the schema ends the turn at once: the connection
    closes with most of the body unsent, nothing runs, the model is told what was wrong,
    and the next request carrying the continuation is accepted."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope=f"abort-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    sim.add_response(text="Writing it.", tool_calls=_bad_write(fmt), faults=DRIP)
    sim.add_response(text="Sorry, fixed.")
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is not None and not turn.done
    assert (turn.aborted.kind, turn.aborted.name, turn.aborted.path) == (
        "invalid_arguments",
        "write_file",
        ("path",),
    )
    assert runs == Counter()
    rejected = turn.outcomes[0]
    assert rejected.status == "rejected" and rejected.error is not None
    assert "at path: expected a string" in rejected.error
    assert (
        rejected.error.endswith(
            "The response was stopped at this call, so nothing in this turn ran."
        )
        or "were dropped" in rejected.error
    )
    record = _closed_early(sim)
    print(f"\n{fmt}: {record.bytes_sent} of {record.body_bytes} body bytes read")
    if fmt in TEXT_ARGUMENTS:  # the content never streamed
        assert record.bytes_sent < record.body_bytes / 4
    conversation.messages += turn.messages
    after = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert refused(sim) == [] and after.done


@pytest.mark.parametrize(
    ("fmt", "path", "body"),
    [
        ("gemini", "/v1beta/models/m:streamGenerateContent?alt=sse",
         {"contents": [{"role": "user", "parts": [{"text": "Write a.py"}]}]}),
        ("ollama", "/api/chat",
         {"model": "m", "messages": [{"role": "user", "content": "Write a.py"}], "stream": True}),
    ],
)  # fmt: skip
def test_over_httpx_the_generator_formats_stop_at_once(
    sim: Simulator, fmt: str, path: str, body: dict[str, Any]
) -> None:
    """google-genai's and ollama's clients read through generators that hide their socket,
    so their connection closes only when the read in progress returns; an httpx response
    of the same request is closed at once, most of the body unsent."""
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope=f"httpx-{fmt}")
    sim.add_response(text="Writing it.", tool_calls=_bad_write(fmt), faults=DRIP)
    with httpx.Client(base_url=sim.url) as http:
        turn = toolwire.run_turn(
            lambda: http.stream("POST", path, json=body), tools, executor=executor
        )
    assert turn.aborted is not None and turn.aborted.path == ("path",)
    record = _closed_early(sim)
    print(f"\n{fmt} over httpx: {record.bytes_sent} of {record.body_bytes} body bytes read")
    assert record.bytes_sent < record.body_bytes / 4


def test_an_unknown_tool_stops_at_its_name(sim: Simulator, clients: Clients) -> None:
    """A call to a tool the toolbox lacks stops the stream at its name; the complete call
    before it is repeated as skipped, the unknown one answered with the known tools."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="unknown")
    conversation = Conversation("anthropic", clients, tools)
    sim.add_response(
        tool_calls=[
            ("get_weather", {"city": "Lyon"}),
            ("delete_everything", {"really": True, "notes": CONTENT}),
        ],
        faults=DRIP,
    )
    sim.add_response(text="Only the weather, then.")
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is not None and turn.aborted.kind == "unknown_tool"
    assert turn.aborted.name == "delete_everything"
    assert [o.status for o in turn.outcomes] == ["skipped", "rejected"]
    assert 'There is no tool named "delete_everything"' in (turn.outcomes[1].error or "")
    assert '"get_weather", "write_file"' in (turn.outcomes[1].error or "")
    assert runs == Counter()
    _closed_early(sim)
    conversation.messages += turn.messages
    assert toolwire.run_turn(conversation.request(), tools, executor=executor).done
    assert refused(sim) == []


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic", "bedrock-converse"])
def test_arguments_that_stop_being_json_stop_the_stream_at_that_character(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """Arguments invalid at a character (a missing comma) stop the stream there; the raw
    text that arrived is sent back with the reason and the offset."""
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope=f"json-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    raw = '{"path": "a.py" "content": "' + CONTENT.replace("\n", "\\n") + '"}'
    sim.add_response(tool_calls=[("write_file", raw)], faults=DRIP)
    sim.add_response(text="Fixed.")
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is not None and turn.aborted.kind == "invalid_json"
    assert turn.aborted.offset == raw.index('"content"')
    assert turn.response.rejected[0].raw_arguments.startswith('{"path": "a.py" "')
    record = _closed_early(sim)
    assert record.bytes_sent < record.body_bytes / 4
    conversation.messages += turn.messages
    assert toolwire.run_turn(conversation.request(), tools, executor=executor).done
    assert refused(sim) == []


@pytest.mark.parametrize("fmt", ["openai-chat", "anthropic"])
def test_a_repeated_key_stops_the_stream_at_that_key(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """Arguments that give a key twice (the preview shows the first value, ``json.loads``
    keeps the last) stop the stream at the repeated key; nothing runs, the model is told
    which key, and the continuation is accepted."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope=f"dup-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    content = CONTENT.replace("\n", "\\n")
    raw = '{"path": "drafts/old.txt", "path": "reports/final.txt", "content": "' + content + '"}'
    sim.add_response(tool_calls=[("write_file", raw)], faults=DRIP)
    sim.add_response(text="Fixed.")
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is not None
    assert (turn.aborted.kind, turn.aborted.path) == ("duplicate_key", ("path",))
    assert turn.aborted.offset == raw.index('"path"', 2)
    assert 'the key "path" more than once' in turn.aborted.reason
    assert runs == Counter()
    record = _closed_early(sim)
    assert record.bytes_sent < record.body_bytes / 4
    conversation.messages += turn.messages
    assert toolwire.run_turn(conversation.request(), tools, executor=executor).done
    assert refused(sim) == []


def test_calls_still_arriving_are_dropped_and_the_model_is_told(
    sim: Simulator, clients: Clients
) -> None:
    """OpenAI interleaves parallel calls: a call still streaming when another proves
    invalid is dropped from the turn, and the offending call's result says so."""
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope="dropped")
    conversation = Conversation("openai-chat", clients, tools)
    sim.add_response(
        tool_calls=[
            ("write_file", {"path": "a.py", "content": CONTENT}),
            ("get_weather", {"city": ["Lyon"]}),
        ],
        faults=DRIP,
    )
    sim.add_response(text="Fixed.")
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is not None and turn.aborted.name == "get_weather"
    partial = turn.aborted.partial
    assert partial is not None and len(partial.calls) == 2
    assert [c.name for c in turn.response.tool_calls + turn.response.rejected] == ["get_weather"]
    assert "were dropped" in (turn.outcomes[0].error or "")
    _closed_early(sim)
    conversation.messages += turn.messages
    assert toolwire.run_turn(conversation.request(), tools, executor=executor).done
    assert refused(sim) == []


def test_without_early_abort_the_whole_body_is_read(sim: Simulator, clients: Clients) -> None:
    """early_abort=False reads to the end: the body is sent whole, the call is rejected by
    the executor, the other skipped."""
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope="no-abort")
    conversation = Conversation("anthropic", clients, tools)
    sim.add_response(tool_calls=_bad_write("anthropic"), faults=["drip:200000"])
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor, early_abort=False)
    assert turn.aborted is None
    assert [o.status for o in turn.outcomes] == ["rejected"]
    record = sim.requests[0]
    assert record.finished.wait(10) and record.completed
    assert record.bytes_sent == record.body_bytes


def test_run_on_rejection_reads_to_the_end_and_runs_the_valid_calls(
    sim: Simulator, clients: Clients
) -> None:
    """With run_on_rejection=True the other calls could run, so no early abort: the valid
    call runs once, the invalid one is rejected."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="run-anyway", run_on_rejection=True)
    conversation = Conversation("openai-chat", clients, tools)
    sim.add_response(tool_calls=[("get_weather", {"city": "Lyon"}), ("get_weather", {"city": 5})])
    turn = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert turn.aborted is None
    assert [o.status for o in turn.outcomes] == ["completed", "rejected"]
    assert sum(runs.values()) == 1


def test_on_event_sees_every_event_up_to_the_stop(sim: Simulator, clients: Clients) -> None:
    """on_event receives the events as they arrive, the offending call's included; the
    argument events name their call."""
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope="events")
    conversation = Conversation("openai-chat", clients, tools)
    sim.add_response(tool_calls=_bad_write("openai-chat"), faults=DRIP)
    seen: list[toolwire.ToolCallArguments] = []

    def watch(event: object) -> None:
        if isinstance(event, toolwire.ToolCallArguments):
            seen.append(event)

    turn = toolwire.run_turn(conversation.request(), tools, executor=executor, on_event=watch)
    assert turn.aborted is not None
    assert seen and {(e.name, e.key) for e in seen} == {("write_file", 0)}
    assert "".join(e.delta for e in seen).startswith('{"path":42')
