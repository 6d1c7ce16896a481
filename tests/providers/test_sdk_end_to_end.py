"""End to end: the real ``openai`` and ``anthropic`` SDK clients talk HTTP to a local server
that serves the recorded corpus streams; toolwire assembles what the SDKs yield (their event
objects) and what the wire carried (raw bytes) into the expected responses."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import toolwire
from conftest import CORPUS_DIR, load_expected

EXPECTED = load_expected()
_ENDED_PROPERLY = {"tool_calls", "tool_use", "stop", "end_turn", "completed"}


def _streams(api_format: str, *, sdk_objects: bool = False) -> list[str]:
    """Corpus SSE recordings of one API format whose stream ended properly.

    With ``sdk_objects``, only recordings whose last event ends with its blank line: the
    SDKs' SSE decoders drop a final event that lacks it (toolwire's ``feed_bytes`` does
    not, as the raw-bytes tests show), so their objects miss the terminal event there.
    """
    return sorted(
        name
        for name, entry in EXPECTED.items()
        if name.endswith(".sse")
        and entry["api_format"] == api_format
        and entry["error"] is None
        and entry["finish_reason"] in _ENDED_PROPERLY
        and (not sdk_objects or (CORPUS_DIR / "streams" / name).read_bytes().endswith(b"\n\n"))
    )


class _Handler(http.server.BaseHTTPRequestHandler):
    """Serves ``/<corpus file>/...`` as that file's bytes, as an SSE response."""

    def do_POST(self) -> None:
        name = self.path.strip("/").split("/", 1)[0]
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        body = (CORPUS_DIR / "streams" / name).read_bytes()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        # several writes, so the client sees the body arrive in pieces
        for start in range(0, len(body), 97):
            self.wfile.write(body[start : start + 97])
            self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""


@pytest.fixture(scope="module")
def server(corpus_dir: Path) -> Iterator[str]:
    """A local HTTP server on a free loopback port; yields its base address."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _check(response: toolwire.Response, entry: dict[str, Any]) -> None:
    """``response`` matches the corpus's expected result."""
    assert response.text == entry["text"]
    assert [c.name for c in response.tool_calls] == [c["name"] for c in entry["tool_calls"]]
    assert [c.arguments for c in response.tool_calls] == [
        c["arguments"] for c in entry["tool_calls"]
    ]
    for call, want in zip(response.tool_calls, entry["tool_calls"], strict=True):
        if want.get("id"):
            assert call.id == want["id"]
    assert response.raw_finish_reason == entry["finish_reason"]
    assert response.finish_reason == ("tool_calls" if entry["tool_calls"] else "stop")
    assert response.rejected == []


@pytest.mark.parametrize("name", _streams("openai-chat", sdk_objects=True))
def test_openai_sdk_chunks_assemble(server: str, name: str) -> None:
    """Chunks yielded by ``openai``'s streaming client assemble to the expected response."""
    client = openai.OpenAI(base_url=f"{server}/{name}/v1", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="openai-chat")
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    with stream:
        for chunk in stream:
            asm.feed(chunk)
    _check(asm.close(), EXPECTED[name])


@pytest.mark.parametrize("name", _streams("openai-chat") + _streams("openai-responses"))
def test_openai_sdk_raw_bytes_assemble(server: str, name: str) -> None:
    """The raw bytes the ``openai`` client received assemble to the expected response."""
    client = openai.OpenAI(base_url=f"{server}/{name}/v1", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="auto")
    with client.chat.completions.with_streaming_response.create(
        model="m", messages=[], stream=True
    ) as raw:
        for piece in raw.iter_bytes():
            asm.feed_bytes(piece)
    _check(asm.close(), EXPECTED[name])


@pytest.mark.parametrize("name", _streams("openai-responses", sdk_objects=True))
def test_openai_sdk_responses_events_assemble(server: str, name: str) -> None:
    """Events yielded by ``openai``'s Responses streaming client assemble as expected."""
    client = openai.OpenAI(base_url=f"{server}/{name}/v1", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="openai-responses")
    stream = client.responses.create(model="m", input="hi", stream=True)
    with stream:
        for event in stream:
            asm.feed(event)
    _check(asm.close(), EXPECTED[name])


@pytest.mark.parametrize("name", _streams("anthropic-messages", sdk_objects=True))
def test_anthropic_sdk_events_assemble(server: str, name: str) -> None:
    """Events yielded by ``anthropic``'s streaming client assemble to the expected response."""
    client = anthropic.Anthropic(base_url=f"{server}/{name}", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="auto")
    stream = client.messages.create(model="m", max_tokens=10, messages=[], stream=True)
    with stream:
        for event in stream:
            asm.feed(event)
    _check(asm.close(), EXPECTED[name])


@pytest.mark.parametrize("name", _streams("anthropic-messages"))
def test_anthropic_sdk_raw_bytes_assemble(server: str, name: str) -> None:
    """The raw bytes the ``anthropic`` client received assemble to the expected response."""
    client = anthropic.Anthropic(base_url=f"{server}/{name}", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="auto")
    with client.messages.with_streaming_response.create(
        model="m", max_tokens=10, messages=[], stream=True
    ) as raw:
        for piece in raw.iter_bytes():
            asm.feed_bytes(piece)
    _check(asm.close(), EXPECTED[name])


def test_anthropic_sdk_truncated_stream_executes_nothing(server: str) -> None:
    """A ``max_tokens`` stream read through the SDK raises ``TokenLimitExceeded``, no calls."""
    name = "anthropic__tool-use-truncated-max-tokens.sse"
    client = anthropic.Anthropic(base_url=f"{server}/{name}", api_key="test", max_retries=0)
    asm = toolwire.StreamAssembler(format="anthropic")
    with client.messages.create(model="m", max_tokens=10, messages=[], stream=True) as stream:
        for event in stream:
            asm.feed(event)
    with pytest.raises(toolwire.TokenLimitExceeded) as info:
        asm.close()
    assert info.value.partial is not None
    assert [c.name for c in info.value.partial.calls] == ["make_file"]


def test_sdk_objects_and_dicts_give_identical_events(server: str) -> None:
    """Feeding the SDK's objects gives the same events as feeding the decoded JSON dicts."""
    name = "openai-chat__parallel-two-tools.sse"
    client = openai.OpenAI(base_url=f"{server}/{name}/v1", api_key="test", max_retries=0)
    with client.chat.completions.create(model="m", messages=[], stream=True) as stream:
        objects = list(stream)
    from_objects = toolwire.StreamAssembler(format="openai-chat")
    from_dicts = toolwire.StreamAssembler(format="openai-chat")
    events_a = [e for o in objects for e in from_objects.feed(o)]
    events_b = [e for o in objects for e in from_dicts.feed(json.loads(o.model_dump_json()))]
    assert [(type(e).__name__, getattr(e, "delta", None)) for e in events_a] == [
        (type(e).__name__, getattr(e, "delta", None)) for e in events_b
    ]
    assert from_objects.close() == from_dicts.close()
