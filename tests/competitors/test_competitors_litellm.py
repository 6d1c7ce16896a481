"""LiteLLM on the comparison scenarios: ``litellm.completion(..., stream=True)`` on the
simulator's OpenAI endpoint (``openai/`` model prefix), the chunks it yields, and
``litellm.stream_chunk_builder`` over them (what LiteLLM itself assembles at the end of a
stream); plus ``litellm.run_tool_loop``, its client-side tool loop, which only takes whole
(non-streamed) responses, for the execution rows.

Tested with litellm 1.110.2 (on openai 3.63.0). Each test states what the library does
today; when it changes, the test fails and the README table must change.
``LITELLM_LOCAL_MODEL_COST_MAP`` keeps LiteLLM from fetching its price list at import.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from competitors_support import (
    AMOUNTS,
    BOUND,
    CALLS3,
    CITIES,
    PARSEABLE_AT_LIMIT,
    REPLAY_CALL,
    STALL,
    TIMEOUT,
    TRUNCATED_ARGS,
    USER,
    WRITE,
    WRITE_ARGS,
    fresh_simulator,
    need,
    openai_tools,
    record_replay,
)
from toolwire.testing import Simulator

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# imported by the module's first test, not at collection: every xdist worker collects every
# module, and importing litellm costs each of them about 2.5 s of CPU
litellm: Any = None
MidStreamFallbackError: Any = None

pytestmark = [
    # a competitor's behaviour: run once, on the main Python (make test-pythons skips it)
    pytest.mark.compare,
    # LiteLLM's own types trigger this pydantic warning when it builds their schemas: not
    # ours to fix, and not about the behaviour under test
    pytest.mark.filterwarnings(
        r"ignore:Items? .* (are|is) using the `ReadOnly` qualifier:UserWarning"
    ),
]

MESSAGES: Any = [{"role": "user", "content": USER}]
FULL = json.dumps(WRITE_ARGS, separators=(",", ":"))
COMPACT = {city: json.dumps({"city": city}, separators=(",", ":")) for city in CITIES}


@pytest.fixture(autouse=True)
def _installed() -> None:
    """Skip (or fail under CI) when litellm is missing."""
    need(litellm, "litellm")


@pytest.fixture(scope="module", autouse=True)
def _release_litellm() -> Iterator[None]:
    """Import litellm (None when the `compare` group is not installed: every test skips);
    after the module, close the HTTP clients LiteLLM caches for reuse and collect what
    it leaves unreferenced (an event loop, sockets), so their ResourceWarnings (LiteLLM's,
    not ours) cannot fail a later test or the end of the session."""
    global litellm, MidStreamFallbackError
    try:
        import litellm
        from litellm.exceptions import MidStreamFallbackError
    except ImportError:
        litellm = None
    yield
    if litellm is None:
        return
    cache = litellm.in_memory_llm_clients_cache
    for client in list(getattr(cache, "cache_dict", {}).values()):
        close = getattr(client, "close", None)
        if callable(close) and not asyncio.iscoroutinefunction(close):
            close()
    cache.flush_cache()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        # the event loop LiteLLM's sync calls leave set as the thread's current loop
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none is set (an asyncio.run() earlier unset it)
            loop = None
        if loop is not None and not loop.is_running():
            loop.close()
            asyncio.set_event_loop(None)
        gc.collect()


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator per test."""
    yield from fresh_simulator()


def request(sim: Simulator, **settings: Any) -> dict[str, Any]:
    """``litellm.completion`` keywords for the simulator's chat endpoint, no retries."""
    return {
        "model": "openai/gpt-4o",
        "api_base": sim.base_url("openai-chat"),
        "api_key": "test",
        "messages": MESSAGES,
        "tools": openai_tools(),
        "max_retries": 0,
        "num_retries": 0,
        **settings,
    }


def read(sim: Simulator, chunks: list[Any], **settings: Any) -> None:
    """Iterate a streamed completion, keeping every chunk it yields in ``chunks``."""
    for chunk in litellm.completion(**request(sim, stream=True, **settings)):
        chunks.append(chunk)


def built(sim: Simulator) -> Any:
    """A streamed completion read to its end, assembled by ``stream_chunk_builder``."""
    chunks: list[Any] = []
    read(sim, chunks)
    return litellm.stream_chunk_builder(chunks)


def calls_of(response: Any) -> list[tuple[str, str]]:
    """(name, raw arguments) of every call of an assembled response."""
    return [
        (call.function.name, call.function.arguments)
        for call in response.choices[0].message.tool_calls or []
    ]


# ---------------------------------------------------------------- 1. cut streams


def test_cut_raises_and_the_builder_calls_the_rest_stop(sim: Simulator) -> None:
    """A cut raises MidStreamFallbackError while streaming; stream_chunk_builder over the
    chunks that arrived gives the cut call with finish_reason ``stop``."""
    sim.add_response(tool_calls=[WRITE], faults=["cut:0.5"])
    chunks: list[Any] = []
    with pytest.raises(MidStreamFallbackError, match="Connection error"):
        read(sim, chunks)
    response = litellm.stream_chunk_builder(chunks)
    assert response.choices[0].finish_reason == "stop"
    [(name, arguments)] = calls_of(response)
    assert name == "write_file"
    assert FULL.startswith(arguments) and len(arguments) < len(FULL)


# ------------------------------------------------------------ 3. missing finish


def test_missing_finish_raises_while_streaming(sim: Simulator) -> None:
    """A body that ends without a finish chunk raises MidStreamFallbackError ("Stream
    ended before a finish_reason was received") while streaming."""
    sim.add_response(tool_calls=[WRITE], faults=["no-terminal"])
    with pytest.raises(MidStreamFallbackError, match="before a finish_reason"):
        read(sim, [])


@pytest.mark.parametrize("arguments", [WRITE_ARGS, TRUNCATED_ARGS], ids=["complete", "cut"])
def test_builder_turns_a_missing_finish_into_stop(sim: Simulator, arguments: Any) -> None:
    """stream_chunk_builder over a stream without a finish reports finish_reason ``stop``
    and keeps the call, cut arguments included."""
    sim.add_response(tool_calls=[("write_file", arguments)], faults=["no-terminal"])
    chunks: list[Any] = []
    with pytest.raises(MidStreamFallbackError):
        read(sim, chunks)
    response = litellm.stream_chunk_builder(chunks)
    raw = arguments if isinstance(arguments, str) else FULL
    assert response.choices[0].finish_reason == "stop"
    assert calls_of(response) == [("write_file", raw)]


# ---------------------------------------------------------- 2. max_tokens truncation


@pytest.mark.parametrize(
    ("faults", "profile", "reason"),
    [(["length"], None, "length"), ([], "unterminated-arguments", "tool_calls")],
    ids=["length", "vllm-unterminated"],
)
def test_truncated_call_is_passed_through(
    sim: Simulator, faults: list[str], profile: str | None, reason: str
) -> None:
    """A token-limit finish (``length``, or vLLM's ``tool_calls`` over cut JSON) streams
    without an error; the builder keeps the finish and the cut argument string."""
    sim.add_response(tool_calls=[WRITE], faults=faults, profile=profile)
    response = built(sim)
    assert response.choices[0].finish_reason == reason
    [(name, arguments)] = calls_of(response)
    assert name == "write_file"
    assert FULL.startswith(arguments) and len(arguments) < len(FULL)


# ------------------------------------------------------------- 4. parallel calls


def test_interleaved_calls_come_out_right(sim: Simulator) -> None:
    """Three interleaved calls with correct indexes give the three right calls."""
    sim.add_response(tool_calls=CALLS3)
    assert calls_of(built(sim)) == [("get_weather", COMPACT[city]) for city in CITIES]


@pytest.mark.parametrize("profile", ["all-index-0", "no-index"])
def test_shared_or_missing_index_merges_the_calls(sim: Simulator, profile: str) -> None:
    """Every call at index 0, or no index at all: one call with the three argument
    strings concatenated (and the last call's id)."""
    sim.add_response(tool_calls=CALLS3, profile=profile)
    response = built(sim)
    assert calls_of(response) == [("get_weather", "".join(COMPACT[c] for c in CITIES))]


def test_repeated_names_are_kept_once(sim: Simulator) -> None:
    """A name re-sent in every chunk is kept once (last value wins): right calls."""
    sim.add_response(tool_calls=CALLS3, profile="repeated-names")
    assert calls_of(built(sim)) == [("get_weather", COMPACT[city]) for city in CITIES]


# ------------------------------------------------------------------- 5. previews


def test_chunks_carry_raw_argument_fragments_only(sim: Simulator) -> None:
    """The streamed chunks carry raw argument text fragments and no parsed preview."""
    sim.add_response(tool_calls=[("record_amounts", {"amounts": AMOUNTS})])
    chunks: list[Any] = []
    read(sim, chunks)
    fragments = [
        call.function
        for chunk in chunks
        for choice in chunk.choices
        for call in choice.delta.tool_calls or []
    ]
    assert len(fragments) > 5
    assert all(isinstance(f.arguments, str) for f in fragments)
    assert not any(hasattr(f, "parsed_arguments") for f in fragments)
    assert json.loads("".join(f.arguments for f in fragments)) == {"amounts": AMOUNTS}


# -------------------------------------- the tool loop (rows 2 and 6; no streaming)


class Loop:
    """``litellm.run_tool_loop`` with an executor that counts the calls it gets."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.calls: list[tuple[str, str]] = []

    def execute(self, call: Any) -> Any:
        self.calls.append((call.function.name, call.function.arguments))
        return {"role": "tool", "tool_call_id": call.id, "content": "written"}

    def run(self, **settings: Any) -> Any:
        keywords = request(self.sim, **settings)
        return litellm.run_tool_loop(
            model=keywords.pop("model"),
            messages=keywords.pop("messages"),
            tools=keywords.pop("tools"),
            execute_tool=self.execute,
            **keywords,
        )


def test_tool_loop_takes_no_streams(sim: Simulator) -> None:
    """run_tool_loop refuses ``stream=True``: it only runs whole responses."""
    with pytest.raises(ValueError, match="stream=True is not supported"):
        Loop(sim).run(stream=True)


@pytest.mark.parametrize(
    ("arguments", "faults", "finish"),
    [(WRITE_ARGS, ["length"], "auto"), (PARSEABLE_AT_LIMIT, [], "length")],
    ids=["cut", "parseable"],
)
def test_tool_loop_runs_a_call_of_a_token_limit_turn(
    sim: Simulator, arguments: Any, faults: list[str], finish: str
) -> None:
    """run_tool_loop runs the call of a response that finished with ``length``, cut
    arguments included: it never looks at finish_reason."""
    sim.add_response(tool_calls=[("write_file", arguments)], faults=faults, finish=finish)
    sim.add_response(text="Done.")
    loop = Loop(sim)
    assert loop.run() == "Done."
    [(name, raw)] = loop.calls
    assert name == "write_file"
    if arguments is WRITE_ARGS:
        assert FULL.startswith(raw) and len(raw) < len(FULL)
    else:
        assert raw == PARSEABLE_AT_LIMIT


# --------------------------------------------------------------- 6. idempotency


def test_tool_loop_runs_a_replayed_call_again(sim: Simulator, tmp_path: Path) -> None:
    """The same response (same call id and arguments) served twice in one loop is run
    twice: nothing dedupes."""
    recording = record_replay(sim, "openai-chat", tmp_path, stream=False)
    sim.add_recording(recording)
    sim.add_recording(recording)
    sim.add_response(text="Done.")
    loop = Loop(sim)
    loop.run()
    replayed = ("write_file", json.dumps(REPLAY_CALL[1], separators=(",", ":")))
    assert loop.calls == [replayed, replayed]


# ----------------------------------------------------------------- 7. deadlines


@pytest.mark.parametrize("setting", ["timeout", "stream_timeout"])
def test_stall_ends_at_the_http_read_timeout(sim: Simulator, setting: str) -> None:
    """A stall mid-stream ends at the HTTP read timeout (``timeout`` or
    ``stream_timeout``) as litellm.Timeout (an openai.APITimeoutError, not a
    TimeoutError); LiteLLM's default request timeout is 6000 s."""
    assert litellm.request_timeout == 6000
    sim.add_response(tool_calls=[WRITE], faults=[f"stall:{STALL}"])
    stream = litellm.completion(**request(sim, stream=True, **{setting: TIMEOUT}))
    start = time.perf_counter()
    with pytest.raises(litellm.Timeout) as caught:
        for _ in stream:
            pass
    elapsed = time.perf_counter() - start
    assert not isinstance(caught.value, TimeoutError)
    assert TIMEOUT * 0.9 <= elapsed < TIMEOUT + BOUND
