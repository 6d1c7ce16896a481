"""Paths of JSON events: shared links, materialised as tuples on read.

Events hold their path as a link into the parser's tree of keys, so building an event costs
the same at depth 1 and depth 999; ``.path`` still reads as the tuple the contract promises,
and events compare, hash, print, pickle and copy like events built with ``path=(...)``.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import json
import pickle
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_partial_json import run, split_documents

from toolwire import PartialJSONParser, StringAppended, ValueCompleted, ValueStarted, parse_partial

_OTHER_FIELD = {ValueStarted: "kind", StringAppended: "text", ValueCompleted: "value"}


def at_path(value: Any, path: tuple[Any, ...]) -> Any:
    """The member of ``value`` that ``path`` addresses."""
    for key in path:
        value = value[key]
    return value


@given(split_documents())
def test_completed_paths_address_their_values(case: tuple[str, list[str]]) -> None:
    """Every ValueCompleted's path is a tuple that addresses its value in json.loads(doc)."""
    doc, pieces = case
    final = json.loads(doc)
    for ev in run(doc, pieces)[0]:
        assert type(ev.path) is tuple
        assert all(type(k) in (str, int) for k in ev.path)
        if isinstance(ev, ValueCompleted):
            assert at_path(final, ev.path) == ev.value


@given(split_documents())
@settings(max_examples=50)
def test_parser_events_behave_like_constructed_events(case: tuple[str, list[str]]) -> None:
    """Equality, hash, repr, pickle and copy see plain tuple paths, as for an event built
    from the same fields."""
    doc, pieces = case
    for ev in run(doc, pieces)[0][:40]:
        name = _OTHER_FIELD[type(ev)]
        fields = {"path": ev.path, name: getattr(ev, name)}
        twin = type(ev)(**fields)
        assert ev == twin and repr(ev) == repr(twin)
        try:
            twin_hash = hash(twin)
        except TypeError:  # a completed container: unhashable either way
            with pytest.raises(TypeError):
                hash(ev)
        else:
            assert hash(ev) == twin_hash
        assert pickle.loads(pickle.dumps(ev)) == ev
        assert copy.copy(ev) == ev and copy.deepcopy(ev) == ev
        assert ev != type(ev)(**{**fields, "path": (-1,)})


def test_path_is_frozen_and_required() -> None:
    """path can be neither assigned nor deleted, and the constructor requires it."""
    ev = PartialJSONParser().feed('{"a": [')[1]
    assert ev == ValueStarted(path=("a",), kind="array") == ValueStarted(("a",), "array")
    with pytest.raises(dataclasses.FrozenInstanceError):
        ev.path = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del ev.path  # type: ignore[misc]
    with pytest.raises(TypeError, match="path"):
        StringAppended(text="x")  # type: ignore[call-arg]
    assert not hasattr(ev, "__dict__")


def deep_numbers(depth: int, count: int) -> str:
    """``count`` numbers inside ``depth`` nested arrays (unclosed: a prefix)."""
    return "[" * depth + ",".join(str(i % 997) for i in range(count)) + ","


def peak(work: Callable[[], Any]) -> int:
    """Peak bytes traced while ``work`` runs (its result is kept alive until the end)."""
    gc.collect()
    tracemalloc.start()
    try:
        result = work()
        size = tracemalloc.get_traced_memory()[1]
        del result
        return size
    finally:
        tracemalloc.stop()


def test_event_memory_does_not_grow_with_depth() -> None:
    """Keeping every event of 3000 numbers costs about the same at depth 999 as at depth 1
    (each event used to carry its own 999-key path tuple: 39 times the memory)."""

    def events_of(doc: str) -> Callable[[], list[Any]]:
        def work() -> list[Any]:
            parser = PartialJSONParser()
            kept: list[Any] = []
            for i in range(0, len(doc), 7):
                kept.extend(parser.feed(doc[i : i + 7]))
            return kept

        return work

    shallow = peak(events_of(deep_numbers(1, 3000)))
    deep = peak(events_of(deep_numbers(999, 3000)))
    assert deep < 2 * shallow, (deep, shallow)


def test_parse_partial_memory_does_not_grow_with_depth() -> None:
    """parse_partial of numbers 999 arrays deep peaks at about what depth 1 takes (it used
    to build every event's path: hundreds of times more)."""
    shallow = peak(lambda: parse_partial(deep_numbers(1, 5_000)))
    deep = peak(lambda: parse_partial(deep_numbers(999, 5_000)))
    assert deep < 2 * shallow, (deep, shallow)


@given(st.integers(1, 60), st.lists(st.sampled_from(["[", '{"k":']), max_size=60))
def test_paths_at_any_depth(count: int, opens: list[str]) -> None:
    """Paths of the numbers in an array deep inside mixed containers list every key and
    index from the root."""
    doc = "".join(opens) + "[" + ",".join(["1"] * count) + ","
    outer = tuple(0 if o == "[" else "k" for o in opens)
    events = PartialJSONParser().feed(doc)
    numbers = [ev.path for ev in events if isinstance(ev, ValueCompleted)]
    assert numbers == [(*outer, i) for i in range(count)]


def test_repeated_keys_share_one_string() -> None:
    """A key repeated across objects is one str in the value, as json.loads makes it (an
    array of records then costs what json.loads' value costs)."""
    doc = '[{"name": 1, "tags": []}, {"name": 2, "tags": []}, {"tags": [], "name": 3}]'
    for pieces in ([doc], list(doc)):
        parser = PartialJSONParser(events=False)
        for piece in pieces:
            parser.feed(piece)
        value = parser.close()
        names = [next(k for k in record if k == "name") for record in value]
        assert names[0] is names[1] is names[2]
        assert value == json.loads(doc)
