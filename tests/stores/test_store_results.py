"""The store contract, results and restarts: every text comes back byte for byte, and a
new store object on the same database replays what the old one stored, on every backend.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_backends import (
    PERSISTENT,
    Backend,
    Facade,
    backend,
    namespace,
    new_key,
    postgres_dsn,
    redis_url,
    store,
)

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


RESULTS = [
    "",
    '{"text": "héllo wörld ✓ 日本語 🎉"}',
    '{"n": 123456789012345678901234567890, "f": 1e400, "g": -0.0}',
    '{"s": "\\u0000\\ud83d\\ude00"}',
    "x" * 1_000_000,
    "tab\there\r\nnewline and NUL \x00 control characters",
    "  leading and trailing spaces  ",
]


def test_finish_keeps_result_text_byte_for_byte(store: Facade) -> None:
    """Results (non-ASCII, big numbers, long text, control characters) come back identical."""
    for text in RESULTS:
        key = new_key()
        store.claim(key, owner="w1")
        assert store.finish(key, owner="w1", fence=1, result=text, error=text[:100])
        record = store.get(key)
        assert record is not None
        assert record.result == text and record.error == text[:100]
        assert type(record.result) is str


def test_finish_keeps_lone_surrogates(store: Facade) -> None:
    """Results and errors with lone surrogates read back identical, without an encoding error.

    ``json.dumps(..., ensure_ascii=False)`` writes lone surrogates into JSON text as is.
    """
    text = '{"s": "lone \udc80 and \ud83d halves"}'
    key = new_key()
    store.claim(key, owner="w1")
    assert store.finish(key, owner="w1", fence=1, result=text, error=text)
    record = store.get(key)
    assert record is not None and (record.result, record.error) == (text, text)


def test_result_round_trip_property(store: Facade) -> None:
    """Any Python text stored as a result or error reads back exactly (Hypothesis)."""

    @settings(max_examples=40, database=None)
    @given(result=st.text(), error=st.none() | st.text(max_size=50))
    def check(result: str, error: str | None) -> None:
        key = new_key()
        store.claim(key, owner="w1")
        assert store.finish(key, owner="w1", fence=1, result=result, error=error)
        record = store.get(key)
        assert record is not None
        assert (record.result, record.error) == (result, error)

    check()


@pytest.mark.parametrize("backend", PERSISTENT, indirect=True)
def test_replay_after_restart(backend: Backend) -> None:
    """A new store object on the same database returns the stored outcome and refuses claims."""
    assert backend.persistent
    ns = namespace()
    first = backend.open(ns)
    key = new_key()
    first.claim(key, owner="w1")
    first.finish(key, owner="w1", fence=1, result='{"balance": 10}')
    stored = first.get(key)
    first.close()
    backend.opened.remove(first)
    second = backend.open(ns)
    assert second.get(key) == stored
    claim = second.claim(key, owner="w2")
    assert not claim.acquired and claim.record == stored
