"""``PartialJSONParser.feed_string``: the string fast path without an event, for callers that
follow the document themselves (typed previews). Fed through it wherever it accepts, a
document gives the same text, snapshots, errors and value as through ``feed`` alone."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_partial_json import chunks_at, documents, normalise, split_documents

from toolwire import JSONSyntaxError, PartialJSONParser, StringAppended


def both_ways(pieces: list[str]) -> tuple[list[Any], list[Any], Any, Any]:
    """Events and snapshots through ``feed`` alone, and through ``feed_string`` first
    (its text turned into the ``StringAppended`` it stands for)."""
    plain, fast = PartialJSONParser(), PartialJSONParser()
    plain_events: list[Any] = []
    fast_events: list[Any] = []
    plain_snaps, fast_snaps = [], []
    for piece in pieces:
        plain_events += plain.feed(piece)
        plain_snaps.append(json.dumps(plain.snapshot(), default=repr))
        before = len(fast_events)
        text = fast.feed_string(piece)
        if text is None:
            fast_events += fast.feed(piece)
        elif text:
            # the open string's path: the plain parser's event for this piece names it
            fast_events.append(StringAppended(path=plain_events[-1].path, text=text))
        assert len(fast_events) >= before
        fast_snaps.append(json.dumps(fast.snapshot(), default=repr))
    return plain_events, fast_events, (plain_snaps, plain.close()), (fast_snaps, fast.close())


@pytest.mark.slow
@given(split_documents())
def test_feed_string_where_it_accepts_is_feed(case: tuple[str, list[str]]) -> None:
    """Whatever the split, the same decoded text, snapshots and final value."""
    doc, pieces = case
    plain_events, fast_events, plain, fast = both_ways(pieces)
    assert normalise(plain_events) == normalise(fast_events)
    assert plain == fast
    assert fast[1] == json.loads(doc)


@given(documents(), st.integers(1, 9))
def test_feed_string_char_by_char(doc: str, step: int) -> None:
    """Small pieces (inside escapes and surrogate pairs too) give the same result."""
    pieces = chunks_at(doc, range(step, len(doc), step))
    plain_events, fast_events, plain, fast = both_ways(pieces)
    assert normalise(plain_events) == normalise(fast_events)
    assert plain == fast


def test_feed_string_consumes_nothing_it_refuses() -> None:
    """Outside a string, at the closing quote, on a bad escape or past ``max_size`` it
    returns ``None`` and consumes nothing."""
    parser = PartialJSONParser(max_size=20)
    assert parser.feed_string("abc") is None
    parser.feed('{"a": "x')
    assert parser.feed_string('y"}') is None
    assert parser.feed_string("\\q") is None
    assert parser.feed_string("z" * 30) is None
    assert parser.offset == 8
    assert parser.feed_string("\\u00") == ""
    assert parser.feed_string("e9!") == "é!"
    assert parser.feed_string("") is None
    parser.feed('"}')
    assert parser.close() == {"a": "xé!"}
    with pytest.raises(JSONSyntaxError):
        PartialJSONParser().feed("]")
