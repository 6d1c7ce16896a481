"""The recorded corpus (``../shared/corpus``) read for tests: its streams as payloads and
bytes, one run of a stream through the assembler, and the check of a result against
``expected.json``. Shared by the corpus conformance tests and every other module that
replays the recordings."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

import toolwire
from conftest import CORPUS_DIR, load_expected
from toolwire import StreamAssembler, StreamError

EXPECTED = load_expected()
NAMES = sorted(EXPECTED)
# streams that did not end properly, and the error each must raise
FAILING = {
    "anthropic__tool-use-truncated-max-tokens.sse": toolwire.TokenLimitExceeded,
    "groq__gpt-oss-stream-error-tool-use-failed.sse": toolwire.ProviderError,
    "openai-chat__max-tokens-length-no-tool.sse": toolwire.TokenLimitExceeded,
}
FORMATS = {
    "openai-chat": "openai-chat",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "gemini": "gemini",
    "bedrock-converse": "bedrock-converse",
    "cohere-v2": "cohere",
}

pytestmark = pytest.mark.corpus


# ----------------------------------------------------------------- reading the corpus


def source_path(name: str) -> Path:
    """The file to read for ``name``: the decoded sibling of the binary event stream."""
    if name.endswith(".eventstream"):
        name = name.removesuffix(".eventstream") + ".decoded.jsonl"
    return CORPUS_DIR / "streams" / name


def stream_bytes(name: str) -> bytes:
    """The recorded body of ``name`` as the provider sent it: as stored (binary for
    ``.eventstream``), except that a JSON-array recording is unwrapped from the recorder's
    ``{"__type__": ..., "__data__": chunk}`` envelopes (see :func:`unwrap_recording`)."""
    data = (CORPUS_DIR / "streams" / name).read_bytes()
    return unwrap_recording(data) if name.endswith(".json") else data


def unwrap_recording(data: bytes) -> bytes:
    """A llama-stack JSON-array recording re-encoded as the array of its chunks (each
    element's ``__data__``), still one value per indented line, non-ASCII kept as UTF-8."""
    chunks = [item["__data__"] for item in json.loads(data)]
    return json.dumps(chunks, indent=2, ensure_ascii=False).encode()


def _sse_payloads(text: str) -> list[tuple[str | None, Any]]:
    """A deliberately simple, independent SSE reader for the corpus (blank-line blocks)."""
    text = text.replace("\r\n", "\n")
    out: list[tuple[str | None, Any]] = []
    for block in text.split("\n\n"):
        event = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                event = line[6:].strip()
        if data:
            joined = "\n".join(data)
            out.append((event, "[DONE]" if joined == "[DONE]" else json.loads(joined)))
    return out


def stream_payloads(name: str) -> list[tuple[str | None, Any]]:
    """``(SSE event name, payload)`` pairs of a corpus stream, read independently of
    toolwire's framing decoder."""
    path = source_path(name)
    text = path.read_text("utf-8")
    if path.suffix == ".sse":
        return _sse_payloads(text)
    if path.suffix == ".json":
        return [(None, item["__data__"]) for item in json.loads(text)]
    return [(None, json.loads(line)) for line in text.splitlines() if line.strip()]


# --------------------------------------------------------------------- comparing


def event_key(event: Any) -> tuple[Any, ...]:
    """An event as comparable data: its type and fields (previews left out, they are
    read-time views)."""
    fields = [(slot, getattr(event, slot)) for slot in type(event).__slots__ if slot != "_preview"]
    return (type(event).__name__, tuple(fields))


def run_payloads(
    name: str,
    payloads: list[tuple[str | None, Any]],
    fmt: str = "auto",
    make: type[StreamAssembler] = StreamAssembler,
) -> tuple[list[Any], Any]:
    """Feed payloads; return the event keys and the ``Response`` or the ``StreamError``."""
    asm = make(format=fmt)
    events: list[Any] = []
    try:
        for event, payload in payloads:
            events.extend(event_key(e) for e in asm.feed(payload, event=event))
        return events, asm.close()
    except StreamError as exc:
        return events, exc


def run_bytes(data: bytes, cuts: list[int]) -> tuple[list[Any], Any]:
    """Feed ``data`` split at ``cuts``; return event keys and the outcome."""
    asm = StreamAssembler()
    events: list[Any] = []
    bounds = [0, *sorted(set(cuts)), len(data)]
    try:
        for a, b in itertools.pairwise(bounds):
            events.extend(event_key(e) for e in asm.feed_bytes(data[a:b]))
        events.extend(event_key(e) for e in asm.feed_eof())
        return events, asm.close()
    except StreamError as exc:
        return events, exc


def outcome_key(outcome: Any) -> Any:
    """A ``Response`` as itself, a ``StreamError`` as its type and message."""
    if isinstance(outcome, StreamError):
        return (type(outcome).__name__, str(outcome))
    return outcome


def check_expected(name: str, outcome: Any) -> None:
    """``outcome`` matches expected.json as MANIFEST.md describes."""
    entry = EXPECTED[name]
    if name in FAILING:
        assert isinstance(outcome, FAILING[name]), outcome
        assert outcome.partial is not None
        if entry["error"] is not None:
            assert isinstance(outcome, toolwire.ProviderError)
            assert outcome.error["code"] == entry["error"]["code"]
        assert [c.name for c in outcome.partial.calls] == [c["name"] for c in entry["tool_calls"]]
        assert outcome.partial.text == entry["text"]
        return
    assert not isinstance(outcome, StreamError), f"{name}: {outcome!r}"
    response: toolwire.Response = outcome
    assert response.text == entry["text"]
    assert response.rejected == []
    assert response.raw_finish_reason == entry["finish_reason"]
    want_calls = entry["tool_calls"]
    assert response.finish_reason == ("tool_calls" if want_calls else "stop")
    assert len(response.tool_calls) == len(want_calls)
    ids = [c.id for c in response.tool_calls]
    assert len(set(ids)) == len(ids) and all(ids)
    for call, want in zip(response.tool_calls, want_calls, strict=False):
        assert call.name == want["name"]
        assert call.arguments == want["arguments"]
        if isinstance(want.get("arguments_raw"), str):
            assert call.raw_arguments == want["arguments_raw"]
        if want.get("id"):
            assert call.id == want["id"]
    if entry.get("reasoning_chars"):
        assert len(response.reasoning) == entry["reasoning_chars"]
    elif entry.get("reasoning_chars") == 0:
        assert response.reasoning == ""
    elif entry.get("tool_plan"):
        # a Cohere tool plan is the model's plan, not visible text: reasoning or absent
        assert response.reasoning in ("", entry["tool_plan"])
    if entry.get("model"):
        assert response.model == entry["model"]
