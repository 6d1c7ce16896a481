"""The four parts of ``toolwire demo``, run in order on one workspace, store and simulator.

Every number the summary shows comes from the library's own accounts (outcomes,
``StreamError.partial``, the ``UsageLedger``, the store's records).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._execution.executor import Executor
from ..._turn.run import Turn
from ...accounting.ledger import UsageLedger
from ...stores.sqlite import SQLiteStore
from .agent import EXAMPLE_PRICES, MODEL, USER_REQUEST, Workspace, converse, model_turns
from .cut_stream import ENDINGS, READERS, Reading, cut_inside_last_call, read_cut_turn, record_turn
from .durable_agent import RUNS_LOG
from .view import Cell, LiveView, PlainView, Tone

__all__ = ["SEED", "Demo"]

SEED = 7
"""The simulator's seed: every run of the demo streams the same bytes."""
TOOL_TIMEOUT = 30.0  # seconds each tool may take (they take milliseconds)


@dataclass
class _Tally:
    """What the parts did, for the summary."""

    ran: int = 0  # tool bodies toolwire ran
    replayed: int = 0  # calls answered from the store
    unknown: int = 0  # calls cut short by a kill: told to the model, never run again
    asked: int = 0  # model requests part 3's agent processes made
    refused: int = 0  # calls that arrived in streams that did not end properly
    others_ran: Counter[str] = field(default_factory=Counter)  # per reader, from the cut
    keys: dict[str, str] = field(default_factory=dict)  # idempotency key -> "tool · part"

    def count(self, turn: Turn, part: str) -> None:
        """Add a finished turn's outcomes."""
        for outcome in turn.outcomes:
            self.ran += outcome.status == "completed"
            self.replayed += outcome.status == "replayed"
            self.unknown += outcome.status == "unknown"
            if outcome.idempotency_key is not None:
                self.keys.setdefault(outcome.idempotency_key, f"{outcome.name} · {part}")


class Demo:
    """The four parts, run in order on one workspace, store and simulator."""

    def __init__(self, root: Path, view: LiveView | PlainView) -> None:
        self.root = root
        self.view = view
        self.workspace = Workspace(root).create()
        self.tools = self.workspace.tools()
        self.store = SQLiteStore(root / "toolwire.db")
        self.ledger = UsageLedger(EXAMPLE_PRICES)  # every turn toolwire read
        self.aborted = UsageLedger(EXAMPLE_PRICES)  # the turns that did not end properly
        self.tally = _Tally()
        self.started = time.monotonic()

    def executor(self, conversation: str) -> Executor:
        """An executor for one conversation (its scope) on the demo's store."""
        return Executor(self.tools, store=self.store, scope=conversation, timeout=TOOL_TIMEOUT)

    def run(self) -> None:
        """Start the simulator and the client, run the four parts, close everything."""
        import openai

        from ...testing import Simulator

        try:
            with Simulator(seed=SEED) as sim:
                client = openai.OpenAI(
                    base_url=sim.base_url("openai-chat"),
                    api_key="no-key-needed",  # the simulator checks none
                )
                with client:
                    self.view.line(
                        f"toolwire demo · the model: toolwire's simulator on {sim.url} "
                        f"(OpenAI chat, seed {SEED}) · files and store: {self.root}",
                        "dim",
                    )
                    self.conversation(sim, client)
                    self.cut(sim, client)
                    self.crash(sim)
                    self.summary()
        finally:
            self.view.close()
            self.store.close()

    # ------------------------------------------------------------------------ part 1

    def conversation(self, sim: Any, client: Any) -> None:
        """Part 1: the conversation through the openai client and ``run_turn``."""
        self.view.part(
            1,
            "An agent conversation: openai client → toolwire.run_turn → tools",
            [f"user: {USER_REQUEST}"],
        )
        for scripted in model_turns():
            sim.add_response(**scripted)
        done = converse(
            client,
            self.tools,
            self.executor("conversation-1"),
            self.ledger,
            on_turn=self.view.turn_started,
            on_event=self.view.event,
            on_done=self.view.turn_done,
        )
        for turn in done.turns:
            self.tally.count(turn, "part 1")
        report = self.root / "reports" / "q3.md"
        runs = ", ".join(f"{name} ×{n}" for name, n in sorted(self.workspace.runs.items()))
        self.view.line(
            f"{len(done.turns)} turns · tools ran once each ({runs}) · "
            f"{report.relative_to(self.root)}: {len(report.read_text('utf-8')):,} characters",
            "good",
        )

    # ------------------------------------------------------------------------ part 2

    def cut(self, sim: Any, client: Any) -> None:
        """Part 2: turn 1 cut mid-arguments, read four ways on the same bytes."""
        self.view.part(
            2,
            "The same turn 1, cut half-way through its last call's arguments",
            [
                "the same bytes to each reader; the connection either resets or the body "
                "ends cleanly at the cut (a proxy closing its side)",
                "each reader runs the calls it hands out with the real tools, which count "
                "their runs",
            ],
        )
        recording = self.root / "turn-1.sse"
        body = record_turn(sim, model_turns()[0], recording)
        cut = cut_inside_last_call(body)
        readings = read_cut_turn(
            sim,
            client,
            recording,
            cut,
            self.workspace,
            self.tools,
            self.executor("conversation-2"),
        )
        by_reader: dict[str, dict[str, Reading]] = {}
        for reading in readings:
            by_reader.setdefault(reading.reader, {})[reading.ending] = reading
            if reading.partial is not None:
                self.ledger.add(reading.partial)
                self.aborted.add(reading.partial)
                self.tally.refused += reading.refused
            else:
                self.tally.others_ran[reading.reader] += len(reading.ran)
        rows = [
            [(reader, "bold"), *(_verdict(by_reader[reader][e]) for e in ENDINGS)]
            for reader in READERS
        ]
        self.view.table(["reader", *(f"connection {e}" for e in ENDINGS)], rows)
        arrived = by_reader[READERS[0]][ENDINGS[0]].calls
        self.view.line(
            f"what arrived, {len(body) - cut:,} of {len(body):,} bytes short: "
            + " · ".join(f"{name} {args}" for name, args in arrived),
            "dim",
        )
        others = sum(self.tally.others_ran.values())
        self.view.line(
            f"toolwire ran 0 tools from the cut turn; the other readers ran {others}, "
            "from a response the model never finished",
            "good",
        )

    # ------------------------------------------------------------------------ part 3

    def crash(self, sim: Any) -> None:
        """Part 3: the agent process killed inside a tool, restarted, and finishing."""
        self.view.part(
            3,
            "The agent process killed (SIGKILL) inside a tool, and started again",
            [
                "the conversation runs in a process of its own, as a toolwire.Conversation "
                "on the same SQLite store: each response is recorded before its tools run",
                "it is killed by pid while write_file runs (the report written, its result "
                "not yet stored); a new process opens the same conversation and finishes it",
            ],
        )
        for scripted in model_turns():
            sim.add_response(**scripted)
        base_url = sim.base_url("openai-chat")
        self.view.line("process 1", "bold")
        first = self._follow(_start_agent(self.root, base_url, pause_in="write_file"))
        if first != -signal.SIGKILL:
            raise AssertionError(f"the first agent process was not killed: exit {first}")
        self.view.line("process 2 (the restart: same conversation id, same store)", "bold")
        second = self._follow(_start_agent(self.root, base_url, pause_in=None))
        if second != 0:
            raise AssertionError(f"the restarted agent process failed: exit {second}")
        runs = Counter(self._runs_log())
        twice = sorted(key for key, n in runs.items() if n > 1)
        self.view.line(
            f"{RUNS_LOG}: {sum(runs.values())} tool runs over the two processes, "
            f"{len(twice)} run twice; the model was asked {self.tally.asked} times for 3 turns",
            "good" if not twice else "bad",
        )
        self._records()

    def _follow(self, agent: subprocess.Popen[str]) -> int:
        """Show what an agent process reports, SIGKILL it by pid when it says it is inside
        the tool it pauses in; its exit code."""
        assert agent.stdout is not None
        with agent:
            for line in agent.stdout:
                message = json.loads(line)
                if "in" in message:
                    os.kill(agent.pid, signal.SIGKILL)
                    self.view.line(
                        f"SIGKILL to pid {agent.pid} inside {message['in']}: its work done, "
                        "its result not yet stored",
                        "bad",
                    )
                elif "turn" in message:
                    self._agent_turn(message["turn"], message["asked"], message["data"])
        return agent.returncode

    def _agent_turn(self, number: int, asked: bool, data: dict[str, Any]) -> None:
        turn = Turn.from_dict(data)
        if asked:
            self.ledger.add(turn)
            self.tally.asked += 1
        else:
            self.view.line(
                f"turn {number}  replayed from its recording: the model is not asked again",
                "dim",
            )
        self.view.turn_done(number, turn)
        self.tally.count(turn, "part 3")

    def _runs_log(self) -> list[str]:
        path = self.root / RUNS_LOG
        lines = path.read_text("utf-8").splitlines() if path.exists() else []
        return [line.split()[1] for line in lines]

    def _records(self) -> None:
        """The store's records, through ``records()`` (what ``toolwire store list``
        shows): the tool calls, each named by its call, and the conversation's own."""
        records = self.store.records(limit=100)
        now = time.time()
        rows: list[list[Cell]] = []
        for record in records:
            result = record.result if record.result is not None else record.error or ""
            result = _short(result, 30)
            tone: Tone = "good" if record.status == "completed" else "bad"
            rows.append(
                [
                    (_record_name(record.idempotency_key, self.tally.keys), ""),
                    (_short(record.call_id or "-", 14), "dim"),
                    (record.status, tone),
                    (f"{max(0.0, now - record.created_at):.1f}s", "dim"),
                    (_short(record.idempotency_key, 20), "dim"),
                    (result, ""),
                ]
            )
        self.view.line(f"the store's records (SQLiteStore.records()): {len(records)}", "bold")
        self.view.table(["call", "call id", "status", "age", "idempotency key", "result"], rows)
        self.view.line(
            "call: the tool call and the part that made it, or a record of the conversation "
            "itself · call id: the provider's id of the call, shortened "
            "(`toolwire store show <call id>` finds its record) · status: completed, or "
            "unknown (cut short by the kill: told to the model, "
            "never run again) · age: since the record was made · idempotency key: the key "
            "the record is stored under · result: what a replay answers with",
            "dim",
        )

    # ------------------------------------------------------------------------ part 4

    def summary(self) -> None:
        """Part 4: what ran, what was refused, usage and cost."""
        self.view.part(4, "Summary")
        tally, total = self.tally, self.ledger.total
        price = EXAMPLE_PRICES.match(MODEL)
        assert price is not None
        rate = f"{price[1].input:.2f} / {price[1].output:.2f} USD per million tokens in / out"
        aborted = self.aborted.total
        cost = self.ledger.cost or 0.0
        lost = self.aborted.cost or 0.0
        rows: list[list[Cell]] = [
            [("tool calls run by toolwire", ""), (f"{tally.ran}, each once", "good")],
            [
                ("calls cut short by the kill (told to the model as unknown)", ""),
                (f"{tally.unknown}, 0 of them run again", "good"),
            ],
            [
                ("calls refused (their stream did not end properly)", ""),
                (f"{tally.refused}, 0 of them ran", "good"),
            ],
            [
                ("tools the other readers ran from the cut turn", ""),
                (
                    ", ".join(f"{reader}: {n}" for reader, n in tally.others_ran.items()),
                    "bad" if sum(tally.others_ran.values()) else "good",
                ),
            ],
            [
                ("model turns read by toolwire", ""),
                (f"{self.ledger.turns}, {self.ledger.aborted} of them aborted", ""),
            ],
            [
                ("usage", ""),
                (
                    f"{total.input_tokens or 0:,} input + {total.output_tokens or 0:,} output "
                    f"tokens ({self.ledger.estimated_tokens:,} output tokens estimated)",
                    "",
                ),
            ],
            [
                ("estimated cost (example prices)", ""),
                (f"${cost:.4f} at {rate} (an example table, not a quote)", ""),
            ],
            [
                ("aborted streams' cost", ""),
                (
                    f"${lost:.4f} for {self.aborted.turns} streams: "
                    f"~{aborted.output_tokens or 0:,} output tokens, estimated; their input "
                    "was never reported, so this is a lower bound",
                    "bad",
                ),
            ],
        ]
        self.view.table(["", ""], rows)
        self.view.line(f"done in {time.monotonic() - self.started:.1f} s", "dim")


def _start_agent(root: Path, base_url: str, *, pause_in: str | None) -> subprocess.Popen[str]:
    """Part 3's agent process (:mod:`.durable_agent`), on this toolwire."""
    package = Path(__file__).resolve().parents[3]  # the directory toolwire is imported from
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(package), os.environ.get("PYTHONPATH", "")]),
    }
    argv = [
        sys.executable,
        "-m",
        "toolwire._cli.demo.durable_agent",
        str(root),
        base_url,
        "conversation-3",
    ]
    if pause_in is not None:
        argv += ["--pause-in", pause_in]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)


def _record_name(key: str, calls: dict[str, str]) -> str:
    """A record's name in the table: its call, or what of the conversation it keeps."""
    if key in calls:
        return calls[key]
    parts = key.split("/")
    if parts[:1] == ["conv"] and len(parts) >= 4 and parts[2] == "turn":
        return f"conversation · turn {int(parts[3]) + 1} {' '.join(parts[4:])}"
    if parts[:1] == ["conv"]:
        return f"conversation · {' '.join(parts[2:]) or 'state'}"
    return "?"


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _verdict(reading: Reading) -> Cell:
    """A reader's result on one ending, in a few words; good when no tool ran."""
    words = []
    if reading.partial is not None:  # toolwire
        words.append(f"refused: {reading.error}, {reading.refused} calls arrived")
    else:
        if reading.error is not None:
            words.append(f"raised {reading.error}")
        if reading.calls:
            words.append(f"{len(reading.calls)} calls, finish_reason {reading.finish_reason!r}")
    ran = len(reading.ran)
    named = f" ({', '.join(reading.ran)})" if reading.ran else ""
    words.append(f"{ran} tool{'s' if ran != 1 else ''} ran{named}")
    if reading.run_error is not None:
        words.append(f"then {reading.run_error}")
    tone: Tone = "good" if ran == 0 else "bad"
    return "\n".join(words), tone
