"""Strictness of the partial-JSON parser: invalid input, limits and refusal after errors.

Every invalid document is rejected with a ``JSONSyntaxError`` whose ``offset`` is the first
character that cannot continue valid JSON, the same whether the text is fed whole or one
character at a time; a differential fuzz against ``json.loads`` proves that nothing else
(no KeyError, IndexError, TypeError...) ever escapes and that the offset is minimal.
"""

from __future__ import annotations

import json
import random
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import (
    JSONDepthError,
    JSONSizeError,
    JSONSyntaxError,
    PartialJSONParser,
    parse_partial,
)

# (document, offset of the first offending character); each is rejected by feed().
INVALID = [
    # bad literals
    ("trUe", 2),
    ("True", 0),
    ("nil", 1),
    ("nulx", 3),
    ("[truth]", 4),
    ("fals e", 4),
    ("truex", 4),
    ("nullnull", 4),
    # leading zeros
    ("01", 1),
    ("-01", 2),
    ("[00]", 2),
    ('{"a": 007}', 7),
    # bad escapes
    ('"\\x"', 2),
    ('"\\u12G4"', 5),
    ('"\\U0041"', 2),
    ('"\\\'"', 2),
    ('"\\u"', 3),
    ('"ok\\ud83d\\uZZ"', 11),
    ('{"\\a": 1}', 3),
    # control characters in strings
    ('"a\nb"', 2),
    ('"\x00"', 1),
    ('"\x1f"', 1),
    ('"tab\there"', 4),
    ('{"k\ney": 1}', 3),
    # trailing commas
    ("[1,]", 3),
    ('{"a":1,}', 7),
    ("[,]", 1),
    ("[1,,2]", 3),
    ("{,}", 1),
    # trailing data after a complete value
    ('{"a":1}{"b":2}', 7),
    ("1 2", 2),
    ("[] x", 3),
    ('"a""b"', 3),
    ("12a", 2),
    ("0x10", 1),
    ("{} ,", 3),
    # NaN and Infinity are not JSON
    ("NaN", 0),
    ("Infinity", 0),
    ("-Infinity", 1),
    ("[NaN]", 1),
    ('{"a":-inf}', 6),
    # single quotes
    ("'a'", 0),
    ("{'a':1}", 1),
    ("[\"a\", 'b']", 6),
    # missing colon, bare keys
    ('{"a" 1}', 5),
    ('{"a"}', 4),
    ('{"a",1}', 4),
    ("{a:1}", 1),
    ('{"a":1, b:2}', 8),
    # numbers
    ("[-]", 2),
    ("- 1", 1),
    ("[1.]", 3),
    ("1.e5", 2),
    ("[1e]", 3),
    ("1e+}", 3),
    (".5", 0),
    ("[.5]", 1),
    ("+1", 0),
    ("1.5.2", 3),
    ("1e5e", 3),
    ("--1", 1),
    ("1e5.0", 3),
    # structure
    ("]", 0),
    ("}", 0),
    ("[}", 1),
    ("{]", 1),
    ('{"a":1]', 6),
    ("[1}", 2),
    (":", 0),
    (",", 0),
    ("[1 2]", 3),
    ("/* c */ 1", 0),
    ("\ufeff{}", 0),
    ("\u00a0[]", 0),
    ("[1,\u2028 2]", 3),
    ('{"a":: 1}', 5),
    ('{"a": }', 6),
]

# Incomplete documents: feed() accepts them, close() raises with offset == len(document).
INCOMPLETE = [
    "",
    "   ",
    "{",
    "[1,2",
    '{"a":1',
    '"abc',
    '"abc\\',
    '"\\u00',
    '"\\ud83d',
    '{"a"',
    '{"a":',
    '{"a',
    "[",
    "tru",
    "nul",
    "f",
    "-",
    "1.",
    "1e",
    "1e+",
    "[1",
    '[{"a": [{"b": "c"}]',
]


def strict_loads(doc: str) -> Any:
    """json.loads without its NaN / Infinity extension (which is not JSON)."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(doc, parse_constant=reject)


def first_error(pieces: list[str]) -> JSONSyntaxError:
    """Feed ``pieces`` then close; return the JSONSyntaxError raised (fail if none)."""
    parser = PartialJSONParser()
    with pytest.raises(JSONSyntaxError) as info:
        for piece in pieces:
            parser.feed(piece)
        parser.close()
    return info.value


@pytest.mark.parametrize(("doc", "offset"), INVALID)
def test_invalid_document_rejected_at_offending_character(doc: str, offset: int) -> None:
    """Invalid JSON raises at the first offending character, fed whole or char by char."""
    with pytest.raises(ValueError):
        strict_loads(doc)
    whole = PartialJSONParser()
    with pytest.raises(JSONSyntaxError) as info:
        whole.feed(doc)
    assert info.value.offset == offset, info.value
    assert whole.failed
    stepwise = PartialJSONParser()
    for i, ch in enumerate(doc):
        if i < offset:
            stepwise.feed(ch)  # every character before the offending one is accepted
        else:
            with pytest.raises(JSONSyntaxError) as step_info:
                stepwise.feed(ch)
            assert step_info.value.offset == offset
            assert step_info.value.msg == info.value.msg
            break


@pytest.mark.parametrize("doc", INCOMPLETE)
def test_incomplete_document_rejected_at_close(doc: str) -> None:
    """Incomplete or empty input is accepted by feed() and rejected by close()."""
    for pieces in ([doc], list(doc)):
        err = first_error(pieces)
        assert err.offset == len(doc)
        assert "end of input" in err.msg


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ('{"a": 1 x', "expected ',' or '}' after an object member, found 'x'"),
        ("[1 x", "expected ',' or ']' after an array element, found 'x'"),
        ('{"a" 1}', "expected ':' after an object key, found '1'"),
        ("[1,]", "trailing commas are not allowed"),
        ("{'a': 1}", "double quotes"),
        ("{a: 1}", "object keys must be double-quoted strings"),
        ("NaN", "NaN and Infinity are not JSON"),
        ("01", "leading zeros"),
        ('"\\q"', "invalid escape '\\q'"),
        ('"a\tb"', "control character '\\t'"),
        ('{} {"b": 2}', "only whitespace after the complete top-level value, found '{'"),
        ("[1.]", "expected a digit after the decimal point, found ']'"),
        ("-x", "expected a digit after '-', found 'x'"),
        ("tx", "invalid literal: expected 'true', found 'x'"),
        ("", "empty input"),
        ('{"a": "b', "unterminated string"),
        ("[1, 2", "unclosed array"),
    ],
)
def test_error_messages_say_what_was_expected_and_found(doc: str, message: str) -> None:
    """Messages name what was expected and what was found, in words a person understands."""
    err = first_error([doc])
    assert message in str(err)
    assert str(err).endswith(f"at offset {err.offset}")


def test_parser_refuses_input_after_an_error() -> None:
    """After an error every feed() and close() raises again with the same offset."""
    parser = PartialJSONParser()
    parser.feed("[1, ")
    with pytest.raises(JSONSyntaxError) as first:
        parser.feed("}")
    for action in (lambda: parser.feed("2]"), parser.close, lambda: parser.feed(" ")):
        with pytest.raises(JSONSyntaxError) as again:
            action()
        assert again.value.offset == first.value.offset == 4
    assert parser.snapshot() == [1]  # what was read before the error


def test_close_error_also_stops_the_parser() -> None:
    """A failed close() leaves the parser refusing input too."""
    parser = PartialJSONParser()
    parser.feed("[1")
    with pytest.raises(JSONSyntaxError):
        parser.close()
    with pytest.raises(JSONSyntaxError):
        parser.feed("]")


def test_depth_limit() -> None:
    """Nesting beyond max_depth raises JSONDepthError at the opening bracket."""
    parser = PartialJSONParser(max_depth=3)
    parser.feed('[{"a": [')
    with pytest.raises(JSONDepthError) as info:
        parser.feed(" {")
    assert info.value.offset == 9
    assert isinstance(info.value, JSONSyntaxError)
    ok = PartialJSONParser(max_depth=3)
    ok.feed('[{"a": [1]}]')
    assert ok.close() == [{"a": [1]}]


def test_default_depth_limit_is_generous_and_enforced() -> None:
    """The default allows 1000 nested containers and rejects the 1001st."""
    parser = PartialJSONParser()
    parser.feed("[" * 1000 + "]" * 1000)
    assert parser.complete
    with pytest.raises(JSONDepthError) as info:
        parse_partial("[" * 1001)
    assert info.value.offset == 1000


def test_size_limit() -> None:
    """More than max_size characters raises JSONSizeError at offset max_size."""
    parser = PartialJSONParser(max_size=10)
    parser.feed('["abcd",')
    with pytest.raises(JSONSizeError) as info:
        parser.feed(' "x"]')
    assert info.value.offset == 10
    assert isinstance(info.value, JSONSyntaxError)
    with pytest.raises(JSONSizeError):
        parser.feed("]")
    exact = PartialJSONParser(max_size=10)
    exact.feed('["abcdef"]')
    assert exact.close() == ["abcdef"]


def test_size_limit_in_the_string_fast_path() -> None:
    """The limit also holds for long pieces inside a string, char by char or at once."""
    for pieces in (['"', "a" * 20], ['"'] + ["a"] * 20):
        parser = PartialJSONParser(max_size=16)
        with pytest.raises(JSONSizeError) as info:
            for piece in pieces:
                parser.feed(piece)
        assert info.value.offset == 16


def test_syntax_error_before_the_size_limit_wins() -> None:
    """An offending character inside the allowed size is reported as a syntax error."""
    parser = PartialJSONParser(max_size=5)
    with pytest.raises(JSONSyntaxError) as info:
        parser.feed("[1,,]xxxxxx")
    assert type(info.value) is JSONSyntaxError
    assert info.value.offset == 3


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10"])
def test_limits_must_be_positive_ints(bad: Any) -> None:
    """Nonsense limits are refused when the parser is made."""
    with pytest.raises(ValueError):
        PartialJSONParser(max_depth=bad)
    with pytest.raises(ValueError):
        PartialJSONParser(max_size=bad)


def test_huge_integer_is_a_typed_error() -> None:
    """An integer beyond Python's conversion limit is a JSONSyntaxError, not a bare one."""
    with pytest.raises(JSONSyntaxError) as info:
        parse_partial("[" + "7" * 5000 + "]")
    assert info.value.offset == 1


# ------------------------------------------------------------------- differential fuzz

_ALPHABET = [*'{}[]:,"\\ \n\t-+.eE0123456789tfrunlasxu', "\x00", "é", "😀", "\ud83d", "٣"]
_VALID = [
    '{"a": [1, 2.5e-3, "x\\u00e9\\ud83d\\ude80"], "b": {"c": null, "d": true}}',
    '[-0, 0.5, 1E+2, false, "\\"\\\\\\/\\b\\f\\n\\r\\t", {}, []]',
    '"just a string"',
    "123",
]


def _mutate(doc: str, rnd: random.Random) -> str:
    chars = list(doc)
    for _ in range(rnd.randint(1, 3)):
        i = rnd.randrange(len(chars) + 1)
        op = rnd.randrange(3)
        if op == 0 and chars:
            del chars[min(i, len(chars) - 1)]
        elif op == 1:
            chars.insert(i, rnd.choice(_ALPHABET))
        elif chars:
            chars[min(i, len(chars) - 1)] = rnd.choice(_ALPHABET)
    return "".join(chars)


@st.composite
def fuzz_texts(draw: st.DrawFn) -> str:
    """Arbitrary JSON-ish text, or a valid document with a few random edits."""
    if draw(st.booleans()):
        return draw(st.text(st.sampled_from(_ALPHABET), max_size=24))
    rnd = draw(st.randoms(use_true_random=False))
    return _mutate(draw(st.sampled_from(_VALID)), rnd)


@pytest.mark.slow
@given(fuzz_texts(), st.randoms(use_true_random=False))
@settings(max_examples=400)
def test_agrees_with_json_loads_and_offset_is_minimal(doc: str, rnd: random.Random) -> None:
    """On any text: same value as json.loads or a JSONSyntaxError at a minimal offset."""
    try:
        expected: Any = strict_loads(doc)
        valid = True
    except ValueError:
        valid = False
    cuts = sorted(rnd.sample(range(1, len(doc)), min(3, len(doc) - 1))) if len(doc) > 1 else []
    bounds = [0, *cuts, len(doc)]
    pieces = [doc[i:j] for i, j in pairwise(bounds)]
    parser = PartialJSONParser()
    try:
        for piece in pieces:
            parser.feed(piece)
        value = parser.close()
    except JSONSyntaxError as exc:
        assert not valid, f"valid JSON rejected: {exc}"
        if exc.offset < len(doc) or not parser.complete:
            head = PartialJSONParser()
            head.feed(doc[: exc.offset])  # everything before the offset continues validly
            if exc.offset < len(doc):
                with pytest.raises(JSONSyntaxError):
                    PartialJSONParser().feed(doc[: exc.offset + 1])
        return
    assert valid, f"invalid JSON accepted: {doc!r}"
    assert value == expected


_ESCAPE_BITS = [
    *("\\", "u", "d", "D", "8", "3", "b", "c", "e", "0", "f", "n", '"', "a", "x", "é"),
    *("\\ud83d", "\\ude80", "\\uDBFF", "\\u00e9", "\\\\", "\\n", "\\u", "\x00", "\x1f"),
]


def outcome(pieces: list[str]) -> tuple[Any, ...]:
    """("ok", value) or ("error", type, offset, message) for the pieces fed in order."""
    parser = PartialJSONParser()
    try:
        for piece in pieces:
            parser.feed(piece)
        return ("ok", parser.close())
    except JSONSyntaxError as exc:
        return ("error", type(exc), exc.offset, exc.msg)


@given(
    st.lists(st.sampled_from(_ESCAPE_BITS), max_size=30),
    st.lists(st.integers(1, 80), max_size=16),
)
@settings(max_examples=300)
def test_escapes_split_anywhere_agree_with_json_loads(bits: list[str], cuts: list[int]) -> None:
    """String content built from escape fragments (valid, cut, invalid, lone surrogates),
    split anywhere and char by char: json.loads' value, or the same error at the same
    offset as the whole text."""
    doc = '["' + "".join(bits) + '", "' + "".join(reversed(bits)) + '"]'
    whole = outcome([doc])
    try:
        expected: Any = strict_loads(doc)
    except ValueError:
        assert whole[0] == "error"
    else:
        assert whole == ("ok", expected)
    points = sorted({c for c in cuts if 0 < c < len(doc)})
    pieces = [doc[i:j] for i, j in pairwise([0, *points, len(doc)])]
    assert outcome(pieces) == whole
    assert outcome(list(doc)) == whole
