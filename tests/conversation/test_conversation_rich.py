"""A durable Bedrock conversation whose tool returns an image: the turn's messages hold the
image's bytes (what boto3 takes), are stored, and come back as the same bytes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolwire
from simulator_support import Clients
from toolwire.testing import Simulator

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


@pytest.fixture
def clients() -> Iterator[tuple[Simulator, Clients]]:
    """A simulator and the SDK clients pointed at it."""
    with Simulator(seed=3) as sim:
        made = Clients(sim)
        yield sim, made
        made.close()


def test_a_bedrock_image_result_is_stored_and_restored_as_bytes(
    tmp_path: Path, clients: tuple[Simulator, Clients]
) -> None:
    """The image's ``source.bytes`` survive the store: a restored conversation's messages
    equal the live ones, and the next request from them is accepted."""
    sim, made = clients
    tools = toolwire.Toolbox()

    @tools.tool
    def snapshot() -> toolwire.Image:
        """A picture."""
        return toolwire.Image(PNG, "image/png")

    def factory(messages: list[Any]) -> Any:
        return made.bedrock.converse_stream(
            modelId="anthropic.claude-sonnet-4",
            messages=messages,
            toolConfig={"tools": tools.definitions("bedrock-converse")},
        )

    store = toolwire.SQLiteStore(str(tmp_path / "c.db"))
    start = [{"role": "user", "content": [{"text": "Show me."}]}]
    conv = toolwire.Conversation("pic", store=store, tools=tools, messages=start)
    sim.add_response(tool_calls=[("snapshot", {})])
    sim.add_response(text="A nice picture.")
    conv.run_turn(factory)
    restored = toolwire.Conversation("pic", store=store, tools=tools)
    assert restored.messages == conv.messages
    (block,) = restored.messages[-1]["content"][0]["toolResult"]["content"]
    assert block == {"image": {"format": "png", "source": {"bytes": PNG}}}
    turn = restored.run_turn(factory)
    assert turn.done and turn.response.text == "A nice picture."
    assert [r.served for r in sim.requests] == ["response", "response"]
