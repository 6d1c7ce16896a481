"""Responses calls the client answers with an item of their own kind, through the real
openai client and the simulator (which refuses a wrong answer as the API does)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolwire
from responses_support import (
    ANSWERS,
    APPROVAL,
    CLIENT_RUN,
    CUSTOM,
    CUSTOM_DELTAS,
    NAMES,
    response_events,
    sse,
)
from simulator_support import Clients
from toolwire.testing import Simulator
from turn_support import counted_tools, refused


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=7) as simulator:
        yield simulator


@pytest.fixture
def clients(sim: Simulator) -> Iterator[Clients]:
    """The SDK clients, closed after the test."""
    made = Clients(sim)
    yield made
    made.close()


def serve(sim: Simulator, tmp_path: Path, name: str, events: list[dict[str, Any]]) -> None:
    """Queue ``events`` as a recorded body."""
    path = tmp_path / f"{name}.sse"
    path.write_bytes(sse(events))
    sim.add_recording(path)


def test_a_custom_tool_turn_is_answered_with_custom_tool_call_output(
    sim: Simulator, clients: Clients, tmp_path: Path
) -> None:
    """A custom tool call is a ToolCall of kind "custom_tool_call" answered with a
    custom_tool_call_output item, which the next request's check accepts (before, it got a
    function_call_output and the request was refused)."""
    serve(sim, tmp_path, "custom", response_events([CUSTOM], CUSTOM_DELTAS))
    sim.add_response(text="Done.")
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope="custom")
    messages: list[Any] = [{"role": "user", "content": "run it"}]
    turn = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    assert [c.kind for c in turn.response.tool_calls] == ["custom_tool_call"]
    assert not turn.done
    messages += turn.messages
    answers = [m for m in turn.messages if m.get("call_id") == "call_c" and "output" in m]
    assert [m["type"] for m in answers] == ["custom_tool_call_output"]
    last = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    assert refused(sim) == []
    assert last.done and last.response.text == "Done."


def test_unhandled_client_run_calls_are_answered_with_their_own_items(
    sim: Simulator, clients: Clients, tmp_path: Path
) -> None:
    """Computer, shell, local shell and apply_patch calls are ToolCalls of their kind (the
    turn is not done); unhandled, each gets an error answered with its own output item,
    and the next request is accepted (before, they were echoed items and the turn ended)."""
    serve(sim, tmp_path, "builtin", response_events(CLIENT_RUN))
    sim.add_response(text="Done.")
    tools = counted_tools(Counter())
    executor = toolwire.Executor(tools, scope="builtin")
    messages: list[Any] = [{"role": "user", "content": "go"}]
    turn = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor, early_abort=False,
    )  # fmt: skip
    calls = turn.response.tool_calls
    assert [(c.kind, c.name) for c in calls] == [
        (i["type"], n) for i, n in zip(CLIENT_RUN, NAMES, strict=True)
    ]
    assert calls[0].arguments == CLIENT_RUN[0]["action"]
    assert calls[3].arguments == CLIENT_RUN[3]["operation"]
    assert not turn.done
    assert all(o.status == "rejected" for o in turn.outcomes)
    assert turn.messages[:4] == CLIENT_RUN  # echoed exactly as they came
    assert [m["type"] for m in turn.messages[4:]] == ANSWERS
    failed = turn.messages[4:]
    assert failed[1]["output"][0]["outcome"] == {"type": "exit", "exit_code": 1}
    assert failed[2]["id"] == "call_ls" and failed[3]["status"] == "failed"
    messages += turn.messages
    last = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    assert refused(sim) == []
    assert last.done


PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def test_handlers_run_client_run_calls_and_answer_with_their_items(
    sim: Simulator, clients: Clients, tmp_path: Path
) -> None:
    """A handler registered with ``Toolbox.handle`` runs each call of its kind once with
    the call's action; its result is the kind's answer (a screenshot, stdout, text, a
    completed patch), and the next request is accepted."""
    serve(sim, tmp_path, "handled", response_events(CLIENT_RUN))
    sim.add_response(text="Done.")
    seen: list[tuple[str, Any]] = []
    tools = toolwire.Toolbox()

    def record(name: str, result: Any) -> Any:
        def handler(arguments: dict[str, Any], ctx: toolwire.ToolContext) -> Any:
            seen.append((name, arguments))
            return result

        return handler

    tools.handle("computer_call", record("computer", toolwire.Image(PNG, "image/png")))
    tools.handle("shell_call", record("shell", "a.py\n"))
    tools.handle("local_shell_call", record("local_shell", "ok"))
    tools.handle("apply_patch_call", record("apply_patch", "patched"))
    assert tools.definitions("openai-responses") == []
    messages: list[Any] = [{"role": "user", "content": "go"}]
    turn = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=toolwire.Executor(tools, scope="handled"),
    )  # fmt: skip
    assert [o.status for o in turn.outcomes] == ["completed"] * 4
    expected = [
        (n, i.get("action", i.get("operation"))) for n, i in zip(NAMES, CLIENT_RUN, strict=True)
    ]
    assert sorted(seen, key=str) == sorted(expected, key=str)
    computer, shell, local, patch = turn.messages[4:]
    assert computer["output"]["image_url"].startswith("data:image/png;base64,")
    assert shell["output"] == [
        {"stdout": "a.py\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}}
    ]
    assert local == {"type": "local_shell_call_output", "id": "call_ls", "output": "ok"}
    assert patch["status"] == "completed" and patch["output"] == "patched"
    messages += turn.messages
    toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=toolwire.Executor(tools, scope="handled"),
    )  # fmt: skip
    assert refused(sim) == []


def test_a_handler_never_runs_a_function_call_of_its_name() -> None:
    """A function call named ``shell`` is unknown to a shell_call handler, and a shell
    call is unknown to a function tool named ``shell``."""
    handled = toolwire.Toolbox()
    handled.handle("shell_call", lambda arguments, ctx: "x")
    call = toolwire.ToolCall(id="c", name="shell", arguments={}, raw_arguments="{}", index=0)
    assert isinstance(handled.check(call), toolwire.InvalidCall)
    functions = toolwire.Toolbox()
    functions.add("shell", {"type": "object"}, lambda: "x")
    shell_call = toolwire.ToolCall(
        id="c", name="shell", arguments={}, raw_arguments="{}", index=0, kind="shell_call"
    )
    assert isinstance(functions.check(shell_call), toolwire.InvalidCall)
    with pytest.raises(toolwire.ToolDefinitionError):
        functions.handle("telepathy_call", lambda arguments, ctx: "x")


def _approval_turn(
    sim: Simulator, clients: Clients, tmp_path: Path, tools: toolwire.Toolbox
) -> tuple[toolwire.Turn, toolwire.Executor, list[Any]]:
    serve(sim, tmp_path, "approval", response_events([APPROVAL]))
    sim.add_response(text="Rolled a 4.")
    executor = toolwire.Executor(tools, scope="approval")
    messages: list[Any] = [{"role": "user", "content": "roll"}]
    turn = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    return turn, executor, messages


@pytest.mark.parametrize("decision", ["approve", "deny"])
def test_an_mcp_approval_request_waits_then_is_answered(
    sim: Simulator, clients: Clients, tmp_path: Path, decision: str
) -> None:
    """An mcp_approval_request is a pending ToolCall (awaiting approval, the turn not
    done, nothing answered yet); the decision answers it with mcp_approval_response, and
    the next request is accepted."""
    tools = toolwire.Toolbox()
    tools.handle("mcp_approval_request")
    assert tools.definitions("openai-responses") == []
    turn, executor, messages = _approval_turn(sim, clients, tmp_path, tools)
    (call,) = turn.response.tool_calls
    assert (call.kind, call.name, call.id) == ("mcp_approval_request", "mcp_approval", "mcpr_1")
    assert call.arguments == {"server_label": "dice", "name": "roll", "arguments": '{"sides": 6}'}
    (waiting,) = turn.outcomes
    assert waiting.status == "awaiting_approval" and not turn.done
    assert turn.messages == [APPROVAL]  # echoed, not answered while pending
    key = waiting.idempotency_key or ""
    if decision == "approve":
        executor.approve(key)
    else:
        executor.deny(key, "not today")
    outcomes = executor.run(turn.response)
    answers = toolwire.tool_results(outcomes, "openai-responses", response=turn.response)
    expected: dict[str, Any] = {"type": "mcp_approval_response", "approval_request_id": "mcpr_1"}
    if decision == "approve":
        assert answers == [{**expected, "approve": True}]
    else:
        assert answers == [{**expected, "approve": False, "reason": "not today"}]
    messages += [*turn.messages, *answers]
    last = toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    assert refused(sim) == []
    assert last.done and last.response.text == "Rolled a 4."


def test_an_unhandled_mcp_approval_request_is_declined(
    sim: Simulator, clients: Clients, tmp_path: Path
) -> None:
    """Without a handler the request is answered ``approve: false`` with a reason, and
    the next request is accepted."""
    tools = toolwire.Toolbox()
    turn, executor, messages = _approval_turn(sim, clients, tmp_path, tools)
    (answer,) = [m for m in turn.messages if m["type"] == "mcp_approval_response"]
    assert answer["approve"] is False and answer["reason"]
    messages += turn.messages
    toolwire.run_turn(
        clients.openai.responses.create(model="m", input=messages, stream=True),
        tools, executor=executor,
    )  # fmt: skip
    assert refused(sim) == []
