"""JSON Schema's type names, shared by adapter error messages and structured-output shapes."""

from __future__ import annotations

import collections
import enum
import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolwire._core.json_types import json_type

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


def expected(value: Any) -> str:
    """The name by the JSON text the value serialises to."""
    text = json.dumps(value)
    if text == "null":
        return "null"
    if text in ("true", "false"):
        return "boolean"
    return {'"': "string", "{": "object", "[": "array"}.get(text[0], "number")


@given(JSON)
def test_decoded_json_values_get_their_schema_type(value: Any) -> None:
    """Every decoded JSON value is named by JSON Schema's word for its type."""
    assert json_type(value) == expected(value)


def test_values_that_read_as_json_and_others() -> None:
    """Subclasses, mappings and tuples read as JSON; anything else shows its class name."""

    class Level(enum.IntEnum):
        LOW = 1

    assert json_type(Level.LOW) == "number"
    assert json_type(collections.OrderedDict()) == "object"
    assert json_type(collections.ChainMap()) == "object"
    assert json_type((1, 2)) == "array"
    assert json_type(True) == "boolean"
    assert json_type(b"x") == "bytes"
    assert json_type({1, 2}) == "set"
