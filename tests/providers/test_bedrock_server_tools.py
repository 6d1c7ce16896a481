"""Bedrock Nova code interpreter (issue 19): a ``toolUse`` of type ``server_tool_use`` and
its ``toolResult`` were run by Bedrock; never client calls, echoed as they came."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adapter_bedrock import assemble_turn, delta, event_message, message_stop, stop, tool_start

import toolwire
from adapter_support import assemble_bytes
from drivers_support import splits
from simulator_support import Clients
from toolwire import StreamAssembler, StreamFormatError
from toolwire._providers.bedrock_converse import assistant_turn
from toolwire.testing import Simulator
from toolwire.testing._formats import check_request

CODE = "numbers = [10, 24, 2]\nsum(numbers) / len(numbers)"
USE_ID = "tooluse_WytfF0g1S5qUeEPm0ptOdQ"
RESULT_TEXT = '{"stdOut":"12.0","stdErr":"","exitCode":0,"isError":false}'


def nova_stream(fragments: list[str] | None = None) -> list[dict[str, Any]]:
    """Text, the interpreter call (input streamed), its result (text in two deltas), the
    answer, and a client call beside them, shaped like the Nova built-in tools example."""
    server = {"toolUseId": USE_ID, "name": "nova_code_interpreter", "type": "server_tool_use"}
    result = {"toolUseId": USE_ID, "type": "nova_code_interpreter_result", "status": "success"}
    code = f'{{"code": {json.dumps(CODE)}}}'
    parts = fragments if fragments is not None else [code[:9], code[9:]]
    return [
        {"messageStart": {"role": "assistant"}},
        delta(0, text="Let me compute."),
        stop(0),
        {"contentBlockStart": {"contentBlockIndex": 1, "start": {"toolUse": server}}},
        *(delta(1, toolUse={"input": p}) for p in parts),
        stop(1),
        {"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolResult": result}}},
        delta(2, toolResult=[{"text": RESULT_TEXT[:20]}]),
        delta(2, toolResult=[{"text": RESULT_TEXT[20:]}]),
        stop(2),
        delta(3, text="The average is 12."),
        stop(3),
        tool_start(4, "tooluse_client", "record"),
        delta(4, toolUse={"input": '{"value": 12}'}),
        stop(4),
        message_stop("tool_use"),
    ]


ECHO = [
    {"text": "Let me compute."},
    {
        "toolUse": {
            "toolUseId": USE_ID,
            "name": "nova_code_interpreter",
            "type": "server_tool_use",
            "input": {"code": CODE},
        }
    },
    {
        "toolResult": {
            "toolUseId": USE_ID,
            "type": "nova_code_interpreter_result",
            "status": "success",
            "content": [{"text": RESULT_TEXT}],
        }
    },
    {"text": "The average is 12."},
    {"toolUse": {"toolUseId": "tooluse_client", "name": "record", "input": {"value": 12}}},
]


def test_the_interpreter_call_is_no_client_call_and_is_echoed_in_order() -> None:
    """Only the client call is a call; the server call and its result go back unchanged."""
    response = assemble_turn(nova_stream())
    assert [c.id for c in response.tool_calls] == ["tooluse_client"]
    assert response.rejected == []
    assert assistant_turn(response)[0]["content"] == ECHO


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=10))
def test_the_echo_is_the_same_at_any_split(cuts: list[int]) -> None:
    """The event-stream body reads the same wherever it is cut."""
    payloads = nova_stream()
    body = b"".join(event_message(next(iter(p)), next(iter(p.values()))) for p in payloads)
    response, _ = assemble_bytes(splits(body, cuts))
    assert assistant_turn(response)[0]["content"] == ECHO


def test_interpreter_input_that_is_not_json_is_a_format_error() -> None:
    """Broken streamed input of a server call is refused with a typed error."""
    asm = StreamAssembler()
    with pytest.raises(StreamFormatError):
        for p in nova_stream(['{"code": ', "nope"]):
            asm.feed(p)
        asm.close()


def test_the_interpreter_turn_through_boto3_and_back(tmp_path: Path) -> None:
    """boto3's converse_stream serves the Nova turn from the simulator; run_turn runs only
    the client call, and boto3's converse with turn.messages is accepted."""
    body = b"".join(event_message(next(iter(p)), next(iter(p.values()))) for p in nova_stream())
    recording = tmp_path / "nova.eventstream"
    recording.write_bytes(body)
    tools = toolwire.Toolbox()
    runs: list[int] = []

    @tools.tool
    def record(value: int) -> str:
        """Records a value."""
        runs.append(value)
        return "recorded"

    with Simulator(seed=2) as sim:
        sim.add_recording(recording)
        sim.add_response(text="Recorded 12.")
        clients = Clients(sim)
        try:
            messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "Mean?"}]}]
            with toolwire.MemoryStore() as store:
                turn = toolwire.run_turn(
                    clients.bedrock.converse_stream(
                        modelId="amazon.nova-pro-v1:0", messages=messages
                    ),
                    tools,
                    executor=toolwire.Executor(tools, store=store, scope="nova"),
                )
            messages += turn.messages
            answer = clients.bedrock.converse(modelId="amazon.nova-pro-v1:0", messages=messages)
        finally:
            clients.close()
        sent = sim.requests[-1].body
    assert runs == [12] and [o.name for o in turn.outcomes] == ["record"]
    assert sent["messages"][1]["content"] == ECHO
    assert answer["output"]["message"]["content"] == [{"text": "Recorded 12."}]
    # the check is sensitive: the server call treated as a client call, or its result
    # sent as a user's tool result, is refused
    as_client = copy.deepcopy(sent)
    del as_client["messages"][1]["content"][1]["toolUse"]["type"]
    moved = copy.deepcopy(sent)
    moved["messages"][2]["content"].append(moved["messages"][1]["content"].pop(2))
    for mutated in (as_client, moved):
        assert check_request("bedrock-converse", mutated, lambda _: None) is not None
