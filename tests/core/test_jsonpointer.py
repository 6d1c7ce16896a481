"""The one JSON-pointer resolver: RFC 6901 tokens (``~0``/``~1``), ``$ref`` fragments with
percent-encoding, array indexes, round trips, and typed errors for what does not resolve."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import ToolDefinitionError
from toolwire._core.jsonpointer import (
    escape_token,
    format_fragment,
    format_pointer,
    parse_fragment,
    parse_pointer,
    resolve,
    resolve_ref,
    unescape_token,
)

# The examples of RFC 6901 §5 (pointers) and §6 (URI fragments).
RFC_DOCUMENT = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}


@pytest.mark.parametrize(
    ("pointer", "fragment", "expected"),
    [
        ("", "#", RFC_DOCUMENT),
        ("/foo", "#/foo", ["bar", "baz"]),
        ("/foo/0", "#/foo/0", "bar"),
        ("/", "#/", 0),
        ("/a~1b", "#/a~1b", 1),
        ("/c%d", "#/c%25d", 2),
        ("/e^f", "#/e%5Ef", 3),
        ("/g|h", "#/g%7Ch", 4),
        ("/i\\j", "#/i%5Cj", 5),
        ('/k"l', "#/k%22l", 6),
        ("/ ", "#/%20", 7),
        ("/m~0n", "#/m~0n", 8),
    ],
)
def test_the_rfc_6901_examples_resolve(pointer: str, fragment: str, expected: Any) -> None:
    """Every example of RFC 6901, as a pointer and as a URI fragment, names the same value."""
    assert resolve(RFC_DOCUMENT, parse_pointer(pointer)) == expected
    assert resolve_ref(RFC_DOCUMENT, fragment) == expected


def test_escapes_are_undone_in_the_right_order() -> None:
    """``~01`` is the token ``~1`` (``~1`` is replaced first), never ``/``."""
    assert unescape_token("~01") == "~1"
    assert unescape_token("~10") == "/0"
    assert escape_token("~1") == "~01"
    assert parse_pointer("/a~1b/~0") == ("a/b", "~")


def test_percent_decoding_happens_before_pointer_parsing() -> None:
    """``%25`` is ``%`` in a key; ``%2F`` separates tokens; ``%7E1`` is an escaped ``/``."""
    assert parse_fragment("#/$defs/a%25b") == ("$defs", "a%b")
    assert parse_fragment("#/a%2Fb") == ("a", "b")
    assert parse_fragment("#/a%7E1b") == ("a/b",)
    assert parse_fragment("#/%C3%A9") == ("é",)


@pytest.mark.parametrize(
    ("document", "tokens"),
    [
        ({"a": [1, 2]}, ("a", "01")),
        ({"a": [1, 2]}, ("a", "2")),
        ({"a": [1, 2]}, ("a", "-")),
        ({"a": [1, 2]}, ("a", "-1")),
        ({"a": [1, 2]}, ("a", "+1")),
        ({"a": 1}, ("a", "b")),
        ({"a": 1}, ("b",)),
        ({"0": 1}, ("0", "x")),
        ([{"a": 1}], ("a",)),
    ],
)
def test_tokens_that_do_not_resolve_raise_tool_definition_error(
    document: Any, tokens: tuple[str, ...]
) -> None:
    """Leading zeros, ``-``, signs, out-of-range indexes and missing keys do not resolve."""
    with pytest.raises(ToolDefinitionError, match="does not resolve"):
        resolve(document, tokens)


def test_an_object_key_that_looks_like_an_index_is_a_key() -> None:
    """``/0`` on an object is the key ``"0"``; on an array it is the first element."""
    assert resolve({"0": "key"}, ("0",)) == "key"
    assert resolve(["item"], ("0",)) == "item"


@pytest.mark.parametrize(
    ("ref", "words"),
    [
        ("http://example.com/s.json", "another document"),
        ("other.json#/a", "another document"),
        ("#anchor", "anchor"),
        ("#/a~2b", "'~0' or '~1'"),
        ("#/a%2", "'%XX'"),
        ("#/a%FF", "not UTF-8"),
        ("#a/b", "anchor"),
    ],
)
def test_refs_that_are_not_local_pointers_are_refused_clearly(ref: str, words: str) -> None:
    """Other documents, anchors, bad escapes and bad percent-encoding name their problem."""
    with pytest.raises(ToolDefinitionError, match=words):
        resolve_ref({"a": 1}, ref)


@pytest.mark.parametrize("pointer", ["a", "#/a", 5])
def test_text_that_is_not_a_pointer_is_refused(pointer: Any) -> None:
    """A pointer is empty or starts with ``/``; anything else is a ToolDefinitionError."""
    with pytest.raises(ToolDefinitionError):
        parse_pointer(pointer)


_TOKENS = st.lists(st.text(max_size=6) | st.sampled_from(["~", "/", "~1", "~0", "%", "%25"]))


@given(tokens=_TOKENS)
def test_pointers_and_fragments_round_trip(tokens: list[str]) -> None:
    """Formatting tokens then parsing the text gives the tokens back, for both spellings."""
    assert parse_pointer(format_pointer(tokens)) == tuple(tokens)
    assert parse_fragment(format_fragment(tokens)) == tuple(tokens)


@given(
    document=st.recursive(
        st.integers() | st.text(max_size=3),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
        max_leaves=10,
    ),
    data=st.data(),
)
def test_every_location_in_a_document_is_named_by_its_fragment(document: Any, data: Any) -> None:
    """Walking to any node and formatting its path as a fragment resolves to that node."""
    path: list[str | int] = []
    node = document
    while isinstance(node, (dict, list)) and node and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(list(node) if isinstance(node, dict) else range(len(node))))
        path.append(key)
        node = node[key]
    assert resolve_ref(document, format_fragment(path)) == node
