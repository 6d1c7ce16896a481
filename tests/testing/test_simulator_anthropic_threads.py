"""The simulator's Anthropic check accepts a continued message thread (the beta the SDK's
tool runner uses by default): the first user message answers the served message's calls."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic import beta_tool

from toolwire.testing import Simulator
from toolwire.testing._formats import check_request

USE_ID = "toolu_01A09q90qw90lq917835lq9"


def test_the_sdk_tool_runner_at_default_settings_is_accepted() -> None:
    """client.beta.messages.tool_runner (thread on by default) runs its loop to the end."""
    runs: list[str] = []

    @beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        runs.append(city)
        return "sunny"

    with Simulator(seed=7) as sim:
        sim.add_response(tool_calls=[{"name": "get_weather", "arguments": {"city": "Paris"}}])
        sim.add_response(text="It is sunny in Paris.")
        client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
        runner = client.beta.messages.tool_runner(
            model="claude-sonnet-4-6",
            max_tokens=256,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            tools=[get_weather],
            stream=True,
        )
        for stream in runner:
            for _ in stream:
                pass
        final = runner.until_done()
        client.close()
        second = sim.requests[-1].body
    assert runs == ["Paris"]
    assert [b.text for b in final.content if b.type == "text"] == ["It is sunny in Paris."]
    assert second["thread"]["type"] == "continue"  # the request the old check refused


def _continued(*tool_use_ids: str, previous: str = "msg_1") -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": i, "content": "sunny"} for i in tool_use_ids]
    return {
        "model": "m",
        "thread": {"type": "continue", "previous_message_id": previous},
        "messages": [{"role": "user", "content": content}],
    }


def _served(response_id: str) -> set[str] | None:
    return {USE_ID} if response_id == "msg_1" else None


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (_continued(USE_ID), None),
        (_continued(USE_ID, "toolu_other"), "unexpected `tool_use_id`"),
        (_continued(USE_ID, previous="msg_unknown"), "was not found"),
        ({**_continued(USE_ID), "messages": [{"role": "user", "content": "hi"}]}, "without"),
    ],
)
def test_a_continued_thread_answers_the_served_calls(
    body: dict[str, Any], refused: str | None
) -> None:
    """Each served call is answered, no other id is, and the thread must exist."""
    problem = check_request("anthropic", body, _served)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None and refused in problem


def _echo_of_a_thinking_search_turn() -> list[dict[str, Any]]:
    """toolwire's next request after a thinking + web search + client call turn."""
    from toolwire import StreamAssembler
    from toolwire._core.outcome import Outcome
    from toolwire._providers._messages import turn_messages

    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "model": "m", "usage": {}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "thinking", "thinking": ""},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "thinking_delta", "thinking": "Search."},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "signature_delta", "signature": "EqQB"},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {},
            },
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"query": "x"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "content_block_start",
            "index": 2,
            "content_block": {
                "type": "web_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": [],
            },
        },
        {"type": "content_block_stop", "index": 2},
        {
            "type": "content_block_start",
            "index": 3,
            "content_block": {"type": "tool_use", "id": USE_ID, "name": "f", "input": {}},
        },
        {"type": "content_block_stop", "index": 3},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        },
        {"type": "message_stop"},
    ]
    asm = StreamAssembler()
    for event in events:
        asm.feed(event)
    response = asm.close()
    outcome = Outcome(call_id=USE_ID, name="f", status="completed", value="ok")
    return [{"role": "user", "content": "go"}, *turn_messages(response, [outcome], "anthropic")]


def _none(_: str) -> set[str] | None:
    return None


def test_the_echo_passes_and_each_wrong_echo_is_refused() -> None:
    """toolwire's echo is accepted; dropping the signature, or answering the server call
    with a tool_result, is refused (the checks fail when the echo is wrong)."""
    messages = _echo_of_a_thinking_search_turn()
    assert check_request("anthropic", {"model": "m", "messages": messages}, _none) is None
    unsigned = [dict(m) for m in messages]
    unsigned[1] = {**unsigned[1], "content": [dict(b) for b in unsigned[1]["content"]]}
    del unsigned[1]["content"][0]["signature"]
    problem = check_request("anthropic", {"model": "m", "messages": unsigned}, _none)
    assert problem is not None and "signature" in problem
    answered = [*messages[:2], {"role": "user", "content": [*messages[2]["content"]]}]
    answered[2]["content"].append(
        {"type": "tool_result", "tool_use_id": "srvtoolu_1", "content": "r"}
    )
    problem = check_request("anthropic", {"model": "m", "messages": answered}, _none)
    assert problem is not None and "srvtoolu_1" in problem
