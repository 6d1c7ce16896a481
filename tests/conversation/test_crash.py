"""The promise, by killing the process: an agent on SQLite is killed with SIGKILL at
random (seeded) instants and restarted until its conversation is done, over as many
conversations as the kills take. Every tool body ran at most once per call of a recorded
turn, no recorded turn was asked of the model again, and the final messages answer every
call. ``TOOLWIRE_CRASH_KILLS`` sets the number of kills (20 by default)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import toolwire
from toolwire.testing import Simulator

AGENT = Path(__file__).with_name("crash_agent.py")
SRC = Path(toolwire.__file__).resolve().parents[1]
KILLS = int(os.environ.get("TOOLWIRE_CRASH_KILLS", "20"))
WINDOW = 0.3  # seconds after start-up within which a kill lands (a whole run takes about this)
TURNS = 3


def start(db: Path, sim: Simulator, effects: Path, cid: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.Popen(
        [sys.executable, str(AGENT), str(db), sim.base_url("openai-chat"), str(effects), cid],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def run_until_done(
    db: Path, sim: Simulator, effects: Path, cid: str, rng: random.Random, budget: int
) -> int:
    """Start the agent, kill it at a random instant while kills are left, restart, until
    it finishes on its own; the number of kills."""
    kills = 0
    while True:
        agent = start(db, sim, effects, cid)
        assert agent.stdout is not None and agent.stderr is not None
        ready = agent.stdout.readline()
        try:
            agent.wait(timeout=rng.uniform(0.0, WINDOW) if kills < budget else 60)
        except subprocess.TimeoutExpired:
            agent.send_signal(signal.SIGKILL)
            agent.wait()
            agent.stdout.close()
            agent.stderr.close()
            kills += 1
            continue
        out, err = agent.stdout.read(), agent.stderr.read()  # communicate() would miss a line
        agent.stdout.close()
        agent.stderr.close()
        assert ready == "ready\n" and agent.returncode == 0, err
        assert "done" in out
        return kills


def check(db: Path, effects: Path, cid: str, requests: list[Any]) -> Counter[str]:
    """What the promise says, for one conversation; what happened, counted."""
    conv = toolwire.Conversation(cid, store=toolwire.SQLiteStore(str(db)), tools=_tools())
    assert conv.done and conv.turns == TURNS
    messages = conv.messages
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or []}
    results = [m for m in messages if m["role"] == "tool"]
    assert sorted(calls) == sorted(m["tool_call_id"] for m in results)  # every call answered
    assert len(calls) == 3
    assert messages[-1] == {"role": "assistant", "content": "All done."}
    # a call that may not have finished is told to the model as in doubt, never as done
    for result in results:
        assert result["content"].startswith(("paid ", "noted")) or "unknown" in result["content"]

    # every tool body ran at most once per call, and only for calls of recorded turns
    lines = effects.read_text().splitlines() if effects.exists() else []
    ran = Counter(line.split()[0] for line in lines)
    assert all(count == 1 for count in ran.values()), ran
    assert len(ran) <= len(calls)

    # a recorded turn was never asked again: its recording answers the turn's last request
    store = toolwire.SQLiteStore(str(db))
    for turn in range(TURNS):
        record = store.get(f"conv/{cid}/turn/{turn}/response")
        assert record is not None and record.result is not None
        with toolwire.stream(toolwire.Recording.from_json(record.result)) as replay:
            for _ in replay:
                pass
        served = [r for r in requests if r.body.get("model") == f"{cid}/turn-{turn}"]
        assert served and served[-1].response is not None
        assert served[-1].response.response_id == replay.response.response_id, (turn, served)
    store.close()
    unknown = sum("unknown" in result["content"] for result in results)
    asked = sum(1 for r in requests if r.body.get("model", "").startswith(f"{cid}/"))
    return Counter(unknown=unknown, tool_runs=len(lines), requests=asked, conversations=1)


def test_killing_the_agent_at_random_instants_runs_no_tool_twice(tmp_path: Path) -> None:
    """SIGKILL at random instants, restart until done: at most one run per call, a
    recorded turn never asked again, consistent final messages."""
    rng = random.Random(20)
    kills = 0
    episodes: list[tuple[Path, Path, str]] = []
    with Simulator(seed=5, loop=True) as sim:
        sim.add_response(tool_calls=[("pay", {"to": "Ann"}), ("pay", {"to": "Bob"})],
                         for_model="*/turn-0")  # fmt: skip
        sim.add_response(tool_calls=[("note", {"text": "paid both"})], for_model="*/turn-1")
        sim.add_response("All done.", for_model="*/turn-2")
        while kills < KILLS:
            n = len(episodes)
            episode = (tmp_path / f"agent-{n}.db", tmp_path / f"effects-{n}.txt", f"crash-{n}")
            db, effects, cid = episode
            kills += run_until_done(db, sim, effects, cid, rng, KILLS - kills)
            episodes.append(episode)
        requests = list(sim.requests)
    seen: Counter[str] = Counter(kills=kills)
    for db, effects, cid in episodes:
        seen += check(db, effects, cid, requests)
    print(dict(seen))  # shown with -s
    ids = [r.response.response_id for r in requests if r.response is not None]
    assert len(set(ids)) == len(ids)  # every request got a new generation: new ids
    assert kills == KILLS


def _tools() -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def pay(to: str) -> str:
        """Pay someone."""
        raise AssertionError("never run by the checks")

    @tools.tool
    def note(text: str) -> str:
        """Keep a note."""
        raise AssertionError("never run by the checks")

    return tools
