"""Shared by the simulator tests: scenario strategies, the seven SDK clients pointed at a
simulator, readers that drive each client's stream through ``toolwire.stream``, and the
check that a response says what its scenario said."""

from __future__ import annotations

import json
import string
from collections.abc import Callable
from typing import Any

import httpx
from hypothesis import strategies as st

import toolwire
from toolwire.testing import ScenarioResponse, Simulator

FORMATS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock-converse",
    "ollama",
    "cohere",
)
# formats whose wire carries a response id / call ids
RESPONSE_IDS = {"openai-chat", "openai-responses", "anthropic", "gemini", "cohere"}
CALL_IDS = set(FORMATS) - {"ollama"}

USER = "Rename the report and mail it to Ann."

# ------------------------------------------------------------------- strategies

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
_json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, width=64)
    | _text
)
json_values = st.recursive(
    _json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
arguments = st.dictionaries(_text, json_values, max_size=4)
names = st.from_regex(r"[a-z_][a-z0-9_]{0,24}", fullmatch=True)
call_ids = st.none() | st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=30)


@st.composite
def scenarios(draw: st.DrawFn, *, max_calls: int = 3) -> dict[str, Any]:
    """Keyword arguments of ``Simulator.add_response``: text, reasoning, 0 to 3 calls with
    JSON-object arguments and optional ids, usage."""
    calls = []
    for position in range(draw(st.integers(0, max_calls))):
        call_id = draw(call_ids)
        call = (draw(names), draw(arguments))
        # ids are unique within a response (a duplicate is a provider bug, quirk 28)
        calls.append((*call, f"{call_id}{position}") if call_id else call)
    return {
        "text": draw(_text),
        "reasoning": draw(st.sampled_from(["", "Let me think."]) | _text),
        "tool_calls": calls,
        "usage": (draw(st.integers(0, 10**6)), draw(st.integers(0, 10**6))),
    }


# ---------------------------------------------------------------------- clients


def request_body(fmt: str, *, stream: bool = True) -> tuple[str, dict[str, Any]]:
    """Path and minimal JSON body of a request in ``fmt`` (for raw httpx requests)."""
    user = {"role": "user", "content": USER}
    if fmt == "openai-chat":
        body: dict[str, Any] = {"model": "m", "messages": [user], "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        return "/v1/chat/completions", body
    if fmt == "openai-responses":
        return "/v1/responses", {"model": "m", "input": USER, "stream": stream}
    if fmt == "anthropic":
        return "/v1/messages", {
            "model": "m",
            "max_tokens": 100,
            "messages": [user],
            "stream": stream,
        }
    if fmt == "gemini":
        action = "streamGenerateContent?alt=sse" if stream else "generateContent"
        contents = {"contents": [{"role": "user", "parts": [{"text": USER}]}]}
        return f"/v1beta/models/gemini-2.5-flash:{action}", contents
    if fmt == "bedrock-converse":
        action = "converse-stream" if stream else "converse"
        return f"/model/anthropic.claude-sonnet-4/{action}", {
            "messages": [{"role": "user", "content": [{"text": USER}]}]
        }
    if fmt == "ollama":
        return "/api/chat", {"model": "llama3.2", "messages": [user], "stream": stream}
    return "/v2/chat", {"model": "command-a", "messages": [user], "stream": stream}


_HTTP: dict[str, httpx.Client] = {}


def http(sim: Simulator) -> httpx.Client:
    """One pooled httpx client per simulator (making a client costs more than a request)."""
    client = _HTTP.get(sim.url)
    if client is None:
        client = _HTTP[sim.url] = httpx.Client(base_url=sim.url, timeout=10)
    return client


def close_http() -> None:
    """Close the pooled httpx clients, so that their connections close."""
    while _HTTP:
        _HTTP.popitem()[1].close()


def raw_bytes(sim: Simulator, fmt: str) -> toolwire.Response:
    """POST with httpx and feed the raw body bytes to ``StreamAssembler.feed_bytes``."""
    path, body = request_body(fmt)
    asm = toolwire.StreamAssembler(format="auto")
    with http(sim).stream("POST", path, json=body) as response:
        assert response.status_code == 200, response.read()
        for piece in response.iter_bytes():
            asm.feed_bytes(piece)
    return asm.close()


class Clients:
    """The seven SDK clients, pointed at one simulator, with no retries."""

    def __init__(self, sim: Simulator) -> None:
        import anthropic
        import boto3
        import cohere
        import ollama
        import openai
        from google import genai
        from google.genai import types

        self.openai = openai.OpenAI(
            base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0
        )
        self.anthropic = anthropic.Anthropic(
            base_url=sim.base_url("anthropic"), api_key="test", max_retries=0
        )
        self.gemini = genai.Client(
            api_key="test",
            http_options=types.HttpOptions(
                base_url=sim.base_url("gemini"),
                retry_options=types.HttpRetryOptions(attempts=1),
            ),
        )
        self.bedrock = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=sim.base_url("bedrock-converse"),
            aws_access_key_id="test",
            aws_secret_access_key="test",
            config=__import__("botocore.config").config.Config(retries={"total_max_attempts": 1}),
        )
        self.ollama = ollama.Client(host=sim.base_url("ollama"))
        self.cohere = cohere.ClientV2(api_key="test", base_url=sim.base_url("cohere"))

    def close(self) -> None:
        """Close every client's connection pool."""
        self.openai.close()
        self.anthropic.close()
        self.gemini.close()
        self.bedrock.close()
        self.ollama._client.close()
        self.cohere._client_wrapper.httpx_client.httpx_client.close()

    def read(self, fmt: str) -> toolwire.Response:
        """One streamed request through ``fmt``'s SDK, driven by ``toolwire.stream``."""
        return _READERS[fmt](self)


def drive(source: Any) -> toolwire.Response:
    """Run an SDK stream (or stream manager) through ``toolwire.stream`` to its response."""
    with toolwire.stream(source, total_timeout=30) as handle:
        for _ in handle:
            pass
    return handle.response


def _openai_chat(c: Clients) -> toolwire.Response:
    messages = [{"role": "user", "content": USER}]
    return drive(
        c.openai.chat.completions.create(
            model="m",
            messages=messages,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )


def _openai_responses(c: Clients) -> toolwire.Response:
    return drive(c.openai.responses.create(model="m", input=USER, stream=True))


def _anthropic(c: Clients) -> toolwire.Response:
    messages = [{"role": "user", "content": USER}]
    return drive(
        c.anthropic.messages.create(
            model="m",
            max_tokens=100,
            messages=messages,
            stream=True,  # type: ignore[arg-type]
        )
    )


def _gemini(c: Clients) -> toolwire.Response:
    return drive(c.gemini.models.generate_content_stream(model="gemini-2.5-flash", contents=USER))


def _bedrock(c: Clients) -> toolwire.Response:
    messages = [{"role": "user", "content": [{"text": USER}]}]
    return drive(c.bedrock.converse_stream(modelId="anthropic.claude-sonnet-4", messages=messages))


def _ollama(c: Clients) -> toolwire.Response:
    messages = [{"role": "user", "content": USER}]
    return drive(c.ollama.chat(model="llama3.2", messages=messages, stream=True))


def _cohere(c: Clients) -> toolwire.Response:
    messages = [{"role": "user", "content": USER}]
    return drive(c.cohere.chat_stream(model="command-a", messages=messages))  # type: ignore[arg-type]


_READERS: dict[str, Callable[[Clients], toolwire.Response]] = {
    "openai-chat": _openai_chat,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
    "bedrock-converse": _bedrock,
    "ollama": _ollama,
    "cohere": _cohere,
}


# ------------------------------------------------------------------- comparing


def check_round_trip(fmt: str, served: ScenarioResponse, response: toolwire.Response) -> None:
    """``response`` carries the text, reasoning, calls, ids, finish and usage of ``served``
    (the scenario as the simulator resolved it, minted ids included)."""
    assert response.text == served.text
    assert response.reasoning == served.reasoning
    assert response.rejected == []
    assert [c.name for c in response.tool_calls] == [c.name for c in served.tool_calls]
    assert [c.arguments for c in response.tool_calls] == [
        json.loads(c.raw_arguments) for c in served.tool_calls
    ]
    if fmt in CALL_IDS:
        assert [c.id for c in response.tool_calls] == [c.id for c in served.tool_calls]
    else:
        ids = [c.id for c in response.tool_calls]
        assert all(ids) and len(set(ids)) == len(ids)
    assert response.finish_reason == ("tool_calls" if served.tool_calls else "stop")
    if fmt in RESPONSE_IDS:
        assert response.response_id == served.response_id
    usage = served.reported_usage()
    assert response.usage is not None
    assert response.usage.input_tokens == usage.input_tokens
    assert response.usage.output_tokens == usage.output_tokens
