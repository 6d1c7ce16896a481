"""A conversation as a DBOS workflow (toolwire.integrations.dbos) against the real engine:
agent processes on DBOS (SQLite, and PostgreSQL on the suite's throwaway server) killed
inside a tool and recovered by DBOS on launch, counting side effects and model requests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("dbos")

import toolwire
from servers import postgres_dsn
from toolwire.testing import Simulator

# each test runs DBOS workers as subprocesses: 5 to 9 s a test
pytestmark = pytest.mark.slow

__all__ = ["postgres_dsn"]

AGENT = Path(__file__).with_name("dbos_agent.py")
SRC = Path(toolwire.__file__).resolve().parents[1]


# DBOS 3.4's SQLite system database does not launch on Python 3.13 here (its own insert
# fails: NOT NULL constraint failed: application_versions.version_timestamp); PostgreSQL
# is tested on every Python
DBOS_ON_SQLITE = sys.version_info < (3, 13)
NO_DBOS_SQLITE = "DBOS 3.4's SQLite system database does not launch on Python 3.13"
needs_dbos_sqlite = pytest.mark.skipif(not DBOS_ON_SQLITE, reason=NO_DBOS_SQLITE)


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The DBOS system database URL: a SQLite file, or a new database on the server."""
    if request.param == "sqlite":
        if not DBOS_ON_SQLITE:
            pytest.skip(NO_DBOS_SQLITE)
        yield f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        return
    dsn = request.getfixturevalue("postgres_dsn")
    port = re.search(r"port=(\d+)", dsn)
    assert port is not None
    yield f"postgresql://postgres@127.0.0.1:{port.group(1)}/dbos_{uuid.uuid4().hex[:12]}"


def run_agent(
    url: str, sim: Simulator, tmp_path: Path, *, crash: str = "none", store: str = "dbos"
) -> tuple[list[str], list[dict[str, Any]]]:
    """Run the agent until it finishes, restarting it once when its tool kills it; the side
    effects' lines and the final history."""
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    effects, marker = tmp_path / "effects.txt", tmp_path / "crashed"
    argv = [sys.executable, str(AGENT), url, sim.base_url("openai-chat"),
            str(effects), "wf-1", crash, store, str(marker)]  # fmt: skip
    codes: list[int] = []
    while len(codes) < 3:
        run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
        codes.append(run.returncode)
        if run.returncode == 0:
            assert "done All done." in run.stdout, run.stderr[-3000:]
            history = json.loads(run.stdout.split("history ", 1)[1].splitlines()[0])
            break
        assert run.returncode == 9, run.stderr[-3000:]  # killed by its tool
    else:
        raise AssertionError(f"the agent never finished: {codes}")
    assert codes == ([9, 0] if crash in ("pay", "note") else [0])
    return effects.read_text().splitlines(), history


def two_turns(sim: Simulator, *, cut_first: bool = False) -> None:
    if cut_first:
        sim.add_response(tool_calls=[("pay", {"to": "Ann"}), ("note", {"text": "paid"})],
                         for_model="*/turn-0", faults=["cut:0.5"])  # fmt: skip
    sim.add_response(tool_calls=[("pay", {"to": "Ann"}), ("note", {"text": "paid"})],
                     for_model="*/turn-0")  # fmt: skip
    sim.add_response("All done.", for_model="*/turn-1")


def asked(sim: Simulator) -> Counter[str]:
    return Counter(str(r.body.get("model")) for r in sim.requests)


def ran(lines: list[str]) -> Counter[str]:
    return Counter(line.split()[1] for line in lines)


def tool_results(history: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in history if m["role"] == "tool"]


def test_a_worker_killed_in_a_tool_is_recovered_with_one_side_effect(
    database: str, tmp_path: Path
) -> None:
    """Killed inside a tool, recovered by DBOS on launch: the tool ran once, the recorded
    turn was not asked again, and the call cut short is told to the model as unknown."""
    with Simulator(seed=1) as sim:
        two_turns(sim)
        lines, history = run_agent(database, sim, tmp_path, crash="pay")
        assert asked(sim) == Counter({"wf-1/turn-0": 1, "wf-1/turn-1": 1})
    runs = ran(lines)
    pay, note = tool_results(history)
    assert runs["pay:Ann"] == 1 and "unknown" in pay
    # The two calls run side by side: ``note`` finished after the restart (once), or it
    # was in flight at the kill: then it is unknown too, and ran at most once
    if "unknown" in note:
        assert runs["note:paid"] <= 1
    else:
        assert note == "noted" and runs["note:paid"] == 1
    assert set(runs) <= {"pay:Ann", "note:paid"}
    assert history[-1] == {"role": "assistant", "content": "All done."}


@needs_dbos_sqlite
def test_a_cut_model_step_is_retried_into_one_recorded_turn(tmp_path: Path) -> None:
    """A stream cut half-way fails the model step; DBOS retries it, and the turn is
    recorded once: the tools ran once and the conversation has two answers."""
    with Simulator(seed=2) as sim:
        two_turns(sim, cut_first=True)
        lines, history = run_agent(f"sqlite:///{tmp_path / 'dbos.sqlite'}", sim, tmp_path)
        assert asked(sim) == Counter({"wf-1/turn-0": 2, "wf-1/turn-1": 1})
    assert ran(lines) == Counter({"pay:Ann": 1, "note:paid": 1})
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool", "assistant"]
    assert tool_results(history) == ["paid Ann", "noted"]


def test_a_tools_step_killed_after_a_side_effect_replays_it(database: str, tmp_path: Path) -> None:
    """A tools step killed after one call completed is retried on recovery: the completed
    call's stored outcome is replayed (not run again), the model is not asked again."""
    with Simulator(seed=3) as sim:
        two_turns(sim)
        lines, history = run_agent(database, sim, tmp_path, crash="note")
        assert asked(sim) == Counter({"wf-1/turn-0": 1, "wf-1/turn-1": 1})
    assert ran(lines) == Counter({"pay:Ann": 1})  # note was killed before its effect
    pay, note = tool_results(history)
    assert pay == "paid Ann" and "unknown" in note


def test_a_tools_step_failing_after_its_side_effects_is_retried_without_a_duplicate(
    database: str, tmp_path: Path
) -> None:
    """A tools step that raises after its tools ran is retried by DBOS in the same
    process: the stored outcomes are replayed, no tool runs twice, the model is not asked
    again and the results are the real ones."""
    with Simulator(seed=5) as sim:
        two_turns(sim)
        lines, history = run_agent(database, sim, tmp_path, crash="step")
        assert asked(sim) == Counter({"wf-1/turn-0": 1, "wf-1/turn-1": 1})
    assert (tmp_path / "crashed").read_text() == "failed"  # the first attempt did fail
    assert ran(lines) == Counter({"pay:Ann": 1, "note:paid": 1})
    assert tool_results(history) == ["paid Ann", "noted"]
    assert history[-1] == {"role": "assistant", "content": "All done."}


@needs_dbos_sqlite
def test_a_retried_tools_step_without_the_store_runs_the_tools_again(tmp_path: Path) -> None:
    """The control: the same failing step, each attempt on a new MemoryStore, runs both
    tools again on retry: the duplicate that the store on DBOS's database prevents."""
    with Simulator(seed=6) as sim:
        two_turns(sim)
        url = f"sqlite:///{tmp_path / 'dbos.sqlite'}"
        lines, history = run_agent(url, sim, tmp_path, crash="step", store="fresh")
        assert asked(sim) == Counter({"wf-1/turn-0": 1, "wf-1/turn-1": 1})
    assert ran(lines) == Counter({"pay:Ann": 2, "note:paid": 2})
    assert tool_results(history) == ["paid Ann", "noted"]


@needs_dbos_sqlite
def test_with_a_memory_store_the_killed_tool_runs_twice(tmp_path: Path) -> None:
    """The control: with a MemoryStore in the tools step, the retried step runs the killed
    call again (the duplicate the store on DBOS's database prevents)."""
    with Simulator(seed=4) as sim:
        two_turns(sim)
        lines, _history = run_agent(
            f"sqlite:///{tmp_path / 'dbos.sqlite'}", sim, tmp_path, crash="pay", store="memory"
        )
        assert asked(sim) == Counter({"wf-1/turn-0": 1, "wf-1/turn-1": 1})
    assert ran(lines) == Counter({"pay:Ann": 2, "note:paid": 1})
    keys = [line.split()[0] for line in lines if "pay:" in line]
    assert keys[0] == keys[1]  # the same call, under the same key: only the store tells


def test_run_conversation_outside_a_workflow_is_refused() -> None:
    """run_conversation outside a DBOS workflow raises UsageError and asks nothing."""
    from toolwire.integrations.dbos import run_conversation

    asked_for: list[object] = []
    with pytest.raises(toolwire.UsageError, match="inside a DBOS workflow"):
        run_conversation(asked_for.append, toolwire.Toolbox(), [])
    assert asked_for == []


def test_a_factory_without_a_stable_name_needs_a_workflow_name() -> None:
    """A lambda factory has no name recovery could find: conversation_workflow asks for one."""
    from toolwire.integrations.dbos import conversation_workflow

    with pytest.raises(toolwire.UsageError, match="name="):
        conversation_workflow(lambda messages: None, toolwire.Toolbox())
