"""The agent ``toolwire demo`` runs: a workspace, three tools, the model's three turns, and the
loop that drives them through the real ``openai`` client and ``run_turn``.

Written to be read: it is the demo's answer to "what does my code look like with toolwire?".
"""

from __future__ import annotations

import datetime
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..._core.events import StreamEvent
from ..._errors import StreamError
from ..._execution.executor import Executor
from ..._tools.toolbox import Toolbox
from ..._turn.run import Turn, run_turn
from ...accounting.ledger import UsageLedger
from ...accounting.pricing import ModelPrice, Prices

__all__ = [
    "EXAMPLE_PRICES",
    "MODEL",
    "USER_REQUEST",
    "Conversation",
    "Workspace",
    "converse",
    "model_turns",
    "report_text",
]

MODEL = "gpt-4.1"
USER_REQUEST = "Write the Q3 report to reports/q3.md from my sales and costs notes, in euros."
MAX_TURNS = 10  # an agent loop always has a bound

EXAMPLE_PRICES = Prices({MODEL: ModelPrice(input=2.0, output=8.0)})
"""An example price table (USD per million tokens) for the demo's summary: toolwire ships
no prices, and these are not a quote for any model."""

RATE = 0.92  # the exchange rate the demo's tool answers with (it has no network)
REGIONS = ("North", "South", "East", "West", "Central", "Online")
WEEKS = 13
PRODUCT_LINES = (("hardware", 0.5), ("software", 0.3), ("services", 0.2))
# (revenue, costs) per region in USD, the figures the notes hold
FIGURES = {
    "North": (412_000, 301_500),
    "South": (388_250, 297_000),
    "East": (275_900, 214_300),
    "West": (451_300, 322_750),
    "Central": (198_400, 171_900),
    "Online": (602_150, 388_600),
}


# ------------------------------------------------------------------------- the workspace


@dataclass
class Workspace:
    """The files the tools read and write (a directory) and how many times each tool body
    ran (``runs``): the demo's proof of what ran, for toolwire and for the other readers."""

    root: Path
    runs: Counter[str] = field(default_factory=Counter)

    def create(self) -> Workspace:
        """Write the two notes the model will read; return ``self``."""
        notes = self.root / "notes"
        notes.mkdir(parents=True, exist_ok=True)
        sales = ["# Q3 sales (USD)", ""] + [f"- {r}: {FIGURES[r][0]:,}" for r in REGIONS]
        costs = ["# Q3 costs (USD)", ""] + [f"- {r}: {FIGURES[r][1]:,}" for r in REGIONS]
        (notes / "sales.md").write_text("\n".join(sales) + "\n", encoding="utf-8")
        (notes / "costs.md").write_text("\n".join(costs) + "\n", encoding="utf-8")
        return self

    def read_file(self, path: str) -> str:
        """Read a text file of the workspace."""
        self.runs["read_file"] += 1
        return self._inside(path).read_text(encoding="utf-8")

    def get_exchange_rate(
        self,
        base: Literal["USD", "EUR", "GBP"],
        quote: Literal["USD", "EUR", "GBP"],
        date: datetime.date,
    ) -> float:
        """The exchange rate from one currency to another on a date."""
        self.runs["get_exchange_rate"] += 1
        return RATE if (base, quote) == ("USD", "EUR") else 1.0

    def write_file(self, path: str, content: str) -> str:
        """Write a text file in the workspace (its folders are created)."""
        self.runs["write_file"] += 1
        target = self._inside(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content):,} characters to {path}"

    def _inside(self, path: str) -> Path:
        # A model chooses the path: it must stay inside the workspace.
        target = (self.root / path).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise ValueError(f"{path!r} is outside the workspace")
        return target

    def tools(self) -> Toolbox:
        """The three tools, typed: toolwire derives their JSON Schemas from the hints and
        validates every call against them before it runs."""
        tools = Toolbox()
        tools.tool(self.read_file)
        tools.tool(self.get_exchange_rate)
        tools.tool(self.write_file)
        return tools

    def functions(self) -> dict[str, Callable[..., Any]]:
        """The same tools as plain functions by name, for the loops that run a model's
        calls without toolwire (the demo's second part)."""
        return {
            "read_file": self.read_file,
            "get_exchange_rate": self.get_exchange_rate,
            "write_file": self.write_file,
        }


# ---------------------------------------------------------------------- the model's turns


def report_text() -> str:
    """The report the model writes in its second turn: about 11 KB of Markdown."""
    lines = ["# Q3 report", "", f"All figures in EUR, at {RATE} EUR per USD (30 Sep 2025).", ""]
    lines += ["| region | revenue | costs | margin |", "|---|---:|---:|---:|"]
    for region in REGIONS:
        earned, spent = (round(x * RATE) for x in FIGURES[region])
        lines.append(f"| {region} | {earned:,} | {spent:,} | {earned - spent:,} |")
    for region in REGIONS:
        revenue, costs = (x * RATE for x in FIGURES[region])
        margin = 100 * (revenue - costs) / revenue
        lines += ["", f"## {region}", "", f"Margin {margin:.1f}% over the quarter.", ""]
        lines += ["| week | line | revenue | costs | margin |", "|---:|---|---:|---:|---:|"]
        for week in range(1, WEEKS + 1):
            # a plausible weekly profile that sums to about the quarter's figures
            share = (0.9 + 0.2 * ((week * 7 + len(region)) % 5) / 4) / WEEKS
            for line, part in PRODUCT_LINES:
                earned = round(revenue * share * part)
                spent = round(costs * share * part * (1.04 - week / 160))
                lines.append(f"| {week} | {line} | {earned:,} | {spent:,} | {earned - spent:,} |")
    return "\n".join(lines) + "\n"


def model_turns() -> list[dict[str, Any]]:
    """The three turns the simulated model answers with, as ``Simulator.add_response``
    arguments (usage as the provider would report it)."""
    return [
        {
            "text": "I'll read both notes and look up the exchange rate.",
            "tool_calls": [
                ("read_file", {"path": "notes/sales.md"}),
                ("read_file", {"path": "notes/costs.md"}),
                ("get_exchange_rate", {"base": "USD", "quote": "EUR", "date": "2025-09-30"}),
            ],
            "usage": {"input_tokens": 412, "output_tokens": 71},
        },
        {
            "text": "Writing the report.",
            "tool_calls": [("write_file", {"path": "reports/q3.md", "content": report_text()})],
            "usage": {"input_tokens": 655, "output_tokens": 2_930},
        },
        {
            "text": "The report is in reports/q3.md: six regions, revenue and costs in EUR.",
            "usage": {"input_tokens": 3_640, "output_tokens": 19},
        },
    ]


# ------------------------------------------------------------------------- the agent loop


@dataclass
class Conversation:
    """What one run of :func:`converse` did: its finished ``turns``, in order, and the
    ``messages`` sent (the last request's, plus the last turn's answer)."""

    turns: list[Turn] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)


def converse(
    client: Any,
    tools: Toolbox,
    executor: Executor,
    ledger: UsageLedger,
    *,
    on_turn: Callable[[int], object] = lambda n: None,
    on_event: Callable[[StreamEvent], object] | None = None,
    on_done: Callable[[int, Turn], object] = lambda n, turn: None,
) -> Conversation:
    """Run the conversation to its end: one ``run_turn`` per model turn.

    ``client`` is an ``openai.OpenAI`` client. ``on_turn(n)`` is called before turn ``n``
    (from 1), ``on_event`` with every stream event as it arrives, ``on_done(n, turn)``
    with each finished turn. A stream that does not end properly raises its :class:`StreamError`
    after the ledger recorded what it cost: nothing of that turn ran, and the caller
    decides whether to try again.
    """
    done = Conversation(messages=[{"role": "user", "content": USER_REQUEST}])
    messages = done.messages

    def request() -> Any:
        # run_turn makes the request once; the openai client itself retries a 429 or a 5xx
        # that came before the first byte (max_retries)
        return client.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=tools.definitions("openai-chat"),
            stream=True,
            stream_options={"include_usage": True},  # OpenAI reports usage last
        )

    for n in range(1, MAX_TURNS + 1):
        on_turn(n)
        try:
            turn = run_turn(
                request, tools, executor=executor, on_event=on_event, prices=EXAMPLE_PRICES
            )
        except StreamError as exc:
            ledger.add(exc)  # a cut stream was billed too: record what arrived
            raise
        ledger.add(turn)
        done.turns.append(turn)
        on_done(n, turn)
        messages += turn.messages  # the assistant turn and its tool results
        if turn.done:  # the model asked for no tool: this is its answer
            break
    return done
