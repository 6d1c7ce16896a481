"""Shared by the ``test_competitors_*`` modules: the scenarios every library is run on, the
simulator fixture, and the check that a competitor is installed.

Every competitor module runs the same scenarios through the simulator's real HTTP endpoints
(the OpenAI chat endpoint for the OpenAI-compatible libraries, Anthropic's for the
Anthropic SDK), so one seed and one script give every library the same bytes. The README's
comparison table is built from these tests: each cell names the test that proves it, and a
test fails when the competitor's behaviour changes, so the table cannot go stale silently.

The scenarios:

* **cut**: one ``write_file`` call whose ~1.5 KB of arguments dominate the body, so
  ``cut:0.5`` closes the connection in the middle of its arguments (the toolwire module
  checks that the cut lands there);
* **clean end without a finish**: ``no-terminal``, the body ends properly but without the
  finish chunk / ``message_stop``; once with complete arguments (what a proxy that drops
  the last event delivers) and once with :data:`TRUNCATED_ARGS` (what a proxy that closes
  the chunked body properly mid-call delivers);
* **token limit**: the ``length`` fault (the provider's token-limit finish, arguments cut
  at a seeded point), ``finish="length"`` with arguments that happen to parse, and the
  ``unterminated-arguments`` profile (vLLM's finish ``tool_calls`` with cut JSON);
* **parallel**: three interleaved ``get_weather`` calls, clean and under the
  ``all-index-0``, ``repeated-names`` and ``no-index`` profiles;
* **previews**: :data:`AMOUNTS`, 40 five-digit numbers, so the seeded fragment sizes split
  some number in two and a preview can show ``123`` while ``12345`` arrives;
* **replay**: :data:`REPLAY_CALL` with a fixed call id and response id, served again when a
  turn is retried;
* **stall**: ``stall:STALL`` mid-body, read with a :data:`TIMEOUT`-second deadline.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from conftest import require
from simulator_support import request_body
from toolwire.testing import Simulator

SEED = 3
USER = "Write the report to notes/report.md."

# a ~1.5 KB argument: cut:0.5 of the body lands inside it
REPORT = "".join(f"Line {i}: the quarterly figures for region {i % 7} are in.\n" for i in range(28))
WRITE_ARGS: dict[str, Any] = {"path": "notes/report.md", "content": REPORT}
WRITE = ("write_file", WRITE_ARGS)
# a call cut mid-string, served as raw text (the simulator sends it as it is)
TRUNCATED_ARGS = '{"path": "notes/report.md", "content": "Line 0: the quarterly fig'
# arguments that parse and fit the schema although the provider stopped at its token limit
# (the model may have meant a longer content; nothing in the stream says it had finished)
PARSEABLE_AT_LIMIT = '{"path": "notes/report.md", "content": "Line 0: the quarterly figures"}'

CITIES = ("Lyon", "Paris", "Oslo")
CALLS3 = [("get_weather", {"city": city}) for city in CITIES]
PROFILES = ("all-index-0", "repeated-names", "no-index")

AMOUNTS = [12345 + 1111 * i for i in range(40)]
RECORD = ("record_amounts", {"amounts": AMOUNTS})

REPLAY_ID = "call_replayed_0001"
REPLAY_RESPONSE_ID = "resp_replayed_0001"
REPLAY_CALL = ("write_file", {"path": "notes/report.md", "content": "Hello"}, REPLAY_ID)

STALL = 3.0  # seconds the body stalls mid-stream
TIMEOUT = 0.5  # the deadline each library is given
# seconds allowed past a deadline on 2 shared cores (with the suite's xdist workers and other
# jobs on them); TIMEOUT + BOUND stays below STALL, so a stall waited out still fails
BOUND = 2.0

# JSON Schemas of the tools, for the libraries that take raw definitions
WRITE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}
WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"amounts": {"type": "array", "items": {"type": "integer"}}},
    "required": ["amounts"],
    "additionalProperties": False,
}


def openai_tools(*, strict: bool = False) -> list[dict[str, Any]]:
    """The three tools as OpenAI chat ``tools`` (``strict`` turns on the SDK's parsing)."""
    out = []
    for name, schema in (
        ("write_file", WRITE_SCHEMA),
        ("get_weather", WEATHER_SCHEMA),
        ("record_amounts", RECORD_SCHEMA),
    ):
        function: dict[str, Any] = {"name": name, "parameters": schema}
        if strict:
            function["strict"] = True
        out.append({"type": "function", "function": function})
    return out


def record_replay(sim: Simulator, fmt: str, directory: Path, *, stream: bool = True) -> Path:
    """Serve :data:`REPLAY_CALL` once in ``fmt`` (streamed or not), save the body byte for
    byte, and return the file: ``sim.add_recording(path)`` then replays the very same
    response (ids, timestamps and all), as a retried turn or a replaying gateway delivers
    it."""
    sim.add_response(tool_calls=[REPLAY_CALL], id=REPLAY_RESPONSE_ID)
    path, body = request_body(fmt, stream=stream)
    with httpx.Client(base_url=sim.url, timeout=10) as client:
        reply = client.post(path, json=body)
    assert reply.status_code == 200, reply.text
    recording = directory / f"replay-{fmt}.{'sse' if stream else 'json'}"
    recording.write_bytes(reply.content)
    return recording


def version(distribution: str) -> str | None:
    """The installed version of ``distribution``, or ``None``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def need(module: object, distribution: str) -> None:
    """Skip (or fail under ``CI=true``) a test whose competitor is not installed."""
    require(
        module is not None,
        f"{distribution} is not installed: it comes with the `compare` dependency group "
        "(pip install -e . --group compare, or --group dev)",
    )


def changed_numbers(previews: list[list[Any]], final: list[Any]) -> list[tuple[Any, Any]]:
    """Every (shown, final) pair where a preview of a list showed an element that the final
    value does not have at that position: a number shown while more digits were coming."""
    changed = []
    for shown in previews:
        for position, value in enumerate(shown):
            if position >= len(final) or value != final[position]:
                changed.append((value, final[position] if position < len(final) else None))
    return changed


def fresh_simulator() -> Iterator[Simulator]:
    """A fresh simulator (for a per-test fixture), so a failed test never leaves a
    response queued for the next one."""
    with Simulator(seed=SEED) as simulator:
        yield simulator
