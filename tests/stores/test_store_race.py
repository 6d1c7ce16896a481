"""Racing worker processes on PostgreSQL and Redis: exactly one acquisition per key.

Eight processes (``fork``, else ``spawn``), each opening its own store and connections
(they create the PostgreSQL table together), wait at one barrier and then claim the same
keys in the same order, so every key is contended by all of them at once; the winner of
each key finishes it. The figures checked and printed:

- claims: 8 workers × 1,000 keys = 8,000 claims, exactly 1,000 acquisitions, every key
  acquired by exactly one worker and ``completed`` with that worker's result;
- the real ``Executor``: 8 workers run the same 200-call response against a toolbox whose
  tool appends a row to a side-effect table (PostgreSQL) or list (Redis): exactly 200
  side effects, one per call, and a later run replays all 200 without executing.

Each scenario takes a few seconds on two cores (the time is printed with the figures).
"""

from __future__ import annotations

import json
import multiprocessing
import queue
import threading
import time
import uuid
from collections import Counter
from typing import Any

import psycopg
import pytest
import redis

import servers
from toolwire import Executor, Response, Toolbox, ToolCall
from toolwire.stores import Store
from toolwire.stores.postgres import PostgresStore
from toolwire.stores.redis import RedisStore

postgres_dsn = servers.postgres_dsn
redis_url = servers.redis_url

pytestmark = pytest.mark.slow

WORKERS = 8
KEYS = 1_000
CALLS = 200
LEASE = 300.0
RETENTION = 3600.0
WAIT = 120.0  # upper bound on any one wait for a worker; the runs take seconds


def _open_store(kind: str, target: str, namespace: str) -> Store:
    """A fresh synchronous store of ``kind`` on ``namespace`` (table or key prefix)."""
    if kind == "postgres":
        return PostgresStore(target, table=namespace)
    return RedisStore(target, prefix=f"{namespace}:")


# -------------------------------------------------------------- worker processes


def claim_worker(
    kind: str, target: str, namespace: str, worker: int, barrier: Any, results: Any
) -> None:
    """Claim every key once; finish the ones acquired; report them and the time taken."""
    try:
        store = _open_store(kind, target, namespace)
        try:
            barrier.wait(timeout=WAIT)
            start = time.perf_counter()
            owner = f"worker-{worker}"
            acquired: list[int] = []
            for i in range(KEYS):
                key = f"key-{i:05d}"
                claim = store.claim(
                    key,
                    args_hash="h",
                    idempotency_key=f"idem-{i}",
                    owner=owner,
                    lease=LEASE,
                    retention=RETENTION,
                    reclaim=False,
                )
                if claim.acquired:
                    result = json.dumps({"by": worker, "key": i})
                    fence = claim.record.fence
                    if not store.finish(
                        key, owner=owner, fence=fence, status="completed", result=result, error=None
                    ):
                        raise AssertionError(f"the winner of {key} could not finish it")
                    acquired.append(i)
            results.put(("ok", worker, acquired, time.perf_counter() - start))
        finally:
            store.close()
    except BaseException as exc:  # reported to the parent, which fails the test
        results.put(("error", worker, repr(exc), 0.0))


def _response(calls: int) -> Response:
    """One finished response with ``calls`` calls of the ``effect`` tool."""
    return Response(
        text="",
        reasoning="",
        tool_calls=[
            ToolCall(
                id=f"call_{i}",
                name="effect",
                arguments={"n": i},
                raw_arguments=json.dumps({"n": i}),
                index=i,
            )
            for i in range(calls)
        ],
        rejected=[],
        finish_reason="tool_calls",
        raw_finish_reason="tool_calls",
        usage=None,
        response_id="resp-race",
        model="race",
    )


def _effect_sink(kind: str, target: str, namespace: str) -> tuple[Any, Any]:
    """(append(worker, n), close()) writing side effects to a table or a Redis list."""
    if kind == "postgres":
        conn = psycopg.connect(target, autocommit=True)
        lock = threading.Lock()

        def append_pg(worker: int, n: int) -> None:
            with lock:
                conn.execute(
                    f"INSERT INTO {namespace}_effects (n, worker) VALUES (%s, %s)", (n, worker)
                )

        return append_pg, conn.close
    client = redis.Redis.from_url(target)

    def append_redis(worker: int, n: int) -> None:
        client.rpush(f"{namespace}:effects", json.dumps([n, worker]))

    return append_redis, client.close


def executor_worker(
    kind: str, target: str, namespace: str, worker: int, barrier: Any, results: Any
) -> None:
    """Run the shared response through a real Executor; report the outcome statuses."""
    try:
        store = _open_store(kind, target, namespace)
        append, close_sink = _effect_sink(kind, target, namespace)
        try:
            tools = Toolbox()

            @tools.tool
            def effect(n: int) -> dict[str, int]:
                """Append one row to the side-effect log."""
                append(worker, n)
                return {"n": n, "by": worker}

            executor = Executor(tools, store=store, scope="race", lease=LEASE, timeout=60.0)
            response = _response(CALLS)
            barrier.wait(timeout=WAIT)
            start = time.perf_counter()
            outcomes = executor.run(response)
            statuses = [outcome.status for outcome in outcomes]
            results.put(("ok", worker, statuses, time.perf_counter() - start))
        finally:
            close_sink()
            store.close()
    except BaseException as exc:  # reported to the parent, which fails the test
        results.put(("error", worker, repr(exc), 0.0))


def _race(target_fn: Any, kind: str, target: str, namespace: str) -> tuple[dict[int, Any], float]:
    """Run ``target_fn`` in WORKERS spawned processes behind a barrier; their reports."""
    # fork where available: the workers start in milliseconds with everything imported,
    # where a fresh interpreter each (spawn, forkserver) costs seconds on two busy cores.
    # The children open their own connections and leave inherited ones alone (they end
    # with os._exit, so no finaliser touches the parent's sockets).
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=target_fn, args=(kind, target, namespace, w, barrier, results))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    reports: dict[int, Any] = {}
    slowest = 0.0
    try:
        for _ in processes:
            status, worker, payload, elapsed = results.get(timeout=WAIT)
            assert status == "ok", f"worker {worker} failed: {payload}"
            reports[worker] = payload
            slowest = max(slowest, elapsed)
    except queue.Empty:
        pytest.fail("a racing worker did not report in time")
    finally:
        for process in processes:
            process.join(timeout=WAIT)
            if process.is_alive():
                process.kill()
                process.join()
    return reports, slowest


# ----------------------------------------------------------------------------- tests


@pytest.mark.server
@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_racing_processes_acquire_each_key_exactly_once(
    kind: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    """8 processes × 1,000 contended keys: 8,000 claims, exactly one acquisition per key."""
    target = request.getfixturevalue("postgres_dsn" if kind == "postgres" else "redis_url")
    namespace = f"race_{uuid.uuid4().hex[:12]}"
    reports, seconds = _race(claim_worker, kind, target, namespace)

    winners = Counter(key for acquired in reports.values() for key in acquired)
    assert sum(winners.values()) == KEYS, "acquisitions"
    assert set(winners) == set(range(KEYS)) and max(winners.values()) == 1
    owner_of = {key: worker for worker, acquired in reports.items() for key in acquired}
    store = _open_store(kind, target, namespace)
    try:
        for i in range(KEYS):
            record = store.get(f"key-{i:05d}")
            assert record is not None and record.status == "completed"
            assert record.owner == f"worker-{owner_of[i]}"
            assert json.loads(record.result or "") == {"by": owner_of[i], "key": i}
    finally:
        store.close()
    figures = (
        f"{kind}: {WORKERS} processes x {KEYS} keys: {WORKERS * KEYS} claims, "
        f"{sum(winners.values())} acquisitions, 0 duplicates, all completed, "
        f"{seconds:.1f} s (slowest worker)"
    )
    record_property("race", figures)
    print(figures)


@pytest.mark.server
@pytest.mark.parametrize("kind", ["postgres", "redis"])
def test_racing_executors_run_each_call_exactly_once(
    kind: str, request: pytest.FixtureRequest, record_property: Any
) -> None:
    """8 processes run one 200-call response with the real Executor: 200 side effects."""
    target = request.getfixturevalue("postgres_dsn" if kind == "postgres" else "redis_url")
    namespace = f"race_{uuid.uuid4().hex[:12]}"
    if kind == "postgres":
        with psycopg.connect(target, autocommit=True) as conn:
            conn.execute(f"CREATE TABLE {namespace}_effects (n int NOT NULL, worker int NOT NULL)")
    reports, seconds = _race(executor_worker, kind, target, namespace)

    effects = _read_effects(kind, target, namespace)
    per_call = Counter(n for n, _worker in effects)
    assert len(effects) == CALLS and set(per_call) == set(range(CALLS))
    assert max(per_call.values()) == 1
    statuses = Counter(status for report in reports.values() for status in report)
    assert statuses["completed"] == CALLS
    assert set(statuses) <= {"completed", "replayed", "in_progress"}
    assert sum(statuses.values()) == WORKERS * CALLS

    # A later run of the same response replays every stored result and runs nothing.
    store = _open_store(kind, target, namespace)
    try:
        tools = Toolbox()

        @tools.tool
        def effect(n: int) -> dict[str, int]:
            """Must not run: every call is already completed."""
            raise AssertionError("a completed call ran again")

        outcomes = Executor(tools, store=store, scope="race", lease=LEASE).run(_response(CALLS))
        assert [o.status for o in outcomes] == ["replayed"] * CALLS
        assert [o.value["n"] for o in outcomes] == list(range(CALLS))
    finally:
        store.close()
    assert len(_read_effects(kind, target, namespace)) == CALLS
    figures = (
        f"{kind} executor: {WORKERS} processes x {CALLS} calls: {CALLS} side effects "
        f"(0 duplicates), outcomes {dict(sorted(statuses.items()))}, {seconds:.1f} s"
    )
    record_property("race-executor", figures)
    print(figures)


def _read_effects(kind: str, target: str, namespace: str) -> list[tuple[int, int]]:
    """Every side effect the tool wrote, as (n, worker)."""
    if kind == "postgres":
        with psycopg.connect(target, autocommit=True) as conn:
            rows = conn.execute(f"SELECT n, worker FROM {namespace}_effects").fetchall()
        return [(int(n), int(w)) for n, w in rows]
    client = redis.Redis.from_url(target)
    try:
        items = client.lrange(f"{namespace}:effects", 0, -1)
    finally:
        client.close()
    return [tuple(json.loads(item)) for item in items]  # type: ignore[misc]
