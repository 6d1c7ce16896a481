"""A sync tool that outlives its timeout (a thread cannot be stopped) keeps its call claimed
while it runs, on every store: retention passes, ``purge`` runs, Redis's own expiry would
have struck, and a second delivery still runs nothing; the body's late result is recorded.

Real short waits on real clocks (the keeper heartbeats on the store's clock): timeout
0.2 s, lease 0.3 s, grace 0.1 s, retention 0.7 s (the smallest the settings allow), Redis
hashes expiring 0.1 s after their expiry.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import servers
from store_backends import namespace, one_call_response, open_server_store
from toolwire import AsyncExecutor, Executor, MemoryStore, Outcome, SQLiteStore, Toolbox

postgres_dsn = servers.postgres_dsn
redis_url = servers.redis_url

SETTINGS: dict[str, Any] = {"timeout": 0.2, "lease": 0.3, "cancel_grace": 0.1, "retention": 0.7}
PAST_RETENTION = 1.5  # retention twice over, and the Redis TTL of any write before it
STORES = [
    "memory",
    "sqlite",
    pytest.param("postgres", marks=pytest.mark.server),
    pytest.param("redis", marks=pytest.mark.server),
]
ASYNC_STORES = [
    "memory",
    "sqlite",
    pytest.param("postgres-async", marks=pytest.mark.server),
    pytest.param("redis-async", marks=pytest.mark.server),
]


class Hanging:
    """A toolbox whose ``send`` blocks on a gate far past its timeout, counting bodies."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.bodies: list[str] = []
        self.tools = Toolbox()

        @self.tools.tool(timeout=0.2)
        def send(to: str) -> dict[str, str]:
            """Send a message through a downstream that hangs."""
            self.bodies.append(to)
            self.gate.wait(10)
            return {"sent": to}


def _open(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A store of ``kind`` on a fresh namespace (Redis hashes expire 0.1 s after expiry)."""
    if kind == "memory":
        return MemoryStore()
    if kind == "sqlite":
        return SQLiteStore(str(tmp_path / "calls.db"))
    target = request.getfixturevalue("postgres_dsn" if "postgres" in kind else "redis_url")
    options = {"expire_grace": 0.1} if kind.startswith("redis") else {}
    if kind.endswith("async"):
        from toolwire.stores.postgres import AsyncPostgresStore
        from toolwire.stores.redis import AsyncRedisStore

        if kind.startswith("redis"):
            return AsyncRedisStore(target, prefix=f"{namespace()}:", **options)
        return AsyncPostgresStore(target, table=namespace())
    return open_server_store(kind, target, namespace(), **options).store


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    """The hanging toolbox; its gate is opened at the end whatever happened."""
    tools = Hanging()
    yield tools
    tools.gate.set()


def _wait_for(condition: Any, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


@pytest.mark.parametrize("kind", STORES)
def test_a_runaway_tool_is_never_run_twice_and_its_late_result_is_kept(
    kind: str, hanging: Hanging, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Past its timeout and its retention, after purge, a second delivery is in_progress
    and runs nothing; the body's late return is recorded completed and replayed."""
    store = _open(kind, request, tmp_path)
    try:
        ex = Executor(hanging.tools, store=store, scope=f"s-{uuid.uuid4().hex}", **SETTINGS)
        response = one_call_response("send", {"to": "ann"})
        [first] = ex.run(response)
        assert first.status == "timed_out"
        time.sleep(PAST_RETENTION)
        assert ex.purge() == 0
        [second] = ex.run(response)
        assert hanging.bodies == ["ann"]  # the body did not run a second time
        assert second.status == "in_progress"
        [runaway] = ex.runaways()
        assert (runaway.tool_name, runaway.idempotency_key) == ("send", first.idempotency_key)
        assert runaway.running_for >= PAST_RETENTION and runaway.timeout == 0.2
        record = store.get(runaway.key)
        assert record is not None and (record.status, record.fence) == ("in_progress", 1)
        hanging.gate.set()
        _wait_for(lambda: not ex.runaways())
        record = store.get(runaway.key)
        assert record is not None and (record.status, record.result) == (
            "completed",
            '{"sent":"ann"}',
        )
        [third] = ex.run(response)
        assert (third.status, third.value) == ("replayed", {"sent": "ann"})
        assert hanging.bodies == ["ann"]
    finally:
        hanging.gate.set()
        store.close()


@pytest.mark.parametrize("kind", ASYNC_STORES)
def test_the_async_executor_keeps_a_runaway_thread_claimed(
    kind: str, hanging: Hanging, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """AsyncExecutor (sync or async store): the same, the keeper calling an async store
    on the caller's loop while it runs."""
    store = _open(kind, request, tmp_path)

    async def main() -> tuple[Outcome, Outcome, Outcome]:
        ex = AsyncExecutor(hanging.tools, store=store, scope=f"s-{uuid.uuid4().hex}", **SETTINGS)
        response = one_call_response("send", {"to": "bob"})
        try:
            [first] = await ex.run(response)
            await asyncio.sleep(PAST_RETENTION)
            assert await ex.purge() == 0
            [second] = await ex.run(response)
            assert [call.idempotency_key for call in ex.runaways()] == [first.idempotency_key]
            hanging.gate.set()
            while ex.runaways():
                await asyncio.sleep(0.02)
            [third] = await ex.run(response)
            return first, second, third
        finally:
            hanging.gate.set()
            if kind.endswith("async"):
                await store.aclose()
            else:
                store.close()

    first, second, third = asyncio.run(main())
    assert first.status == "timed_out"
    assert second.status == "in_progress"
    assert (third.status, third.value) == ("replayed", {"sent": "bob"})
    assert hanging.bodies == ["bob"]


def test_a_late_failure_is_recorded_and_a_runaway_is_reported(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A runaway that finally raises records its failure (replayed from then on); it is
    logged when kept, past its retention and at its end."""
    gate = threading.Event()
    box = Toolbox()

    @box.tool(timeout=0.2)
    def charge(amount: int) -> int:
        """A charge whose downstream hangs, then refuses."""
        gate.wait(10)
        raise ValueError("card declined")

    ex = Executor(box, scope="s", **SETTINGS)
    response = one_call_response("charge", {"amount": 5})
    caplog.set_level(logging.INFO, logger="toolwire.executor")
    try:
        [first] = ex.run(response)
        assert first.status == "timed_out"
        time.sleep(0.9)  # past the retention of 0.7 s since the tool started
        gate.set()
        _wait_for(lambda: not ex.runaways())
    finally:
        gate.set()
    [again] = ex.run(response)
    assert (again.status, again.replayed) == ("failed", True)
    assert again.error == "ValueError: card declined"
    messages = [r.getMessage() for r in caplog.records]
    assert any("is still running" in m and "stays claimed" in m for m in messages)
    assert any("past the retention (0.7 s)" in m for m in messages)
    assert any("ended after its timeout; recorded as failed" in m for m in messages)


def test_an_idempotent_tool_is_not_kept() -> None:
    """A tool declared idempotent=True is released at its timeout, not kept claimed."""
    gate = threading.Event()
    box = Toolbox()

    @box.tool(timeout=0.2, idempotent=True)
    def read(path: str) -> str:
        """A read that hangs once."""
        gate.wait(10)
        return "data"

    store = MemoryStore()
    ex = Executor(box, store=store, scope="s", **SETTINGS)
    try:
        [first] = ex.run(one_call_response("read", {"path": "a"}))
        assert first.status in ("timed_out", "failed")  # failed: a loaded host never began it
        assert ex.runaways() == [] and store.records() == []  # released, not kept
    finally:
        gate.set()


def test_a_runaway_still_running_at_exit_is_reported(tmp_path: Path) -> None:
    """At interpreter exit, a call still kept is logged with its key."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import logging, threading, sys
        sys.path.insert(0, "tests")
        from store_backends import one_call_response
        from toolwire import Executor, Toolbox
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        box = Toolbox()
        @box.tool(timeout=0.2)
        def hang() -> None:
            \"\"\"Never returns.\"\"\"
            threading.Event().wait()
        ex = Executor(box, scope="s", timeout=0.2, lease=0.3, cancel_grace=0.1, retention=0.7)
        [outcome] = ex.run(one_call_response("hang", {}))
        print("KEY", outcome.idempotency_key, flush=True)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    key = done.stdout.split("KEY ", 1)[1].split()[0]
    assert f"at interpreter exit, tool 'hang' call c1 (key {key}) is still running" in done.stderr
