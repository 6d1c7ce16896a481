"""Executor overhead: what ``Executor.run`` costs on top of the store work it must do.

Every figure is measured in this run and stated as a ratio to a floor measured in the same
run, in many short interleaved passes (floor, executor, floor, executor, ...) so that the
load of a shared machine falls on both. Each line prints its median pass and its best pass
(its quietest moment); the targets are judged on the ratio of the medians (fsync and
network latencies vary too much for a best-of to be fair). Garbage collection stays on:
the objects a run allocates are part of its cost.

* **One call at a time** (a response holding one call to a trivial sync tool, a fresh
  call id every time, so every run claims and finishes a new record): ``Executor.run``
  and ``AsyncExecutor.run`` per call, against the floor of the same store's own
  ``claim`` + ``finish`` on fresh keys. Targets: ``MemoryStore`` ≤ 10× the floor;
  ``SQLiteStore`` and ``PostgresStore`` ≤ 1.5×. A raw-driver line (``sqlite3`` /
  ``psycopg`` statements doing the same two round trips, without toolwire's checks)
  is printed for reference. The executor's figure includes everything a call costs:
  validation, canonical hashing, keys, invoking the tool and serialising its value.
* **Concurrency defaults**: one response of 100 async tools that each sleep 50 ms, and
  one of 100 sync tools that each sleep 50 ms, with the executors' default settings; the
  wall time against the 50 ms that a single tool takes.

PostgreSQL runs on a throwaway server started the way the test suite starts it
(``tests/servers.py``), or on ``TOOLWIRE_BENCH_POSTGRES_DSN`` when set; without one the
section is skipped with the reason. ``python -m benchmarks executor [--quick]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from toolwire import AsyncExecutor, Executor, MemoryStore, Response, SQLiteStore, Toolbox, ToolCall

TARGETS = {"MemoryStore": 10.0, "SQLiteStore": 1.5, "PostgresStore": 1.5}
_ids = itertools.count()


def _tools() -> Toolbox:
    box = Toolbox()

    @box.tool
    def add(a: int, b: int) -> int:
        """Adds two numbers (a tool whose own cost is negligible)."""
        return a + b

    @box.tool
    async def add_async(a: int, b: int) -> int:
        """Adds two numbers, as a coroutine."""
        return a + b

    @box.tool
    async def wait_async(ms: int) -> int:
        """Sleeps ``ms`` milliseconds without blocking the event loop."""
        await asyncio.sleep(ms / 1000)
        return ms

    @box.tool
    def wait_sync(ms: int) -> int:
        """Sleeps ``ms`` milliseconds in its thread."""
        time.sleep(ms / 1000)
        return ms

    return box


def _response(calls: list[tuple[str, dict[str, Any]]]) -> Response:
    """A finished response with fresh call ids (never a replay)."""
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(id=f"call_{next(_ids)}", name=name, arguments=args, raw_arguments="", index=i)
            for i, (name, args) in enumerate(calls)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id=f"resp_{next(_ids)}",
        model="bench",
    )


# ----------------------------------------------------------------------- one at a time

# A line is a maker: it prepares one pass of fresh work (untimed) and returns a function
# that performs it and returns the seconds it took.
Line = Callable[[], Callable[[], float]]


def _timed(work: Callable[[], None]) -> Callable[[], float]:
    def run() -> float:
        start = time.perf_counter()
        work()
        return time.perf_counter() - start

    return run


def _claim_finish(store: Any, base: str, i: int) -> tuple[str, Any]:
    key = f"{base}-{i}"
    got = store.claim(
        key, args_hash="h", idempotency_key=key, owner="bench", lease=30.0,
        retention=3600.0, reclaim=False,
    )  # fmt: skip
    return key, got


def floor_line(store: Any, n: int) -> Line:
    """``n`` claims and finishes of fresh keys through the store's own methods."""

    def make() -> Callable[[], float]:
        base = f"floor-{next(_ids)}"

        def work() -> None:
            for i in range(n):
                key, got = _claim_finish(store, base, i)
                store.finish(
                    key, owner="bench", fence=got.record.fence, status="completed",
                    result="3", error=None,
                )  # fmt: skip

        return _timed(work)

    return make


def sync_line(executor: Executor, n: int) -> Line:
    """``n`` runs of one fresh call each."""

    def make() -> Callable[[], float]:
        responses = [_response([("add", {"a": 1, "b": 2})]) for _ in range(n)]

        def work() -> None:
            for response in responses:
                [outcome] = executor.run(response)
                assert outcome.status == "completed", outcome

        return _timed(work)

    return make


def async_line(make_executor: Callable[[], Any], tool: str, n: int) -> Line:
    """``n`` runs of one fresh call each, timed inside the event loop (the loop and the
    store's connections are set up before the clock starts)."""

    def make() -> Callable[[], float]:
        responses = [_response([(tool, {"a": 1, "b": 2})]) for _ in range(n)]

        async def main() -> float:
            executor = make_executor()
            opening = getattr(executor.store, "open", None)
            if opening is not None:
                await opening()
            start = time.perf_counter()
            for response in responses:
                [outcome] = await executor.run(response)
                assert outcome.status == "completed", outcome
            elapsed = time.perf_counter() - start
            closing = getattr(executor.store, "aclose", None)
            if closing is not None:
                await closing()
            return elapsed

        return lambda: asyncio.run(main())

    return make


def async_floor_line(make_store: Callable[[], Any], n: int) -> Line:
    """``n`` claims and finishes through an ``AsyncStore``, timed inside the loop."""

    def make() -> Callable[[], float]:
        base = f"afloor-{next(_ids)}"

        async def main() -> float:
            store = make_store()
            await store.open()
            start = time.perf_counter()
            for i in range(n):
                key = f"{base}-{i}"
                got = await store.claim(
                    key, args_hash="h", idempotency_key=key, owner="bench", lease=30.0,
                    retention=3600.0, reclaim=False,
                )  # fmt: skip
                await store.finish(
                    key, owner="bench", fence=got.record.fence, status="completed",
                    result="3", error=None,
                )  # fmt: skip
            elapsed = time.perf_counter() - start
            await store.aclose()
            return elapsed

        return lambda: asyncio.run(main())

    return make


def _interleaved(lines: dict[str, Line], n: int, passes: int) -> dict[str, list[float]]:
    """Seconds per call of each line in each of ``passes`` interleaved passes of ``n``."""
    seconds: dict[str, list[float]] = {label: [] for label in lines}
    for _ in range(passes):
        for label, make in lines.items():
            run = make()
            gc.collect()
            seconds[label].append(run() / n)
    return seconds


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs"


def _report(title: str, store_name: str, passes: dict[str, list[float]], floor: str) -> bool:
    """Print a line per measurement; the target is judged on the ratio of the medians."""
    median = {label: statistics.median(values) for label, values in passes.items()}
    best = {label: min(values) for label, values in passes.items()}
    print(f"\n### {title}\n")
    print("| line | median per call | ratio (medians) | best pass | ratio (best) |")
    print("|---|---|---|---|---|")
    for label in passes:
        print(
            f"| {label} | {_us(median[label])} | {median[label] / median[floor]:.2f}× "
            f"| {_us(best[label])} | {best[label] / best[floor]:.2f}× |"
        )
    target = TARGETS[store_name]
    ratio = median["Executor.run"] / median[floor]
    ok = ratio <= target
    verdict = "met" if ok else "NOT met"
    print(
        f"\ntarget {store_name}: Executor.run ≤ {target:g}× the floor (medians of "
        f"{len(passes[floor])} passes): {ratio:.2f}× {verdict}"
    )
    return ok


def bench_memory(n: int, passes: int) -> bool:
    """``MemoryStore``, one call at a time, sync and async executors."""
    box = _tools()
    store = MemoryStore()
    sync_ex = Executor(box, store=store, scope="bench")
    floor = "MemoryStore claim + finish (floor)"
    best = _interleaved(
        {
            floor: floor_line(store, n),
            "Executor.run": sync_line(sync_ex, n),
            "AsyncExecutor.run, async tool": async_line(
                lambda: AsyncExecutor(box, store=store, scope="bench"), "add_async", n
            ),
            "AsyncExecutor.run, sync tool": async_line(
                lambda: AsyncExecutor(box, store=store, scope="bench"), "add", n
            ),
        },
        n,
        passes,
    )
    return _report("MemoryStore, one call at a time", "MemoryStore", best, floor)


_RAW_SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, args_hash TEXT, status TEXT, "
    "owner TEXT, fence INTEGER, result TEXT, expires_at REAL)"
)


def raw_sqlite_line(path: Path, n: int) -> Line:
    """The same two round trips with ``sqlite3`` alone (WAL, synchronous=FULL)."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    db.execute(_RAW_SQLITE_SCHEMA)

    def make() -> Callable[[], float]:
        base = f"raw-{next(_ids)}"

        def work() -> None:
            for i in range(n):
                key = f"{base}-{i}"
                db.execute("BEGIN IMMEDIATE")
                db.execute("SELECT status FROM calls WHERE key = ?", (key,)).fetchone()
                db.execute(
                    "INSERT INTO calls VALUES (?, 'h', 'in_progress', 'o', 1, NULL, ?)",
                    (key, time.time() + 3600),
                )
                db.execute("COMMIT")
                db.execute("BEGIN IMMEDIATE")
                db.execute(
                    "UPDATE calls SET status = 'completed', result = '3' "
                    "WHERE key = ? AND owner = 'o' AND fence = 1",
                    (key,),
                )
                db.execute("COMMIT")

        return _timed(work)

    return make


def bench_sqlite(n: int, passes: int) -> bool:
    """``SQLiteStore`` (a file, default durability), one call at a time."""
    box = _tools()
    floor = "SQLiteStore claim + finish (floor)"
    with tempfile.TemporaryDirectory(prefix="toolwire-bench-") as tmp:
        store = SQLiteStore(Path(tmp) / "calls.db")
        best = _interleaved(
            {
                floor: floor_line(store, n),
                "Executor.run": sync_line(Executor(box, store=store, scope="bench"), n),
                "AsyncExecutor.run, async tool": async_line(
                    lambda: AsyncExecutor(box, store=store, scope="bench"), "add_async", n
                ),
                "raw sqlite3, same round trips (reference)": raw_sqlite_line(
                    Path(tmp) / "raw.db", n
                ),
            },
            n,
            passes,
        )
        store.close()
    return _report(
        "SQLiteStore (file, synchronous=FULL), one call at a time", "SQLiteStore", best, floor
    )


@contextlib.contextmanager
def _postgres() -> Iterator[str | None]:
    """A DSN: ``TOOLWIRE_BENCH_POSTGRES_DSN``, or a throwaway server as the tests start one."""
    dsn = os.environ.get("TOOLWIRE_BENCH_POSTGRES_DSN")
    if dsn:
        yield dsn
        return
    tests = Path(__file__).resolve().parents[1] / "tests"
    sys.path.insert(0, str(tests))
    try:
        import servers  # the suite's throwaway-server helper, reused as it is
    except ImportError as exc:
        print(f"\n(PostgreSQL section skipped: {exc})")
        yield None
        return
    finally:
        sys.path.remove(str(tests))
    server = servers.postgres_dsn.__wrapped__()
    try:
        dsn = next(server)
    except BaseException as exc:  # pytest's skip is a BaseException
        print(f"\n(PostgreSQL section skipped: {exc})")
        yield None
        return
    try:
        yield dsn
    finally:
        server.close()


def raw_postgres_line(dsn: str, n: int) -> Line:
    """The same two round trips with psycopg alone (one connection, autocommit)."""
    import psycopg

    conn = psycopg.connect(dsn, autocommit=True)
    raw = f"bench_raw_{uuid.uuid4().hex[:8]}"  # this run's own (see bench_postgres)
    conn.execute(
        f"CREATE TABLE {raw} (key text PRIMARY KEY, status text, owner text,"
        " fence bigint, result bytea)"
    )

    def make() -> Callable[[], float]:
        base = f"raw-{next(_ids)}"

        def work() -> None:
            for i in range(n):
                key = f"{base}-{i}"
                conn.execute(
                    f"INSERT INTO {raw} VALUES (%s, 'in_progress', 'o', 1, NULL)"
                    " ON CONFLICT (key) DO NOTHING RETURNING fence",
                    (key,),
                ).fetchone()
                conn.execute(
                    f"UPDATE {raw} SET status = 'completed', result = %s"
                    " WHERE key = %s AND owner = 'o' AND fence = 1",
                    (b"3", key),
                )

        return _timed(work)

    return make


def bench_postgres(n: int, passes: int) -> bool:
    """``PostgresStore`` and ``AsyncPostgresStore``, one call at a time."""
    try:
        from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore
    except ImportError as exc:
        print(f"\n(PostgreSQL section skipped: {exc})")
        return True
    with _postgres() as dsn:
        if dsn is None:
            return True
        box = _tools()
        # A table of this run's own: call ids restart at 0 in every process, so a server
        # given by TOOLWIRE_BENCH_POSTGRES_DSN would replay an earlier run's calls.
        table = f"bench_{uuid.uuid4().hex[:8]}"
        store = PostgresStore(dsn, table=table)
        floor = "PostgresStore claim + finish (floor)"
        best = _interleaved(
            {
                floor: floor_line(store, n),
                "Executor.run": sync_line(Executor(box, store=store, scope="bench"), n),
                "raw psycopg, same round trips (reference)": raw_postgres_line(dsn, n),
                "AsyncPostgresStore claim + finish": async_floor_line(
                    lambda: AsyncPostgresStore(dsn, table=table), n
                ),
                "AsyncExecutor.run, async tool (AsyncPostgresStore)": async_line(
                    lambda: AsyncExecutor(
                        box, store=AsyncPostgresStore(dsn, table=table), scope="bench"
                    ),
                    "add_async",
                    n,
                ),
            },
            n,
            passes,
        )
        store.close()
    return _report(
        "PostgresStore (local server, fsync off), one call at a time",
        "PostgresStore",
        best,
        floor,
    )


def bench_concurrency() -> None:
    """100 tools of 50 ms in one response, with the executors' default settings."""
    box = _tools()
    print("\n### 100 calls of a 50 ms tool in one response, default settings\n")
    print("| executor and tool | wall time | ratio to one tool (50 ms) |")
    print("|---|---|---|")

    async def run_async(name: str) -> float:
        executor = AsyncExecutor(box, scope="bench")
        response = _response([(name, {"ms": 50})] * 100)
        start = time.perf_counter()
        outcomes = await executor.run(response)
        assert all(o.status == "completed" for o in outcomes)
        return time.perf_counter() - start

    def run_sync(name: str) -> float:
        executor = Executor(box, scope="bench")
        response = _response([(name, {"ms": 50})] * 100)
        start = time.perf_counter()
        outcomes = executor.run(response)
        assert all(o.status == "completed" for o in outcomes)
        return time.perf_counter() - start

    lines = [
        ("AsyncExecutor, async tool", lambda: asyncio.run(run_async("wait_async"))),
        ("AsyncExecutor, sync tool", lambda: asyncio.run(run_async("wait_sync"))),
        ("Executor, async tool", lambda: run_sync("wait_async")),
        ("Executor, sync tool", lambda: run_sync("wait_sync")),
    ]
    for label, measure in lines:
        seconds = min(measure() for _ in range(2))
        print(f"| {label} | {seconds * 1000:,.0f} ms | {seconds / 0.05:.1f}× |")


def main() -> None:
    """Measure every line in this run and print the tables and the target checks."""
    quick = "--quick" in sys.argv[1:] or os.environ.get("TOOLWIRE_BENCH_QUICK") == "1"
    # Many short passes: on a shared machine the best pass of each line is the one that
    # ran in a quiet moment, which is what a ratio of two lines should compare.
    results = [
        bench_memory(200, 10 if quick else 40),
        bench_sqlite(50, 5 if quick else 15),
        bench_postgres(100, 5 if quick else 15),
    ]
    bench_concurrency()
    print(f"\nexecutor targets: {'all met' if all(results) else 'NOT all met'}")


if __name__ == "__main__":
    main()
