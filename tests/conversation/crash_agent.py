"""The agent process the SIGKILL test kills: a durable conversation on SQLite through the
real ``openai`` client against the simulator, whose tools append their idempotency key to
a file (the side effect that must never happen twice)."""

from __future__ import annotations

import os
import sys
import time

import openai

import toolwire

db, base_url, effects, conversation_id = sys.argv[1:5]
tools = toolwire.Toolbox()


def effect(ctx: toolwire.ToolContext, what: str) -> None:
    time.sleep(0.02)
    with open(effects, "a") as file:
        file.write(f"{ctx.idempotency_key} {what}\n")
        file.flush()
        os.fsync(file.fileno())
    time.sleep(0.02)


@tools.tool
def pay(to: str, ctx: toolwire.ToolContext) -> str:
    """Pay someone."""
    effect(ctx, f"pay:{to}")
    return f"paid {to}"


@tools.tool
def note(text: str, ctx: toolwire.ToolContext) -> str:
    """Keep a note."""
    effect(ctx, f"note:{text}")
    return "noted"


client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
conv = toolwire.Conversation(
    conversation_id,
    store=toolwire.SQLiteStore(db),
    tools=tools,
    messages=[{"role": "user", "content": "Pay Ann and Bob, then note it."}],
    lease=0.5,
    timeout=2.0,
)
print("ready", flush=True)
while not conv.done:
    conv.run_turn(
        lambda messages: client.chat.completions.create(
            model=f"{conversation_id}/turn-{conv.turns}",
            messages=messages,
            tools=tools.definitions("openai-chat"),
            stream=True,
        )
    )
print("done", flush=True)
