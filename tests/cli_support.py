"""What the command-line tests share: recordings they write (OpenAI chat SSE bodies with
one ``write_file`` call whose arguments arrive a few characters per chunk) and a terminal
to watch a live view in (:class:`Terminal`, a tmux session; the ``terminal`` fixture is in
``conftest``)."""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

CONTENT = "alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike"
"""The ``content`` argument of :func:`write_file_stream`'s call (short enough for one line
of a 100-column terminal, so the live preview shows it whole)."""


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    """One OpenAI chat completion chunk as an SSE event."""
    chunk = {
        "id": "chatcmpl-replay",
        "object": "chat.completion.chunk",
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(chunk)}\n\n"


def write_file_stream(*, step: int = 2, finish: bool = True, arguments: str | None = None) -> str:
    """An OpenAI chat SSE body: a line of text, then one ``write_file`` call whose
    arguments arrive ``step`` characters at a time; ended properly when ``finish``."""
    args = arguments or json.dumps({"path": "notes.txt", "content": CONTENT})
    events = [chat_chunk({"role": "assistant", "content": "Writing the notes."})]
    call = {"index": 0, "id": "call_w", "type": "function"}
    events.append(chat_chunk({"tool_calls": [{**call, "function": {"name": "write_file"}}]}))
    for i in range(0, len(args), step):
        piece = {"index": 0, "function": {"arguments": args[i : i + step]}}
        events.append(chat_chunk({"tool_calls": [piece]}))
    if finish:
        events += [chat_chunk({}, "tool_calls"), "data: [DONE]\n\n"]
    return "".join(events)


class Terminal:
    """A tmux session of a fixed size on a private server: run a command, read the screen."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this server; its stdout."""
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def start(self, argv: list[str], *, width: int = 100, height: int = 40) -> None:
        """Run ``argv`` in a new window of ``width`` × ``height``; the pane stays after it."""
        # rich takes COLUMNS/LINES over the terminal's size: let the pane's size rule
        shell = f"env -u COLUMNS -u LINES {shlex.join(argv)}; echo EXIT=$?; sleep 600"
        self.tmux("new-session", "-d", "-s", "cli", "-x", str(width), "-y", str(height), shell)

    def screen(self) -> str:
        """The visible screen, as text."""
        return self.tmux("capture-pane", "-p", "-t", "cli")

    def wait_for(self, found: Callable[[str], Any], timeout: float = 60.0) -> Any:
        """Poll the screen until ``found(screen)`` is truthy; return that value."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            value = found(screen)
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"not on the screen after {timeout} s:\n{screen}")
            time.sleep(0.05)
