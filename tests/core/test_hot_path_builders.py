"""The builders on the path of every executed call give exactly what the slow spellings
give: ``_makers.maker(cls)`` the instance ``cls(...)`` builds, ``_jsontext.encoder`` the
text ``json.dumps`` writes, and validated arguments hash like a plain dict of them."""

from __future__ import annotations

import dataclasses
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire import Outcome, Toolbox
from toolwire._core.jsontext import encoder
from toolwire._core.makers import maker
from toolwire._execution.decisions import CallPlan, ClaimCall
from toolwire._execution.idempotency import arguments_hash, canonical_json
from toolwire.stores import Claim, Record

_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(), inner, max_size=4)
    ),
    max_leaves=15,
)
_OPTIONS = [
    {"ensure_ascii": True, "separators": (", ", ": "), "sort_keys": False},
    {"ensure_ascii": False, "separators": (",", ":"), "sort_keys": True},
    {"ensure_ascii": True, "separators": (",", ":"), "sort_keys": False},
    {"ensure_ascii": False, "separators": (",", ":"), "sort_keys": True, "allow_nan": False},
]


@pytest.mark.parametrize("options", _OPTIONS)
@given(value=_VALUES)
def test_encoder_writes_what_json_dumps_writes(options: dict[str, Any], value: Any) -> None:
    """The C encoder built once gives json.dumps' text, or the same exception type."""
    try:
        expected = json.dumps(value, **options)
    except (ValueError, TypeError) as exc:
        with pytest.raises(type(exc)):
            encoder(**options)(value)
        return
    assert encoder(**options)(value) == expected


_SAMPLES: list[tuple[type[Any], dict[str, Any]]] = [
    (
        Record,
        {
            "key": "k",
            "args_hash": "h",
            "idempotency_key": "i",
            "status": "in_progress",
            "owner": "w",
            "fence": 1,
            "lease_expires_at": 2.5,
            "result": None,
            "error": None,
            "created_at": 1.0,
            "expires_at": 3.0,
            "retention": 9.0,
        },
    ),
    (Outcome, {"call_id": "c", "name": "n", "status": "completed", "value": 3}),
    (
        CallPlan,
        {
            "call_id": "c",
            "name": "n",
            "claim": ClaimCall("k", "h", "i", "w", 30.0, 60.0, False),
            "heartbeat_interval": 10.0,
            "timeout": None,
        },
    ),
]


def _hash(value: object) -> int | None:
    """``hash(value)``, or ``None`` for a value holding an unhashable one (a plan's claim
    is a store request: slotted, not frozen)."""
    try:
        return hash(value)
    except TypeError:
        return None


@pytest.mark.parametrize(("cls", "values"), _SAMPLES, ids=lambda v: getattr(v, "__name__", ""))
def test_maker_builds_the_instance_the_class_builds(cls: type[Any], values: dict[str, Any]) -> None:
    """Equal, hashed, printed and pickled alike, frozen, defaults filled in."""
    made, built = maker(cls)(**values), cls(**values)
    assert type(made) is cls
    assert made == built and repr(made) == repr(built) and _hash(made) == _hash(built)
    assert pickle.loads(pickle.dumps(made)) == built
    assert all(hasattr(made, f.name) for f in dataclasses.fields(cls))
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.__setattr__(dataclasses.fields(cls)[0].name, None)
    claim = maker(Claim)(acquired=True, record=built) if cls is Record else None
    assert claim is None or claim == Claim(acquired=True, record=built)


def test_maker_falls_back_to_the_class_where_the_trick_does_not_fit() -> None:
    """Classes with a factory default, a __post_init__ or no slots get the class itself."""

    @dataclasses.dataclass(frozen=True, slots=True)
    class Factory:
        items: list[int] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(frozen=True, slots=True)
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n < 0:
                raise ValueError("n")

    @dataclasses.dataclass(frozen=True)
    class Plain:
        n: int

    for cls in (Factory, Checked, Plain):
        assert maker(cls) is cls


def test_validated_arguments_hash_like_a_plain_dict_on_the_fast_path() -> None:
    """A typed tool's validated arguments (a dict subclass carrying the model) are
    serialised by the C encoder, with the reference implementation's bytes."""
    box = Toolbox()

    @box.tool
    def f(b: int, a: list[str], c: float = 0.5) -> int:
        """A tool."""
        return b

    arguments = box.get("f").validate({"a": ["é", "\n"], "b": 2})  # type: ignore[union-attr]
    assert type(arguments) is not dict
    plain = dict(arguments)
    assert canonical_json(arguments) == canonical_json(plain)
    assert arguments_hash(arguments) == arguments_hash(plain)
