"""Conformance: all 51 recorded streams of ../shared/corpus give the results in
expected.json (read at test time, never copied), fed as payloads and as raw bytes split
anywhere, with identical events whatever the split."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from conftest import CORPUS_DIR, corpus_available, load_expected, require
from toolwire import StreamAssembler, StreamError

EXPECTED = load_expected()
NAMES = sorted(EXPECTED)
# streams that did not end properly, and the error each must raise
FAILING = {
    "anthropic__tool-use-truncated-max-tokens.sse": toolwire.TokenLimitExceeded,
    "groq__gpt-oss-stream-error-tool-use-failed.sse": toolwire.ProviderError,
    "openai-chat__max-tokens-length-no-tool.sse": toolwire.TokenLimitExceeded,
}
_FORMATS = {
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
    name: str, payloads: list[tuple[str | None, Any]], fmt: str = "auto"
) -> tuple[list[Any], Any]:
    """Feed payloads; return the event keys and the ``Response`` or the ``StreamError``."""
    asm = StreamAssembler(format=fmt)
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


# ------------------------------------------------------------------------- tests


def test_corpus_has_every_stream(corpus_dir: Path) -> None:
    """The corpus holds the 51 recordings that expected.json describes."""
    assert len(NAMES) == 51
    for name in NAMES:
        assert (corpus_dir / "streams" / name).is_file()


@pytest.mark.parametrize("name", NAMES)
def test_payloads_give_expected_result(corpus_dir: Path, name: str) -> None:
    """Each stream fed payload by payload (format auto-detected) gives its expected result."""
    _, outcome = run_payloads(name, stream_payloads(name))
    check_expected(name, outcome)


@pytest.mark.parametrize("name", NAMES)
def test_explicit_format_equals_auto(corpus_dir: Path, name: str) -> None:
    """Naming the format gives the same events and result as detecting it."""
    payloads = stream_payloads(name)
    fmt = _FORMATS[EXPECTED[name]["api_format"]]
    auto = run_payloads(name, payloads)
    named = run_payloads(name, payloads, fmt)
    assert auto[0] == named[0]
    assert outcome_key(auto[1]) == outcome_key(named[1])


@pytest.mark.parametrize("name", NAMES)
def test_json_strings_equal_dicts(corpus_dir: Path, name: str) -> None:
    """Feeding each payload as its JSON text gives the same events as feeding the dict."""
    payloads = stream_payloads(name)
    as_text = [(e, p if p == "[DONE]" else json.dumps(p)) for e, p in payloads]
    a, b = run_payloads(name, payloads), run_payloads(name, as_text)
    assert a[0] == b[0]
    assert outcome_key(a[1]) == outcome_key(b[1])


@pytest.mark.parametrize("name", NAMES)
def test_bytes_whole_and_byte_by_byte(corpus_dir: Path, name: str) -> None:
    """Raw bytes fed whole and one byte at a time give the payload path's events and result."""
    data = stream_bytes(name)
    ref_events, ref = run_payloads(name, stream_payloads(name))
    check_expected(name, ref)
    whole = run_bytes(data, [])
    single = run_bytes(data, list(range(1, len(data))))
    assert whole[0] == ref_events
    assert single[0] == ref_events
    assert outcome_key(whole[1]) == outcome_key(ref) == outcome_key(single[1])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_bytes_at_random_splits(name: str, data: st.DataObject) -> None:
    """Raw bytes split at Hypothesis-chosen offsets give the same events and result."""
    require(corpus_available(), f"the recorded corpus is not at {CORPUS_DIR}")
    body = stream_bytes(name)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    ref_events, ref = run_payloads(name, stream_payloads(name))
    events, outcome = run_bytes(body, cuts)
    assert events == ref_events
    assert outcome_key(outcome) == outcome_key(ref)


@pytest.mark.parametrize("name", NAMES)
def test_previews_grow_monotonically_to_the_final_arguments(corpus_dir: Path, name: str) -> None:
    """Each call's preview, read at every fragment, only extends and ends at its arguments."""
    asm = StreamAssembler()
    last: dict[int, Any] = {}
    try:
        for event, payload in stream_payloads(name):
            for ev in asm.feed(payload, event=event):
                if isinstance(ev, toolwire.ToolCallArguments):
                    preview = ev.preview
                    if ev.key in last:
                        assert _is_prefix(last[ev.key], preview)
                    last[ev.key] = preview
        response = asm.close()
    except StreamError:
        return
    for call in response.tool_calls:
        if call.index in last:
            assert _is_prefix(last[call.index], call.arguments)
            assert last[call.index] == call.arguments


def _is_prefix(old: Any, new: Any) -> bool:
    """API.md §1's prefix order between two previews."""
    if old is toolwire.MISSING:
        return True
    if type(old) is not type(new):
        return False
    if isinstance(old, str):
        return new.startswith(old)
    if isinstance(old, list):
        return len(old) <= len(new) and all(
            _is_prefix(a, b) for a, b in zip(old, new, strict=False)
        )
    if isinstance(old, dict):
        return all(k in new and _is_prefix(v, new[k]) for k, v in old.items())
    return bool(old == new)


@pytest.mark.parametrize("name", NAMES)
def test_fast_paths_change_nothing(corpus_dir: Path, name: str, monkeypatch: Any) -> None:
    """With the fragment fast paths switched off, every stream gives the same events."""
    payloads = stream_payloads(name)
    fast = run_payloads(name, payloads)
    monkeypatch.setattr(StreamAssembler, "_shortcuts", False)
    slow = run_payloads(name, payloads)
    assert fast[0] == slow[0]
    assert outcome_key(fast[1]) == outcome_key(slow[1])
