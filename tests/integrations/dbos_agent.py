"""The agent process the DBOS tests kill: a conversation run as a DBOS workflow through the
real ``openai`` client against the simulator; its tools append their idempotency key to a
file (the side effect that must happen once). ``crash`` names the tool that kills the
process on its first run: ``pay`` after its side effect, ``note`` before its own (after
``pay`` completed), or ``step``: the first tools step raises after its tools ran (its
result lost in the process, which DBOS retries there); ``store`` is ``dbos`` (the store
on DBOS's database), ``memory`` or ``fresh`` (a new MemoryStore for each tools step
attempt)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import openai
from dbos import DBOS, SetWorkflowID

import toolwire
import toolwire.integrations.dbos as integration
from toolwire.integrations.dbos import conversation_workflow

url, base_url, effects, workflow_id, crash, store_kind, marker = sys.argv[1:8]
tools = toolwire.Toolbox()
client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def effect(ctx: toolwire.ToolContext, what: str) -> None:
    with open(effects, "a") as file:
        file.write(f"{ctx.idempotency_key} {what}\n")
        file.flush()
        os.fsync(file.fileno())


def crash_once(name: str) -> None:
    if crash == name and not Path(marker).exists():
        Path(marker).write_text("crashed")
        os._exit(9)


@tools.tool
def pay(to: str, ctx: toolwire.ToolContext) -> str:
    """Pay someone."""
    effect(ctx, f"pay:{to}")
    crash_once("pay")
    return f"paid {to}"


@tools.tool
def note(text: str, ctx: toolwire.ToolContext) -> str:
    """Keep a note."""
    crash_once("note")
    effect(ctx, f"note:{text}")
    return "noted"


def ask(messages: list[dict[str, Any]]) -> Any:
    turn = sum(1 for m in messages if m["role"] == "assistant")
    return client.chat.completions.create(
        model=f"{workflow_id}/turn-{turn}",
        messages=messages,  # type: ignore[arg-type]
        tools=tools.definitions("openai-chat"),  # type: ignore[arg-type]
        stream=True,
    )


run_tools = integration._run_tools


def tools_step_failing_once(
    text: str, tools: toolwire.Toolbox, store: Any, *rest: Any
) -> dict[str, Any]:
    """The tools step, failing once after its tools ran and their side effects happened;
    with the ``fresh`` store each attempt gets a new MemoryStore (a retry that knows
    nothing of the attempt before it)."""
    result = run_tools(
        text, tools, toolwire.MemoryStore() if store_kind == "fresh" else store, *rest
    )
    if not Path(marker).exists():
        Path(marker).write_text("failed")
        raise RuntimeError("the step lost its result after the tools ran")
    return result


if crash == "step":
    integration._run_tools = tools_step_failing_once

agent = conversation_workflow(
    ask,
    tools,
    store=toolwire.MemoryStore() if store_kind == "memory" else None,
    lease=0.5,
    timeout=2.0,
    max_concurrency=1,  # pay, then note: in the order the model asked
)

DBOS(config={"name": "toolwire-dbos-test", "system_database_url": url})
DBOS.launch()  # recovers this executor's pending workflows
print("ready", flush=True)
status = DBOS.get_workflow_status(workflow_id)
if status is None:
    with SetWorkflowID(workflow_id):
        history = agent([{"role": "user", "content": "Pay Ann, then note it."}])
else:
    history = DBOS.retrieve_workflow(workflow_id).get_result()
print("done", history[-1]["content"], flush=True)
print("history", json.dumps(history), flush=True)
DBOS.destroy()
