"""Fuzzing with real shapes: Hypothesis mutates corpus payloads (drops keys, changes types,
swaps values for None, lists, numbers, strings with lone surrogates, truncates strings)
and feeds them to the assembler; nothing but a StreamError subclass may escape, whatever
the format.

CI runs a few hundred examples; ``TOOLWIRE_FUZZ_SCALE=N`` multiplies the counts for a
deliberate long run (``TOOLWIRE_FUZZ_SCALE=68``: 20,400 payload mutations;
``TOOLWIRE_FUZZ_SCALE=85``: 12,750 byte mutations, about 4 minutes in all on one core).
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from corpus_support import NAMES, stream_payloads
from toolwire import StreamAssembler, StreamError

pytestmark = pytest.mark.slow

_PAYLOADS: dict[str, list[tuple[str | None, Any]]] = {}
_SCALE = max(1, int(os.environ.get("TOOLWIRE_FUZZ_SCALE", "1")))


def payloads(name: str) -> list[tuple[str | None, Any]]:
    """The corpus stream's payloads, read once."""
    if name not in _PAYLOADS:
        _PAYLOADS[name] = stream_payloads(name)
    return _PAYLOADS[name]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a member inside ``value`` (dict keys and list indices)."""
    out: list[tuple[Any, ...]] = []
    if isinstance(value, dict):
        for key, child in value.items():
            out.append((*prefix, key))
            out.extend(paths(child, (*prefix, key)))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            out.append((*prefix, i))
            out.extend(paths(child, (*prefix, i)))
    return out


_REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=False),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "a\udfffb", "\ud83d"]),  # lone surrogates, as JSON allows
    st.just([]),
    st.just({}),
    st.lists(st.integers(0, 2), max_size=2),
    st.just('{"a":'),
)


def mutate(payload: Any, data: st.DataObject) -> Any:
    """One random mutation of ``payload`` (a deep copy)."""
    if not isinstance(payload, dict):
        return payload
    payload = copy.deepcopy(payload)
    candidates = paths(payload)
    if not candidates:
        return data.draw(_REPLACEMENTS)
    path = data.draw(st.sampled_from(candidates))
    parent = payload
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    kind = data.draw(st.sampled_from(["drop", "replace", "truncate"]))
    if kind == "drop":
        del parent[last]
    elif kind == "truncate" and isinstance(parent[last], str):
        parent[last] = parent[last][: data.draw(st.integers(0, max(0, len(parent[last]) - 1)))]
    else:
        parent[last] = data.draw(_REPLACEMENTS)
    return payload


@settings(
    max_examples=300 * _SCALE,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(name=st.sampled_from(NAMES or [""]), data=st.data())
def test_mutated_corpus_payloads_raise_only_stream_errors(name: str, data: st.DataObject) -> None:
    """Mutated real payloads give a result or a StreamError, never another exception."""
    from conftest import corpus_available, require

    require(corpus_available(), "the recorded corpus is absent")
    items = list(payloads(name))
    count = data.draw(st.integers(1, 3))
    for _ in range(count):
        i = data.draw(st.integers(0, len(items) - 1))
        event, payload = items[i]
        items[i] = (event, mutate(payload, data))
    as_text = data.draw(st.booleans())
    asm = StreamAssembler()
    try:
        for event, payload in items:
            asm.feed(json.dumps(payload) if as_text else payload, event=event)
        response = asm.close()
    except StreamError as exc:
        assert exc.partial is not None
        # once failed, the assembler keeps failing with a StreamError
        try:
            asm.close()
        except StreamError:
            pass
        else:
            raise AssertionError("close() succeeded after a StreamError") from None
        return
    assert isinstance(response, toolwire.Response)
    for call in response.tool_calls:
        assert call.arguments == (json.loads(call.raw_arguments) if call.raw_arguments else {})


@settings(max_examples=150 * _SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(NAMES or [""]), data=st.data())
def test_mutated_bytes_raise_only_stream_errors(name: str, data: st.DataObject) -> None:
    """Raw bodies with bytes flipped, dropped or inserted raise only StreamErrors."""
    from conftest import corpus_available, require
    from corpus_support import stream_bytes

    require(corpus_available(), "the recorded corpus is absent")
    body = bytearray(stream_bytes(name))
    for _ in range(data.draw(st.integers(1, 4))):
        at = data.draw(st.integers(0, len(body) - 1))
        action = data.draw(st.sampled_from(["flip", "drop", "insert"]))
        if action == "flip":
            body[at] = data.draw(st.integers(0, 255))
        elif action == "drop":
            del body[at]
        else:
            body[at:at] = data.draw(st.binary(min_size=1, max_size=3))
    asm = StreamAssembler()
    try:
        asm.feed_bytes(bytes(body))
        asm.close()
    except StreamError as exc:
        assert exc.partial is not None
