"""A tool that returns an image, through each provider's real SDK client and the simulator:
the next request built from ``turn.messages`` carries the image as the provider's own
content block, and the simulator, checking those blocks as the API does, accepts it."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import pytest

import toolwire
from simulator_support import Clients
from toolwire.testing import Simulator
from turn_support import Conversation, refused

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
PDF = b"%PDF-1.4\n%" + bytes(range(128, 192))
B64 = base64.b64encode(PNG).decode()
RICH_FORMATS = ["openai-responses", "anthropic", "gemini", "bedrock-converse"]


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=21) as simulator:
        yield simulator


@pytest.fixture
def clients(sim: Simulator) -> Iterator[Clients]:
    """The SDK clients, closed after the test."""
    made = Clients(sim)
    yield made
    made.close()


def _chart_tools() -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def chart(city: str) -> list[Any]:
        """A chart of the weather in a city, and its report."""
        return [
            f"Chart for {city}.",
            toolwire.Image(PNG, "image/png"),
            toolwire.File(PDF, "application/pdf", "report.pdf"),
        ]

    return tools


def _image_in(fmt: str, body: dict[str, Any]) -> Any:
    """The image of the last request's tool result, as the wire carried it."""
    if fmt == "openai-responses":
        (output,) = [i for i in body["input"] if i.get("type") == "function_call_output"]
        return output["output"][1]
    if fmt == "gemini":
        parts = [p for turn in body["contents"] for p in turn.get("parts", [])]
        (response,) = [p["functionResponse"] for p in parts if "functionResponse" in p]
        return response["parts"][0]
    blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
    if fmt == "anthropic":
        (result,) = [b for b in blocks if b.get("type") == "tool_result"]
        return result["content"][1]
    (result,) = [b["toolResult"] for b in blocks if "toolResult" in b]
    return result["content"][1]


EXPECTED_IMAGE = {
    "openai-responses": {
        "type": "input_image",
        "image_url": f"data:image/png;base64,{B64}",
        "detail": "auto",
    },
    "anthropic": {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": B64},
    },
    "gemini": {"inline_data": {"mime_type": "image/png", "data": B64, "display_name": "part-2"}},
    "bedrock-converse": {"image": {"format": "png", "source": {"bytes": B64}}},
}


@pytest.mark.parametrize("fmt", RICH_FORMATS)
def test_an_image_result_is_sent_back_through_the_real_client_and_accepted(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """The tool returns text, an image and a PDF; the next request, sent by the SDK from
    ``turn.messages``, carries the image as the provider's block and is accepted."""
    tools = _chart_tools()
    executor = toolwire.Executor(tools, scope=f"rich-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    sim.add_response(tool_calls=[("chart", {"city": "Lyon"})])
    sim.add_response(text="A sunny chart.")
    first = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert [o.status for o in first.outcomes] == ["completed"]
    conversation.messages += first.messages
    second = toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert refused(sim) == []
    assert second.done and second.response.text == "A sunny chart."
    image = _image_in(fmt, sim.requests[-1].body)
    if fmt == "gemini":  # google-genai sends snake_case keys and URL-safe base64
        blob = image["inline_data"]
        blob["data"] = base64.b64encode(base64.urlsafe_b64decode(blob["data"])).decode()
    assert image == EXPECTED_IMAGE[fmt]


BROKEN = {
    "openai-responses": ("output", [{"type": "input_image", "image_url": "data:image/png,xx"}]),
    "anthropic": ("image", {"type": "base64", "media_type": "image/bmp", "data": B64}),
    "gemini": ("inlineData", {"mimeType": "png", "data": B64}),
    "bedrock-converse": ("image", {"format": "bmp", "source": {"bytes": B64}}),
}


def _break(fmt: str, message: dict[str, Any]) -> None:
    """Spoil the image block of a tool-result message in place, as ``BROKEN`` says."""
    key, spoiled = BROKEN[fmt]
    if fmt == "openai-responses":
        message["output"] = spoiled
    elif fmt == "anthropic":
        message["content"][0]["content"][1] = {"type": "image", "source": spoiled}
    elif fmt == "gemini":
        message["parts"][0]["functionResponse"]["parts"][0] = {key: spoiled}
    else:
        message["content"][0]["toolResult"]["content"][1] = {key: spoiled}


@pytest.mark.parametrize("fmt", RICH_FORMATS)
def test_a_malformed_image_block_is_refused_as_the_api_would(
    sim: Simulator, clients: Clients, fmt: str
) -> None:
    """The simulator refuses an image block the real API refuses (an unsupported type or
    format, a data URL without base64), so the acceptance above means something."""
    tools = _chart_tools()
    executor = toolwire.Executor(tools, scope=f"broken-{fmt}")
    conversation = Conversation(fmt, clients, tools)
    sim.add_response(tool_calls=[("chart", {"city": "Lyon"})])
    sim.add_response(text="never served")
    first = toolwire.run_turn(conversation.request(), tools, executor=executor)
    messages = list(first.messages)
    _break(fmt, messages[-1])
    conversation.messages += messages
    with pytest.raises(Exception):  # noqa: B017 - each SDK raises its own 400 error
        toolwire.run_turn(conversation.request(), tools, executor=executor)
    assert len(refused(sim)) == 1
