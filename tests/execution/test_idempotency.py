"""Canonical argument hashing and key derivation."""

from __future__ import annotations

import json
import math
import random
import shutil
import struct
import subprocess
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from toolwire import ToolwireError
from toolwire._execution.idempotency import (
    IdempotencyKeyError,
    arguments_hash,
    call_key,
    idempotency_key,
)

SAFE_INT = 2**53 - 1

keys = st.text(max_size=8)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-SAFE_INT, max_value=SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=12,
)


def _respell(value: Any, rng: random.Random) -> str:
    """Write ``value`` as JSON with shuffled keys, random whitespace and escape forms."""

    def ws() -> str:
        return rng.choice(["", " ", "\n", "\t ", "  \r\n"])

    def string(text: str) -> str:
        out = []
        for ch in text:
            if ch in '"\\' or ord(ch) < 0x20:
                out.append(json.dumps(ch)[1:-1])
            elif rng.random() < 0.3:
                if ord(ch) > 0xFFFF:
                    code = ord(ch) - 0x10000
                    out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04X}")
                else:
                    out.append(f"\\u{ord(ch):04x}")
            elif ch == "/" and rng.random() < 0.5:
                out.append("\\/")
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'

    def number(n: float | int) -> str:
        if isinstance(n, int) or (n.is_integer() and abs(n) < 2**53):
            whole = int(n)
            return rng.choice([str(whole), f"{whole}.0", f"{whole}e0", f"{whole}.000E+0"])
        return repr(n)

    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, (int, float)):
        return number(value)
    if isinstance(value, str):
        return string(value)
    if isinstance(value, list):
        return "[" + ws() + ",".join(ws() + _respell(v, rng) + ws() for v in value) + "]"
    items = list(value.items())
    rng.shuffle(items)
    parts = [ws() + string(k) + ws() + ":" + ws() + _respell(v, rng) + ws() for k, v in items]
    return "{" + ",".join(parts) + ws() + "}"


@pytest.mark.slow
@settings(max_examples=1000)
@given(json_values, st.randoms(use_true_random=False))
def test_equal_values_written_differently_hash_equal(value: Any, rng: random.Random) -> None:
    """Two JSON texts of the same value (key order, whitespace, escapes, 1 vs 1.0) hash equal."""
    first = json.loads(_respell(value, rng))
    second = json.loads(_respell(value, rng))
    assert arguments_hash(first) == arguments_hash(second) == arguments_hash(value)


def _normal(value: Any) -> Any:
    """The value as I-JSON sees it: integral floats are the same number as ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


@pytest.mark.slow
@settings(max_examples=1000)
@given(json_values, json_values)
def test_different_values_hash_differently(a: Any, b: Any) -> None:
    """Values that differ as JSON values never share a hash."""
    if _normal(a) == _normal(b) and json.dumps(_normal(a)) == json.dumps(_normal(b)):
        assert arguments_hash(a) == arguments_hash(b)
    else:
        assert arguments_hash(a) != arguments_hash(b)


@settings(max_examples=200)
@given(st.dictionaries(keys, json_values, min_size=1, max_size=6))
def test_key_order_never_matters(value: dict[str, Any]) -> None:
    """Reversing the insertion order of an object's keys leaves its hash unchanged."""
    reordered = dict(reversed(list(value.items())))
    assert arguments_hash(reordered) == arguments_hash(value)


@pytest.mark.parametrize(
    "bad",
    [
        {"x": math.nan},
        {"x": math.inf},
        [-math.inf],
        2**53,
        {"n": -(2**60)},
        {1: "non-string key"},
        {"s": "\ud800"},
        {"b": b"bytes"},
        {"set": {1, 2}},
        object(),
    ],
)
def test_non_i_json_arguments_raise_a_typed_error(bad: Any) -> None:
    """NaN, infinities, huge ints, non-str keys, lone surrogates, non-JSON types are refused."""
    with pytest.raises(IdempotencyKeyError) as info:
        arguments_hash(bad)
    assert isinstance(info.value, ToolwireError)
    assert isinstance(info.value, ValueError)


def test_deep_nesting_raises_a_typed_error() -> None:
    """Arguments nested beyond the recursion limit raise IdempotencyKeyError, not RecursionError."""
    value: Any = 1
    for _ in range(5000):
        value = [value]
    with pytest.raises(IdempotencyKeyError):
        arguments_hash(value)


def _wrapped(depth: int, leaf: Any) -> Any:
    """``leaf`` inside ``depth`` containers, objects and arrays in turn (no recursion)."""
    value = leaf
    for level in range(depth):
        value = {"é\n": value, "a": [1.5, "x"]} if level % 2 else [value, None, 2**53 - 1]
    return value


@settings(max_examples=10, deadline=None)
@given(scalars, st.sampled_from([300, 999, 1000]))
def test_deep_arguments_hash_to_their_rfc8785_form(leaf: Any, depth: int) -> None:
    """Arguments as deep as the parser reads (1,000 containers) get the same RFC 8785 bytes
    as the reference implementation (run here with a raised recursion limit); one level
    more is the typed error."""
    import sys

    from toolwire._execution.idempotency import canonical_json

    value = _wrapped(depth, leaf)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        expected = rfc8785.dumps(value)
    finally:
        sys.setrecursionlimit(limit)
    assert canonical_json(value) == expected
    with pytest.raises(IdempotencyKeyError, match="nest too deeply"):
        arguments_hash([_wrapped(1000, leaf)])


def test_hash_is_sha256_of_rfc8785_form() -> None:
    """The args hash is the hex SHA-256 of the RFC 8785 bytes (a published vector)."""
    import hashlib

    value = {"b": [1.0, "é", None], "a": {"z": True, "y": 1e21}}
    assert rfc8785.dumps(value) == '{"a":{"y":1e+21,"z":true},"b":[1,"é",null]}'.encode()
    assert arguments_hash(value) == hashlib.sha256(rfc8785.dumps(value)).hexdigest()


@settings(max_examples=1000)
@given(st.lists(st.text(max_size=6), min_size=4, max_size=4), st.data())
def test_call_key_fields_cannot_be_shifted(fields: list[str], data: st.DataObject) -> None:
    """Moving a separator between fields ("a|b","c") vs ("a","b|c") always changes the key."""
    i = data.draw(st.integers(0, 2))
    joined = fields[i] + "|" + fields[i + 1]
    cut = data.draw(st.integers(0, len(joined)))
    moved = list(fields)
    moved[i], moved[i + 1] = joined[:cut], joined[cut:]
    original = list(fields)
    original[i + 1] = "|" + original[i + 1]
    if moved == original:
        assert call_key(*moved) == call_key(*original)
    else:
        assert call_key(*moved) != call_key(*original)


def test_call_key_separates_the_documented_example() -> None:
    """("a|b", "c") and ("a", "b|c") give different call keys."""
    assert call_key("s", "a|b", "c", "id") != call_key("s", "a", "b|c", "id")
    assert call_key("a|b", "c", "t", "id") != call_key("a", "b|c", "t", "id")


def test_response_id_and_occurrence_are_part_of_the_identity() -> None:
    """A reused call id in another response, or repeated in one response, is another call."""
    base = call_key("scope", "resp_1", "transfer", "call_0")
    assert base != call_key("scope", "resp_2", "transfer", "call_0")
    assert base != call_key("scope", None, "transfer", "call_0")
    assert base != call_key("scope", "resp_1", "transfer", "call_0", 1)
    assert base == call_key("scope", "resp_1", "transfer", "call_0", 0)


def test_idempotency_key_depends_on_both_parts() -> None:
    """The key a tool receives changes with the call key and with the args hash."""
    ck = call_key("s", "r", "t", "c")
    h1, h2 = arguments_hash({"a": 1}), arguments_hash({"a": 2})
    assert idempotency_key(ck, h1) != idempotency_key(ck, h2)
    assert idempotency_key(ck, h1) != idempotency_key(call_key("s", "r", "t", "d"), h1)
    assert len(idempotency_key(ck, h1)) == 64
    assert idempotency_key(ck, h1) not in {ck, h1}


@pytest.mark.parametrize(
    "args",
    [
        (1, "r", "t", "c"),
        ("s", 2, "t", "c"),
        ("s", "r", None, "c"),
        ("s", "r", "t", b"c"),
        ("s", "r", "t", "c", -1),
        ("s", "r", "t", "c", True),
    ],
)
def test_call_key_rejects_wrong_types_with_a_typed_error(args: tuple[Any, ...]) -> None:
    """Identity fields of the wrong type raise IdempotencyKeyError."""
    with pytest.raises(IdempotencyKeyError):
        call_key(*args)


def test_idempotency_key_rejects_wrong_types() -> None:
    """A non-str call key or args hash raises IdempotencyKeyError."""
    with pytest.raises(IdempotencyKeyError):
        idempotency_key(None, "x")  # type: ignore[arg-type]
    with pytest.raises(IdempotencyKeyError):
        idempotency_key("x", 3)  # type: ignore[arg-type]


def test_lone_surrogates_in_identity_are_hashable() -> None:
    """A lone surrogate in a call id (valid in JSON text) still yields a distinct key."""
    assert call_key("s", None, "t", "\ud800") != call_key("s", None, "t", "\ud801")


NODE_DOUBLES = 30_000


def test_number_form_matches_node_json_stringify() -> None:
    """30,000 random doubles serialise exactly as Node's JSON.stringify does (ECMAScript)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    rng = random.Random(8785)
    doubles: list[float] = []
    while len(doubles) < NODE_DOUBLES:
        kind = rng.random()
        if kind < 0.6:
            bits = rng.getrandbits(64)
            d = struct.unpack("<d", bits.to_bytes(8, "little"))[0]
        elif kind < 0.8:
            d = rng.uniform(-1e6, 1e6)
        else:
            d = float(rng.randint(-(2**60), 2**60)) * 10.0 ** rng.randint(-30, 30)
        if math.isfinite(d):
            doubles.append(d)
    # Bit patterns travel as hex so no textual number form is involved on the way in.
    payload = "\n".join(struct.pack("<d", d).hex() for d in doubles)
    script = (
        "const lines=require('fs').readFileSync(0,'utf8').split('\\n');"
        "const out=lines.map(h=>JSON.stringify(Buffer.from(h,'hex').readDoubleLE(0)));"
        "process.stdout.write(out.join('\\n'));"
    )
    done = subprocess.run(
        [node, "-e", script], input=payload, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    expected = done.stdout.split("\n")
    ours = [rfc8785.dumps(d).decode() for d in doubles]
    mismatches = [(d, a, b) for d, a, b in zip(doubles, ours, expected, strict=True) if a != b]
    assert mismatches == []


wide_text = st.text(
    st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=8
)  # controls, BMP above U+E000, astral, lone surrogates
wide_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**60), max_value=2**60)
    | st.floats()
    | wide_text,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(wide_text, inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.mark.slow
@settings(max_examples=3000)
@given(wide_values)
def test_fast_canonical_form_is_the_reference_implementation(value: Any) -> None:
    """The C-encoder fast path writes exactly rfc8785's bytes, and refuses what it refuses."""
    from toolwire._execution.idempotency import canonical_json

    try:
        expected = rfc8785.dumps(value)
    except (ValueError, TypeError):
        with pytest.raises(IdempotencyKeyError):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


def test_fast_path_edge_cases_match_the_reference() -> None:
    """Keys ordered by UTF-16 (astral before U+E000+), escapes, the integer bound, DEL."""
    from toolwire._execution.idempotency import canonical_json

    for value in (
        {"\U0001f600": 1, "\ue000": 2, "a": 3},
        {"\x7f": '\x00\x1f\b\f\n\r\t"\\/', "é": "\u2028"},
        [2**53 - 1, -(2**53 - 1), True, None, ("t",)],
    ):
        assert canonical_json(value) == rfc8785.dumps(value)
    for bad in (2**53, {"\ud800": 1}, "\udfff", {1: 2}):
        with pytest.raises(IdempotencyKeyError):
            canonical_json(bad)


@given(st.text(max_size=70), st.text(max_size=70))
def test_idempotency_key_shortcut_is_the_json_form(call: str, digest: str) -> None:
    """For any strings, the key equals the hash of the compact JSON of the pair."""
    import hashlib

    expected = hashlib.sha256(
        b"toolwire-idempotency-key/v1\x00"
        + json.dumps([call, digest], ensure_ascii=True, separators=(",", ":")).encode("ascii")
    ).hexdigest()
    assert idempotency_key(call, digest) == expected
    hex_a, hex_b = call.encode().hex()[:64] or "0", digest.encode().hex()[:64] or "0"
    assert (
        idempotency_key(hex_a, hex_b)
        == hashlib.sha256(
            b"toolwire-idempotency-key/v1\x00" + f'["{hex_a}","{hex_b}"]'.encode()
        ).hexdigest()
    )
