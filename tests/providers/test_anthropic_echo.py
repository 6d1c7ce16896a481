"""Anthropic lossless echo, pause_turn and programmatic calls (issue 19): server tool blocks,
MCP blocks, citations and unknown blocks go back unchanged and in order; a paused turn goes
on; a call complete in ``message_start`` is read only when the stream ends properly."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_adapter_anthropic import (
    STOP,
    block_delta,
    block_start,
    block_stop,
    json_delta,
    message_delta,
    message_start,
    sdk_events,
    text_delta,
    text_start,
)

from adapter_support import assemble_bytes, assemble_every_way, sse_body
from drivers_support import splits
from toolwire import StreamAborted, StreamAssembler, StreamFormatError
from toolwire._providers._messages import turn_messages
from toolwire._providers.anthropic import assistant_turn

SEARCH_USE = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {}}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://example.com/weather",
            "title": "Weather",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
            "page_age": "April 30, 2025",
        }
    ],
}
CITATION = {
    "type": "web_search_result_location",
    "url": "https://example.com/weather",
    "title": "Weather",
    "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0OWJmZi1lNm",
    "cited_text": "Sunny, 22 degrees",
}
MCP_USE = {
    "type": "mcp_tool_use",
    "id": "mcptoolu_01",
    "name": "echo",
    "server_name": "example-mcp",
    "input": {"param1": "value1"},
}
MCP_RESULT = {
    "type": "mcp_tool_result",
    "tool_use_id": "mcptoolu_01",
    "is_error": False,
    "content": [{"type": "text", "text": "value1"}],
}
UNKNOWN = {"type": "container_upload_v9", "file_id": "file_01", "extra": [1, {"a": None}]}


def search_stream(*, result: bool, reason: str = "end_turn") -> list[dict[str, Any]]:
    """A web search turn shaped like Anthropic's streaming example: the query streams as
    input_json_delta, the result block comes whole, the answer text cites it."""
    events = [
        message_start(),
        text_start(0),
        text_delta(0, "I'll check the weather."),
        block_stop(0),
        block_start(1, SEARCH_USE),
        json_delta(1, ""),
        json_delta(1, '{"query": "weather'),
        json_delta(1, ' Paris"}'),
        block_stop(1),
    ]
    if result:
        events += [
            block_start(2, SEARCH_RESULT),
            block_stop(2),
            block_start(3, {"type": "text", "text": "", "citations": []}),
            block_delta(3, {"type": "citations_delta", "citation": CITATION}),
            text_delta(3, "It is sunny"),
            block_stop(3),
            block_start(4, MCP_USE),
            block_stop(4),
            block_start(5, MCP_RESULT),
            block_stop(5),
            block_start(6, UNKNOWN),
            block_stop(6),
        ]
    return [*events, message_delta(reason), STOP]


def echoed(payloads: list[dict[str, Any]], sdk: bool = False) -> list[dict[str, Any]]:
    """The assistant content blocks of the next request, after every way of feeding (the
    SDK's non-beta event objects too when ``sdk``: they know no MCP or unknown block)."""
    response, _ = assemble_every_way(payloads, sdk_events(payloads) if sdk else ())
    (message,) = turn_messages(response, [], "anthropic")
    assert message["role"] == "assistant"
    content: list[dict[str, Any]] = message["content"]
    return content


def test_server_tool_blocks_mcp_citations_and_unknown_blocks_are_echoed_in_order() -> None:
    """Every block goes back as Anthropic sent it, the query parsed from its fragments."""
    searched = {**SEARCH_USE, "input": {"query": "weather Paris"}}
    assert echoed(search_stream(result=True)) == [
        {"type": "text", "text": "I'll check the weather."},
        searched,
        SEARCH_RESULT,
        {"type": "text", "text": "It is sunny", "citations": [CITATION]},
        MCP_USE,
        MCP_RESULT,
        UNKNOWN,
    ]
    response, _ = assemble_every_way(search_stream(result=True))
    assert response.tool_calls == [] and response.rejected == []  # never client calls
    assert len(turn_messages(response, [], "anthropic")) == 1  # so no tool_result message


def test_pause_turn_is_paused_and_echoes_the_pending_server_tool_use() -> None:
    """A pause_turn with a pending server_tool_use: paused, and the block goes back."""
    payloads = search_stream(result=False, reason="pause_turn")
    response, _ = assemble_every_way(payloads, sdk_events(payloads))
    assert response.paused is True
    assert (response.finish_reason, response.raw_finish_reason) == ("stop", "pause_turn")
    assert echoed(payloads, sdk=True)[-1] == {**SEARCH_USE, "input": {"query": "weather Paris"}}
    assert assemble_every_way(search_stream(result=False))[0].paused is False  # end_turn


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 4000), max_size=12))
def test_echo_is_the_same_at_any_split(cuts: list[int]) -> None:
    """The echoed blocks do not depend on where the SSE body is cut."""
    payloads = search_stream(result=True, reason="pause_turn")
    whole = echoed(payloads)
    response, _ = assemble_bytes(splits(sse_body(payloads), cuts))
    assert response.paused
    assert turn_messages(response, [], "anthropic")[0]["content"] == whole


def test_server_input_that_is_not_json_is_a_format_error() -> None:
    """Broken streamed server tool input is refused with a typed error."""
    payloads = search_stream(result=False)
    payloads[6] = json_delta(1, '{"query": ')
    payloads[7] = json_delta(1, "oops")
    asm = StreamAssembler()
    with pytest.raises(StreamFormatError):
        for p in payloads:
            asm.feed(p)
        asm.close()


PROGRAMMATIC_USE = {
    "type": "tool_use",
    "id": "toolu_01",
    "name": "query_database",
    "input": {"sql": "SELECT 1"},
    "caller": {"type": "code_execution_20250825", "tool_id": "srvtoolu_abc"},
}


def programmatic_start() -> dict[str, Any]:
    """message_start carrying the whole tool_use block and its stop_reason."""
    start = copy.deepcopy(message_start())
    start["message"]["content"] = [copy.deepcopy(SEARCH_USE), PROGRAMMATIC_USE]
    start["message"]["stop_reason"] = "tool_use"
    return start


def test_a_call_complete_in_message_start_is_read_when_the_stream_ends() -> None:
    """The programmatic call is a client call once message_delta and message_stop come,
    and no call at all when the stream is cut after message_start."""
    response, _ = assemble_every_way([programmatic_start(), message_delta(None), STOP])
    (call,) = response.tool_calls
    assert (call.id, call.name, call.arguments) == (
        "toolu_01",
        "query_database",
        {"sql": "SELECT 1"},
    )
    assert response.raw_finish_reason == "tool_use"
    (message,) = assistant_turn(response)  # the server block, then the call with its caller
    assert message["content"] == [{**SEARCH_USE}, PROGRAMMATIC_USE]
    cut = StreamAssembler()  # without message_stop, the complete call is never handed out
    cut.feed(programmatic_start())
    with pytest.raises(StreamAborted):
        cut.close()


def test_a_paused_turn_through_the_sdk_goes_on_with_its_content_echoed(tmp_path: Any) -> None:
    """The real anthropic client streams a pause_turn from the simulator: run_turn gives a
    turn that is not done, whose messages (the paused content alone) the next request takes."""
    import anthropic

    import toolwire
    from toolwire.testing import Simulator

    path = tmp_path / "pause.sse"
    path.write_bytes(sse_body(search_stream(result=False, reason="pause_turn")))
    tools = toolwire.Toolbox()
    with Simulator(seed=3) as sim:
        sim.add_recording(path)
        sim.add_response(text="Sunny.")
        client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
        messages: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
        stream = client.messages.create(model="m", max_tokens=64, messages=messages, stream=True)
        turn = toolwire.run_turn(stream, tools, executor=toolwire.Executor(tools, scope="pause"))
        assert turn.done is False and turn.response.paused
        (echo,) = turn.messages
        assert echo["content"][-1] == {**SEARCH_USE, "input": {"query": "weather Paris"}}
        again = client.messages.create(
            model="m", max_tokens=64, messages=[*messages, *turn.messages], stream=True
        )
        final = toolwire.run_turn(again, tools, executor=toolwire.Executor(tools, scope="pause"))
        client.close()
    assert final.done and final.response.text == "Sunny."
