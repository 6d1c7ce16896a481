"""The Bedrock ConverseStream adapter and the AWS binary event-stream decoder."""

from __future__ import annotations

import itertools
import json
import struct
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapter_support import (
    accumulate,
    assemble_bytes,
    assemble_every_way,
    assert_matches_expected,
    assert_only_format_errors,
    check_deltas,
    mutated_streams,
    read_payloads,
    translate_all,
    without_parts,
)
from conftest import load_expected
from toolwire import StreamFormatError
from toolwire._core.deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    PartDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from toolwire._core.eventstream import EventStreamDecoder, decode_headers, looks_like_eventstream
from toolwire._providers.bedrock_converse import BedrockConverseAdapter

RECORDING = "bedrock-converse__nova-text-then-tooluse"


def run(payloads: list[Any]) -> list[Delta]:
    """The adapter's deltas for ``payloads``, part boundaries left out."""
    return without_parts(run_with_parts(payloads))


def run_with_parts(payloads: Sequence[Any]) -> list[Delta]:
    """Every delta the adapter makes of ``payloads``, checked."""
    deltas = translate_all(BedrockConverseAdapter(), payloads)
    check_deltas(deltas)
    return deltas


def delta(index: int, **body: Any) -> dict[str, Any]:
    return {"contentBlockDelta": {"contentBlockIndex": index, "delta": body}}


def tool_start(index: int, call_id: str = "tooluse_1", name: str = "f") -> dict[str, Any]:
    start = {"toolUse": {"toolUseId": call_id, "name": name}}
    return {"contentBlockStart": {"contentBlockIndex": index, "start": start}}


def stop(index: int) -> dict[str, Any]:
    return {"contentBlockStop": {"contentBlockIndex": index}}


def message_stop(reason: str) -> dict[str, Any]:
    return {"messageStop": {"stopReason": reason}}


VALID_STREAM: list[dict[str, Any]] = [
    {"messageStart": {"role": "assistant"}},
    delta(0, reasoningContent={"text": "plan"}),
    delta(0, reasoningContent={"signature": "c2ln"}),
    stop(0),
    delta(1, text="Checking."),
    stop(1),
    tool_start(2, "tooluse_a", "get_temperature"),
    delta(2, toolUse={"input": '{"city":'}),
    delta(2, toolUse={"input": '"Paris"}'}),
    stop(2),
    message_stop("tool_use"),
    {"metadata": {"usage": {"inputTokens": 5, "outputTokens": 9, "totalTokens": 14}}},
]


# ------------------------------------------------------------------------ quirks


def test_tool_use_block_opens_streams_and_ends_one_call() -> None:
    """contentBlockStart.toolUse opens a call, toolUse.input deltas stream, stop ends it."""
    calls = [d for d in run(VALID_STREAM) if isinstance(d, CallDelta)]
    assert calls == [
        CallDelta(id="tooluse_a", index=2, name="get_temperature", start=True),
        CallDelta(id="tooluse_a", index=2, arguments='{"city":', start=False),
        CallDelta(id="tooluse_a", index=2, arguments='"Paris"}', start=False),
        CallDelta(id="tooluse_a", index=2, start=False, end=True),
    ]


def test_text_and_reasoning_need_no_block_start() -> None:
    """Text and reasoning deltas arrive without contentBlockStart; each block index opens
    a part, and the reasoning signature is kept on its part."""
    deltas = run_with_parts(VALID_STREAM[:6])
    assert deltas == [
        PartDelta(kind="reasoning", start=True),
        ReasoningPart(text="plan"),
        PartDelta(kind="reasoning", data={"signature": "c2ln"}),
        PartDelta(kind="text", start=True),
        TextPart(text="Checking."),
    ]


def test_redacted_reasoning_is_kept_as_an_item() -> None:
    """Redacted reasoning content is kept whole, to be sent back unchanged."""
    deltas = run_with_parts([delta(0, reasoningContent={"redactedContent": "ZW5j"})])
    assert deltas == [
        PartDelta(kind="item", data={"reasoningContent": {"redactedContent": "ZW5j"}})
    ]


def test_tool_block_without_input_has_empty_arguments() -> None:
    """A tool block that gets no input delta ends with empty argument text."""
    calls = [d for d in run([tool_start(0), stop(0)]) if isinstance(d, CallDelta)]
    assert "".join(c.arguments for c in calls) == "" and calls[-1].end


def start_input_turn(start_input: Any, *inputs: str) -> list[dict[str, Any]]:
    """A tool block whose ``start.toolUse`` carries ``input``, then ``inputs`` deltas."""
    start = tool_start(0, "tooluse_w", "wipe_disk")
    start["contentBlockStart"]["start"]["toolUse"]["input"] = start_input
    return [
        {"messageStart": {"role": "assistant"}},
        start,
        *(delta(0, toolUse={"input": text}) for text in inputs),
        stop(0),
        message_stop("tool_use"),
    ]


def assemble_turn(payloads: list[dict[str, Any]]) -> Any:
    """The response of ``payloads`` as dicts and as an event-stream body (whole and byte
    by byte), checked to agree."""
    response, events = assemble_every_way(payloads, body=False)
    body = b"".join(event_message(next(iter(p)), next(iter(p.values()))) for p in payloads)
    assert assemble_bytes([body]) == (response, events)
    assert assemble_bytes([body[i : i + 1] for i in range(len(body))]) == (response, events)
    return response


def test_a_start_input_is_never_dropped() -> None:
    """An ``input`` in ``start.toolUse`` (not in the API, but sent by proxies) counts: an
    object alone is the call and stands with deltas that say the same, JSON text is the
    first fragment."""
    wipe = {"device": "/dev/sdz-scratch"}
    for payloads in (
        start_input_turn(wipe),
        start_input_turn(wipe, '{"device": "/dev/sdz-scratch"}'),
        start_input_turn('{"device": ', '"/dev/sdz-scratch"}'),
    ):
        response = assemble_turn(payloads)
        assert [c.arguments for c in response.tool_calls] == [wipe], payloads


def test_deltas_that_contradict_a_start_input_object_reject_the_call() -> None:
    """Input deltas that say something else than the start input object reject the call."""
    response = assemble_turn(start_input_turn({"device": "/dev/sdz-scratch"}, '{"device": "x"}'))
    assert response.tool_calls == [] and "contradict" in response.rejected[0].reason


@pytest.mark.parametrize(
    ("reason", "kind"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("model_context_window_exceeded", "length"),
        ("guardrail_intervened", "content_filter"),
        ("content_filtered", "content_filter"),
        ("brand_new_reason", "other"),
    ],
)
def test_message_stop_finishes_with_the_mapped_reason(reason: str, kind: str) -> None:
    """messageStop gives the one FinishDelta with its stopReason mapped."""
    assert run([message_stop(reason)]) == [FinishDelta(raw=reason, kind=kind)]


def test_usage_arrives_after_the_finish() -> None:
    """The metadata event after messageStop still reports usage."""
    deltas = run(VALID_STREAM)
    assert isinstance(deltas[-2], FinishDelta)
    assert deltas[-1] == UsageDelta(
        input_tokens=5,
        output_tokens=9,
        total_tokens=14,
        raw={"inputTokens": 5, "outputTokens": 9, "totalTokens": 14},
    )


@pytest.mark.parametrize(
    "name",
    [
        "internalServerException",
        "modelStreamErrorException",
        "throttlingException",
        "validationException",
        "serviceUnavailableException",
    ],
)
def test_exception_events_become_error_deltas(name: str) -> None:
    """Every stream exception event becomes an ErrorDelta naming it."""
    body = {"message": "boom"}
    assert run([{name: body}]) == [ErrorDelta(message=f"{name}: boom", error={name: body})]


def test_unwrapped_body_is_read_with_its_event_name() -> None:
    """A body passed with its event name reads like the boto3 wrapper."""
    deltas = run([({"contentBlockIndex": 0, "delta": {"text": "hi"}}, "contentBlockDelta")])
    assert deltas == [TextPart(text="hi")]


def test_unknown_events_and_deltas_are_ignored() -> None:
    """Unknown events, messageStart and unknown delta kinds give nothing."""
    assert (
        run([{"messageStart": {"role": "assistant"}}, {"newThing": {}}, delta(0, image={})]) == []
    )


# ------------------------------------------------------------------------ structure

BROKEN: list[tuple[str, list[Any]]] = [
    ("not an object", ["messageStop"]),
    ("event body not an object", [{"contentBlockDelta": [1]}]),
    ("index missing", [{"contentBlockDelta": {"delta": {"text": "x"}}}]),
    ("index negative", [{"contentBlockStop": {"contentBlockIndex": -1}}]),
    ("delta missing", [{"contentBlockDelta": {"contentBlockIndex": 0}}]),
    ("text not a string", [delta(0, text=5)]),
    ("toolUse delta for a text block", [delta(0, toolUse={"input": "{}"})]),
    ("toolUse delta after the stop", [tool_start(0), stop(0), delta(0, toolUse={"input": "{}"})]),
    ("input not a string", [tool_start(0), delta(0, toolUse={"input": {"a": 1}})]),
    (
        "toolUse without a name",
        [{"contentBlockStart": {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "x"}}}}],
    ),
    ("block started twice", [tool_start(0), tool_start(0)]),
    ("block stopped twice", [stop(0), stop(0)]),
    ("second messageStop", [message_stop("end_turn"), message_stop("end_turn")]),
    ("stopReason not a string", [{"messageStop": {"stopReason": 1}}]),
    ("usage count not a number", [{"metadata": {"usage": {"inputTokens": "5"}}}]),
]


@pytest.mark.parametrize(("case", "stream"), BROKEN, ids=[case for case, _ in BROKEN])
def test_broken_payloads_raise_a_typed_format_error(case: str, stream: list[Any]) -> None:
    """An event that breaks the format raises StreamFormatError carrying that event."""
    adapter = BedrockConverseAdapter()
    for payload in stream[:-1]:
        adapter.translate(payload)
    with pytest.raises(StreamFormatError) as info:
        adapter.translate(stream[-1])
    assert info.value.payload is stream[-1]


@given(mutated_streams(VALID_STREAM))
def test_mutated_payloads_raise_only_format_errors(stream: list[Any]) -> None:
    """Mutated events give StreamFormatError or well-typed deltas, nothing else."""
    assert_only_format_errors(BedrockConverseAdapter, stream)


# ------------------------------------------------------------------ event stream


def encode_header(name: str, kind: int, value: bytes = b"") -> bytes:
    raw = name.encode()
    return bytes([len(raw)]) + raw + bytes([kind]) + value


def string_header(name: str, value: str) -> bytes:
    raw = value.encode()
    return encode_header(name, 7, struct.pack(">H", len(raw)) + raw)


def encode_message(headers: bytes, payload: bytes) -> bytes:
    """One event-stream message, built from the format's definition."""
    total = 16 + len(headers) + len(payload)
    prelude = struct.pack(">II", total, len(headers))
    head = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + payload
    return head + struct.pack(">I", zlib.crc32(head))


def event_message(name: str, body: dict[str, Any]) -> bytes:
    headers = (
        string_header(":event-type", name)
        + string_header(":content-type", "application/json")
        + string_header(":message-type", "event")
    )
    return encode_message(headers, json.dumps(body).encode())


def decode_all(data: bytes, cuts: list[int]) -> list[tuple[str | None, Any]]:
    decoder = EventStreamDecoder()
    bounds = sorted({0, len(data), *(c for c in cuts if 0 <= c <= len(data))})
    out = []
    for a, b in itertools.pairwise(bounds):
        out += decoder.feed(data[a:b])
    return out + decoder.close()


SAMPLE = b"".join(event_message(next(iter(p)), next(iter(p.values()))) for p in VALID_STREAM)


def test_events_decode_to_the_boto3_shape() -> None:
    """Each event message decodes to ``(event type, {event type: payload})``."""
    assert decode_all(SAMPLE, []) == [(next(iter(p)), p) for p in VALID_STREAM]


def test_decoding_does_not_depend_on_the_split_byte_by_byte() -> None:
    """Fed one byte at a time, the decoder yields exactly what it yields for the whole."""
    assert decode_all(SAMPLE, list(range(len(SAMPLE)))) == decode_all(SAMPLE, [])


@given(st.lists(st.integers(0, len(SAMPLE)), max_size=30))
def test_decoding_does_not_depend_on_the_split(cuts: list[int]) -> None:
    """At any Hypothesis-chosen split points the decoded events are the same."""
    assert decode_all(SAMPLE, cuts) == decode_all(SAMPLE, [])


def test_every_header_value_type_is_read() -> None:
    """All ten header value types decode to their Python values."""
    ident = uuid.UUID(int=7)
    headers = (
        encode_header("t", 0)
        + encode_header("f", 1)
        + encode_header("b", 2, struct.pack(">b", -2))
        + encode_header("s", 3, struct.pack(">h", -300))
        + encode_header("i", 4, struct.pack(">i", 70000))
        + encode_header("l", 5, struct.pack(">q", -(2**40)))
        + encode_header("y", 6, struct.pack(">H", 2) + b"\x00\xff")
        + string_header("str", "é")
        + encode_header("ts", 8, struct.pack(">q", 1_700_000_000_000))
        + encode_header("u", 9, ident.bytes)
    )
    assert decode_headers(headers) == {
        "t": True,
        "f": False,
        "b": -2,
        "s": -300,
        "i": 70000,
        "l": -(2**40),
        "y": b"\x00\xff",
        "str": "é",
        "ts": 1_700_000_000_000,
        "u": ident,
    }


def test_exception_message_becomes_an_error_event() -> None:
    """An exception message decodes to ``{exception type: body}``, an ErrorDelta downstream."""
    headers = string_header(":exception-type", "throttlingException") + string_header(
        ":message-type", "exception"
    )
    items = decode_all(encode_message(headers, b'{"message":"slow down"}'), [])
    assert items == [("throttlingException", {"throttlingException": {"message": "slow down"}})]
    assert isinstance(run([items[0][1]])[0], ErrorDelta)


def test_error_message_becomes_an_error_event() -> None:
    """A protocol error message (code and message headers) becomes an ErrorDelta."""
    headers = (
        string_header(":message-type", "error")
        + string_header(":error-code", "InternalFailure")
        + string_header(":error-message", "oops")
    )
    items = decode_all(encode_message(headers, b""), [])
    assert run([items[0][1]]) == [
        ErrorDelta(
            message="InternalFailure: oops", error={"code": "InternalFailure", "message": "oops"}
        )
    ]


def test_event_stream_is_recognised_from_its_first_twelve_bytes() -> None:
    """A CRC-valid prelude identifies the framing; text bodies do not; short heads wait."""
    assert looks_like_eventstream(SAMPLE[:12]) is True
    assert looks_like_eventstream(SAMPLE[:11]) is None
    for text in (b'data: {"type":"ping"}\n\n', b'{"model":"m","done":false}\n', b"[{}, {}, {}]"):
        assert looks_like_eventstream(text) is False


def test_cut_message_is_never_dispatched() -> None:
    """A message cut by the end of the stream is dropped at close, never completed."""
    decoder = EventStreamDecoder()
    items = decoder.feed(SAMPLE[:-5])
    assert len(items) == len(VALID_STREAM) - 1
    assert decoder.pending > 0 and decoder.close() == []


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("case", "data"),
    [
        ("prelude corrupted", _flip(SAMPLE, 2)),
        ("headers corrupted", _flip(SAMPLE, 14)),
        ("payload corrupted", _flip(SAMPLE, 80)),
        ("not an event stream", b"data: {}\n\n" + b"\x00" * 20),
        ("payload not JSON", encode_message(string_header(":event-type", "x"), b"{nope")),
        ("event without its type", encode_message(string_header(":message-type", "event"), b"{}")),
        ("unknown header type", encode_message(encode_header("h", 42), b"{}")),
        ("truncated header", encode_message(b"\x05ab", b"{}")),
        (
            "impossible length",
            struct.pack(">II", 8, 0) + struct.pack(">I", zlib.crc32(struct.pack(">II", 8, 0))),
        ),
    ],
)
def test_corruption_raises_a_typed_error(case: str, data: bytes) -> None:
    """Corrupt bytes raise StreamFormatError (CRC, lengths, headers, payload) and stay failed."""
    decoder = EventStreamDecoder()
    with pytest.raises(StreamFormatError):
        decoder.feed(data)
    with pytest.raises(StreamFormatError):
        decoder.feed(b"")


@given(st.integers(0, len(SAMPLE) - 1), st.integers(1, 255))
def test_any_flipped_byte_is_detected(at: int, mask: int) -> None:
    """Changing any single byte of the stream raises StreamFormatError, never wrong events."""
    data = SAMPLE[:at] + bytes([SAMPLE[at] ^ mask]) + SAMPLE[at + 1 :]
    with pytest.raises(StreamFormatError):
        EventStreamDecoder().feed(data)


# ------------------------------------------------------------------------ corpus


@pytest.mark.corpus
def test_recorded_event_stream_decodes_to_its_decoded_sibling(corpus_dir: Path) -> None:
    """The recorded binary stream decodes, whole, byte by byte and split, to the .jsonl."""
    data = (corpus_dir / "streams" / f"{RECORDING}.eventstream").read_bytes()
    want = [p for p, _ in read_payloads(corpus_dir / "streams" / f"{RECORDING}.decoded.jsonl")]
    whole = decode_all(data, [])
    assert [p for _, p in whole] == want
    assert decode_all(data, list(range(len(data)))) == whole
    assert decode_all(data, list(range(0, len(data), 97))) == whole


@pytest.mark.corpus
@pytest.mark.parametrize("source", ["decoded.jsonl", "eventstream"])
def test_recording_translates_to_its_expected_result(corpus_dir: Path, source: str) -> None:
    """The Bedrock recording, read from either file, yields its expected call and text."""
    path = corpus_dir / "streams" / f"{RECORDING}.{source}"
    if source == "eventstream":
        payloads = [p for _, p in decode_all(path.read_bytes(), [])]
    else:
        payloads = [p for p, _ in read_payloads(path)]
    expected = load_expected()[f"{RECORDING}.{source}"]
    assert_matches_expected(accumulate(run(payloads)), expected)
