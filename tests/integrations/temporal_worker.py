"""The Temporal worker process the kill test kills: the conversation's activities on a
toolwire store (``sqlite:PATH`` or ``memory``), the real ``openai`` client against the
simulator as the model, and a ``pay`` tool that appends its key to a file, then ends the
process (``os._exit``) the first time, before its outcome is stored."""

from __future__ import annotations

import asyncio
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
from temporalio.client import Client
from temporalio.worker import Worker

import toolwire
from toolwire.integrations.temporal import ConversationActivities, ConversationWorkflow

target, queue, store_spec, base_url, effects, marker = sys.argv[1:7]
tools = toolwire.Toolbox()


@tools.tool
def pay(to: str, ctx: toolwire.ToolContext) -> str:
    """Pay someone."""
    with open(effects, "a") as file:
        file.write(f"{ctx.idempotency_key} pay:{to}\n")
        file.flush()
        os.fsync(file.fileno())
    if not Path(marker).exists():
        Path(marker).write_text("killed")
        os._exit(17)  # the worker dies inside the tool, its outcome never stored
    return f"paid {to}"


client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)


def ask(messages: list[dict[str, Any]]) -> Any:
    return client.chat.completions.create(
        model="gpt-4o", messages=messages, tools=tools.definitions("openai-chat"), stream=True
    )


store: Any = toolwire.MemoryStore() if store_spec == "memory" else store_spec.split(":", 1)[1]
activities = ConversationActivities(tools, ask, store=store, lease=0.5, timeout=5.0)


async def main() -> None:
    temporal = await Client.connect(target)
    with ThreadPoolExecutor(4) as pool:
        worker = Worker(
            temporal,
            task_queue=queue,
            workflows=[ConversationWorkflow],
            activities=activities.activities,
            activity_executor=pool,
            max_cached_workflows=0,  # no sticky queue: a dead worker's tasks move on at once
        )
        async with worker:
            print("ready", flush=True)
            await asyncio.Event().wait()  # until the test ends the process


asyncio.run(main())
