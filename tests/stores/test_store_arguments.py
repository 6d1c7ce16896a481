"""The store contract, bad arguments: every backend refuses the same calls alike, with
``SettingsError`` (a caller mistake, not an outage) before anything is written, and a
closed store raises ``StoreError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from store_backends import (
    LONG,
    RETAIN,
    Backend,
    Facade,
    backend,
    namespace,
    new_key,
    postgres_dsn,
    redis_url,
    store,
)
from toolwire import SettingsError, StoreError

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


BAD_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("claim", ("k",), {"lease": 0}),
    ("claim", ("k",), {"lease": -1.0}),
    ("claim", ("k",), {"lease": float("nan")}),
    ("claim", ("k",), {"lease": "10"}),
    ("claim", ("k",), {"retention": 0}),
    ("claim", ("k",), {"retention": None}),
    ("claim", ("k",), {"lease": True}),
    ("finish", ("k",), {"status": "in_progress"}),
    ("finish", ("k",), {"status": "done"}),
    ("finish", ("k",), {"result": b"bytes"}),
    ("finish", ("k",), {"result": {"a": 1}}),
    ("finish", ("k",), {"error": 42}),
]


@pytest.mark.parametrize(("method", "args", "bad"), BAD_CALLS)
def test_bad_arguments_raise_store_settings_error(
    store: Facade, method: str, args: tuple[Any, ...], bad: dict[str, Any]
) -> None:
    """Arguments outside the Protocol raise SettingsError before anything is written."""
    key = new_key()
    if method == "claim":
        kwargs: dict[str, Any] = {
            "args_hash": "h1",
            "idempotency_key": "i",
            "owner": "w1",
            "lease": LONG,
            "retention": RETAIN,
            "reclaim": False,
        }
    else:
        store.claim(key, owner="w1")
        kwargs = {"owner": "w1", "fence": 1, "status": "completed", "result": "r", "error": None}
    kwargs.update(bad)
    before = store.get(key)
    with pytest.raises(SettingsError):
        store.raw(method, key, **kwargs)
    assert store.get(key) == before


def test_closed_store_raises_store_error(backend: Backend) -> None:
    """Every operation on a closed store raises StoreError."""
    facade = backend.open(namespace())
    facade.claim(new_key(), owner="w1")
    if facade.is_async:
        facade._loop.run_until_complete(facade.store.aclose())  # type: ignore[union-attr]
    else:
        facade.store.close()
    with pytest.raises(StoreError):
        facade.claim(new_key(), owner="w1")
    with pytest.raises(StoreError):
        facade.get(new_key())
    with pytest.raises(StoreError):
        facade.purge()
    with pytest.raises(StoreError):
        facade.records()


# Wrong types and malformed values: every backend refuses them alike, with
# SettingsError, a caller mistake rather than an outage.
WRONG_TYPES: list[tuple[str, dict[str, Any]]] = [
    ("claim", {"key": 42}),
    ("claim", {"owner": None}),
    ("claim", {"args_hash": b"h"}),
    ("claim", {"key": ""}),
    ("claim", {"key": "lone \udc80 surrogate"}),
    ("claim", {"reclaim": "yes"}),
    ("claim", {"lease": float("inf")}),
    ("claim", {"retention": 0}),
    ("heartbeat", {"fence": "1"}),
    ("heartbeat", {"fence": True}),
    ("heartbeat", {"fence": 0}),
    ("heartbeat", {"lease": -1.0}),
    ("release", {"owner": 7}),
    ("get", {"key": None}),
]


def _call_with(facade: Facade, method: str, bad: dict[str, Any]) -> None:
    """Call ``method`` with valid arguments overridden by ``bad``; expect a usage error."""
    arguments: dict[str, Any] = {
        "claim": {
            "key": "k",
            "args_hash": "h",
            "idempotency_key": "i",
            "owner": "w1",
            "lease": LONG,
            "retention": RETAIN,
            "reclaim": False,
        },
        "heartbeat": {"key": "k", "owner": "w1", "fence": 1, "lease": LONG},
        "release": {"key": "k", "owner": "w1", "fence": 1},
        "get": {"key": "k"},
    }[method]
    arguments.update(bad)
    key = arguments.pop("key")
    with pytest.raises(SettingsError):
        facade.raw(method, key, **arguments)


@pytest.mark.parametrize(("method", "bad"), WRONG_TYPES)
def test_wrong_argument_types_raise_store_settings_error(
    store: Facade, method: str, bad: dict[str, Any]
) -> None:
    """Arguments of the wrong type raise SettingsError, never a driver or Python error."""
    _call_with(store, method, bad)


ADMIN_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("records", (), {"status": "done"}),
    ("records", (), {"limit": 0}),
    ("records", (), {"limit": True}),
    ("records", (), {"limit": 10**9}),
    ("records", (), {"newest_first": "yes"}),
    ("resolve", ("k",), {"status": "unknown", "error": "e"}),
    ("resolve", ("k",), {"status": "in_progress"}),
    ("resolve", ("k",), {"status": "completed"}),  # a completed call needs its result
    ("resolve", ("k",), {"status": "failed", "result": "1"}),  # a failure needs its error
    ("resolve", ("k",), {"status": "completed", "result": b"1"}),
    ("resolve", ("",), {"status": "failed", "error": "e"}),
]


@pytest.mark.parametrize(("method", "args", "bad"), ADMIN_CALLS)
def test_bad_admin_arguments_raise_store_settings_error(
    store: Facade, method: str, args: tuple[Any, ...], bad: dict[str, Any]
) -> None:
    """records/resolve with arguments outside their domain raise SettingsError."""
    with pytest.raises(SettingsError):
        store.raw(method, *args, **bad)


SHAPE_CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("records", (), {"order": "newest"}),
    ("resolve", ("k",), {"status": "failed", "error": "e", "fence": 1}),
    ("claim", ("k",), {"args_hash": "h", "owner": "w"}),  # missing arguments
    ("release", ("k",), {"owner": "w"}),
    ("heartbeat", ("k", "w"), {"fence": 1, "lease": 1.0}),  # owner given by position
]


@pytest.mark.parametrize(("method", "args", "bad"), SHAPE_CALLS)
def test_missing_or_unknown_keyword_arguments_raise_type_error(
    store: Facade, method: str, args: tuple[Any, ...], bad: dict[str, Any]
) -> None:
    """Every backend's methods take the Protocol's parameters as written: a missing,
    unknown or positional keyword argument is Python's TypeError, before anything is
    written."""
    key = new_key()
    with pytest.raises(TypeError):
        store.raw(method, *((key, *args[1:]) if args else ()), **bad)
    assert store.get(key) is None
