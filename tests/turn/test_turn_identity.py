"""Keys across turns: id-less streams (Ollama's native API, a Gemini stream without
``responseId``) are keyed by the request that produced them, so two turns never share a
key and the same request replayed after a crash replays; providers with ids keep theirs."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import toolwire
from toolwire._turn.identity import request_identity
from toolwire.testing import Simulator
from turn_support import counted_tools

OLLAMA = [  # Ollama's native /api/chat without timestamps: nothing names the generation
    {"model": "llama3.2", "done": False, "message": {"role": "assistant", "content": "",
     "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Lyon"}}}]}},
    {"model": "llama3.2", "done": True, "done_reason": "stop", "prompt_eval_count": 12,
     "eval_count": 7, "message": {"role": "assistant", "content": ""}},
]  # fmt: skip
GEMINI = [  # a Gemini stream without responseId, whose call has no id
    {"candidates": [{"index": 0, "finishReason": "STOP", "content": {"role": "model",
     "parts": [{"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}}]}}],
     "modelVersion": "gemini-2.5-flash"},
]  # fmt: skip
PATHS = {"ollama": "/api/chat", "gemini": "/v1beta/models/m:streamGenerateContent?alt=sse"}


def _recording(tmp_path: Path, fmt: str) -> Path:
    if fmt == "ollama":
        path = tmp_path / "idless.ndjson"
        path.write_text("".join(json.dumps(line) + "\n" for line in OLLAMA))
    else:
        path = tmp_path / "idless.sse"
        path.write_text("".join(f"data: {json.dumps(event)}\n\n" for event in GEMINI))
    return path


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A simulator that serves the same id-less recording to every request."""
    with Simulator(seed=2, loop=True) as simulator:
        yield simulator


@pytest.fixture
def http(sim: Simulator) -> Iterator[httpx.Client]:
    """A raw httpx client: its responses expose the request body."""
    with httpx.Client(base_url=sim.url, timeout=10) as client:
        yield client


def _request(http: httpx.Client, fmt: str, messages: list[Any]) -> Callable[[], Any]:
    body: dict[str, Any] = (
        {"model": "llama3.2", "messages": messages, "stream": True}
        if fmt == "ollama"
        else {"contents": messages}
    )
    return lambda: http.stream("POST", PATHS[fmt], json=body)


def _user(fmt: str) -> dict[str, Any]:
    text = "Weather in Lyon?"
    return {"role": "user", "content": text} if fmt == "ollama" else {"role": "user",
            "parts": [{"text": text}]}  # fmt: skip


@pytest.mark.parametrize("fmt", ["ollama", "gemini"])
def test_two_turns_never_share_a_key_and_a_replayed_request_replays(
    sim: Simulator, http: httpx.Client, tmp_path: Path, fmt: str
) -> None:
    """The same id-less bytes answer two turns: each turn runs its call (two keys); the
    first request made again after a crash replays its stored result and runs nothing."""
    sim.add_recording(_recording(tmp_path, fmt))
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="idless")
    messages: list[Any] = [_user(fmt)]
    first_request = _request(http, fmt, list(messages))
    first = toolwire.run_turn(first_request, tools, executor=executor)
    messages += first.messages
    second = toolwire.run_turn(_request(http, fmt, list(messages)), tools, executor=executor)
    assert first.response.response_id is None and first.response.tool_calls[0].synthetic_id
    assert first.identity and second.identity and first.identity != second.identity
    assert first.identity.startswith("request-sha256:")
    assert [o.status for o in first.outcomes + second.outcomes] == ["completed", "completed"]
    assert sorted(runs.values()) == [1, 1]  # two keys
    replay = toolwire.run_turn(first_request, tools, executor=executor)  # after a crash
    assert replay.identity == first.identity
    assert [o.status for o in replay.outcomes] == ["replayed"]
    assert replay.messages == first.messages
    assert sorted(runs.values()) == [1, 1]


def test_a_source_that_hides_its_request_needs_turn(sim: Simulator, tmp_path: Path) -> None:
    """The ollama client hides its request: an id-less response is refused before anything
    runs, naming turn=; with turn= it runs, and the same turn= replays."""
    import ollama

    sim.add_recording(_recording(tmp_path, "ollama"))
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="hidden")
    client = ollama.Client(host=sim.base_url("ollama"))
    messages = [_user("ollama")]

    def request() -> Any:
        return client.chat(model="llama3.2", messages=messages, stream=True)

    with pytest.raises(toolwire.SettingsError, match=r"run_turn\(\.\.\., turn=\.\.\.\)"):
        toolwire.run_turn(request, tools, executor=executor)
    assert runs == Counter()
    turn = toolwire.run_turn(request, tools, executor=executor, turn="conversation-7/turn-1")
    again = toolwire.run_turn(request, tools, executor=executor, turn="conversation-7/turn-1")
    assert turn.identity == "conversation-7/turn-1"
    assert [o.status for o in turn.outcomes + again.outcomes] == ["completed", "replayed"]
    assert sum(runs.values()) == 1
    client._client.close()


def test_a_response_id_is_the_identity_and_its_replay_replays(
    sim: Simulator, tmp_path: Path
) -> None:
    """A stream with a response id needs no request identity: read again (the same
    recorded generation through another request), its calls replay."""
    chunks = [
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0,
         "id": "call_a", "type": "function", "function": {"name": "get_weather",
         "arguments": "{\"city\": \"Lyon\"}"}}]}, "finish_reason": None}]},
        {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]  # fmt: skip
    path = tmp_path / "chat.sse"
    path.write_text("".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n")
    sim.add_recording(path)
    import openai

    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="with-ids")
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0)
    outcomes = []
    for prompt in ("Weather?", "Weather in Lyon?"):  # two different requests
        turn = toolwire.run_turn(
            lambda prompt=prompt: client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": prompt}], stream=True
            ),
            tools,
            executor=executor,
        )
        assert turn.identity is None
        outcomes += [o.status for o in turn.outcomes]
    assert outcomes == ["completed", "replayed"] and sum(runs.values()) == 1
    client.close()


def test_a_new_generation_is_a_new_turn(sim: Simulator) -> None:
    """The same request answered by a new generation (new response id, new call ids) runs
    its calls again: what the docs say to guard against downstream."""
    import openai

    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    executor = toolwire.Executor(tools, scope="regenerated")
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0)
    messages = [{"role": "user", "content": "Weather in Lyon?"}]
    for _ in range(2):
        sim.add_response(tool_calls=[("get_weather", {"city": "Lyon"})])
        toolwire.run_turn(
            lambda: client.chat.completions.create(model="m", messages=messages, stream=True),
            tools,
            executor=executor,
        )
    assert sorted(runs.values()) == [1, 1]
    client.close()


def test_the_request_identity_is_method_path_and_body() -> None:
    """Headers and the query string (credentials, retry counters) do not change the
    identity; the method, path and body do."""

    def identity(method: str, url: str, body: Any, **headers: str) -> str | None:
        return request_identity(httpx.Request(method, url, json=body, headers=headers))

    base = identity("POST", "http://a/v1/m:go?key=1", {"a": 1})
    assert base is not None
    assert identity("POST", "http://b/v1/m:go?key=2", {"a": 1}, x_retry_count="3") == base
    assert identity("POST", "http://a/v1/m:go", {"a": 2}) != base
    assert identity("POST", "http://a/v1/other", {"a": 1}) != base
    assert identity("PUT", "http://a/v1/m:go", {"a": 1}) != base
    assert request_identity(None) is None
    streamed = httpx.Request("POST", "http://a/", content=iter([b"x"]))
    assert request_identity(streamed) is None
