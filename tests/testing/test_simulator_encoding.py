"""The encoders and faults without a server: fragments join to their text, event-stream
messages carry correct CRCs, every format's event faults end in toolwire's typed errors,
and a seed fixes every byte."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from simulator_support import FORMATS, scenarios
from toolwire._core.eventstream import EventStreamDecoder
from toolwire.testing import EncodeOptions, encoder_for, parse_faults, serialise
from toolwire.testing._faults import apply_event_faults
from toolwire.testing._scenario import make_response
from toolwire.testing._wire_writing import eventstream_message, pieces

_settings = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def encode(fmt: str, spec: dict[str, Any], faults: tuple[str, ...] = (), seed: int = 0) -> bytes:
    """The streamed body of ``spec`` in ``fmt`` with ``faults``, as the server writes it."""
    encoder = encoder_for(fmt)
    rng = random.Random(seed)
    response = encoder.ids(make_response(**spec), rng=rng)
    parsed = parse_faults(faults)
    if any(f.kind == "length" for f in parsed):
        from toolwire.testing._wire_writing import truncate_arguments

        response = response.with_changes(finish="length")
        if encoder.text_arguments:
            response = truncate_arguments(response, rng)
    options = EncodeOptions(include_usage=True)
    frames = encoder.stream(response, rng=rng, options=options)
    frames = apply_event_faults(frames, parsed, encoder=encoder, rng=rng, options=options)
    return b"".join(serialise(frames, encoder.framing))


def assemble(data: bytes) -> toolwire.Response:
    """``feed_bytes`` the whole body and close."""
    asm = toolwire.StreamAssembler()
    asm.feed_bytes(data)
    return asm.close()


@_settings
@given(text=st.text(), low=st.integers(1, 8), extra=st.integers(0, 40), seed=st.integers())
def test_pieces_join_to_the_text_within_their_sizes(
    text: str, low: int, extra: int, seed: int
) -> None:
    """Fragments are never empty, at most ``high`` long, and join to the text."""
    parts = pieces(text, random.Random(seed), low, low + extra)
    assert "".join(parts) == text
    assert all(1 <= len(p) <= low + extra for p in parts)
    assert all(len(p) >= low for p in parts[:-1])


@_settings
@given(
    headers=st.dictionaries(
        st.text(min_size=1, max_size=20).filter(lambda s: len(s.encode()) < 256),
        st.text(max_size=40),
        max_size=4,
    ),
    payload=st.binary(max_size=200),
)
def test_eventstream_messages_decode_with_their_crcs(
    headers: dict[str, str], payload: bytes
) -> None:
    """Every message toolwire's decoder reads back as written; one flipped byte is caught."""
    from toolwire._core.eventstream import decode_headers

    message = eventstream_message(headers, payload)
    total = int.from_bytes(message[:4], "big")
    header_length = int.from_bytes(message[4:8], "big")
    assert total == len(message)
    assert decode_headers(message[12 : 12 + header_length]) == headers
    assert message[12 + header_length : -4] == payload
    broken = bytearray(message)
    broken[-5 if payload else 13] ^= 0x01
    with pytest.raises(toolwire.StreamFormatError, match="CRC"):
        EventStreamDecoder().feed(bytes(broken))


@pytest.mark.parametrize("fmt", FORMATS)
@_settings
@given(spec=scenarios(max_calls=2))
def test_encoded_streams_assemble_and_a_seed_fixes_the_bytes(
    fmt: str, spec: dict[str, Any]
) -> None:
    """Each format's clean stream assembles to the scenario; the same seed, the same bytes."""
    data = encode(fmt, spec, seed=3)
    assert encode(fmt, spec, seed=3) == data
    response = assemble(data)
    assert response.text == spec["text"]
    assert [c.name for c in response.tool_calls] == [c[0] for c in spec["tool_calls"]]


# fault -> the error every format's stream ends in
_EVENT_FAULTS: dict[str, type[toolwire.StreamError]] = {
    "no-terminal": toolwire.StreamAborted,
    "error-event": toolwire.ProviderError,
    "length": toolwire.TokenLimitExceeded,
    "malformed-chunk": toolwire.StreamFormatError,
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("fault", sorted(_EVENT_FAULTS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=scenarios(max_calls=2), seed=st.integers(0, 2**32))
def test_event_faults_end_in_their_typed_error_in_every_format(
    fmt: str, fault: str, spec: dict[str, Any], seed: int
) -> None:
    """no-terminal, error-event, length and malformed-chunk: the promised error, no calls."""
    data = encode(fmt, spec, (fault,), seed=seed)
    with pytest.raises(_EVENT_FAULTS[fault]) as info:
        assemble(data)
    assert info.value.partial is not None or fault == "malformed-chunk"


@pytest.mark.parametrize("fmt", ["openai-responses"])
@_settings
@given(spec=scenarios(max_calls=2), seed=st.integers(0, 2**32))
def test_a_duplicated_responses_event_is_always_a_format_error(
    fmt: str, spec: dict[str, Any], seed: int
) -> None:
    """Responses numbers its events, so any duplicate is caught."""
    with pytest.raises(toolwire.StreamFormatError, match="sequence_number"):
        assemble(encode(fmt, spec, ("duplicate-chunk",), seed=seed))


def test_the_length_fault_cuts_argument_text_where_arguments_are_text() -> None:
    """``length`` leaves a text-argument format's last call unterminated."""
    spec = {"tool_calls": [("write_file", {"path": "a.py", "content": "x" * 50})]}
    for fmt in ("openai-chat", "anthropic", "bedrock-converse", "cohere", "openai-responses"):
        with pytest.raises(toolwire.TokenLimitExceeded) as info:
            assemble(encode(fmt, spec, ("length",), seed=1))
        partial = info.value.partial
        assert partial is not None
        raw = partial.calls[0].raw_arguments
        assert raw and len(raw) < len('{"path":"a.py","content":"' + "x" * 50 + '"}')


def test_every_wire_format_toolwire_reads_has_an_encoder() -> None:
    """The simulator writes exactly the formats the adapters read."""
    from toolwire._providers import FORMATS
    from toolwire.testing import FORMATS as WRITTEN

    assert set(WRITTEN) == set(FORMATS.names())
    for fmt in WRITTEN:
        encoder = encoder_for(fmt)
        assert encoder.format == fmt
    with pytest.raises(toolwire.UnknownFormat):
        encoder_for("mistral")
