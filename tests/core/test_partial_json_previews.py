"""Previews that are updated in place, and the parser mode without events (API.md §1).

``snapshot()`` reuses the preview objects it returned before (containers updated, the open
string extended) once nothing outside the parser refers to them, so a preview per delta
costs O(delta). These tests pin the other half of that bargain: a preview that anybody
still holds, or any part of one, never changes; and a parser made with ``events=False``
behaves exactly like one with events, except that ``feed`` returns ``()``.
"""

from __future__ import annotations

import copy
import json
import platform
import random
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_partial_json import chunks_at, documents, is_prefix, split_documents

import toolwire._core.partial_json as partial_json
from toolwire import MISSING, JSONSyntaxError, PartialJSONParser, parse_partial

CPYTHON = platform.python_implementation() == "CPython"

# Containers up to partial_json._SMALL members are copied afresh by every snapshot; larger
# ones are updated in place. Tests documents are small, so the properties run with the
# threshold lowered too, which sends every container through the in-place updates.
thresholds = st.sampled_from([0, 1, 3, partial_json._SMALL])


@contextmanager
def copy_threshold(small: int) -> Iterator[None]:
    """Run the block with containers above ``small`` members updated in place."""
    saved = partial_json._SMALL
    partial_json._SMALL = small
    try:
        yield
    finally:
        partial_json._SMALL = saved


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
    the containers inside it; as (object, deep copy taken now). No other reference to the
    snapshot survives the call, so the parser is free to reuse what is not kept."""
    choice = rnd.random()
    if choice < whole:
        return [(snap, copy.deepcopy(snap))]
    if choice < whole + part:
        parts = parts_of(snap)
        if parts:
            kept = rnd.choice(parts)
            return [(kept, copy.deepcopy(kept))]
    return []


# ---------------------------------------------------------------- held previews never change


@given(split_documents(), st.randoms(use_true_random=False), thresholds)
def test_held_previews_and_their_parts_never_change(
    case: tuple[str, list[str]], rnd: random.Random, small: int
) -> None:
    """Whatever previews, or parts of previews, a caller keeps stay exactly as they were."""
    doc, pieces = case
    parser = PartialJSONParser()
    held: list[tuple[Any, Any]] = []
    with copy_threshold(small):
        for piece in pieces:
            parser.feed(piece)
            held += keep(parser.snapshot(), rnd, whole=0.3, part=0.3)
    final = parser.close()
    for kept, as_it_was in held:
        assert kept == as_it_was
    assert final == json.loads(doc)


@given(split_documents(), thresholds)
def test_dropped_previews_still_only_grow(case: tuple[str, list[str]], small: int) -> None:
    """With every preview dropped (so the parser reuses them), copies taken at each step
    form a prefix chain ending in the final value."""
    doc, pieces = case
    parser = PartialJSONParser()
    seen: list[Any] = []
    with copy_threshold(small):
        for piece in pieces:
            parser.feed(piece)
            seen.append(copy.deepcopy(parser.snapshot()))
    final = parser.close()
    for before, after in pairwise(seen):
        assert is_prefix(before, after), (before, after)
    for snap in seen:
        assert is_prefix(snap, final)
    assert final == json.loads(doc)


@given(documents(), thresholds)
@settings(max_examples=40)
def test_dropped_previews_char_by_char_equal_parse_partial(doc: str, small: int) -> None:
    """Reused previews equal a fresh parse_partial of the same prefix, char by char."""
    parser = PartialJSONParser()
    with copy_threshold(small):
        for i, ch in enumerate(doc):
            parser.feed(ch)
            assert parser.snapshot() == parse_partial(doc[: i + 1])


@given(
    st.lists(st.sampled_from(['{"k": ', "[", '{"a": 1, "b": ']), max_size=4),
    st.text(st.sampled_from(list('ab"\\\né😀')), min_size=5, max_size=60),
    st.lists(st.integers(1, 80), min_size=3, max_size=30),
    st.randoms(use_true_random=False),
    thresholds,
)
def test_held_previews_while_a_string_grows(
    opens: list[str], content: str, cuts: list[int], rnd: random.Random, small: int
) -> None:
    """A string growing over many pieces inside open containers: previews (or the
    containers inside them) kept at random moments never change."""
    doc = "".join(opens) + json.dumps(content)
    parser = PartialJSONParser()
    held: list[tuple[Any, Any]] = []
    with copy_threshold(small):
        for piece in chunks_at(doc, cuts):
            parser.feed(piece)
            held += keep(parser.snapshot(), rnd, whole=0.2, part=0.2)
    for kept, as_it_was in held:
        assert kept == as_it_was
    assert parse_partial(doc) == parser.snapshot()


@pytest.mark.parametrize("small", [0, partial_json._SMALL])
def test_preview_kept_inside_a_deep_document_does_not_change(small: int) -> None:
    """Holding an inner open container keeps it, while the root preview is reused."""
    parser = PartialJSONParser()
    with copy_threshold(small):
        parser.feed('{"a": {"b": [1, ')
        inner = parser.snapshot()["a"]["b"]
        parser.feed("2, ")
        assert parser.snapshot() == {"a": {"b": [1, 2]}}
        parser.feed('"x')
        assert parser.snapshot() == {"a": {"b": [1, 2, "x"]}}
    assert inner == [1]


@pytest.mark.skipif(not CPYTHON, reason="reuse is decided by CPython's reference counts")
def test_dropped_preview_is_updated_in_place() -> None:
    """Once the caller lets go of a preview, the next snapshot updates that same object
    instead of copying the open containers (what makes a preview per delta O(delta))."""
    parser = PartialJSONParser()
    many = partial_json._SMALL + 10
    parser.feed('{"items": [' + "1, " * many)
    first = parser.snapshot()
    items_id = id(first["items"])  # the root (one key) is small: copied afresh each time
    del first
    parser.feed("3, ")
    second = parser.snapshot()
    assert second == {"items": [1] * many + [3]}
    assert id(second["items"]) == items_id
    held = second
    parser.feed("4, ")
    third = parser.snapshot()
    assert third is not held and third["items"] is not held["items"]
    assert held == {"items": [1] * many + [3]}


@pytest.mark.parametrize("small", [0, partial_json._SMALL])
@pytest.mark.parametrize("prefix", ['"', '{"text": "', '[1, {"a": ["'])
def test_kept_preview_while_only_the_string_grows(prefix: str, small: int) -> None:
    """Holding a preview while only its open string grows: the held one keeps its text,
    the next one shows the longer text."""
    parser = PartialJSONParser()
    with copy_threshold(small):
        parser.feed(prefix + "ab")
        first = parser.snapshot()
        first_copy = copy.deepcopy(first)
        parser.feed("cd")
        second = parser.snapshot()
        parser.feed("ef")
        third = parser.snapshot()
    assert first == first_copy
    assert is_prefix(first, second) and is_prefix(second, third)
    assert second != first and third != second
    assert parse_partial(prefix + "abcdef") == third


def test_snapshot_after_an_error_shows_what_was_read() -> None:
    """After an error, snapshot() still shows the document read before it, reused or not."""
    parser = PartialJSONParser()
    parser.feed('{"a": [1, "b')
    parser.snapshot()
    with pytest.raises(JSONSyntaxError):
        parser.feed('c", }')
    assert parser.snapshot() == {"a": [1, "bc"]}


@given(split_documents(), thresholds)
@settings(max_examples=50)
def test_duplicate_keys_with_reused_previews(case: tuple[str, list[str]], small: int) -> None:
    """A repeated key in an open object keeps showing its first value in reused previews."""
    doc, pieces = case
    wrapped = '{"k": 0, "k": ' + doc + ', "z": [' + doc + "]}"
    p = PartialJSONParser()
    cuts = [len('{"k": 0, "k": ') + len(c) for c in pieces]
    with copy_threshold(small):
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
