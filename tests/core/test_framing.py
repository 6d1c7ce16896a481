"""Framing: SSE by the WHATWG rules, NDJSON and JSON-array bodies, decoded identically
whatever the byte split, with typed errors for bytes that are not a stream."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import StreamFormatError
from toolwire._core.framing import (
    FrameDecoder,
    JSONArrayDecoder,
    NDJSONDecoder,
    SSEDecoder,
    SSEEvent,
    detect_framing,
)


def sse_events(chunks: list[bytes]) -> list[SSEEvent]:
    """All SSE events of ``chunks`` fed in order, then end of input."""
    dec = SSEDecoder()
    out: list[SSEEvent] = []
    for chunk in chunks:
        out.extend(dec.feed_events(chunk))
    out.extend(dec.close_events())
    return out


def decode(decoder: Any, chunks: list[bytes]) -> list[Any]:
    """All ``(event, payload)`` items of ``chunks`` through ``decoder``."""
    out: list[Any] = []
    for chunk in chunks:
        out.extend(decoder.feed(chunk))
    out.extend(decoder.close())
    return out


def bytewise(data: bytes) -> list[bytes]:
    """``data`` as one-byte chunks."""
    return [data[i : i + 1] for i in range(len(data))]


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets."""
    bounds = [0, *sorted(cuts), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


# -------------------------------------------------------------------- SSE, WHATWG


def test_multiline_data_is_joined_with_newlines() -> None:
    """Several ``data:`` lines of one event join with ``\\n``."""
    assert sse_events([b"data: a\ndata: b\n\n"]) == [SSEEvent(event="message", data="a\nb")]


def test_one_space_after_the_colon_is_dropped() -> None:
    """Only a single leading space of a field value is removed."""
    events = sse_events([b"data:x\n\ndata:  y\n\n"])
    assert [e.data for e in events] == ["x", " y"]


def test_comments_and_unknown_fields_are_ignored() -> None:
    """Lines starting with ``:`` and unknown field names do not change the event."""
    events = sse_events([b": keep-alive\nfoo: bar\ndata: 1\n:x\n\n"])
    assert [e.data for e in events] == ["1"]


def test_event_name_is_carried_and_reset() -> None:
    """``event:`` names one event only; the next defaults to ``message``."""
    events = sse_events([b"event: error\ndata: {}\n\ndata: {}\n\n"])
    assert [e.event for e in events] == ["error", "message"]


def test_data_before_event_line_in_one_block() -> None:
    """Field order inside an event does not matter (Bedrock Mantle sends data first)."""
    events = sse_events([b"data: {}\nevent: response.created\n\n"])
    assert events == [SSEEvent(event="response.created", data="{}")]


@pytest.mark.parametrize("eol", [b"\n", b"\r", b"\r\n"])
def test_every_line_ending(eol: bytes) -> None:
    """LF, CR and CRLF all end lines."""
    body = b"data: 1" + eol + b"data: 2" + eol + eol + b"data: 3" + eol + eol
    assert [e.data for e in sse_events([body])] == ["1\n2", "3"]
    assert [e.data for e in sse_events(bytewise(body))] == ["1\n2", "3"]


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    """A CR ending one chunk and an LF starting the next are a single line end."""
    events = sse_events([b"data: 1\r", b"\ndata: 2\r\n\r\n"])
    assert [e.data for e in events] == ["1\n2"]


def test_id_and_retry_fields() -> None:
    """``id:`` sets the last event id (not with NUL); ``retry:`` keeps digits only."""
    dec = SSEDecoder()
    events = dec.feed_events(b"id: 7\nretry: 1500\ndata: a\n\nid: x\0y\nretry: 1x\ndata: b\n\n")
    assert [(e.data, e.id) for e in events] == [("a", "7"), ("b", "7")]
    assert dec.retry == 1500


def test_event_without_data_is_not_dispatched() -> None:
    """A block with no data lines dispatches nothing."""
    assert sse_events([b"event: ping\n\n\n\ndata: z\n\n"]) == [SSEEvent(event="message", data="z")]


def test_bom_at_start_is_dropped_even_when_split() -> None:
    """A UTF-8 BOM before the first field is skipped, also when its bytes are split."""
    body = "\ufeffdata: 1\n\n".encode()
    assert [e.data for e in sse_events([body])] == ["1"]
    assert [e.data for e in sse_events(bytewise(body))] == ["1"]


def test_utf8_character_split_across_chunks() -> None:
    """A multi-byte character split between chunks decodes intact."""
    body = 'data: {"t": "é€😀"}\n\n'.encode()
    for cut in range(len(body)):
        assert [e.data for e in sse_events([body[:cut], body[cut:]])] == ['{"t": "é€😀"}']


def test_invalid_utf8_is_a_format_error() -> None:
    """Bytes that are not UTF-8 raise StreamFormatError."""
    with pytest.raises(StreamFormatError):
        sse_events([b"data: \xff\xfe\n\n"])


def test_last_event_without_blank_line_is_flushed_when_complete() -> None:
    """At end of input an event lacking only its blank line is dispatched if it is JSON."""
    assert decode(SSEDecoder(), [b'data: {"a": 1}\n']) == [(None, {"a": 1})]
    assert decode(SSEDecoder(), [b'data: {"a": 1}']) == [(None, {"a": 1})]
    assert decode(SSEDecoder(), [b"data: [DONE]"]) == [(None, "[DONE]")]


def test_cut_line_is_never_completed() -> None:
    """A last line cut inside its JSON is dropped, not repaired."""
    assert decode(SSEDecoder(), [b'data: {"a": 1}\n\ndata: {"b": ']) == [(None, {"a": 1})]
    assert decode(SSEDecoder(), [b'data: {"a": 1}\n\ndata: [DON']) == [(None, {"a": 1})]


def test_error_event_name_travels_with_payload() -> None:
    """An ``event: error`` with JSON data is returned with its event name."""
    items = decode(SSEDecoder(), [b'event: error\ndata: {"error": {"code": "x"}}\n\n'])
    assert items == [("error", {"error": {"code": "x"}})]


def test_non_json_data_is_a_format_error() -> None:
    """Data that is neither JSON nor ``[DONE]`` raises StreamFormatError naming it."""
    with pytest.raises(StreamFormatError) as info:
        decode(SSEDecoder(), [b"data: hello\n\n"])
    assert "hello" in str(info.value)


def test_blank_data_is_a_keep_alive() -> None:
    """An event whose data is blank carries no payload and is skipped."""
    assert decode(SSEDecoder(), [b"data:\n\ndata: {}\n\n"]) == [(None, {})]


# ------------------------------------------------------------------ NDJSON, arrays


def test_ndjson_lines_blank_lines_and_crlf() -> None:
    """NDJSON yields one payload per line, skipping blank lines, with CRLF allowed."""
    body = b'{"a": 1}\r\n\n{"b": 2}\n'
    assert decode(NDJSONDecoder(), bytewise(body)) == [(None, {"a": 1}), (None, {"b": 2})]


def test_ndjson_last_line_without_newline() -> None:
    """A complete last line without newline is flushed; a cut one is dropped."""
    assert decode(NDJSONDecoder(), [b'{"a": 1}\n{"b": 2}']) == [(None, {"a": 1}), (None, {"b": 2})]
    assert decode(NDJSONDecoder(), [b'{"a": 1}\n{"b": 2']) == [(None, {"a": 1})]


def test_ndjson_bad_line_is_a_format_error() -> None:
    """A complete NDJSON line that is not JSON raises StreamFormatError."""
    with pytest.raises(StreamFormatError):
        decode(NDJSONDecoder(), [b"{oops}\n"])


def test_json_array_elements_stream_out_as_they_are() -> None:
    """Array elements are dispatched as they complete, unchanged (envelopes included)."""
    first = {"__type__": "X", "__data__": {"s": 'a,]}"['}}
    body = json.dumps([first, {"b": [1, {"c": 2}]}]).encode()
    dec = JSONArrayDecoder()
    seen: list[Any] = []
    for i, chunk in enumerate(bytewise(body)):
        seen.extend(dec.feed(chunk))
        if i == body.index(b'"b"'):
            assert seen == [(None, first)]
    seen.extend(dec.close())
    assert seen == [(None, first), (None, {"b": [1, {"c": 2}]})]


def test_json_array_cut_drops_the_unfinished_element() -> None:
    """A cut array keeps the elements already complete and drops the rest."""
    assert decode(JSONArrayDecoder(), [b'[{"a": 1}, {"b": ']) == [(None, {"a": 1})]


def test_json_array_rejects_trailing_data_and_non_arrays() -> None:
    """Data after the array, or a body that is not an array, raises StreamFormatError."""
    with pytest.raises(StreamFormatError):
        decode(JSONArrayDecoder(), [b'[{"a": 1}] x'])
    with pytest.raises(StreamFormatError):
        decode(JSONArrayDecoder(), [b'x[{"a": 1}]'])
    with pytest.raises(StreamFormatError):
        decode(JSONArrayDecoder(), [b"[{}, , {}]"])


def test_empty_json_array() -> None:
    """``[]`` holds no payloads."""
    assert decode(JSONArrayDecoder(), [b" [ ] "]) == []


def test_detect_framing() -> None:
    """The first non-blank byte picks the framing; binary data is refused."""
    assert detect_framing(b"  \n") is None
    assert detect_framing(b"data: x") == "sse"
    assert detect_framing(b": comment") == "sse"
    assert detect_framing(b'\n{"a"') == "ndjson"
    assert detect_framing(b"\xef\xbb\xbf[") == "json-array"
    assert detect_framing(b"\x00\x00\x00\x90") == "aws-eventstream"
    with pytest.raises(StreamFormatError):
        detect_framing(b"\x01\x02")


def test_frame_decoder_waits_for_a_decisive_byte() -> None:
    """Auto framing works when the first bytes are whitespace or a split BOM."""
    body = "\ufeff\n" + '{"a": 1}\n'
    items = decode(FrameDecoder(), bytewise(body.encode()))
    assert items == [(None, {"a": 1})]


# ------------------------------------------------------------- split independence

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=4), kids, max_size=3)
    ),
    max_leaves=8,
)
_payloads = st.lists(
    st.tuples(
        st.sampled_from([None, "error", "response.created"]),
        st.dictionaries(st.text(max_size=5), _values, min_size=1, max_size=3),
    ),
    max_size=6,
)


def _sse_body(items: list[tuple[str | None, Any]], eol: str, indent: int | None) -> bytes:
    """Encode items as SSE, pretty-printed JSON spread over several ``data:`` lines."""
    parts = []
    for event, payload in items:
        lines = json.dumps(payload, indent=indent).split("\n")
        block = "".join(f"data: {line}{eol}" for line in lines)
        if event:
            block = f"event: {event}{eol}" + block
        parts.append(block + eol)
    return "".join(parts).encode()


@settings(max_examples=60, deadline=None)
@given(
    items=_payloads,
    eol=st.sampled_from(["\n", "\r", "\r\n"]),
    indent=st.sampled_from([None, 1]),
    data=st.data(),
)
def test_sse_split_anywhere_gives_same_payloads(
    items: list[tuple[str | None, Any]], eol: str, indent: int | None, data: st.DataObject
) -> None:
    """SSE bodies decode to the same payloads whole, byte by byte and at random splits."""
    body = _sse_body(items, eol, indent)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
    want = [(e, p) for e, p in items]
    assert decode(SSEDecoder(), [body]) == want
    assert decode(SSEDecoder(), bytewise(body)) == want
    assert decode(SSEDecoder(), split_at(body, cuts)) == want


@settings(max_examples=60, deadline=None)
@given(items=_payloads, data=st.data())
def test_ndjson_and_array_split_anywhere_give_same_payloads(
    items: list[tuple[str | None, Any]], data: st.DataObject
) -> None:
    """NDJSON and JSON-array bodies decode to the same payloads however they are split."""
    payloads = [p for _, p in items]
    want = [(None, p) for p in payloads]
    nd = "".join(json.dumps(p) + "\n" for p in payloads).encode()
    arr = json.dumps(payloads, indent=2).encode()
    for body, make in ((nd, NDJSONDecoder), (arr, JSONArrayDecoder), (arr, FrameDecoder)):
        cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=12))
        assert decode(make(), [body]) == want
        assert decode(make(), bytewise(body)) == want
        assert decode(make(), split_at(body, cuts)) == want


def test_an_event_that_never_ends_is_bounded() -> None:
    """An unfinished payload larger than ``max_pending`` raises StreamLimitExceeded."""
    from toolwire import StreamLimitExceeded

    dec = FrameDecoder(max_pending=100)
    dec.feed(b"data: " + b"x" * 90)
    with pytest.raises(StreamLimitExceeded):
        dec.feed(b"y" * 20)
    dec = FrameDecoder(max_pending=100)
    dec.feed(b'{"a": "' + b"x" * 90)
    with pytest.raises(StreamLimitExceeded):
        dec.feed(b"y" * 20)


# ------------------------------------------------------- one large payload, many reads


_PLAIN = "the quick brown fox jumps over the lazy dog; "
_ESCAPY = 'print("héllo\\tworld", end="\\r\\n")  # \\\\ "quoted" 😀\n'


def _arguments_chunk(size: int, line: str) -> dict[str, Any]:
    """An OpenAI chunk carrying a whole call whose arguments (``line`` repeated) are about
    ``size`` bytes."""
    content = line * (size // len(line.encode()) + 1)
    arguments = json.dumps({"path": "a.py", "content": content})
    call = {"index": 0, "id": "call_1", "function": {"name": "write", "arguments": arguments}}
    return {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}


def _bodies(size: int, line: str = _PLAIN) -> dict[str, tuple[bytes, Any]]:
    """One large payload framed as an SSE event, an NDJSON line and a JSON array element."""
    chunk = _arguments_chunk(size, line)
    text = json.dumps(chunk, ensure_ascii=False)
    return {
        "sse": (f"data: {text}\n\n".encode(), chunk),
        "ndjson": (f"{text}\n".encode(), chunk),
        "json-array": (f"[{text}]".encode(), chunk),
    }


def _reads(data: bytes, size: int = 4096) -> list[bytes]:
    """``data`` in reads of ``size`` bytes."""
    return [data[i : i + size] for i in range(0, len(data), size)]


def _best_time(framing: Any, reads: list[bytes], repeat: int = 5) -> float:
    """Least CPU time of ``repeat`` runs of a fresh decoder over ``reads`` (CPU time, so
    that other processes on a busy machine do not count)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        decode(FrameDecoder(framing), reads)
        times.append(time.process_time() - start)
    return min(times)


@pytest.mark.parametrize("line", [_PLAIN, _ESCAPY], ids=["plain", "escapes"])
@pytest.mark.parametrize("framing", ["sse", "ndjson", "json-array"])
def test_one_large_payload_in_small_reads_costs_linear_time(framing: Any, line: str) -> None:
    """A payload 8× larger, arriving in 4 KB reads, takes far less than 64× the time."""
    small_body, _ = _bodies(1024 * 1024, line)[framing]
    big_body, want = _bodies(8 * 1024 * 1024, line)[framing]
    assert decode(FrameDecoder(framing), _reads(big_body)) == [(None, want)]
    ratio = _best_time(framing, _reads(big_body)) / _best_time(framing, _reads(small_body))
    # linear: 8, up to 25 when fresh memory pages for the big strings are slow to come;
    # decoders that copy or re-scan the pending text on every read: 85 to 140
    assert ratio < 40, ratio


def test_an_event_of_many_data_lines_costs_linear_time() -> None:
    """An event of 8× more ``data:`` lines takes far less than 64× the time (no re-summing)."""

    def body(lines: int) -> bytes:
        return b"data: [\n" + b"data: 12345678,\n" * lines + b"data: 0]\n\n"

    small, big = _reads(body(50_000)), _reads(body(400_000))
    items = decode(FrameDecoder(), big)
    assert len(items) == 1 and len(items[0][1]) == 400_001
    ratio = _best_time("sse", big) / _best_time("sse", small)
    assert ratio < 32, ratio  # linear: about 8; summing the held lines on every read: 60


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_large_payloads_split_anywhere_give_the_same_payload(data: st.DataObject) -> None:
    """A 40 KB payload of escapes and non-ASCII text survives any split, in every framing."""
    for body, want in _bodies(40_000, _ESCAPY).values():
        cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=30))
        assert decode(FrameDecoder(), split_at(body, cuts)) == [(None, want)]


def test_pending_counts_what_is_held() -> None:
    """``pending`` is the open line plus the event's data lines, and 0 once dispatched."""
    dec = SSEDecoder()
    dec.feed(b"data: abc\ndata: de")
    assert dec.pending == len("abc") + len("data: de")
    dec.feed(b"f\nevent: x\n")
    assert dec.pending == 3 + 3
    assert dec.feed(b'data: "g"\n') == []
    assert dec.pending == 3 + 3 + 3
    with pytest.raises(StreamFormatError):
        dec.feed(b"\n")  # abc\ndef\n"g" is not JSON
    nd = NDJSONDecoder()
    nd.feed(b'{"a": 1}\n{"b"')
    assert nd.pending == 4
    arr = JSONArrayDecoder()
    arr.feed(b'[{"a": 1}, {"b": "x\\')
    assert arr.pending == len('{"b": "x\\')
    assert arr.feed(b'"y"}]') == [(None, {"b": 'x"y'})]
    assert arr.pending == 0


def test_limit_applies_to_data_lines_and_array_elements() -> None:
    """Many short ``data:`` lines, or a long array element, hit ``max_pending`` too."""
    from toolwire import StreamLimitExceeded

    dec = FrameDecoder(max_pending=100)
    for _ in range(19):
        dec.feed(b"data: 12,\n")  # 3 characters each, held for the event in progress
    with pytest.raises(StreamLimitExceeded):
        for _ in range(20):
            dec.feed(b"data: 12,\n")
    dec = FrameDecoder(max_pending=100)
    dec.feed(b'[{"a": "' + b"x" * 80)
    with pytest.raises(StreamLimitExceeded):
        dec.feed(b"y" * 30)


# ------------------------------------------------------------- JSON decoding details


def test_data_with_surrounding_whitespace_or_trailing_text() -> None:
    """Whitespace around the JSON is allowed; anything else after it is a format error."""
    assert decode(SSEDecoder(), [b'data:  {"a": 1} \t\n\n']) == [(None, {"a": 1})]
    assert decode(NDJSONDecoder(), [b' {"a": 1}\r\n']) == [(None, {"a": 1})]
    with pytest.raises(StreamFormatError):
        decode(SSEDecoder(), [b'data: {"a": 1} x\n\n'])
    with pytest.raises(StreamFormatError):
        decode(NDJSONDecoder(), [b'{"a": 1}{"b": 2}\n'])


def test_nesting_too_deep_for_python_is_a_format_error() -> None:
    """JSON nested deeper than the interpreter's recursion allows raises StreamFormatError."""
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(StreamFormatError):
        decode(SSEDecoder(), [b"data: " + deep + b"\n\n"])
    with pytest.raises(StreamFormatError):
        decode(JSONArrayDecoder(), [b"[" + deep + b"]"])


def test_json_array_bare_values_wait_for_their_end() -> None:
    """A number cut by a read is dispatched only when the comma or ``]`` after it arrives."""
    dec = JSONArrayDecoder()
    assert dec.feed(b"[12") == []
    assert dec.feed(b"3, tr") == [(None, 123)]
    assert dec.feed(b'ue, "s\\') == [(None, True)]
    assert dec.feed(b'"", [1, [2]] ,{}]') == [(None, 's"'), (None, [1, [2]]), (None, {})]
    assert dec.close() == []


def test_json_array_trailing_comma_is_tolerated_and_bad_separators_are_not() -> None:
    """``[{...},]`` keeps its element (as before); two values without a comma raise."""
    assert decode(JSONArrayDecoder(), [b'[{"a": 1},]']) == [(None, {"a": 1})]
    for bad in (b'[{"a": 1} {"b": 2}]', b"[1 2]", b"[1}", b"[,]"):
        with pytest.raises(StreamFormatError):
            decode(JSONArrayDecoder(), bytewise(bad))


def test_json_array_bad_escape_inside_a_split_string_still_finds_the_end() -> None:
    """An invalid or cut escape in a string spanning reads neither hides the element's end
    nor passes: the element is refused with a format error at its end."""
    body = b'[{"a": "x\\q\\u12"}, {"b": 1}]'
    for cut in range(1, len(body)):
        dec = JSONArrayDecoder()
        with pytest.raises(StreamFormatError):
            dec.feed(body[:cut])
            dec.feed(body[cut:])


_escapy = st.text(alphabet='"\\/ab\n\t\x01é😀\u2028', max_size=40)


@settings(max_examples=80, deadline=None)
@given(
    values=st.lists(
        st.dictionaries(st.sampled_from("xyz"), _escapy | st.lists(_escapy)), max_size=4
    ),
    ascii_only=st.booleans(),
    data=st.data(),
)
def test_json_array_strings_split_anywhere(
    values: list[dict[str, Any]], ascii_only: bool, data: st.DataObject
) -> None:
    """Strings full of quotes, backslash runs and ``\\uXXXX`` escapes are followed exactly
    across reads: whole, byte by byte and at random splits give the same elements."""
    body = json.dumps(values, ensure_ascii=ascii_only).encode()
    want = [(None, v) for v in values]
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=20))
    assert decode(JSONArrayDecoder(), [body]) == want
    assert decode(JSONArrayDecoder(), bytewise(body)) == want
    assert decode(JSONArrayDecoder(), split_at(body, cuts)) == want


def test_cr_line_end_then_an_empty_read_then_lf() -> None:
    """A CR ending one read, an empty or partial-character read, then an LF: one line end."""
    events = sse_events([b"data: 1\r", b"", b"data: \xc3", b"\xa9\r\n\r\n"])
    assert [e.data for e in events] == ["1\né"]
    assert sse_events([b"data: 1\r", b"\n", b"\r", b"\n"]) == [SSEEvent(event="message", data="1")]


def test_json_array_numbers_and_literals_split_anywhere() -> None:
    """Bare values cut anywhere (``1e|5``, ``1.|5``, ``-|2``, ``tr|ue``) keep their meaning."""
    body = b"[1e5, 1.25, -2, 0.5e-3,12345,true,false,null, 7 ]"
    want = [(None, v) for v in json.loads(body)]
    for cut in range(len(body) + 1):
        assert decode(JSONArrayDecoder(), [body[:cut], body[cut:]]) == want, cut
    assert decode(JSONArrayDecoder(), bytewise(body)) == want
