"""Recordings: ``toolwire.record`` keeps a finished stream as versioned JSON, and replaying
it (``run_turn(recording)``) gives the same calls, ids and idempotency keys, pinned against
recordings checked in here."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire

HERE = Path(__file__).parent / "recordings"

# What the checked-in recordings must replay as, under every later toolwire version.
PINNED = {
    "openai_chat_two_payments": {
        "calls": [
            ("call_pay_ann", "pay", {"amount": 5, "to": "Ann"}),
            ("call_pay_bob", "pay", {"to": "Bob", "amount": 7}),
        ],
        "keys": [
            "2c8e3ff7da3fe698d9c86725579c039b9ea874cbab73eeb58ebc6c240bbe9553",
            "1d0d51c0528b4be9cb6d9b300cdf863996137998c9d80354ed92ca70062aa086",
        ],
        "response_id": "chatcmpl-pin1",
        "text": "Paying.",
    },
    "ollama_one_payment": {
        "calls": [("call_c3eef16ea649cd3ab413f84b", "pay", {"amount": 3, "to": "Cy"})],
        "keys": ["a8d713bc84a7dc1fccba9739a453f7b615742fb33eb6084ac0c9ec94ce2c00b5"],
        "response_id": None,
        "text": "",
    },
}


def payment_tools(ran: list[str] | None = None) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def pay(amount: int, to: str, ctx: toolwire.ToolContext) -> str:
        """Pay someone."""
        if ran is not None:
            ran.append(ctx.idempotency_key)
        return f"paid {amount} to {to}"

    return tools


def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "id": "chatcmpl-rec",
        "object": "chat.completion.chunk",
        "created": 1700000001,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def two_calls() -> list[Any]:
    return [
        chunk({"role": "assistant", "content": "On it."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "pay", "arguments": '{"amount": 1, "to": "Al"}'},
                    }
                ]
            }
        ),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_b",
                        "type": "function",
                        "function": {"name": "pay", "arguments": '{"amount": 2, "to": "Bé"}'},
                    }
                ]
            }
        ),
        chunk({}, "tool_calls"),
        "[DONE]",
    ]


def sse(items: list[Any]) -> bytes:
    return b"".join(
        f"data: {item if isinstance(item, str) else json.dumps(item)}\n\n".encode()
        for item in items
    )


def replayed(source: Any, scope: str = "s") -> tuple[list[Any], list[str | None]]:
    tools = payment_tools()
    turn = toolwire.run_turn(source, tools, executor=toolwire.Executor(tools, scope=scope))
    calls = [(c.id, c.name, c.arguments) for c in turn.response.tool_calls]
    return calls, [o.idempotency_key for o in turn.outcomes]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_a_checked_in_recording_replays_its_pinned_calls_and_keys(name: str) -> None:
    """A recording written by an earlier toolwire replays the same calls, ids and keys."""
    recording = toolwire.Recording.from_json((HERE / f"{name}.json").read_text())
    tools = payment_tools()
    turn = toolwire.run_turn(recording, tools, executor=toolwire.Executor(tools, scope="pinned"))
    pinned = PINNED[name]
    assert [(c.id, c.name, c.arguments) for c in turn.response.tool_calls] == pinned["calls"]
    assert [o.idempotency_key for o in turn.outcomes] == pinned["keys"]
    assert [o.status for o in turn.outcomes] == ["completed"] * len(pinned["keys"])
    assert turn.response.response_id == pinned["response_id"]
    assert turn.response.text == pinned["text"]


def test_an_id_less_recording_keeps_the_request_identity_of_its_live_source() -> None:
    """A response without a response id is keyed by the request identity the recording
    kept, as the live source would have keyed it; without it, the keys change."""
    data = json.loads((HERE / "ollama_one_payment.json").read_text())
    recording = toolwire.Recording.from_dict(data)
    assert recording.request_identity is not None
    other = toolwire.Recording.from_dict({**data, "request_identity": "request-sha256:other"})
    assert replayed(recording)[1] != replayed(other)[1]
    tools = payment_tools()
    turn = toolwire.run_turn(recording, tools, executor=toolwire.Executor(tools, scope="s"))
    assert turn.identity == recording.request_identity


@pytest.mark.parametrize("as_bytes", [False, True])
def test_a_recording_replays_like_its_source(as_bytes: bool) -> None:
    """Recording a source and replaying the recording (also after JSON) gives the calls
    and keys of running the source itself."""
    items = two_calls()
    source: Any = [sse(items)] if as_bytes else items
    recording = toolwire.record(list(source))
    again = toolwire.Recording.from_json(recording.to_json())
    assert again == recording
    assert recording.format == "openai-chat"
    assert replayed(again) == replayed(list(source))


@settings(max_examples=30)
@given(st.data())
def test_a_bytes_recording_does_not_depend_on_the_chunking(data: st.DataObject) -> None:
    """Bytes split anywhere (whole, byte by byte, at chosen points) record the same
    recording: consecutive chunks are joined, multibyte characters included."""
    body = sse(two_calls())
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    whole = toolwire.record([body])
    assert toolwire.record(pieces) == whole
    assert toolwire.record([body[i : i + 1] for i in range(len(body))]) == whole
    assert whole.items == (body,)


def test_bytes_that_are_not_utf8_are_kept_as_base64() -> None:
    """A body that is not UTF-8 survives JSON byte for byte (as base64)."""
    recording = toolwire.Recording(format="openai-chat", items=(b"\xff\xfe",))
    data = recording.to_dict()
    assert data["items"] == [{"base64": "//4="}]
    assert toolwire.Recording.from_json(recording.to_json()).items == (b"\xff\xfe",)


def test_sdk_objects_are_recorded_in_their_wire_shape() -> None:
    """An SDK event object is recorded as the fields the server sent, by wire name."""
    from openai.types.chat import ChatCompletionChunk

    objects = [ChatCompletionChunk.model_validate(item) for item in two_calls()[:-1]]
    recording = toolwire.record(objects)
    json.dumps(recording.to_dict())  # JSON-safe
    assert all(isinstance(item, dict) for item in recording.items)
    assert replayed(recording) == replayed(two_calls())


def test_a_stream_that_did_not_end_properly_raises_and_records_nothing() -> None:
    """A stream cut before its terminal event raises its StreamError from record()."""
    with pytest.raises(toolwire.StreamAborted):
        toolwire.record(two_calls()[:3])
    cut = [chunk({"content": "abc"}), chunk({}, "length")]
    with pytest.raises(toolwire.TokenLimitExceeded):
        toolwire.record(cut)


def test_arecord_records_an_async_source_like_record() -> None:
    """arecord() reads an async iterable into the same recording, which replays in async."""

    async def source() -> Any:
        for item in two_calls():
            yield item

    async def main() -> tuple[toolwire.Recording, list[str | None]]:
        recording = await toolwire.arecord(source())
        tools = payment_tools()
        executor = toolwire.AsyncExecutor(tools, scope="s")
        turn = await toolwire.arun_turn(recording, tools, executor=executor)
        return recording, [o.idempotency_key for o in turn.outcomes]

    recording, keys = asyncio.run(main())
    assert recording == toolwire.record(two_calls())
    assert keys == replayed(recording)[1]


def test_record_gives_events_to_on_event_as_they_arrive() -> None:
    """on_event sees every event of the recorded stream."""
    seen: list[Any] = []
    toolwire.record(two_calls(), on_event=seen.append)
    assert any(isinstance(event, toolwire.ToolCallStarted) for event in seen)


@pytest.mark.parametrize(
    "data",
    [
        {"type": "toolwire.recording", "version": 2, "format": "openai-chat", "items": []},
        {"type": "other", "version": 1, "format": "openai-chat", "items": []},
        {"type": "toolwire.recording", "version": 1, "format": "", "items": []},
        {"type": "toolwire.recording", "version": 1, "format": "x", "items": [{"what": 1}]},
        {"type": "toolwire.recording", "version": 1, "format": "x", "items": [{"base64": "!"}]},
    ],
)
def test_a_dict_that_is_not_a_readable_recording_is_refused(data: dict[str, Any]) -> None:
    """A newer version, another type or a malformed item raises UsageError."""
    with pytest.raises(toolwire.UsageError):
        toolwire.Recording.from_dict(data)
