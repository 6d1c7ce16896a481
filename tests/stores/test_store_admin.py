"""The store contract, operator operations: ``records`` lists by status and age,
``resolve`` settles an ``unknown`` call by hand and touches nothing else, on every
backend (sync and async). These serve the ``toolwire store`` command.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store_backends import (
    SHORT,
    Backend,
    Facade,
    backend,
    new_key,
    one_call_response,
    postgres_dsn,
    redis_url,
    store,
)
from toolwire import Executor, Toolbox

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


def _unknown(backend: Backend, store: Facade) -> str:
    """A key whose record the lease verdict turned ``unknown``."""
    key = new_key()
    store.claim(key, owner="w1", lease=SHORT)
    backend.wait(SHORT * 1.5)
    assert store.claim(key, owner="w2").record.status == "unknown"
    return key


def test_records_lists_by_status_and_age(backend: Backend, store: Facade) -> None:
    """Oldest first by default, newest first on request, one status or all, with a limit."""
    keys = []
    for i in range(5):
        key = f"{i}-{uuid.uuid4().hex}"
        store.claim(key, owner="w1")
        if i % 2 == 0:
            store.finish(key, owner="w1", fence=1)
        keys.append(key)
        backend.wait(0.01)  # distinct creation times
    listed = [r.key for r in store.records()]
    assert listed == keys
    assert [r.key for r in store.records(newest_first=True)] == keys[::-1]
    assert [r.key for r in store.records(status="completed")] == keys[0::2]
    assert [r.key for r in store.records(status="in_progress", newest_first=True)] == [
        keys[3],
        keys[1],
    ]
    assert [r.key for r in store.records(limit=2)] == keys[:2]
    assert [r.key for r in store.records(status="unknown")] == []
    assert store.records(limit=1)[0] == store.get(keys[0])


def test_records_listing_property(store: Facade) -> None:
    """Any limit and order give the matching prefix of the full sorted listing (Hypothesis)."""
    for i in range(6):
        store.claim(f"p{i}-{uuid.uuid4().hex}", owner="w1")
    full = store.records(limit=1000)
    ordered = sorted(full, key=lambda r: (r.created_at, r.key))
    assert full == ordered

    @settings(max_examples=20, database=None)
    @given(limit=st.integers(1, 8), newest_first=st.booleans())
    def check(limit: int, newest_first: bool) -> None:
        expected = ordered[::-1] if newest_first else ordered
        assert store.records(limit=limit, newest_first=newest_first) == expected[:limit]

    check()


@pytest.mark.parametrize("status", ["completed", "failed"])
def test_resolve_settles_an_unknown_call(backend: Backend, store: Facade, status: str) -> None:
    """An unknown record takes the operator's status, result and error; the fence stays."""
    key = _unknown(backend, store)
    before = store.get(key)
    assert before is not None
    result, error = ('{"checked": true}', None) if status == "completed" else (None, "refunded")
    assert store.resolve(key, status=status, result=result, error=error)
    after = store.get(key)
    assert after is not None
    assert (after.status, after.result, after.error) == (status, result, error)
    assert (after.fence, after.owner, after.lease_expires_at) == (before.fence, None, None)
    assert after.expires_at >= before.expires_at  # renewed, never moved back
    # Settled, it is no longer unknown: a second resolve is refused.
    assert not store.resolve(key, status="failed", error="again")
    again = store.claim(key, owner="w3", reclaim=True)
    assert not again.acquired and again.record == after


def test_resolve_refuses_records_that_are_not_unknown(store: Facade) -> None:
    """Absent, in_progress, completed and failed records are left alone (False)."""
    assert not store.resolve(new_key(), status="completed", result="1")
    held, done, failed = new_key(), new_key(), new_key()
    for key in (held, done, failed):
        store.claim(key, owner="w1")
    store.finish(done, owner="w1", fence=1, result="1")
    store.finish(failed, owner="w1", fence=1, status="failed", result=None, error="boom")
    for key in (held, done, failed):
        before = store.get(key)
        assert not store.resolve(key, status="completed", result='"forged"')
        assert store.get(key) == before


def test_a_resolved_call_is_replayed_by_the_executor(backend: Backend, store: Facade) -> None:
    """After resolve(completed) the executor replays the operator's result, never runs."""
    from toolwire._execution.idempotency import arguments_hash, call_key

    runs: list[int] = []
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> dict[str, Any]:
        """Pay an amount."""
        runs.append(amount)
        return {"paid": amount}

    response = one_call_response("pay", {"amount": 5}, "c1")
    key = call_key("admin", response.response_id, "pay", "c1")
    store.claim(key, owner="crashed", args_hash=arguments_hash({"amount": 5}), lease=SHORT)
    backend.wait(SHORT * 1.5)
    assert store.claim(key, owner="w2", args_hash=arguments_hash({"amount": 5})).record.error
    assert store.resolve(key, status="completed", result='{"paid": 5, "by": "operator"}')
    if store.is_async:
        from toolwire import AsyncExecutor

        outcome = store.raw_await(
            AsyncExecutor(tools, store=store.store, scope="admin").run(response)
        )[0]
    else:
        outcome = Executor(tools, store=store.store, scope="admin").run(response)[0]
    assert outcome.status == "replayed" and outcome.value == {"paid": 5, "by": "operator"}
    assert runs == []
