"""toolwire demo: replay a recorded-shape stream live, then execute its calls exactly once.

Run with ``make demo``. Everything is offline: the stream is the hand-written
``demo_stream.sse`` beside this file (OpenAI chat SSE shape: text, then two parallel tool
calls whose argument fragments interleave), fed in small random byte chunks as a network
would deliver them.
"""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Literal

import toolwire

STREAM = Path(__file__).with_name("demo_stream.sse").read_bytes()


def byte_chunks(data: bytes, seed: int = 7) -> list[bytes]:
    """Split ``data`` at random points, the way a socket hands it over."""
    rng = random.Random(seed)
    out, i = [], 0
    while i < len(data):
        n = rng.randint(1, 48)
        out.append(data[i : i + n])
        i += n
    return out


def shown(value: object, width: int = 88) -> str:
    """``value`` as JSON on one line; a long one shows its growing end."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def replay(data: bytes, *, live: bool = True) -> toolwire.Response:
    """Feed the stream, print live text and argument previews, return the final response."""
    asm = toolwire.StreamAssembler(format="auto")
    names: dict[int, str] = {}
    for piece in byte_chunks(data):
        for event in asm.feed_bytes(piece):
            if not live:
                continue
            if isinstance(event, toolwire.TextDelta):
                print(f"  text      +{event.text!r}")
            elif isinstance(event, toolwire.ToolCallStarted):
                names[event.key] = event.name
                print(f"  call      {event.name} (id {event.id})")
            elif isinstance(event, toolwire.ToolCallArguments):
                print(f"  preview   {names[event.key]}: {shown(event.preview)}")
            elif isinstance(event, toolwire.Finished):
                print(
                    f"  finished  {event.finish_reason} (provider said {event.raw_finish_reason!r})"
                )
    return asm.close()


def main() -> None:
    """Replay, execute, replay the execution, and show a truncated stream doing nothing."""
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-demo-"))
    runs = {"get_weather": 0, "write_file": 0}
    tools = toolwire.Toolbox()

    @tools.tool
    def get_weather(
        city: str, unit: Literal["celsius", "fahrenheit"] = "celsius"
    ) -> dict[str, object]:
        """Current weather for a city."""
        runs["get_weather"] += 1
        return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit}

    @tools.tool
    def write_file(path: str, content: str, ctx: toolwire.ToolContext) -> str:
        """Write a text file in the workspace."""
        runs["write_file"] += 1
        target = workdir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters (idempotency key {ctx.idempotency_key[:12]}…)"

    print("1. The stream, live:")
    response = replay(STREAM)
    print(f"\n   text: {response.text!r}")
    for call in response.tool_calls:
        print(
            f"   call {call.index}: {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
        )
    if response.usage is not None:
        print(f"   usage: {response.usage.input_tokens} in, {response.usage.output_tokens} out")

    store = toolwire.SQLiteStore(str(workdir / "toolwire.db"))
    executor = toolwire.Executor(tools, store=store, scope="demo-conversation", timeout=5.0)
    print("\n2. Execute the calls (SQLite store, one claim per call):")
    for outcome in executor.run(response):
        print(f"   {outcome.name}: {outcome.status} -> {outcome.result_json}")

    print("\n3. The same response delivered again (a retry after a crash): nothing runs twice:")
    for outcome in executor.run(response):
        print(f"   {outcome.name}: {outcome.status}")
    print(f"   tool bodies run: {runs}")

    print("\n4. Messages for the next request (OpenAI chat):")
    print(json.dumps(toolwire.tool_results(executor.run(response), "openai-chat"), indent=2)[:600])

    cut = STREAM[: int(len(STREAM) * 0.7)]
    print(f"\n5. The same stream cut after {len(cut)} of {len(STREAM)} bytes:")
    try:
        replay(cut, live=False)
    except toolwire.StreamError as exc:
        arrived = [(c.name, c.raw_arguments[:30]) for c in exc.partial.calls] if exc.partial else []
        print(f"   {type(exc).__name__}: {exc}")
        print(f"   what arrived (evidence, never executed): {arrived}")
    store.close()


if __name__ == "__main__":
    main()
