"""Racing processes on one SQLite file: exactly one execution per key.

Eight processes, released together by a barrier, each run the real ``Executor`` over the
same 100 responses against one ``SQLiteStore`` file. Every tool execution appends its call
id to a shared file (``O_APPEND`` writes of one short line are atomic), so the file is the
ground truth of what ran: each of the 100 ids must appear exactly once, and every other
delivery must have been ``replayed`` or ``in_progress``.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from toolwire import Executor, Response, SQLiteStore, Toolbox, ToolCall, ToolContext

pytestmark = pytest.mark.slow

PROCESSES = 8
KEYS = 100


def _response(i: int) -> Response:
    args = {"account": f"acct-{i}", "amount": i}
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(
                id=f"call_{i}",
                name="charge",
                arguments=args,
                raw_arguments=json.dumps(args),
                index=0,
            )
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=f"resp_{i}",
        model=None,
    )


def _worker(db: str, ledger: str, barrier: Any, results: Any) -> None:
    """One racing process: run all 100 responses, report the outcome statuses."""
    tools = Toolbox()

    @tools.tool
    def charge(account: str, amount: int, ctx: ToolContext) -> dict[str, Any]:
        """Charge an account (appends to the ledger: the side effect under test)."""
        fd = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{ctx.call_id}\n".encode())
        finally:
            os.close(fd)
        return {"account": account, "charged": amount}

    store = SQLiteStore(db)
    executor = Executor(tools, store=store, scope="race")
    statuses: list[str] = []
    barrier.wait()
    for i in range(KEYS):
        [outcome] = executor.run(_response(i))
        statuses.append(outcome.status)
    store.close()
    results.put(statuses)


def test_eight_processes_execute_each_key_exactly_once(tmp_path: Path) -> None:
    """8 processes x 100 keys on one SQLite file: 100 executions, the rest replayed/in_progress."""
    db = str(tmp_path / "race.db")
    ledger = str(tmp_path / "ledger.txt")
    SQLiteStore(db).close()  # schema first, so the race is about claims, not DDL
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_worker, args=(db, ledger, barrier, results)) for _ in range(PROCESSES)
    ]
    started = time.monotonic()
    for p in procs:
        p.start()
    statuses: Counter[str] = Counter()
    for _ in range(PROCESSES):
        statuses.update(results.get(timeout=120))
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    elapsed = time.monotonic() - started
    executed = Counter(Path(ledger).read_text().split())
    assert len(executed) == KEYS
    assert set(executed.values()) == {1}, "a key was executed more than once"
    assert statuses["completed"] == KEYS
    assert statuses["completed"] + statuses["replayed"] + statuses["in_progress"] == (
        PROCESSES * KEYS
    ), statuses
    print(
        f"sqlite race: {PROCESSES} processes x {KEYS} keys, {PROCESSES * KEYS} claims, "
        f"{sum(executed.values())} executions, {dict(statuses)} in {elapsed:.1f}s"
    )
