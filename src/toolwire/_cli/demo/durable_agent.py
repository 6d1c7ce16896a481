"""The agent process part 3 of ``toolwire demo`` kills: the demo's conversation as a
``toolwire.Conversation`` on the demo's SQLite store, through the real ``openai`` client.

``python -m toolwire._cli.demo.durable_agent ROOT BASE_URL CONVERSATION [--pause-in TOOL]``.
It reports to the demo as JSON lines on stdout: ``{"turn": n, "asked": bool, "data":
Turn.to_dict()}`` per finished turn, ``{"in": tool}`` when ``--pause-in``'s tool has done
its work (it then waits to be killed), ``{"done": true}`` at the end. Every tool body
appends its name and idempotency key to ``ROOT/runs.log`` before it returns: the record
of what ran, which a killed process cannot lose.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..._conversation.conversation import Conversation
from ..._tools.context import ToolContext
from ...stores.sqlite import SQLiteStore
from .agent import EXAMPLE_PRICES, MODEL, USER_REQUEST, Workspace

__all__ = ["LEASE", "RUNS_LOG", "main"]

RUNS_LOG = "runs.log"
LEASE = 1.0  # seconds: a killed process's calls are taken over this long after it died
PAUSE = 60.0  # seconds the paused tool waits to be killed (the demo kills it at once)


def _say(**message: Any) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


@dataclass
class _LoggedWorkspace(Workspace):
    """The workspace whose tools log each run (with its key) once their work is done; the
    ``pause_in`` tool then says so and waits to be killed."""

    log: Path = Path(RUNS_LOG)
    pause_in: str | None = None

    def _ran(self, name: str, ctx: ToolContext) -> None:
        with self.log.open("a", encoding="utf-8") as file:
            file.write(f"{name} {ctx.idempotency_key}\n")
            file.flush()
            os.fsync(file.fileno())
        if name == self.pause_in:
            _say(**{"in": name})
            time.sleep(PAUSE)

    def read_file(self, path: str, ctx: ToolContext) -> str:  # type: ignore[override]
        """Read a text file of the workspace."""
        text = super().read_file(path)
        self._ran("read_file", ctx)
        return text

    def get_exchange_rate(  # type: ignore[override]
        self,
        base: Literal["USD", "EUR", "GBP"],
        quote: Literal["USD", "EUR", "GBP"],
        date: datetime.date,
        ctx: ToolContext,
    ) -> float:
        """The exchange rate from one currency to another on a date."""
        rate = super().get_exchange_rate(base, quote, date)
        self._ran("get_exchange_rate", ctx)
        return rate

    def write_file(self, path: str, content: str, ctx: ToolContext) -> str:  # type: ignore[override]
        """Write a text file in the workspace (its folders are created)."""
        said = super().write_file(path, content)
        self._ran("write_file", ctx)
        return said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="toolwire._cli.demo.durable_agent")
    parser.add_argument("root", type=Path)
    parser.add_argument("base_url")
    parser.add_argument("conversation")
    parser.add_argument("--pause-in", metavar="TOOL")
    args = parser.parse_args(argv)

    import openai

    workspace = _LoggedWorkspace(args.root, log=args.root / RUNS_LOG, pause_in=args.pause_in)
    tools = workspace.tools()
    client: Any = openai.OpenAI(base_url=args.base_url, api_key="no-key-needed", max_retries=0)
    conv = Conversation(
        args.conversation,
        store=SQLiteStore(args.root / "toolwire.db"),
        tools=tools,
        messages=[{"role": "user", "content": USER_REQUEST}],
        lease=LEASE,
        timeout=30.0,
    )
    asked: list[int] = []

    def request(messages: list[dict[str, Any]]) -> Any:
        asked.append(conv.turns)
        return client.chat.completions.create(
            model=MODEL,
            messages=messages,
            tools=tools.definitions("openai-chat"),
            stream=True,
            stream_options={"include_usage": True},
        )

    with client:
        while not conv.done:
            number = conv.turns
            turn = conv.run_turn(request, prices=EXAMPLE_PRICES)
            _say(turn=number + 1, asked=number in asked, data=turn.to_dict())
    _say(done=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
