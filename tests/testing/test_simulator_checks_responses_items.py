"""The Responses request check of calls the client answers with their own output item
(custom tools, computer, shell, local shell, apply_patch) and of MCP approval answers: a
well-answered input passes, and each wrong echo is refused."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from toolwire.testing._formats import check_request

CALLS: list[tuple[dict[str, Any], dict[str, Any]]] = [
    (
        {"type": "custom_tool_call", "id": "ct_1", "call_id": "c1", "name": "sh", "input": "ls"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "a b"},
    ),
    (
        {"type": "computer_call", "id": "cu_1", "call_id": "c2", "status": "completed",
         "action": {"type": "screenshot"}, "pending_safety_checks": []},
        {"type": "computer_call_output", "call_id": "c2",
         "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}},
    ),
    (
        {"type": "shell_call", "id": "sh_1", "call_id": "c3", "status": "completed",
         "action": {"commands": ["ls"]}},
        {"type": "shell_call_output", "call_id": "c3", "output": []},
    ),
    (
        {"type": "local_shell_call", "id": "ls_1", "call_id": "c4", "status": "completed",
         "action": {"type": "exec", "command": ["ls"], "env": {}}},
        {"type": "local_shell_call_output", "id": "c4", "call_id": "c4", "output": "a"},
    ),
    (
        {"type": "apply_patch_call", "id": "ap_1", "call_id": "c5", "status": "completed",
         "operation": {"type": "update_file", "path": "a", "diff": ""}},
        {"type": "apply_patch_call_output", "call_id": "c5", "status": "completed"},
    ),
]  # fmt: skip
APPROVAL = (
    {"type": "mcp_approval_request", "id": "mcpr_1", "name": "t", "arguments": "{}",
     "server_label": "s"},
    {"type": "mcp_approval_response", "approval_request_id": "mcpr_1", "approve": True},
)  # fmt: skip


def _body() -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for call, _ in [*CALLS, APPROVAL]:
        items.append(call)
    for _, answer in [*CALLS, APPROVAL]:
        items.append(answer)
    return {"model": "m", "input": items}


def _served(response_id: str) -> set[str] | None:
    return None


def test_every_call_answered_by_its_own_output_passes() -> None:
    """Each call kind answered by its own output item, and the approval answered: accepted."""
    assert check_request("openai-responses", _body(), _served) is None


def _drop(kind: str) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(items: list[dict[str, Any]]) -> None:
        items[:] = [i for i in items if i.get("type") != kind]

    return mutate


def _retype(kind: str, to: str) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(items: list[dict[str, Any]]) -> None:
        for item in items:
            if item.get("type") == kind:
                item["type"] = to

    return mutate


def _recall(kind: str, key: str) -> Callable[[list[dict[str, Any]]], None]:
    def mutate(items: list[dict[str, Any]]) -> None:
        for item in items:
            if item.get("type") == kind:
                item[key] = "altered"

    return mutate


MUTATIONS = {
    **{f"unanswered {c['type']}": _drop(a["type"]) for c, a in CALLS},
    **{f"missing {c['type']}": _drop(c["type"]) for c, _ in CALLS},
    **{
        f"{c['type']} answered as a function": _retype(a["type"], "function_call_output")
        for c, a in CALLS
    },
    **{f"altered {c['type']} id": _recall(c["type"], "call_id") for c, _ in CALLS},
    "approval of an unknown request": _recall("mcp_approval_response", "approval_request_id"),
    "approval request missing": _drop("mcp_approval_request"),
}


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_each_wrong_echo_is_refused(mutation: str) -> None:
    """An unanswered, missing, re-typed or altered item is refused with a message."""
    body = copy.deepcopy(_body())
    MUTATIONS[mutation](body["input"])
    assert check_request("openai-responses", body, _served) is not None
