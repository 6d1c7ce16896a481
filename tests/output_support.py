"""Shared by the structured-output tests: generated pydantic models with matching JSON values,
the typed prefix relation between previews, and chat-completion payloads carrying text."""

from __future__ import annotations

import itertools
import json
from typing import Any, Literal, Optional

import pydantic
from hypothesis import strategies as st

from toolwire import MISSING

_names = itertools.count()

# A type spec is a small tree: ("str",), ("int",), ("float",), ("bool",), ("literal",),
# ("opt", spec), ("list", spec), ("model", ((field, spec), ...)).
_LEAVES = ("str", "int", "float", "bool", "literal")
_field_names = st.sampled_from(["a", "b", "name", "items", "x", "text", "n", "ok"])
_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


def _specs() -> st.SearchStrategy[tuple[Any, ...]]:
    leaf = st.sampled_from(_LEAVES).map(lambda k: (k,))

    def extend(inner: st.SearchStrategy[tuple[Any, ...]]) -> st.SearchStrategy[tuple[Any, ...]]:
        fields = st.lists(
            st.tuples(_field_names, inner), min_size=1, max_size=4, unique_by=lambda f: f[0]
        )
        return (
            inner.map(lambda s: ("opt", s))
            | inner.map(lambda s: ("list", s))
            | fields.map(lambda f: ("model", tuple(f)))
        )

    return st.recursive(leaf, extend, max_leaves=8)


def model_specs() -> st.SearchStrategy[tuple[Any, ...]]:
    """Specs whose root is a model."""
    fields = st.lists(
        st.tuples(_field_names, _specs()), min_size=1, max_size=4, unique_by=lambda f: f[0]
    )
    return fields.map(lambda f: ("model", tuple(f)))


def annotation(spec: tuple[Any, ...]) -> Any:
    """The Python type a spec stands for (models are created here)."""
    kind = spec[0]
    if kind == "str":
        return str
    if kind == "int":
        return int
    if kind == "float":
        return float
    if kind == "bool":
        return bool
    if kind == "literal":
        return Literal["red", "green", 3]
    if kind == "opt":
        return Optional[annotation(spec[1])]  # noqa: UP045 (typing.Optional on purpose)
    if kind == "list":
        return list[annotation(spec[1])]  # type: ignore[misc]
    fields = {name: (annotation(sub), ...) for name, sub in spec[1]}
    return pydantic.create_model(f"M{next(_names)}", **fields)  # type: ignore[call-overload]


def values(spec: tuple[Any, ...]) -> st.SearchStrategy[Any]:
    """JSON values that fit the spec."""
    kind = spec[0]
    if kind == "str":
        return _text
    if kind == "int":
        return st.integers(-(10**6), 10**6)
    if kind == "float":
        return st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-100, 100)
    if kind == "bool":
        return st.booleans()
    if kind == "literal":
        return st.sampled_from(["red", "green", 3])
    if kind == "opt":
        return st.none() | values(spec[1])
    if kind == "list":
        return st.lists(values(spec[1]), max_size=3)
    return st.fixed_dictionaries({name: values(sub) for name, sub in spec[1]})


def dumps(value: Any, style: int) -> str:
    """JSON text in one of a few layouts (compact, spaced, indented, ASCII-escaped)."""
    if style == 0:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if style == 1:
        return json.dumps(value, ensure_ascii=False)
    if style == 2:
        return json.dumps(value, indent=2)
    return " " + json.dumps(value) + "\n"


def typed_prefix(a: Any, b: Any) -> bool:
    """§1's prefix relation lifted to models: same class, shown fields a subset, each a
    prefix; lists by length and item; dicts by key subset; strings by startswith."""
    if a is MISSING:
        return True
    if isinstance(a, pydantic.BaseModel):
        if type(a) is not type(b):
            return False
        shown = a.model_fields_set
        if not shown <= b.model_fields_set:
            return False
        return all(typed_prefix(getattr(a, f), getattr(b, f)) for f in shown)
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) <= len(b)
            and all(typed_prefix(x, y) for x, y in zip(a, b, strict=False))
        )
    if isinstance(a, dict):
        return isinstance(b, dict) and all(k in b and typed_prefix(v, b[k]) for k, v in a.items())
    if isinstance(a, str):
        return isinstance(b, str) and b.startswith(a)
    return type(a) is type(b) and bool(a == b)


def snapshot(value: Any) -> Any:
    """A plain, comparable copy of a preview (class, shown fields and values)."""
    if isinstance(value, pydantic.BaseModel):
        return (
            type(value).__name__,
            tuple(sorted((f, snapshot(getattr(value, f))) for f in value.model_fields_set)),
        )
    if isinstance(value, list):
        return [snapshot(v) for v in value]
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return (type(value).__name__, value)


def typed_as(value: Any, spec: tuple[Any, ...]) -> bool:
    """Whether every shown part of a preview has its spec's Python type."""
    kind = spec[0]
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return type(value) is int
    if kind == "float":
        return type(value) in (int, float)
    if kind == "bool":
        return type(value) is bool
    if kind == "literal":
        return value in ("red", "green", 3)
    if kind == "opt":
        return value is None or typed_as(value, spec[1])
    if kind == "list":
        return isinstance(value, list) and all(typed_as(v, spec[1]) for v in value)
    fields = dict(spec[1])
    return isinstance(value, pydantic.BaseModel) and all(
        typed_as(getattr(value, f), fields[f]) for f in value.model_fields_set
    )


def chat_payloads(pieces: list[str], finish: str | None = "stop") -> list[dict[str, Any]]:
    """OpenAI chat chunks streaming ``pieces`` as content, then ``finish`` (None: no end)."""
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    out += [{**head, "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    if finish is not None:
        out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return out


def pieces_at(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at the given offsets (sorted, deduplicated, empty pieces dropped)."""
    points = sorted({c for c in cuts if 0 < c < len(text)})
    bounds = [0, *points, len(text)]
    return [text[i:j] for i, j in itertools.pairwise(bounds) if j > i]
