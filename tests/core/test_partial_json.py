"""Properties of the incremental partial-JSON parser (API.md §1).

Documents come from a Hypothesis strategy and are serialised by a randomised encoder that
picks every escape form JSON allows (short escapes, ``\\/``, ``\\uXXXX`` in either case,
surrogate pairs, raw non-ASCII), arbitrary number spellings and whitespace between all
tokens. Each document is fed whole, character by character and at Hypothesis-chosen
splits; the checks are the contract: ``close()`` equals ``json.loads``, every snapshot is a
prefix of the next and of the final value, ``complete`` flips at the last significant
character, string events join to the final strings, and every split gives the same events.
"""

from __future__ import annotations

import json
import pickle
import random
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import toolwire
from preview_support import is_prefix
from toolwire import (
    MISSING,
    JSONSyntaxError,
    PartialJSONParser,
    StringAppended,
    ValueCompleted,
    ValueStarted,
    parse_partial,
)
from toolwire._core.partial_json import _cut_length

# ----------------------------------------------------------------------------- checkers


def chunks_at(doc: str, cuts: Iterable[int]) -> list[str]:
    """``doc`` cut at the given positions (duplicates and out-of-range cuts ignored)."""
    points = sorted({c for c in cuts if 0 < c < len(doc)})
    bounds = [0, *points, len(doc)]
    return [doc[i:j] for i, j in pairwise(bounds)]


def normalise(events: Sequence[Any]) -> list[Any]:
    """Merge consecutive ``StringAppended`` events of one path (splits only change those)."""
    out: list[Any] = []
    for ev in events:
        if (
            isinstance(ev, StringAppended)
            and out
            and isinstance(out[-1], StringAppended)
            and out[-1].path == ev.path
        ):
            out[-1] = StringAppended(path=ev.path, text=out[-1].text + ev.text)
        else:
            out.append(ev)
    return out


def run(doc: str, pieces: Sequence[str]) -> tuple[list[Any], list[Any], list[bool], Any]:
    """Feed ``pieces``; return (events, snapshot after each piece, complete after each piece,
    close())."""
    parser = PartialJSONParser()
    events: list[Any] = []
    snaps: list[Any] = []
    flags: list[bool] = []
    for piece in pieces:
        events.extend(parser.feed(piece))
        snaps.append(parser.snapshot())
        flags.append(parser.complete)
    return events, snaps, flags, parser.close()


def completes_at(doc: str) -> int | None:
    """How many characters must be fed before ``complete`` is True (None: only at close)."""
    stripped = doc.rstrip(" \t\n\r")
    last = len(stripped) - 1
    if stripped.lstrip(" \t\n\r")[0] in "-0123456789":  # a top-level number needs a delimiter
        return last + 2 if len(doc) > len(stripped) else None
    return last + 1


# ------------------------------------------------------------------- document strategies


class RawNumber:
    """A number leaf written with an exact spelling (exponents, ``-0``, long fractions)."""

    def __init__(self, text: str) -> None:
        self.text = text


class JObject:
    """An object leaf as ordered (key, value) pairs, so the encoder keeps their order."""

    def __init__(self, items: list[tuple[str, Any]]) -> None:
        self.items = items


_SHORT = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n"}
_SHORT.update({"\r": "\\r", "\t": "\\t"})


def _u(code: int, rnd: random.Random) -> str:
    return "\\u" + format(code, "04x" if rnd.random() < 0.5 else "04X")


def encode_string(s: str, rnd: random.Random) -> str:
    """A JSON string literal for ``s``, choosing a random valid spelling per character."""
    out = ['"']
    for ch in s:
        code = ord(ch)
        r = rnd.random()
        if ch in _SHORT and (code < 0x20 or ch in '"\\' or r < 0.5):
            out.append(_SHORT[ch] if r < 0.7 else _u(code, rnd))
        elif code < 0x20 or r < 0.15:
            if code > 0xFFFF:
                code -= 0x10000
                out.append(_u(0xD800 + (code >> 10), rnd) + _u(0xDC00 + (code & 0x3FF), rnd))
            else:
                out.append(_u(code, rnd))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def encode(value: Any, rnd: random.Random) -> str:
    """Serialise ``value`` with random whitespace around every token and random escapes."""

    def ws() -> str:
        if rnd.random() < 0.25:
            return "".join(rnd.choice(" \t\n\r") for _ in range(rnd.randint(1, 3)))
        return ""

    def enc(v: Any) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, RawNumber):
            return v.text
        if isinstance(v, int):
            return str(v)
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, str):
            return encode_string(v, rnd)
        if isinstance(v, list):
            if not v:
                return "[" + ws() + "]"
            return "[" + ",".join(ws() + enc(x) + ws() for x in v) + "]"
        assert isinstance(v, JObject)
        items = [
            ws() + encode_string(k, rnd) + ws() + ":" + ws() + enc(x) + ws() for k, x in v.items
        ]
        return "{" + (",".join(items) if items else ws()) + "}"

    return ws() + enc(value) + ws()


_chars = st.one_of(
    st.characters(codec=None, exclude_categories=["Cs"]),
    st.sampled_from([*'"\\/\b\f\n\r\t\x00\x1f\x7féßΩ€𝄞😀🚀', "\ud83d", "\ude80"]),
)
_text = st.text(_chars, max_size=12)
_number_text = st.from_regex(
    r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,12})?([eE][+-]?[0-9]{1,3})?", fullmatch=True
)
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=False, allow_infinity=False),
    _number_text.map(RawNumber),
    _text,
)
# Keys are unique here (duplicate keys have their own tests).
_values = st.recursive(
    _leaf,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(_text, inner, max_size=5).map(lambda d: JObject(list(d.items())))
    ),
    max_leaves=25,
)


def _nest(value: Any, shape: list[bool]) -> Any:
    for as_object in shape:
        value = JObject([("k", value)]) if as_object else [value]
    return value


_deep = st.builds(_nest, _values, st.lists(st.booleans(), min_size=20, max_size=120))
values = st.one_of(_values, _values, _values, _deep)


@st.composite
def documents(draw: st.DrawFn) -> str:
    """A JSON document text: random value, random escapes, whitespace anywhere."""
    value = draw(values)
    rnd = draw(st.randoms(use_true_random=False))
    return encode(value, rnd)


@st.composite
def split_documents(draw: st.DrawFn) -> tuple[str, list[str]]:
    """A document and a Hypothesis-chosen list of pieces that concatenate to it."""
    doc = draw(documents())
    cuts = draw(st.lists(st.integers(1, max(1, len(doc) - 1)), max_size=40))
    return doc, chunks_at(doc, cuts)


# ---------------------------------------------------------------------------- properties


@given(split_documents())
def test_close_equals_json_loads_at_any_split(case: tuple[str, list[str]]) -> None:
    """close() returns exactly json.loads(document) whatever the split."""
    doc, pieces = case
    assert "".join(pieces) == doc
    final = run(doc, pieces)[3]
    assert final == json.loads(doc)
    assert json.dumps(final) == json.dumps(json.loads(doc))  # same types, order, floats


@given(split_documents())
def test_snapshots_only_grow(case: tuple[str, list[str]]) -> None:
    """Every snapshot is a prefix of every later snapshot and of the final value."""
    doc, pieces = case
    _, snaps, _, final = run(doc, pieces)
    for before, after in pairwise(snaps):
        assert is_prefix(before, after), (before, after)
    for snap in snaps:
        assert is_prefix(snap, final), (snap, final)


@given(documents())
@settings(max_examples=60)
def test_char_by_char_snapshots_only_grow(doc: str) -> None:
    """Fed one character at a time, each snapshot extends the previous one."""
    _, snaps, _, final = run(doc, list(doc))
    previous: Any = MISSING
    for snap in [*snaps, final]:
        assert is_prefix(previous, snap), (previous, snap)
        previous = snap


@given(split_documents())
def test_complete_flips_at_last_significant_character(case: tuple[str, list[str]]) -> None:
    """complete is False until the last significant character is fed, then True."""
    doc, pieces = case
    need = completes_at(doc)
    _, _, flags, _ = run(doc, pieces)
    fed = 0
    for piece, flag in zip(pieces, flags, strict=True):
        fed += len(piece)
        assert flag == (need is not None and fed >= need), (doc, fed)


@given(documents())
@settings(max_examples=60)
def test_complete_flips_exactly_char_by_char(doc: str) -> None:
    """Char by char, complete turns True at exactly the character the contract names."""
    need = completes_at(doc)
    flags = run(doc, list(doc))[2]
    expected = [need is not None and i + 1 >= need for i in range(len(doc))]
    assert flags == expected


@given(split_documents())
def test_string_appended_texts_join_to_final_strings(case: tuple[str, list[str]]) -> None:
    """The StringAppended texts at a path join to the string completed at that path."""
    doc, pieces = case
    events = run(doc, pieces)[0]
    appended: dict[Any, list[str]] = defaultdict(list)
    finished: dict[Any, str] = {}
    for ev in events:
        if isinstance(ev, StringAppended):
            assert ev.text, "empty StringAppended"
            appended[ev.path].append(ev.text)
        elif isinstance(ev, ValueCompleted) and isinstance(ev.value, str):
            finished[ev.path] = ev.value
    for path, value in finished.items():
        assert "".join(appended.get(path, [])) == value
    assert set(appended) <= set(finished)


@given(split_documents())
def test_events_do_not_depend_on_the_split(case: tuple[str, list[str]]) -> None:
    """Whole, char-by-char and split feeding give the same events (string texts joined)."""
    doc, pieces = case
    whole = normalise(run(doc, [doc])[0])
    assert normalise(run(doc, pieces)[0]) == whole
    assert normalise(run(doc, list(doc))[0]) == whole


@given(split_documents())
def test_events_are_well_nested(case: tuple[str, list[str]]) -> None:
    """Each value starts once and completes once, with the json.loads value at its path."""
    doc, pieces = case
    events = run(doc, pieces)[0]
    open_paths: list[Any] = []
    kinds = {"object": dict, "array": list, "string": str, "true": bool, "false": bool}
    started: dict[Any, str] = {}
    for ev in events:
        if isinstance(ev, ValueStarted):
            started[ev.path] = ev.kind
            open_paths.append(ev.path)
        elif isinstance(ev, ValueCompleted):
            assert open_paths.pop() == ev.path
            kind = started[ev.path]
            if kind in kinds:
                assert isinstance(ev.value, kinds[kind])
            elif kind == "null":
                assert ev.value is None
            else:
                assert type(ev.value) in (int, float)
        else:
            assert open_paths and open_paths[-1] == ev.path
    root_number = completes_at(doc) is None
    assert open_paths == ([()] if root_number else [])
    if not root_number:
        assert events[-1] == ValueCompleted(path=(), value=json.loads(doc))


@given(documents())
@settings(max_examples=40)
def test_every_prefix_is_accepted_and_parse_partial_matches(doc: str) -> None:
    """Every prefix of a valid document parses, and parse_partial equals the snapshot."""
    parser = PartialJSONParser()
    assert parse_partial("") is MISSING
    for i, ch in enumerate(doc):
        parser.feed(ch)
        assert parse_partial(doc[: i + 1]) == parser.snapshot()


@given(documents())
@settings(max_examples=60)
def test_offset_counts_characters_fed(doc: str) -> None:
    """offset is the number of characters fed so far."""
    parser = PartialJSONParser()
    for i, ch in enumerate(doc):
        parser.feed(ch)
        assert parser.offset == i + 1


# ------------------------------------------------------------------ behaviour by example


def test_api_example() -> None:
    """The example of API.md §1 behaves as documented."""
    p = PartialJSONParser()
    events = p.feed('{"path": "a.py", "content": "def f')
    assert isinstance(events, tuple)
    assert p.snapshot() == {"path": "a.py", "content": "def f"}
    assert p.complete is False
    p.feed('():\\n    pass\\n"}')
    assert p.complete is True
    assert p.close() == {"path": "a.py", "content": "def f():\n    pass\n"}
    assert toolwire.parse_partial('{"a": [1, 2') == {"a": [1]}


@pytest.mark.parametrize(
    ("prefix", "preview"),
    [
        ("", MISSING),
        ("   ", MISSING),
        ("{", {}),
        ('{"a', {}),
        ('{"a"', {}),
        ('{"a":', {}),
        ('{"a": 1', {}),
        ('{"a": 1,', {"a": 1}),
        ('{"a": 12.', {}),
        ('{"a": -', {}),
        ('{"a": 1e', {}),
        ('{"a": tr', {}),
        ('{"a": true', {"a": True}),
        ('{"a": nul', {}),
        ('{"a": "', {"a": ""}),
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": "he\\', {"a": "he"}),
        ('{"a": "\\u00', {"a": ""}),
        ('{"a": "\\u00e9', {"a": "é"}),
        ('{"a": "\\ud83d', {"a": ""}),
        ('{"a": "\\ud83d\\', {"a": ""}),
        ('{"a": "\\ud83d\\ude8', {"a": ""}),
        ('{"a": "\\ud83d\\ude80', {"a": "🚀"}),
        ('{"a": "\\ud83dx', {"a": "\ud83dx"}),
        ('{"a": "\\ud83d\\n', {"a": "\ud83d\n"}),
        ('{"a": "\\ud83d\\u0041', {"a": "\ud83dA"}),
        ('{"a": "\\ud83d\\ud83d', {"a": "\ud83d"}),
        ('{"a": [1, 2', {"a": [1]}),
        ('{"a": [1, 2]', {"a": [1, 2]}),
        ('{"a": {"b": [', {"a": {"b": []}}),
        ('{"a": 1, "b', {"a": 1}),
        ('"hel', "hel"),
        ("12", MISSING),
        ("12 ", 12),
        ("[-0.5e3", []),
        ("[-0.5e3]", [-500.0]),
        ('{"a": "x"}  ', {"a": "x"}),
    ],
)
def test_preview_of_prefix(prefix: str, preview: Any) -> None:
    """Each prefix previews as API.md specifies, fed whole and char by char."""
    assert parse_partial(prefix) == preview
    parser = PartialJSONParser()
    for ch in prefix:
        parser.feed(ch)
    assert parser.snapshot() == preview
    if preview is MISSING:
        assert parser.snapshot() is MISSING


@pytest.mark.parametrize("cut", range(12))
def test_surrogate_pair_split_anywhere(cut: int) -> None:
    """A surrogate pair escape split at any point decodes to one astral character."""
    escape = "\\ud83d\\ude80"
    p = PartialJSONParser()
    p.feed('"a' + escape[:cut])
    assert p.snapshot() == "a"
    p.feed(escape[cut:] + 'b"')
    assert p.snapshot() == "a🚀b"
    assert p.close() == "a🚀b"


_HEX_DIGIT = st.sampled_from("0123456789abcdefABCDEF")
_ESCAPE_TOKEN = st.one_of(
    st.sampled_from(["a", "u", "d8", " ", "é", "\\\\", '\\"', "\\/", "\\n", "\\t", "\\b"]),
    # \u escapes, surrogates of both halves and both cases among them
    st.builds(
        lambda first, rest: "\\u" + first + "".join(rest),
        st.sampled_from("0dDeE"),
        st.lists(_HEX_DIGIT, min_size=3, max_size=3),
    ),
)
_CUT_SHAPE = st.builds(
    lambda n, digits: ("\\", "\\u")[n > 0] + "".join(digits[: max(n - 1, 0)]),
    st.integers(0, 4),
    st.lists(st.sampled_from("0dDcCeE89aB"), min_size=3, max_size=3),
)
_HIGH_ESCAPE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
_LOW_START = re.compile(r"\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]?)?)?)?")


@given(st.lists(_ESCAPE_TOKEN, max_size=8), st.one_of(st.just(""), _CUT_SHAPE))
def test_what_a_string_piece_holds_back_is_found_from_its_end(tokens: list[str], cut: str) -> None:
    """What a string piece ends with that must wait for the next piece (an escape cut short,
    a high surrogate that may still pair, with its partner's beginning) is found from the
    end alone, whatever precedes it (backslash runs included)."""
    expected = len(cut)
    if tokens and _HIGH_ESCAPE.fullmatch(tokens[-1]) and (not cut or _LOW_START.fullmatch(cut)):
        expected += 6
    text = "".join(tokens) + cut
    assert _cut_length(text) == expected
    parser = PartialJSONParser()  # the same, inlined in feed's path for string pieces
    parser.feed('"')
    parser.feed(text)
    assert parser.snapshot() == json.loads('"' + text[: len(text) - expected] + '"')


def test_top_level_number_completes_at_delimiter_or_close() -> None:
    """A top-level number is complete only after a delimiter or at close()."""
    p = PartialJSONParser()
    assert p.feed("12") == (ValueStarted(path=(), kind="number"),)
    assert p.complete is False and p.snapshot() is MISSING
    assert p.close() == 12
    assert p.complete is True and p.snapshot() == 12
    q = PartialJSONParser()
    q.feed("-1.5e2")
    assert q.feed("\n") == (ValueCompleted(path=(), value=-150.0),)
    assert q.complete is True


def test_literal_completes_at_its_last_letter() -> None:
    """true/false/null complete (and show) at their last letter, without a delimiter."""
    p = PartialJSONParser()
    p.feed("[tru")
    assert p.snapshot() == []
    assert p.feed("e") == (ValueCompleted(path=(0,), value=True),)
    assert p.snapshot() == [True]
    q = PartialJSONParser()
    q.feed("nul")
    assert q.complete is False
    q.feed("l")
    assert q.complete is True and q.close() is None


def test_paths_of_events() -> None:
    """Events carry root-relative paths with str keys and int indices."""
    p = PartialJSONParser()
    events = p.feed('{"a": [10, {"b": "xy"}]}')
    assert events == (
        ValueStarted(path=(), kind="object"),
        ValueStarted(path=("a",), kind="array"),
        ValueStarted(path=("a", 0), kind="number"),
        ValueCompleted(path=("a", 0), value=10),
        ValueStarted(path=("a", 1), kind="object"),
        ValueStarted(path=("a", 1, "b"), kind="string"),
        StringAppended(path=("a", 1, "b"), text="xy"),
        ValueCompleted(path=("a", 1, "b"), value="xy"),
        ValueCompleted(path=("a", 1), value={"b": "xy"}),
        ValueCompleted(path=("a",), value=[10, {"b": "xy"}]),
        ValueCompleted(path=(), value={"a": [10, {"b": "xy"}]}),
    )


def test_feed_returns_empty_tuple_and_empty_feed_is_free() -> None:
    """feed('') and pieces without events return () and change nothing."""
    p = PartialJSONParser()
    assert p.feed("") == ()
    p.feed('{"a": ')
    snap = p.snapshot()
    assert p.feed("") == ()
    assert p.feed("  ") == ()
    assert p.snapshot() is snap
    assert p.offset == 8


def test_snapshot_is_one_live_object_that_shares_completed_subtrees() -> None:
    """The preview is one object that later input extends in place; completed subtrees are
    shared with the final value, not copied."""
    p = PartialJSONParser()
    p.feed('{"done": {"x": [1, 2]}, "open": [')
    first = p.snapshot()
    assert p.snapshot() is first
    assert first == {"done": {"x": [1, 2]}, "open": []}
    p.feed('"abc')
    second = p.snapshot()
    assert second is first
    assert second == {"done": {"x": [1, 2]}, "open": ["abc"]}
    p.feed('"]}')
    assert p.close()["done"] is first["done"]
    assert p.snapshot() is first


def test_duplicate_keys_preview_first_value_close_equals_json_loads() -> None:
    """With duplicate keys the preview keeps the first value; close() equals json.loads."""
    doc = '{"a": 1, "b": {"c": "x", "c": "y"}, "a": [2], "d": {"a": 0, "a": {"z": 1}}}'
    expected = json.loads(doc)
    for pieces in ([doc], list(doc)):
        p = PartialJSONParser()
        snaps = []
        completed = []
        for piece in pieces:
            for ev in p.feed(piece):
                if isinstance(ev, ValueCompleted):
                    completed.append(ev)
            snaps.append(p.snapshot())
        for before, after in pairwise(snaps):
            assert is_prefix(before, after)
        assert snaps[-1] == {"a": 1, "b": {"c": "x"}, "d": {"a": 0}}
        assert p.close() == expected
        assert list(p.close()) == list(expected)  # first position kept
        assert completed[-1].value == expected
        assert ValueCompleted(path=("b",), value={"c": "y"}) in completed


@given(st.lists(st.tuples(st.sampled_from("abc"), st.integers(0, 9)), max_size=12))
def test_duplicate_keys_match_json_loads(members: list[tuple[str, int]]) -> None:
    """Any mix of repeated keys closes to json.loads' value (last wins, first position)."""
    doc = "[{" + ",".join(f'"{k}": {{"v": {v}}}' for k, v in members) + "}]"
    p = PartialJSONParser()
    for ch in doc:
        p.feed(ch)
    assert p.close() == json.loads(doc)
    assert list(p.close()[0]) == list(json.loads(doc)[0])


def test_missing_singleton() -> None:
    """MISSING is a falsy singleton with a clear repr that survives pickling."""
    assert not MISSING
    assert repr(MISSING) == "toolwire.MISSING"
    assert pickle.loads(pickle.dumps(MISSING)) is MISSING
    assert PartialJSONParser().snapshot() is MISSING


def test_big_numbers_and_exponents_like_json_loads() -> None:
    """Big integers, exponents and signed zero come out exactly as json.loads gives them."""
    doc = "[123456789012345678901234567890, -0, -0.0, 1E400, 1e-400, 2.5E+3, 0.1]"
    p = PartialJSONParser()
    for ch in doc:
        p.feed(ch)
    value = p.close()
    assert value == json.loads(doc)
    assert [type(x) for x in value] == [type(x) for x in json.loads(doc)]
    assert repr(value) == repr(json.loads(doc))


def test_close_is_repeatable() -> None:
    """close() may be called again and returns the same value."""
    p = PartialJSONParser()
    p.feed('{"a": [1]} ')
    assert p.close() is p.close()


def test_feed_rejects_non_str() -> None:
    """Feeding bytes is a clear TypeError naming the type, not a crash deep inside."""
    p = PartialJSONParser()
    with pytest.raises(TypeError, match="bytes"):
        p.feed(b'{"a": 1}')  # type: ignore[arg-type]
    p.feed('{"a": "')
    with pytest.raises(TypeError, match="bytes"):
        p.feed(b"x")  # type: ignore[arg-type]


@given(documents(), st.randoms(use_true_random=False))
@settings(max_examples=30)
def test_snapshot_every_few_pieces_does_not_change_results(doc: str, rnd: random.Random) -> None:
    """Taking snapshots at random moments changes neither events nor the final value."""
    assume(len(doc) > 1)
    pieces = chunks_at(doc, [rnd.randrange(1, len(doc)) for _ in range(8)])
    p = PartialJSONParser()
    events = []
    for piece in pieces:
        events.extend(p.feed(piece))
        if rnd.random() < 0.5:
            p.snapshot()
    assert normalise(events) == normalise(run(doc, [doc])[0])
    assert p.close() == json.loads(doc)


def test_errors_are_value_errors() -> None:
    """JSONSyntaxError is a ValueError subclass carrying .offset."""
    with pytest.raises(ValueError) as info:
        parse_partial("[1,,]")
    assert isinstance(info.value, JSONSyntaxError)
    assert info.value.offset == 3


def test_events_are_real_frozen_dataclass_instances() -> None:
    """Events from feed() equal, hash and freeze exactly like constructor-made events."""
    import dataclasses

    events = PartialJSONParser().feed('{"k": "v')
    made = (
        ValueStarted(path=(), kind="object"),
        ValueStarted(path=("k",), kind="string"),
        StringAppended(path=("k",), text="v"),
    )
    assert events == made
    assert [hash(e) for e in events] == [hash(e) for e in made]
    assert [repr(e) for e in events] == [repr(e) for e in made]
    with pytest.raises(dataclasses.FrozenInstanceError):
        events[0].kind = "array"  # type: ignore[misc]
