"""Approval before execution in a durable conversation, across processes: one process runs
the turn and exits with a call pending, another decides it and exits, a third continues;
on SQLite, PostgreSQL and Redis (real servers), and in-process for the rest."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolwire
from servers import postgres_dsn, redis_url

__all__ = ["postgres_dsn", "redis_url"]  # fixtures used here

AGENT = Path(__file__).with_name("approval_agent.py")
SRC = Path(__file__).resolve().parents[2] / "src"
sys.path.insert(0, str(AGENT.parent))
import approval_agent  # noqa: E402


class Place:
    """A store every process opens: kind, target and namespace, and an effects file."""

    def __init__(self, kind: str, target: str, effects: Path) -> None:
        self.kind, self.target = kind, target
        self.namespace = f"appr_{uuid.uuid4().hex[:12]}"
        self.effects = effects

    def process(self, *args: str) -> tuple[int, dict[str, Any]]:
        """Run the agent in a new process; its exit status and report."""
        env = {**os.environ, "PYTHONPATH": f"{SRC}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
        argv = [self.kind, self.target, self.namespace, str(self.effects), *args]
        done = subprocess.run(
            [sys.executable, str(AGENT), *argv],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode in (0, 3), done.stderr
        return done.returncode, json.loads(done.stdout.splitlines()[-1])

    def store(self) -> Any:
        return approval_agent.open_store(self.kind, self.target, self.namespace)

    def ran(self) -> list[str]:
        return self.effects.read_text().splitlines() if self.effects.exists() else []


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    """Each persistent backend, on a fresh file, table or key prefix."""
    if request.param == "sqlite":
        yield Place("sqlite", str(tmp_path / "agent.db"), tmp_path / "effects.txt")
    else:
        fixture = "postgres_dsn" if request.param == "postgres" else "redis_url"
        yield Place(request.param, request.getfixturevalue(fixture), tmp_path / "effects.txt")


def done_model(asked: list[list[dict[str, Any]]]) -> Any:
    """A model that answers the next request with a final text, recording what it was sent."""

    def factory(messages: list[dict[str, Any]]) -> list[Any]:
        asked.append(messages)
        text = approval_agent.chunk({"content": "Done."})
        return [{**text, "id": "gen-2"}, {**approval_agent.chunk({}, "stop"), "id": "gen-2"}]

    return factory


def tool_texts(messages: list[dict[str, Any]]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}


def test_another_process_approves_and_the_next_turn_runs_it_once(place: Place) -> None:
    """Process 1 leaves the transfer pending (the balance ran, turn not done); process 2
    approves it and exits; process 3's run_turn runs it once, asks the model on, and ends."""
    _status, first = place.process("turn")
    assert first["statuses"] == ["awaiting_approval", "completed"] and first["done"] is False
    [pending] = first["pending"]
    assert (pending["name"], pending["arguments"], pending["call_id"]) == (
        "transfer",
        {"amount": 5, "to": "ann"},
        "call_0",
    )
    assert place.ran() == ["balance"]
    assert place.process("approve", pending["key"]) == (0, {"pending": []})
    store = place.store()
    try:
        conv = toolwire.Conversation(
            "chat-approval", store=store, tools=approval_agent.tools(str(place.effects))
        )
        assert conv.pending == [] and conv.turns == 0
        asked: list[list[dict[str, Any]]] = []
        turn = conv.run_turn(done_model(asked))
        assert turn.done and conv.done and conv.turns == 2
        assert len(asked) == 1  # the recorded turn was not asked again; the next one was
        assert tool_texts(asked[0]) == {"call_0": "sent 5 to ann", "call_1": "100"}
        assert conv.messages[-1] == {"role": "assistant", "content": "Done."}
    finally:
        store.close()
    assert place.ran() == ["balance", "transfer 5 ann"]


def test_another_process_denies_and_the_model_reads_the_reason(place: Place) -> None:
    """Process 2 denies with a reason; the next run_turn answers the call with it (the
    tool never runs) and asks the model on."""
    _status, first = place.process("turn")
    key = first["pending"][0]["key"]
    assert place.process("deny", key, "limit reached today")[0] == 0
    store = place.store()
    try:
        conv = toolwire.Conversation(
            "chat-approval", store=store, tools=approval_agent.tools(str(place.effects))
        )
        asked: list[list[dict[str, Any]]] = []
        assert conv.run_turn(done_model(asked)).done
        answer = tool_texts(asked[0])["call_0"]
        assert "denied" in answer and "limit reached today" in answer
    finally:
        store.close()
    assert place.ran() == ["balance"]


def test_a_bad_edit_in_another_process_is_refused_and_nothing_is_lost(place: Place) -> None:
    """An edit that does not fit the schema raises ArgumentsInvalid there; the call is
    still pending; a good edit from yet another process is what runs."""
    _status, first = place.process("turn")
    key = first["pending"][0]["key"]
    status, report = place.process("approve", key, '{"amount": "all", "to": "ann"}')
    assert status == 3 and "amount" in report["invalid"]
    assert [p["key"] for p in place.process("turn")[1]["pending"]] == [key]
    assert place.process("approve", key, '{"amount": 2, "to": "ann"}')[0] == 0
    store = place.store()
    try:
        conv = toolwire.Conversation(
            "chat-approval", store=store, tools=approval_agent.tools(str(place.effects))
        )
        asked: list[list[dict[str, Any]]] = []
        conv.run_turn(done_model(asked))
        assert tool_texts(asked[0])["call_0"] == "sent 2 to ann"
    finally:
        store.close()
    assert place.ran() == ["balance", "transfer 2 ann"]


def test_a_pending_turn_replays_without_asking_the_model() -> None:
    """While the call waits, run_turn replays the recorded turn (factory not called),
    saves nothing and returns it again; the other call is not run twice."""
    store = toolwire.MemoryStore()
    effects: list[str] = []
    tools = toolwire.Toolbox()

    @tools.tool(requires_approval=True)
    def transfer(amount: int, to: str) -> str:
        """Move money."""
        effects.append("transfer")
        return "sent"

    @tools.tool
    def balance() -> int:
        """Read the balance."""
        effects.append("balance")
        return 100

    conv = toolwire.Conversation("c", store=store, tools=tools, messages=approval_agent.USER)
    first = conv.run_turn(approval_agent.first_answer)
    assert not first.done and conv.turns == 0 and len(conv.pending) == 1

    def never(messages: Any) -> Any:
        raise AssertionError("the model was asked again")

    again = conv.run_turn(never)
    assert [o.status for o in again.outcomes] == ["awaiting_approval", "replayed"]
    assert effects == ["balance"] and conv.turns == 0
    with pytest.raises(toolwire.ApprovalError):
        conv.deny("not-a-key", "no")


def test_an_async_conversation_lists_decides_and_asks_on() -> None:
    """AsyncConversation: pending after the turn, approve, and the next run_turn runs the
    call and asks on."""
    import asyncio

    async def scenario() -> None:
        store = toolwire.MemoryStore()
        box = approval_agent.tools(os.devnull)

        def stream_of(items: list[Any]) -> Any:
            async def replay() -> Any:
                for item in items:
                    yield item

            return replay()

        conv = toolwire.AsyncConversation("a", store=store, tools=box, messages=approval_agent.USER)
        turn = await conv.run_turn(lambda m: stream_of(approval_agent.first_answer(m)))
        assert not turn.done
        [pending] = conv.pending
        again = toolwire.AsyncConversation("a", store=store, tools=box)
        await again.load()
        assert again.pending == [pending]
        await again.approve(pending.key)
        assert again.pending == []
        asked: list[list[dict[str, Any]]] = []
        final = await conv.run_turn(lambda m: stream_of(done_model(asked)(m)))
        assert final.done and tool_texts(asked[0])["call_0"] == "sent 5 to ann"

    asyncio.run(scenario())
