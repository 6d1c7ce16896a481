"""Helpers shared by the executor tests: responses, counters, a store clock, an async store.

Import from a test module with ``from executor_support import ...`` (``tests/`` is on
``sys.path``, as for ``servers``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from toolwire import MemoryStore, Response, ToolCall
from toolwire.stores import Claim, FinalStatus, Record


def response(
    *calls: tuple[str, str, Any],
    response_id: str | None = "resp_1",
    created: str | None = None,
    synthetic: bool = False,
    model: str | None = None,
) -> Response:
    """A finished response holding ``(call_id, tool_name, arguments)`` calls."""
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(
                id=cid,
                name=name,
                arguments=args,
                raw_arguments=json.dumps(args),
                index=i,
                synthetic_id=synthetic,
            )
            for i, (cid, name, args) in enumerate(calls)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=response_id,
        model=model,
        created=created,
    )


class Counter:
    """Thread-safe execution counter per name."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def hit(self, name: str) -> None:
        """Count one execution of ``name``."""
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + 1

    def __getitem__(self, name: str) -> int:
        return self.counts.get(name, 0)


@pytest.fixture
def runs() -> Counter:
    """Counts tool executions by name (register it with ``runs = executor_support.runs``)."""
    return Counter()


class Clock:
    """A store clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class AsyncMemoryStore:
    """An ``AsyncStore`` over ``MemoryStore``, recording its calls (the async Protocol path).

    Every operation yields to the event loop once (``await asyncio.sleep(0)``) before it
    takes effect, so a cancellation can land while it is in flight.
    """

    def __init__(self, inner: MemoryStore | None = None) -> None:
        self.inner = MemoryStore() if inner is None else inner
        self.calls: list[str] = []

    async def claim(self, key: str, **kw: Any) -> Claim:
        self.calls.append("claim")
        await asyncio.sleep(0)
        return self.inner.claim(key, **kw)

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        self.calls.append("heartbeat")
        return self.inner.heartbeat(key, owner=owner, fence=fence, lease=lease)

    async def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: FinalStatus,
        result: str | None,
        error: str | None,
    ) -> bool:
        self.calls.append("finish")
        await asyncio.sleep(0)
        return self.inner.finish(
            key, owner=owner, fence=fence, status=status, result=result, error=error
        )

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        self.calls.append("release")
        return self.inner.release(key, owner=owner, fence=fence)

    async def get(self, key: str) -> Record | None:
        return self.inner.get(key)

    async def purge(self) -> int:
        return self.inner.purge()

    async def aclose(self) -> None:
        self.inner.close()


class _Summary:
    """A pytest plugin printing one section of figures at the end of the run."""

    def __init__(self, title: str, lines: Callable[[], list[str]]) -> None:
        self.title = title
        self.lines = lines

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        lines = self.lines()
        if not lines:
            return
        terminalreporter.section(self.title)
        for line in lines:
            terminalreporter.write_line(line)


def print_at_the_end(config: Any, title: str, lines: Callable[[], list[str]]) -> None:
    """Register (once per title) a terminal-summary section with the figures ``lines()``."""
    manager = config.pluginmanager
    name = f"toolwire-summary-{title}"
    if not manager.has_plugin(name):
        manager.register(_Summary(title, lines), name)
