"""What an operator finds a call by: the identity the executor writes at claim (scope, turn,
tool name, call id, arguments digest, created and updated times) and the ``records`` filters
on it, on every backend."""

from __future__ import annotations

import uuid

import pytest

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
from toolwire._errors import SettingsError
from toolwire._execution.idempotency import arguments_hash

__all__ = ["backend", "postgres_dsn", "redis_url", "store"]  # fixtures used here


def _tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> str:
        """Pays."""
        return f"paid {amount}"

    @tools.tool
    def refund(amount: int) -> str:
        """Refunds."""
        return f"refunded {amount}"

    return tools


def test_the_executor_writes_the_calls_identity(store: Facade) -> None:
    """A record claimed by the executor names its scope, turn, tool, call id and digest,
    and its created and updated times (updated at the finish)."""
    if store.is_async:
        pytest.skip("the sync executor takes a sync store")
    executor = Executor(_tools(), store=store.store, scope="tenant-7/conv-1")
    [outcome] = executor.run(one_call_response("pay", {"amount": 5}, "call_A"), turn="t3")
    [record] = store.records(call_id="call_A")
    assert (record.scope, record.turn, record.tool_name, record.call_id) == (
        "tenant-7/conv-1",
        "t3",
        "pay",
        "call_A",
    )
    assert record.args_hash == arguments_hash({"amount": 5})
    assert record.idempotency_key == outcome.idempotency_key
    assert record.updated_at is not None and record.updated_at >= record.created_at


def test_records_filter_on_each_field(backend: Backend, store: Facade) -> None:
    """``tool_name``, ``call_id``, ``scope``, ``idempotency_key`` and ``since`` each keep only
    the matching records, and combine with ``status``."""
    made = []
    for i, (scope, tool) in enumerate([("a", "pay"), ("a", "refund"), ("b", "pay")]):
        key = new_key()
        store.claim(key, owner="w1", scope=scope, tool_name=tool, call_id=f"c{i}", turn=None)
        made.append(key)
        backend.wait(0.05)
    store.finish(made[2], owner="w1", fence=1)
    keys = lambda **f: [r.key for r in store.records(**f)]  # noqa: E731
    assert keys(tool_name="pay") == [made[0], made[2]]
    assert keys(call_id="c1") == [made[1]]
    assert keys(scope="a") == made[:2]
    assert keys(scope="a", tool_name="pay") == [made[0]]
    assert keys(tool_name="pay", status="completed") == [made[2]]
    assert keys(idempotency_key=store.get(made[1]).idempotency_key) == [made[1]]  # type: ignore[union-attr]
    since = store.get(made[1]).created_at  # type: ignore[union-attr]
    assert keys(since=since) == made[1:]
    assert keys(tool_name="none-such") == []


def test_updated_at_moves_with_the_state_not_the_heartbeat(backend: Backend, store: Facade) -> None:
    """``updated_at`` is the claim's time, kept by a heartbeat, renewed by the finish."""
    key = new_key()
    claimed = store.claim(key, owner="w1", tool_name="pay").record
    assert claimed.updated_at == claimed.created_at
    backend.wait(SHORT / 4)
    assert store.heartbeat(key, owner="w1", fence=1)
    beat = store.get(key)
    assert beat is not None and beat.updated_at == pytest.approx(claimed.created_at)
    backend.wait(SHORT / 4)
    store.finish(key, owner="w1", fence=1)
    done = store.get(key)
    assert done is not None and done.updated_at is not None
    assert done.updated_at > claimed.created_at and done.tool_name == "pay"


def test_identity_text_no_column_takes_is_escaped(store: Facade) -> None:
    """A call id with a lone surrogate or a NUL is stored (escaped), never an outage."""
    key = new_key()
    got = store.claim(key, owner="w1", call_id="c\ud800\x00x")
    assert got.acquired
    assert store.get(key).call_id == "c\\ud800\\x00x"  # type: ignore[union-attr]
    assert [r.key for r in store.records(call_id="c\ud800\x00x")] == [key]


@pytest.mark.parametrize(
    "options",
    [{"tool_name": 3}, {"call_id": b"x"}, {"since": "yesterday"}, {"since": float("nan")}],
)
def test_bad_filters_are_refused(store: Facade, options: dict[str, object]) -> None:
    """A filter of the wrong type is a ``SettingsError``, before any read; the right type
    of the same filter is accepted."""
    [(name, _value)] = options.items()
    good = {"since": 0.0}.get(name, "text")
    assert store.records(**{name: good}) == []
    with pytest.raises(SettingsError):
        store.records(**options)


def test_a_bad_identity_is_refused_before_the_claim(store: Facade) -> None:
    """A claim whose identity is not text is refused, and nothing is written; text is
    accepted."""
    assert store.claim(new_key(), owner="w1", tool_name="pay").acquired
    key = f"bad-{uuid.uuid4().hex}"
    with pytest.raises(SettingsError):
        store.claim(key, owner="w1", tool_name=7)
    assert store.get(key) is None
