"""The four parts of ``toolwire demo``, run in order on one workspace, store and simulator.

Every number the summary shows comes from the library's own accounts (outcomes,
``StreamError.partial``, the ``UsageLedger``, the store's records).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._core.ledger import UsageLedger
from ..._errors import StreamError
from ..._execution.executor import Executor
from ..._turn.run import Turn
from ...stores.sqlite import SQLiteStore
from .agent import EXAMPLE_PRICES, MODEL, USER_REQUEST, Workspace, converse, model_turns
from .cut_stream import ENDINGS, READERS, Reading, cut_inside_last_call, read_cut_turn, record_turn
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
    refused: int = 0  # calls that arrived in streams that did not end properly
    others_ran: Counter[str] = field(default_factory=Counter)  # per reader, from the cut
    keys: dict[str, str] = field(default_factory=dict)  # idempotency key -> "tool · part"

    def count(self, turn: Turn, part: str) -> None:
        """Add a finished turn's outcomes."""
        for outcome in turn.outcomes:
            self.ran += outcome.status == "completed"
            self.replayed += outcome.status == "replayed"
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
                    recording = self.cut(sim, client)
                    self.retry(sim, client, recording)
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

    def cut(self, sim: Any, client: Any) -> Path:
        """Part 2: turn 1 cut mid-arguments, read four ways on the same bytes. Returns the
        recording of turn 1 (part 3 serves it again)."""
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
        return recording

    # ------------------------------------------------------------------------ part 3

    def retry(self, sim: Any, client: Any, recording: Path) -> None:
        """Part 3: a dropped connection after the tools ran, and a retry that replays."""
        self.view.part(
            3,
            "A dropped connection after the tools ran, and a retry",
            [
                "the conversation runs as a job: turn 1's tools run, then turn 2's "
                "connection drops; the job is retried from the start",
                "the retry's turn 1 gets the response already delivered (same response id "
                "and call ids, as a gateway's cached copy is)",
            ],
        )
        turns = model_turns()
        sim.add_recording(recording)  # turn 1, as the gateway delivered it
        sim.add_response(**turns[1], faults=["cut:0.4"])  # turn 2: the connection drops
        sim.add_recording(recording)  # the retry's turn 1: the same response again
        sim.add_response(**turns[1])
        sim.add_response(**turns[2])
        executor = self.executor("conversation-3")
        replayed: list[str] = []

        def done(number: int, turn: Turn) -> None:
            self.view.turn_done(number, turn)
            self.tally.count(turn, "part 3")
            replayed.extend(o.name for o in turn.outcomes if o.replayed)

        self.view.line("attempt 1", "bold")
        try:
            converse(client, self.tools, executor, self.ledger, on_turn=self._quiet, on_done=done)
        except StreamError as exc:
            self.view.turn_failed()
            self.aborted.add(exc)
            self.tally.refused += len(exc.partial.calls) if exc.partial is not None else 0
            usage = exc.partial.usage if exc.partial is not None else None
            arrived = f"output ~{usage.output_tokens:,} tokens" if usage is not None else "none"
            self.view.line(
                f"turn 2  the connection dropped mid-stream: {type(exc).__name__}, "
                f"nothing of turn 2 ran (usage so far: {arrived}, estimated)",
                "bad",
            )
        else:  # the script drops turn 2's connection: never reached
            raise AssertionError("turn 2's connection did not drop")
        before = Counter(self.workspace.runs)
        self.view.line("attempt 2 (the retry)", "bold")
        converse(client, self.tools, executor, self.ledger, on_turn=self._quiet, on_done=done)
        again = Counter(self.workspace.runs) - before
        self.view.line(
            f"the retry replayed {len(replayed)} calls ({', '.join(replayed)}) and ran "
            f"{sum(again.values())} ({', '.join(sorted(again)) or 'none'}, whose turn had "
            "dropped): 0 tools ran twice",
            "good",
        )
        self._records()

    @staticmethod
    def _quiet(number: int) -> None:
        """Part 3 shows outcomes only (its streams were shown in part 1)."""

    def _records(self) -> None:
        """The store's records, through ``records()`` (what ``toolwire store list``
        shows), each named by the call whose idempotency key it holds."""
        records = self.store.records(limit=100)
        now = time.time()
        rows: list[list[Cell]] = []
        for record in records:
            result = record.result if record.result is not None else record.error or ""
            if len(result) > 36:
                result = result[:35] + "…"
            rows.append(
                [
                    (self.tally.keys.get(record.idempotency_key, "?"), ""),
                    (record.status, "good" if record.status == "completed" else "bad"),
                    (f"{max(0.0, now - record.created_at):.1f}s", "dim"),
                    (record.idempotency_key[:12] + "…", "dim"),
                    (result, ""),
                ]
            )
        self.view.line(f"the store's records (SQLiteStore.records()): {len(records)}", "bold")
        self.view.table(["call", "status", "age", "idempotency key", "result"], rows)

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
            [("calls replayed from the store", ""), (f"{tally.replayed} (not run again)", "good")],
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
