"""Quirk profiles: each really reshapes the stream (its mark is in the bytes), and each
assembles to the same calls as the clean stream, through the ``openai`` client and as raw
bytes; the truncation profile is refused instead."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from simulator_support import arguments, close_http, http, names, request_body
from toolwire.testing import PROFILES, Simulator

Chunks = list[dict[str, Any]]


def _entries(chunks: Chunks) -> list[dict[str, Any]]:
    return [
        entry
        for chunk in chunks
        for choice in chunk.get("choices") or []
        for entry in (choice.get("delta") or {}).get("tool_calls") or []
    ]


def _per_chunk(chunks: Chunks) -> list[list[dict[str, Any]]]:
    return [
        (choice.get("delta") or {}).get("tool_calls") or []
        for chunk in chunks
        for choice in chunk.get("choices") or []
    ]


def _finish_delta(chunks: Chunks) -> dict[str, Any]:
    finish = next(c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"])
    delta: dict[str, Any] = finish["choices"][0]["delta"]
    return delta


def _ids_per_call_change(chunks: Chunks) -> bool:
    ids = [e["id"] for e in _entries(chunks) if e.get("id")]
    return len(set(ids)) > 2  # two calls, yet more ids than that


# profile -> what its stream must show (checked on a two-call response)
MARKS: dict[str, Callable[[Chunks], bool]] = {
    "no-index": lambda c: all("index" not in e for e in _entries(c)),
    "index-from-1": lambda c: min(e["index"] for e in _entries(c)) == 1,
    "all-index-0": lambda c: {e["index"] for e in _entries(c)} == {0},
    "repeated-ids": lambda c: all(e.get("id") and e["function"].get("name") for e in _entries(c)),
    "repeated-names": lambda c: all(e["function"].get("name") for e in _entries(c)),
    "fresh-id-per-fragment": _ids_per_call_change,
    "split-ids": _ids_per_call_change,
    "name-after-arguments": lambda c: "name" not in _entries(c)[0]["function"],
    "empty-id-continuations": lambda c: any(e.get("id") == "" for e in _entries(c)),
    "null-role-type": lambda c: any(e.get("type", "x") is None for e in _entries(c)),
    "whole-call-chunk": lambda c: len(_entries(c)) == 2,
    "args-in-last-chunk": lambda c: bool(_finish_delta(c).get("tool_calls")),
    "same-index-in-chunk": lambda c: any(
        len(group) == 2 and group[0].get("index") == group[1].get("index")
        for group in _per_chunk(c)
    ),
    "stop-finish": lambda c: any(
        ch["choices"] and ch["choices"][0]["finish_reason"] == "stop" for ch in c
    ),
    "usage-only-last-chunk": lambda c: c[-1]["choices"] == [] and bool(c[-1]["usage"]),
    "content-filter-chunks": lambda c: any(ch.get("object") == "" for ch in c),
    "unterminated-arguments": lambda c: True,  # checked by its own test
    "mistral-content-chunks": lambda c: any(
        isinstance((ch["choices"][0].get("delta") or {}).get("content"), list)
        for ch in c
        if ch["choices"]
    ),
    "extra-content-signatures": lambda c: all(
        (e.get("extra_content") or {}).get("google", {}).get("thought_signature")
        for e in _entries(c)
        if e.get("id")
    ),
    "done-marker-only": lambda c: (
        not any(ch["choices"] and ch["choices"][0]["finish_reason"] for ch in c)
    ),
}
CHAT = {name: p for name, p in PROFILES.items() if "openai-chat" in p.formats}
REGULAR = sorted(name for name, p in CHAT.items() if not p.truncation)
TWO_CALLS = [
    ("read_file", {"path": "a.txt", "lines": [1, 2, 3]}),
    ("search", {"query": "naïve café", "limit": 5}),
]


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    """One simulator for the module."""
    with Simulator(seed=21) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    """One openai client for the module."""
    with openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as made:
        yield made


def _raw(sim: Simulator) -> bytes:
    path, body = request_body("openai-chat")
    body.pop("stream_options")
    return http(sim).post(path, json=body).content


@pytest.fixture(scope="module", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    close_http()


def _chunks(data: bytes) -> Chunks:
    return [
        json.loads(line[6:])
        for line in data.decode().splitlines()
        if line.startswith("data: ") and line != "data: [DONE]"
    ]


def test_every_profile_has_a_mark_and_a_row_in_the_table() -> None:
    """Each profile is checked here and documented in the package docstring's table."""
    import toolwire.testing

    assert set(MARKS) == set(CHAT)
    for name in PROFILES:
        assert f"``{name}``" in (toolwire.testing.__doc__ or ""), name


@pytest.mark.parametrize("profile", sorted(CHAT))
def test_profile_shows_its_mark(sim: Simulator, profile: str) -> None:
    """The profile changes the bytes the way its server does."""
    sim.add_response(text="Reading.", tool_calls=TWO_CALLS, profile=profile)
    chunks = _chunks(_raw(sim))
    assert MARKS[profile](chunks), json.dumps(chunks)[:2000]
    clean = Simulator(seed=21)
    clean.add_response(text="Reading.", tool_calls=TWO_CALLS)
    # a mark that the clean stream also shows would prove nothing
    with clean:
        shown = MARKS[profile](_chunks(_raw(clean)))
        assert not shown or profile == "unterminated-arguments"


@pytest.mark.parametrize("profile", REGULAR)
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(calls=st.lists(st.tuples(names, arguments), min_size=1, max_size=3), text=st.text())
def test_profile_assembles_to_the_clean_calls(
    sim: Simulator,
    client: openai.OpenAI,
    profile: str,
    calls: list[tuple[str, Any]],
    text: str,
) -> None:
    """Through the openai client and as raw bytes, the profile gives the scenario's calls."""
    sim.add_response(text=text, tool_calls=calls, profile=profile)
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    with toolwire.stream(stream) as handle:
        for _ in handle:
            pass
    served = sim.requests[-1].response
    assert served is not None
    assert [c.id for c in handle.response.tool_calls] == [c.id for c in served.tool_calls]
    for response in (handle.response, _assemble_raw(sim, text, calls, profile)):
        assert response.text == text
        assert response.rejected == []
        assert [(c.name, c.arguments) for c in response.tool_calls] == [
            (name, json.loads(json.dumps(args))) for name, args in calls
        ]
        assert response.finish_reason == "tool_calls"


def _assemble_raw(sim: Simulator, text: str, calls: Any, profile: str) -> toolwire.Response:
    sim.add_response(text=text, tool_calls=calls, profile=profile)
    asm = toolwire.StreamAssembler()
    asm.feed_bytes(_raw(sim))
    response = asm.close()
    served = sim.requests[-1].response
    assert served is not None
    assert [c.id for c in response.tool_calls] == [c.id for c in served.tool_calls]
    return response


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(calls=st.lists(st.tuples(names, arguments), min_size=1, max_size=3))
def test_unterminated_arguments_are_refused(sim: Simulator, calls: list[tuple[str, Any]]) -> None:
    """vLLM's ``tool_calls`` finish over cut JSON raises TokenLimitExceeded, never a call."""
    calls = [(name, {**args, "k": "v"}) for name, args in calls]  # at least 2 characters
    sim.add_response(tool_calls=calls, profile="unterminated-arguments")
    chunks = _raw(sim)
    assert b'"finish_reason":"tool_calls"' in chunks
    asm = toolwire.StreamAssembler()
    asm.feed_bytes(chunks)
    with pytest.raises(toolwire.TokenLimitExceeded) as info:
        asm.close()
    assert info.value.partial is not None


def test_a_profile_for_another_format_is_refused_with_a_500(sim: Simulator) -> None:
    """Profiles shape openai-chat streams: served to Anthropic, the server says so."""
    sim.add_response(tool_calls=TWO_CALLS, profile="no-index")
    path, body = request_body("anthropic")
    with httpx.Client(base_url=sim.url) as client:
        answer = client.post(path, json=body)
    assert answer.status_code == 500
    assert "no-index" in answer.json()["error"]["message"]
    assert sim.requests[-1].served == "unencodable"


def test_an_unknown_profile_is_a_usage_error(sim: Simulator) -> None:
    """A profile name that does not exist fails at add_response, naming the known ones."""
    with pytest.raises(toolwire.UsageError, match="no-index"):
        sim.add_response(text="x", profile="groq-like")
