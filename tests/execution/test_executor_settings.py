"""Executor settings: the defaults a production user keeps, and every refusal of settings
that cannot hold the at-most-once promise (one test per refusal)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from executor_support import response
from toolwire import (
    AsyncExecutor,
    Executor,
    MemoryStore,
    SettingsError,
    Toolbox,
    UsageError,
)
from toolwire._execution.executor import (
    DEFAULT_CANCEL_GRACE,
    DEFAULT_LEASE,
    DEFAULT_MAX_THREADS,
    DEFAULT_RETENTION,
    DEFAULT_TIMEOUT,
    TRANSIENT_ERRORS,
)

EXECUTORS = [Executor, AsyncExecutor]


@pytest.fixture
def tools() -> Toolbox:
    """One quick tool."""
    box = Toolbox()

    @box.tool
    def echo(x: int) -> int:
        """Returns its argument."""
        return x

    return box


def refused(kind: Any, toolbox: Toolbox, **settings: Any) -> str:
    """The message of the SettingsError that ``kind(toolbox, **settings)`` raises."""
    with pytest.raises(SettingsError) as info:
        kind(toolbox, **settings)
    assert isinstance(info.value, UsageError)
    return str(info.value)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_defaults_are_documented_production_values(kind: Any, tools: Toolbox) -> None:
    """Without settings: 60 s timeout, 30 s lease beating every 10 s, 24 h retention."""
    ex = kind(tools, scope="s")
    assert (ex.timeout, ex.lease, ex.heartbeat_interval) == (60.0, 30.0, 10.0)
    assert (ex.retention, ex.cancel_grace) == (86400.0, 1.0)
    assert (ex.max_concurrency, ex.max_threads) == (None, 32)
    assert ex.retry_on == TRANSIENT_ERRORS
    assert DEFAULT_TIMEOUT + DEFAULT_CANCEL_GRACE + DEFAULT_LEASE < DEFAULT_RETENTION
    assert DEFAULT_MAX_THREADS == 32


@pytest.mark.parametrize("kind", EXECUTORS)
def test_no_timeout_is_refused_with_what_to_set(kind: Any, tools: Toolbox) -> None:
    """timeout=None (a tool that may outlive retention) is refused, naming timeout=."""
    message = refused(kind, tools, scope="s", timeout=None)
    assert "timeout=" in message and "retention" in message and "run a second time" in message


@pytest.mark.parametrize("kind", EXECUTORS)
def test_retention_shorter_than_timeout_plus_lease_is_refused(kind: Any, tools: Toolbox) -> None:
    """retention must outlive timeout + grace + lease; the message gives the bound."""
    message = refused(kind, tools, scope="s", timeout=60, lease=30, retention=90)
    assert "retention=90 s" in message and "above 91 s" in message
    kind(tools, scope="s", timeout=60, lease=30, retention=91.5)  # just above: accepted


@pytest.mark.parametrize("kind", EXECUTORS)
def test_a_tool_whose_own_timeout_outlives_retention_is_refused(kind: Any) -> None:
    """A registered tool's own timeout counts: too long for the retention is refused."""
    box = Toolbox()

    @box.tool(timeout=100_000)
    def slow(x: int) -> int:
        """Allowed to take a day and more."""
        return x

    message = refused(kind, box, scope="s")
    assert "'slow'" in message and "100000 s" in message
    kind(box, scope="s", retention=200_000)  # a retention that covers it is fine


def test_a_tool_registered_later_is_checked_before_anything_runs() -> None:
    """A too-slow tool added after construction makes run() refuse before claiming."""
    box = Toolbox()
    store = MemoryStore()
    ex = Executor(box, store=store, scope="s", retention=120)
    aex = AsyncExecutor(box, store=store, scope="s", retention=120)

    @box.tool(timeout=500)
    def late(x: int) -> int:
        """Registered after the executors were built."""
        raise AssertionError("must not run")

    with pytest.raises(SettingsError, match="'late'"):
        ex.run(response(("a", "late", {"x": 1})))
    with pytest.raises(SettingsError, match="'late'"):
        asyncio.run(aex.run(response(("a", "late", {"x": 1}))))
    assert store.purge() == 0 and store._records == {}


@given(
    timeout=st.floats(0.01, 1000),
    lease=st.floats(0.01, 1000),
    grace=st.floats(0.01, 100),
    retention=st.floats(0.01, 3000),
)
def test_retention_rule_holds_for_every_setting(
    timeout: float, lease: float, grace: float, retention: float
) -> None:
    """Construction succeeds exactly when retention > timeout + cancel_grace + lease."""
    box = Toolbox()
    settings = {
        "scope": "s",
        "timeout": timeout,
        "lease": lease,
        "cancel_grace": grace,
        "retention": retention,
    }
    if retention > timeout + grace + lease:
        Executor(box, **settings)
    else:
        with pytest.raises(SettingsError):
            Executor(box, **settings)


@pytest.mark.parametrize("kind", EXECUTORS)
def test_missing_scope_explains_what_a_scope_is_for(kind: Any, tools: Toolbox) -> None:
    """No scope= is a usage error that says what a scope is and what to pass."""
    message = refused(kind, tools)
    assert message.startswith("scope= is required")
    assert "tenant" in message and "never share a record" in message and "scope='my-app'" in message


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize(
    ("settings", "fragment"),
    [
        ({"retry_on": (KeyboardInterrupt,)}, "Exception subclasses"),
        ({"retry_on": (asyncio.CancelledError,)}, "Exception subclasses"),
        ({"retry_on": ConnectionError}, "tuple of exception types"),
        ({"retry_on": ("ConnectionError",)}, "Exception subclasses"),
        ({"error_text": "oops"}, "error_text must be a callable"),
        ({"max_threads": 0}, "max_threads"),
        ({"max_threads": True}, "max_threads"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"cancel_grace": 0}, "cancel_grace"),
        ({"cancel_grace": float("inf")}, "cancel_grace"),
        ({"timeout": float("nan")}, "timeout"),
        ({"retention": -1}, "retention"),
    ],
)
def test_unusable_new_settings_are_refused(
    kind: Any, tools: Toolbox, settings: dict[str, Any], fragment: str
) -> None:
    """retry_on, error_text, max_threads, max_concurrency and cancel_grace are checked."""
    assert fragment in refused(kind, tools, scope="s", **settings)


def test_retry_on_accepts_any_iterable_of_exception_types(tools: Toolbox) -> None:
    """A list of Exception subclasses is taken as a tuple; () switches retries off."""
    assert Executor(tools, scope="s", retry_on=[KeyError]).retry_on == (KeyError,)
    assert Executor(tools, scope="s", retry_on=()).retry_on == ()


def test_a_bad_turn_is_refused(tools: Toolbox) -> None:
    """run(turn=...) takes a non-empty str or None."""
    ex = Executor(tools, scope="s")
    for turn in ("", 3, b"t"):
        with pytest.raises(SettingsError, match="turn must be"):
            ex.run(response(("a", "echo", {"x": 1})), turn=turn)  # type: ignore[arg-type]
    started = time.monotonic()
    [o] = ex.run(response(("a", "echo", {"x": 1})), turn="t1")
    assert o.status == "completed" and time.monotonic() - started < 5
