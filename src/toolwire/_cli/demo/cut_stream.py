"""The demo's second part: one turn cut inside a call's arguments, read by toolwire and by
the usual alternatives (the ``openai`` SDK's helpers, a hand-written loop) on the same bytes.

The connection ends both ways it does in practice (reset, or ended cleanly); every
verdict comes from running the reader.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._errors import StreamError
from ..._execution.executor import Executor
from ..._tools.toolbox import Toolbox
from ..._turn.run import run_turn
from .agent import MODEL, USER_REQUEST, Workspace

__all__ = [
    "ENDINGS",
    "READERS",
    "Reading",
    "cut_inside_last_call",
    "read_cut_turn",
    "record_turn",
]

ENDINGS = ("reset", "ended cleanly")
"""How the cut connection ends: reset mid-body, or a body that ends properly at the cut."""

READERS = (
    "toolwire run_turn",
    "openai .stream() helper",
    "openai ChatCompletionStreamState",
    "accumulate + json.loads",
)
"""The readers of the cut turn, in the order they are shown."""


@dataclass
class Reading:
    """What one reader made of the cut turn: the ``error`` it raised (``None``: it handed
    out calls without complaint), the ``calls`` it handed out as ``(name, raw arguments)``,
    the ``finish_reason`` it reported, the tool bodies that ``ran`` (in order), and the
    error that stopped the running of its calls (``run_error``)."""

    reader: str
    ending: str
    error: str | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    ran: list[str] = field(default_factory=list)
    run_error: str | None = None
    refused: int = 0  # calls that arrived and toolwire refused (toolwire's row only)
    partial: StreamError | None = None


def record_turn(simulator: Any, turn: dict[str, Any], path: Path) -> bytes:
    """Stream ``turn`` once from ``simulator`` (the request the agent's first turn makes)
    and keep its body in ``path``, byte for byte; return it."""
    simulator.add_response(**turn)
    body = {
        "model": MODEL,
        "messages": [{"role": "user", "content": USER_REQUEST}],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    request = urllib.request.Request(
        simulator.base_url("openai-chat") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as reply:  # 127.0.0.1 only
        recorded: bytes = reply.read()
    path.write_bytes(recorded)
    return recorded


def cut_inside_last_call(body: bytes) -> int:
    """A byte offset inside the arguments of the call that finishes last in this OpenAI
    chat stream, after every other call has finished: there the other calls are
    complete and that one is not (the middle of its remaining fragments)."""
    calls = body.count(b'"id":"call_')  # one id per call, on its first fragment
    fragments = {  # the offsets of each call's argument fragments after its first chunk
        index: [
            m.start() for m in re.finditer(rb'\{"index":%d,"function":\{"arguments":' % index, body)
        ]
        for index in range(calls)
    }
    ends = sorted((offsets[-1], index) for index, offsets in fragments.items() if offsets)
    if len(ends) != calls or calls < 2:
        raise ValueError("the recorded turn does not stream its calls in fragments")
    (others_end, _), (last_end, last) = ends[-2], ends[-1]
    # after the event holding the others' last fragment and the last call's first fragment
    start = max(body.index(b"\n\n", others_end), body.index(b"\n\n", fragments[last][0])) + 2
    if start >= last_end:
        raise ValueError("the last call has no fragment left after the others finished")
    return (start + last_end) // 2


def read_cut_turn(
    simulator: Any,
    client: Any,
    recording: Path,
    cut: int,
    workspace: Workspace,
    tools: Toolbox,
    executor: Executor,
) -> list[Reading]:
    """Serve the cut turn to every reader, both endings; return what each did."""
    clean = recording.with_name(recording.stem + "-cut" + recording.suffix)
    clean.write_bytes(recording.read_bytes()[:cut])
    serve: dict[str, Callable[[], None]] = {
        "reset": lambda: simulator.add_recording(recording, faults=[f"cut-bytes:{cut}"]),
        "ended cleanly": lambda: simulator.add_recording(clean),
    }
    request = _Request(
        client=client,
        messages=[{"role": "user", "content": USER_REQUEST}],
        tools=tools,
        executor=executor,
        definitions=tools.definitions("openai-chat"),
        functions=workspace.functions(),
    )
    readings = []
    for ending in ENDINGS:
        for reader in READERS:
            serve[ending]()
            reading = Reading(reader=reader, ending=ending)
            before = sum(workspace.runs.values())
            _READ[reader](reading, request)
            assert sum(workspace.runs.values()) - before == len(reading.ran)
            readings.append(reading)
    return readings


# ---------------------------------------------------------------------------- the readers


@dataclass
class _Request:
    """The cut turn's request, the same for every reader: the client, the messages, the
    tools (toolwire's, its ``executor``, and their OpenAI chat ``definitions``) and the
    workspace's ``functions`` that the other readers call."""

    client: Any
    messages: Any
    tools: Toolbox
    executor: Executor
    definitions: Any
    functions: dict[str, Callable[..., Any]]

    def create(self, **options: Any) -> Any:
        """``client.chat.completions.create`` of the turn, streamed, with ``options``."""
        return self.client.chat.completions.create(
            model=MODEL, messages=self.messages, tools=self.definitions, stream=True, **options
        )


def _toolwire(reading: Reading, request: _Request) -> None:
    try:
        turn = run_turn(
            lambda: request.create(stream_options={"include_usage": True}),
            request.tools,
            executor=request.executor,
        )
    except StreamError as exc:  # the stream did not end properly: nothing ran
        reading.error = type(exc).__name__
        reading.partial = exc
        if exc.partial is not None:
            reading.calls = [(c.name, c.raw_arguments) for c in exc.partial.calls]
            reading.refused = len(exc.partial.calls)
        return
    reading.ran = [o.name for o in turn.outcomes if o.status == "completed"]  # never reached


def _stream_helper(reading: Reading, request: _Request) -> None:
    try:
        with request.client.chat.completions.stream(
            model=MODEL, messages=request.messages, tools=request.definitions
        ) as stream:
            for _event in stream:
                pass
            completion = stream.get_final_completion()
    except Exception as exc:
        reading.error = type(exc).__name__
        return
    _run_completion(reading, completion, request.functions)


def _stream_state(reading: Reading, request: _Request) -> None:
    from openai.lib.streaming.chat import ChatCompletionStreamState

    state: Any = ChatCompletionStreamState()
    try:
        for chunk in request.create():
            state.handle_chunk(chunk)
    except Exception as exc:  # a loop that catches the broken connection keeps what arrived
        # (recent openai releases raise APIConnectionError, older ones the httpx error itself)
        reading.error = f"{type(exc).__name__}, caught"
    _run_completion(reading, state.get_final_completion(), request.functions)


def _run_completion(
    reading: Reading, completion: Any, functions: dict[str, Callable[..., Any]]
) -> None:
    choice = completion.choices[0]
    reading.finish_reason = choice.finish_reason
    calls = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
    _run(reading, calls, functions)


def _by_hand(reading: Reading, request: _Request) -> None:
    calls: dict[int, dict[str, str]] = {}
    try:
        for chunk in request.create():
            for choice in chunk.choices:
                reading.finish_reason = choice.finish_reason or reading.finish_reason
                for fragment in choice.delta.tool_calls or []:
                    call = calls.setdefault(fragment.index, {"name": "", "arguments": ""})
                    if fragment.function is not None:
                        call["name"] += fragment.function.name or ""
                        call["arguments"] += fragment.function.arguments or ""
    except Exception as exc:
        reading.error = type(exc).__name__
        return
    _run(reading, [(c["name"], c["arguments"]) for c in calls.values()], request.functions)


def _run(
    reading: Reading, calls: list[tuple[str, str]], functions: dict[str, Callable[..., Any]]
) -> None:
    """Run ``calls`` as the loops above do: ``json.loads`` the arguments, call the
    function; the first error stops the loop (the calls before it have run)."""
    reading.calls = calls
    for name, arguments in calls:
        try:
            functions[name](**json.loads(arguments))
        except Exception as exc:
            reading.run_error = f"{type(exc).__name__} on {name}"
            return
        reading.ran.append(name)


# each reader of READERS, by its name
_READ: dict[str, Callable[[Reading, _Request], None]] = {
    "toolwire run_turn": _toolwire,
    "openai .stream() helper": _stream_helper,
    "openai ChatCompletionStreamState": _stream_state,
    "accumulate + json.loads": _by_hand,
}
