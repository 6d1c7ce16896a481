"""The live preview, and the parser mode without events.

``snapshot()`` returns the parser's own open containers, which later input only ever
extends, so a preview per delta costs O(delta) and copies nothing. These tests pin what a
caller may rely on: a preview (or a container inside it) that it holds only grows, and is
the current one; strings it holds keep their text; every preview equals ``parse_partial``
of the input so far; and a parser made with ``events=False`` behaves exactly like one with
events, except that ``feed`` returns ``()``.
"""

from __future__ import annotations

import copy
import json
import random
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_partial_json import chunks_at, documents, is_prefix, split_documents

from toolwire import MISSING, JSONSyntaxError, PartialJSONParser, parse_partial


def parts_of(value: Any) -> list[Any]:
    """Every list and dict inside ``value`` (itself included), depth first."""
    out: list[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            out.append(v)
            stack.extend(v)
        elif isinstance(v, dict):
            out.append(v)
            stack.extend(v.values())
    return out


def keep(snap: Any, rnd: random.Random, whole: float, part: float) -> list[tuple[Any, Any]]:
    """With probability ``whole`` keep the snapshot, else with probability ``part`` one of
    the containers inside it; as (object, deep copy taken now)."""
    choice = rnd.random()
    if choice < whole:
        return [(snap, copy.deepcopy(snap))]
    if choice < whole + part:
        parts = parts_of(snap)
        if parts:
            kept = rnd.choice(parts)
            return [(kept, copy.deepcopy(kept))]
    return []


# ------------------------------------------------------------------ held previews only grow


@given(split_documents(), st.randoms(use_true_random=False))
def test_held_previews_and_their_parts_only_grow(
    case: tuple[str, list[str]], rnd: random.Random
) -> None:
    """Previews, or containers inside them, that a caller keeps only ever grow: each is
    still an extension of what it showed, and a kept container preview is the current one."""
    doc, pieces = case
    parser = PartialJSONParser()
    held: list[tuple[Any, Any]] = []
    for piece in pieces:
        parser.feed(piece)
        held += keep(parser.snapshot(), rnd, whole=0.3, part=0.3)
    assert parser.close() == json.loads(doc)
    live = parts_of(parser.snapshot())
    for kept, as_it_was in held:
        assert is_prefix(as_it_was, kept), (as_it_was, kept)
        if isinstance(kept, (dict, list)):
            assert any(kept is part for part in live)


@given(split_documents())
def test_dropped_previews_still_only_grow(case: tuple[str, list[str]]) -> None:
    """Copies of the preview taken at each step form a prefix chain ending in the final
    value."""
    doc, pieces = case
    parser = PartialJSONParser()
    seen: list[Any] = []
    for piece in pieces:
        parser.feed(piece)
        seen.append(copy.deepcopy(parser.snapshot()))
    final = parser.close()
    for before, after in pairwise(seen):
        assert is_prefix(before, after), (before, after)
    for snap in seen:
        assert is_prefix(snap, final)
    assert final == json.loads(doc)


@given(documents())
@settings(max_examples=40)
def test_previews_char_by_char_equal_parse_partial(doc: str) -> None:
    """The live preview equals a fresh parse_partial of the same prefix, char by char."""
    parser = PartialJSONParser()
    for i, ch in enumerate(doc):
        parser.feed(ch)
        assert parser.snapshot() == parse_partial(doc[: i + 1])


@given(
    st.lists(st.sampled_from(['{"k": ', "[", '{"a": 1, "b": ']), max_size=4),
    st.text(st.sampled_from(list('ab"\\\né😀')), min_size=5, max_size=60),
    st.lists(st.integers(1, 80), min_size=3, max_size=30),
    st.randoms(use_true_random=False),
)
def test_held_previews_while_a_string_grows(
    opens: list[str], content: str, cuts: list[int], rnd: random.Random
) -> None:
    """A string growing over many pieces inside open containers: every preview equals
    parse_partial of the input so far, and previews kept at random moments only grew."""
    doc = "".join(opens) + json.dumps(content)
    parser = PartialJSONParser()
    held: list[tuple[Any, Any]] = []
    fed = ""
    for piece in chunks_at(doc, cuts):
        parser.feed(piece)
        fed += piece
        snap = parser.snapshot()
        assert snap == parse_partial(fed)
        held += keep(snap, rnd, whole=0.2, part=0.2)
    for kept, as_it_was in held:
        assert is_prefix(as_it_was, kept)
    assert parse_partial(doc) == parser.snapshot()


def test_an_inner_container_held_is_the_live_one() -> None:
    """An inner open container taken from a preview is the parser's own: later input
    extends it, and later previews hold that same object."""
    parser = PartialJSONParser()
    parser.feed('{"a": {"b": [1, ')
    inner = parser.snapshot()["a"]["b"]
    parser.feed("2, ")
    assert parser.snapshot() == {"a": {"b": [1, 2]}}
    parser.feed('"x')
    assert parser.snapshot() == {"a": {"b": [1, 2, "x"]}}
    assert inner == [1, 2, "x"]
    assert parser.snapshot()["a"]["b"] is inner


def _innermost_text(snap: Any) -> str:
    """The last string of a preview whose open string is its last entry at every level."""
    while not isinstance(snap, str):
        snap = snap[-1] if isinstance(snap, list) else list(snap.values())[-1]
    return snap


@pytest.mark.parametrize("prefix", ['"', '{"text": "', '[1, {"a": ["'])
def test_a_held_string_keeps_its_text_while_the_preview_grows(prefix: str) -> None:
    """A string taken from a preview keeps its text (strings never change), while the
    preview shows the longer text."""
    parser = PartialJSONParser()
    parser.feed(prefix + "ab")
    first = _innermost_text(parser.snapshot())
    parser.feed("cd")
    second = _innermost_text(parser.snapshot())
    parser.feed("ef")
    third = _innermost_text(parser.snapshot())
    assert (first, second, third) == ("ab", "abcd", "abcdef")
    assert parse_partial(prefix + "abcdef") == parser.snapshot()


def test_snapshot_after_an_error_shows_what_was_read() -> None:
    """After an error, snapshot() still shows the document read before it."""
    parser = PartialJSONParser()
    parser.feed('{"a": [1, "b')
    parser.snapshot()
    with pytest.raises(JSONSyntaxError):
        parser.feed('c", }')
    assert parser.snapshot() == {"a": [1, "bc"]}


@given(split_documents())
@settings(max_examples=50)
def test_duplicate_keys_in_live_previews(case: tuple[str, list[str]]) -> None:
    """A repeated key in an open object keeps showing its first value in the preview."""
    doc, pieces = case
    wrapped = '{"k": 0, "k": ' + doc + ', "z": [' + doc + "]}"
    p = PartialJSONParser()
    cuts = [len('{"k": 0, "k": ') + len(c) for c in pieces]
    for piece in chunks_at(wrapped, [3, 9, 14, *cuts]):
        p.feed(piece)
        snap = copy.deepcopy(p.snapshot())
        assert snap.get("k", 0) == 0
    assert p.snapshot() == {"k": 0, "z": [json.loads(doc)]}
    assert p.close() == json.loads(wrapped)


# ------------------------------------------------------------------------ events=False


def observe(doc: str, pieces: list[str], events: bool) -> list[Any]:
    """What a caller sees: per piece the snapshot (copied), complete, offset, and the
    error (type, offset, message) if one was raised; then close()'s outcome."""
    parser = PartialJSONParser(events=events)
    seen: list[Any] = []
    for piece in pieces:
        try:
            result = parser.feed(piece)
        except JSONSyntaxError as exc:
            seen.append(("error", type(exc), exc.offset, exc.msg))
            break
        if not events:
            assert result == ()
        seen.append((copy.deepcopy(parser.snapshot()), parser.complete, parser.offset))
    try:
        seen.append(("close", parser.close()))
    except JSONSyntaxError as exc:
        seen.append(("close error", type(exc), exc.offset, exc.msg))
    return seen


@given(split_documents())
def test_events_false_sees_the_same_document(case: tuple[str, list[str]]) -> None:
    """events=False gives the same previews, complete flags, offsets and value."""
    doc, pieces = case
    assert observe(doc, pieces, False) == observe(doc, pieces, True)


@given(split_documents(), st.integers(0, 10_000), st.sampled_from(list('"\\]}:,x0 \x00')))
def test_events_false_fails_the_same_way(case: tuple[str, list[str]], at: int, junk: str) -> None:
    """events=False raises the same error, at the same offset, on corrupted documents."""
    doc, pieces = case
    cut = at % (len(doc) + 1)
    bad = doc[:cut] + junk + doc[cut:]
    bad_pieces = chunks_at(bad, [cut, cut + 1, *[len("".join(pieces[:i])) for i in range(9)]])
    assert observe(bad, bad_pieces, False) == observe(bad, bad_pieces, True)


def test_events_false_feed_returns_the_empty_tuple() -> None:
    """Without events feed() returns () every time, and the preview is still there."""
    parser = PartialJSONParser(events=False)
    assert not parser.emits_events
    assert PartialJSONParser().emits_events
    for piece in ['{"path": "a.py", "con', 'tent": "def f', "():\\n", '"}']:
        assert parser.feed(piece) == ()
    assert parser.snapshot() == {"path": "a.py", "content": "def f():\n"}
    assert parser.close() == {"path": "a.py", "content": "def f():\n"}


@pytest.mark.parametrize("bad", [0, 1, None, "yes"])
def test_events_must_be_a_bool(bad: Any) -> None:
    """A non-bool events argument is a TypeError, not silently truthy."""
    with pytest.raises(TypeError, match="events"):
        PartialJSONParser(events=bad)


def test_parse_partial_of_every_prefix_with_duplicates() -> None:
    """parse_partial (which builds its preview without copies) equals the snapshot."""
    doc = '{"a": [1, {"b": "x", "b": [2]}], "a": {"c": "yz"}, "d": "w\\u00e9"}'
    parser = PartialJSONParser()
    for i, ch in enumerate(doc):
        parser.feed(ch)
        assert parse_partial(doc[: i + 1]) == parser.snapshot()
    assert parse_partial("") is MISSING
