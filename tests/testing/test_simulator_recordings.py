"""Every corpus recording, served byte-exact by the simulator, gives the corpus's expected
result: as raw bytes through httpx into ``feed_bytes`` for all 51, and through the real
client wherever that client can read the recording (SSE for openai, anthropic and
google-genai; the AWS event stream for boto3). Recordings are read from ../shared at test
time, never copied."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolwire
from conftest import CORPUS_DIR, load_expected
from corpus_support import check_expected, unwrap_recording
from simulator_support import Clients, drive, request_body
from toolwire.testing import Simulator

EXPECTED = load_expected()
NAMES = sorted(EXPECTED)
# which endpoint asks for a recording (the simulator ignores it: the bytes are the file's)
_ASKING = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
    "bedrock-converse": "bedrock-converse",
    "cohere-v2": "cohere",
}

pytestmark = pytest.mark.corpus


def _readable_by_sdk(name: str) -> bool:
    """SSE recordings (whose last event ends with its blank line: the SDKs' SSE readers drop
    a final event without it) and the binary event stream."""
    if name.endswith(".eventstream"):
        return True
    if not name.endswith(".sse") or EXPECTED[name]["api_format"] == "cohere-v2":
        return False
    return (CORPUS_DIR / "streams" / name).read_bytes().endswith((b"\n\n", b"\r\n\r\n"))


SDK_NAMES = [name for name in NAMES if _readable_by_sdk(name)]


@pytest.fixture(scope="module")
def sim(corpus_dir: Path) -> Iterator[Simulator]:
    """One simulator for the module."""
    with Simulator(seed=0) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def clients(sim: Simulator) -> Iterator[Clients]:
    """The SDK clients, closed after the module; then no connection may be open."""
    made = Clients(sim)
    yield made
    made.close()
    assert sim.wait_for_connections_closed(10)


def _outcome(run: Any) -> Any:
    try:
        return run()
    except toolwire.StreamError as exc:
        return exc


def _serve(sim: Simulator, file: Path, fmt: str) -> bytes:
    """Serve ``file`` as a recording to a request in ``fmt``; the bytes the client got."""
    sim.add_recording(file)
    path, body = request_body(fmt)
    received = bytearray()
    with httpx.Client(base_url=sim.url) as client, client.stream("POST", path, json=body) as r:
        for piece in r.iter_bytes():
            received += piece
    return bytes(received)


def _assemble(data: bytes) -> Any:
    def run() -> toolwire.Response:
        asm = toolwire.StreamAssembler()
        asm.feed_bytes(data)
        return asm.close()

    return _outcome(run)


@pytest.mark.parametrize("name", NAMES)
def test_recording_is_served_byte_exact_and_assembles(
    sim: Simulator, tmp_path: Path, name: str
) -> None:
    """The body the client receives is the file's bytes, and it assembles as expected."""
    file = CORPUS_DIR / "streams" / name
    fmt = _ASKING[EXPECTED[name]["api_format"]]
    received = _serve(sim, file, fmt)
    assert received == file.read_bytes()
    if name.endswith(".json"):
        # llama-stack envelopes, served as they are, are no provider's bytes: refused...
        assert isinstance(_assemble(received), toolwire.StreamFormatError)
        # ...while the chunks the provider sent, served byte-exact, give the expected result
        unwrapped = tmp_path / name
        unwrapped.write_bytes(unwrap_recording(file.read_bytes()))
        received = _serve(sim, unwrapped, fmt)
        assert received == unwrapped.read_bytes()
    check_expected(name, _assemble(received))


@pytest.mark.parametrize("name", SDK_NAMES)
def test_recording_through_the_real_client(sim: Simulator, clients: Clients, name: str) -> None:
    """What the provider's own client yields from a served recording assembles as expected."""
    sim.add_recording(CORPUS_DIR / "streams" / name)
    fmt = EXPECTED[name]["api_format"]
    user = [{"role": "user", "content": "x"}]

    def run() -> toolwire.Response:
        if fmt == "openai-chat":
            chat = clients.openai.chat.completions
            return drive(chat.create(model="m", messages=user, stream=True))  # type: ignore[arg-type]
        if fmt == "openai-responses":
            return drive(clients.openai.responses.create(model="m", input="x", stream=True))
        if fmt == "anthropic-messages":
            messages = clients.anthropic.messages
            return drive(messages.create(model="m", max_tokens=9, messages=user, stream=True))  # type: ignore[arg-type]
        if fmt == "gemini":
            return drive(clients.gemini.models.generate_content_stream(model="g", contents="x"))
        bedrock = [{"role": "user", "content": [{"text": "x"}]}]
        return drive(clients.bedrock.converse_stream(modelId="m", messages=bedrock))

    check_expected(name, _outcome(run))


def test_every_format_family_has_a_recording_read_by_its_client() -> None:
    """The SDK test covers openai chat and Responses, anthropic, gemini and bedrock."""
    if not EXPECTED:
        pytest.skip("the corpus is absent")
    families = {EXPECTED[name]["api_format"] for name in SDK_NAMES}
    assert families == {
        "openai-chat",
        "openai-responses",
        "anthropic-messages",
        "gemini",
        "bedrock-converse",
    }
