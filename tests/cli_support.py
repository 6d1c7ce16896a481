"""Recordings that the command-line tests write: OpenAI chat SSE bodies with one
``write_file`` call whose arguments arrive a few characters per chunk."""

from __future__ import annotations

import json
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
