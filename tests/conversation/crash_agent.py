"""The agent processes the SIGKILL test kills: a durable conversation on SQLite or
PostgreSQL through the real ``openai`` client against the simulator, whose tools append
their idempotency key to a file (the side effect that must never happen twice).

Run as a server, so that a restart costs a ``fork`` and not a Python start-up: it imports
everything once, then for each JSON line on stdin (store spec, base URL, effects file,
conversation id) forks one agent process, prints ``pid N``, waits for it and prints
``exit N CODE`` (a negative code is the signal that ended it). The test kills the agent
by its pid. A store spec is ``sqlite:PATH`` or ``postgres:DSN``."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import openai

import toolwire
from toolwire.stores.postgres import PostgresStore


def tools_writing_to(effects: str) -> toolwire.Toolbox:
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

    return tools


def open_store(spec: str) -> toolwire.SQLiteStore | PostgresStore:
    kind, _, where = spec.partition(":")
    return toolwire.SQLiteStore(where) if kind == "sqlite" else PostgresStore(where)


def agent(spec: str, base_url: str, effects: str, conversation_id: str) -> None:
    """One agent: open (or restore) the conversation and run it to its answer."""
    tools = tools_writing_to(effects)
    client = openai.OpenAI(base_url=base_url, api_key="sk-test", max_retries=0)
    conv = toolwire.Conversation(
        conversation_id,
        store=open_store(spec),
        tools=tools,
        messages=[{"role": "user", "content": "Pay Ann and Bob, then note it."}],
        lease=0.5,
        timeout=2.0,
    )
    while not conv.done:
        conv.run_turn(
            lambda messages: client.chat.completions.create(
                model=f"{conversation_id}/turn-{conv.turns}",
                messages=messages,
                tools=tools.definitions("openai-chat"),
                stream=True,
            )
        )


def warm_up() -> None:
    """Import what the agent imports lazily, so that the forked agents start at once; no
    thread is started (a fork keeps only the forking thread)."""
    import httpx
    import openai.resources.chat.completions

    client = openai.OpenAI(base_url="http://127.0.0.1:9", api_key="sk-test", max_retries=0)
    client.chat.completions.with_raw_response  # noqa: B018
    tools_writing_to(os.devnull).definitions("openai-chat")
    httpx.Client().close()
    for name in toolwire.__all__:
        getattr(toolwire, name)


def serve() -> None:
    warm_up()
    print("ready", flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                agent(job["store"], job["base_url"], job["effects"], job["cid"])
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stderr.flush()
            os._exit(code)
        print(f"pid {pid}", flush=True)
        _, status = os.waitpid(pid, 0)
        print(f"exit {pid} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    serve()
