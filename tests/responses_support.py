"""Responses streams for the tests of calls the client answers: a whole response's
events from its output items, and the built-in calls the client runs."""

from __future__ import annotations

import json
from typing import Any


def sse(events: list[dict[str, Any]]) -> bytes:
    """``events`` as a Responses SSE body, numbered in order."""
    out = []
    for seq, event in enumerate(events):
        event = {**event, "sequence_number": seq}
        out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def response_events(
    items: list[dict[str, Any]], deltas: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """A whole response: created, each item added (``deltas`` after the first), done."""
    base = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m",
            "status": "in_progress", "output": []}  # fmt: skip
    events: list[dict[str, Any]] = [{"type": "response.created", "response": base}]
    for index, item in enumerate(items):
        added = {k: v for k, v in item.items() if k not in ("input", "status")}
        if item["type"] == "custom_tool_call":
            added["input"] = ""
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        if index == 0:
            events += deltas or []
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    done = {**base, "status": "completed", "output": items}
    events.append({"type": "response.completed", "response": done})
    return events


CUSTOM = {"type": "custom_tool_call", "id": "ct_1", "call_id": "call_c", "name": "shell",
          "input": 'echo "hi"'}  # fmt: skip
CUSTOM_DELTAS = [
    {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ct_1",
     "delta": "echo "},
    {"type": "response.custom_tool_call_input.delta", "output_index": 0, "item_id": "ct_1",
     "delta": '"hi"'},
    {"type": "response.custom_tool_call_input.done", "output_index": 0, "item_id": "ct_1",
     "input": 'echo "hi"'},
]  # fmt: skip


CLIENT_RUN = [
    {"type": "computer_call", "id": "cu_1", "call_id": "call_cu", "status": "completed",
     "action": {"type": "click", "x": 10, "y": 20, "button": "left"},
     "pending_safety_checks": []},
    {"type": "shell_call", "id": "sh_1", "call_id": "call_sh", "status": "completed",
     "action": {"commands": ["ls -l"], "timeout_ms": 1000}},
    {"type": "local_shell_call", "id": "ls_1", "call_id": "call_ls", "status": "completed",
     "action": {"type": "exec", "command": ["ls"], "env": {}}},
    {"type": "apply_patch_call", "id": "ap_1", "call_id": "call_ap", "status": "completed",
     "operation": {"type": "update_file", "path": "a.py", "diff": "@@\n-a\n+b\n"}},
]  # fmt: skip
NAMES = ["computer", "shell", "local_shell", "apply_patch"]
ANSWERS = ["computer_call_output", "shell_call_output", "local_shell_call_output",
           "apply_patch_call_output"]  # fmt: skip


APPROVAL = {"type": "mcp_approval_request", "id": "mcpr_1", "server_label": "dice",
            "name": "roll", "arguments": '{"sides": 6}'}  # fmt: skip
