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
