"""The simulator itself: lifecycle (nothing left behind, sync and async), the script
(order, models, loop, scenario files), request recording, the providers' request checks,
non-streamed bodies through every SDK, usage rules, recordings, fault specs, the fixture."""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from simulator_support import FORMATS, Clients, request_body
from toolwire.testing import Simulator, parse_fault


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    """One simulator for the module."""
    with Simulator(seed=1) as simulator:
        yield simulator


def _post(
    sim: Simulator, fmt: str, body: dict[str, Any] | None = None, **kw: Any
) -> httpx.Response:
    path, default = request_body(fmt, **kw)
    with httpx.Client(base_url=sim.url, timeout=10) as client:
        return client.post(path, json=default if body is None else body)


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _server_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "toolwire-simulator"]


# ------------------------------------------------------------------------ lifecycle


def test_start_and_stop_leave_no_thread_or_socket_behind() -> None:
    """After ``with Simulator()`` the thread, the listening socket and the loop are gone."""
    # other tests' daemon threads may still be ending: count ours, and never more than before
    threads, fds = threading.active_count(), _fds()
    for _ in range(3):
        with Simulator() as other:
            other.add_response(text="hi")
            assert _post(other, "openai-chat").status_code == 200
            assert len(_server_threads()) == 1
            port = other.port
        assert _server_threads() == []
        assert threading.active_count() <= threads
        assert _fds() <= fds
        with pytest.raises(httpx.ConnectError):
            httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={})


def test_stop_ends_a_stalled_response_at_once() -> None:
    """A response stalled for a minute does not hold up ``stop()``."""
    import time

    other = Simulator()
    other.add_response(text="late", faults=["stall-first:60"])
    with other:
        path, body = request_body("openai-chat")
        client = httpx.Client(base_url=other.url)
        with client.stream("POST", path, json=body):
            started = time.monotonic()
            other.stop()
            assert time.monotonic() - started < 5
        client.close()


def test_async_with_serves_an_async_client() -> None:
    """``async with Simulator()`` works with the SDK's async client, and stops cleanly."""

    async def main() -> toolwire.Response:
        async with Simulator(seed=2) as other:
            other.add_response(text="async hi", tool_calls=[("f", {"a": 1})])
            client = openai.AsyncOpenAI(
                base_url=other.base_url("openai-chat"), api_key="t", max_retries=0
            )
            stream = await client.chat.completions.create(model="m", messages=[], stream=True)
            async with toolwire.astream(stream, total_timeout=10) as handle:
                async for _ in handle:
                    pass
            await client.close()
            return handle.response

    response = asyncio.run(main())
    assert response.text == "async hi"
    assert [c.arguments for c in response.tool_calls] == [{"a": 1}]
    assert _server_threads() == []


def test_base_urls_are_what_each_sdk_takes(sim: Simulator) -> None:
    """OpenAI gets ``/v1``; every other SDK gets the root."""
    root = f"http://127.0.0.1:{sim.port}"
    assert sim.base_url("openai-chat") == sim.base_url("openai-responses") == f"{root}/v1"
    for fmt in ("anthropic", "gemini", "bedrock-converse", "ollama", "cohere"):
        assert sim.base_url(fmt) == root
    with pytest.raises(toolwire.UnknownFormat):
        sim.base_url("mistral")
    assert httpx.get(root).json()["toolwire-simulator"] == sim.base_urls()


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        ("POST", "/v1/chat/completions", "", ("openai-chat", None, None, None, False)),
        ("POST", "/chat/completions", "", ("openai-chat", None, None, None, False)),
        ("POST", "/v1/responses", "", ("openai-responses", None, None, None, False)),
        ("POST", "/responses", "", ("openai-responses", None, None, None, False)),
        ("POST", "/v1/messages", "", ("anthropic", None, None, None, False)),
        ("POST", "/api/chat", "", ("ollama", None, None, None, True)),
        ("POST", "/v2/chat", "", ("cohere", None, None, None, False)),
        (
            "POST",
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            "alt=sse&key=k",
            ("gemini", True, "gemini-2.5-flash", "sse", False),
        ),
        (
            "POST",
            "/v1/models/gemini-2.5-flash:streamGenerateContent",
            "",
            ("gemini", True, "gemini-2.5-flash", "json-array", False),
        ),
        ("POST", "/v1alpha/models/g:generateContent", "", ("gemini", False, "g", None, False)),
        (
            "POST",
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse-stream",
            "",
            ("bedrock-converse", True, "anthropic.claude-3-5-sonnet-20240620-v1:0", None, False),
        ),
        ("POST", "/model/m/converse", "", ("bedrock-converse", False, "m", None, False)),
        ("POST", "/v2/models/g:generateContent", "", None),
        ("POST", "/v1/models/a/b:generateContent", "", None),
        ("POST", "/model/m/converse-stream/more", "", None),
        ("GET", "/v1/chat/completions", "", None),
        ("POST", "/v1/completions", "", None),
    ],
)
def test_requests_route_by_the_endpoints_each_provider_declares(
    method: str, path: str, query: str, expected: tuple[Any, ...] | None
) -> None:
    """The providers' own paths reach their format (streaming, model and framing from the
    path and query, as each API has them); anything else reaches none."""
    from toolwire.testing._formats import route

    found = route(method, path, query)
    if expected is None:
        assert found is None
    else:
        assert found is not None
        assert (found.format, found.stream, found.model, found.framing) == expected[:4]
        assert found.stream_default is expected[4]


def test_a_port_in_use_is_a_usage_error(sim: Simulator) -> None:
    """Asking for a port that is taken fails clearly at start."""
    with pytest.raises(toolwire.UsageError, match="cannot listen"):
        Simulator(port=sim.port).start()


def test_the_fixture_gives_a_started_simulator(toolwire_simulator: Simulator) -> None:
    """The pytest plugin's ``toolwire_simulator`` is started and serves."""
    toolwire_simulator.add_response(text="from the fixture")
    body = _post(toolwire_simulator, "openai-chat", stream=False).json()
    assert body["choices"][0]["message"]["content"] == "from the fixture"


# --------------------------------------------------------------------------- script


def test_responses_are_served_in_order_whichever_endpoint_asks() -> None:
    """Three responses to three endpoints: each endpoint gets the next one, in its format."""
    with Simulator() as other:
        for text in ("one", "two", "three"):
            other.add_response(text=text)
        first = _post(other, "anthropic", stream=False).json()
        second = _post(other, "gemini", stream=False).json()
        third = _post(other, "ollama", stream=False).json()
        assert first["content"][0]["text"] == "one"
        assert second["candidates"][0]["content"]["parts"][0]["text"] == "two"
        assert third["message"]["content"] == "three"
        exhausted = _post(other, "openai-chat", stream=False)
        assert exhausted.status_code == 500
        assert "no scripted response left" in exhausted.json()["error"]["message"]
        assert other.requests[-1].served == "exhausted"


def test_responses_for_a_model_pattern_go_to_that_model_first() -> None:
    """``for_model`` responses serve matching models; the others take the ordered list."""
    with Simulator(loop=True) as other:
        other.add_response(text="general")
        other.add_response(text="mini", for_model="gpt-4o-mini*")
        body = {"model": "gpt-4o-mini-2024", "messages": [{"role": "user", "content": "x"}]}
        assert (
            _post(other, "openai-chat", body).json()["choices"][0]["message"]["content"] == "mini"
        )
        body["model"] = "gpt-5"
        assert (
            _post(other, "openai-chat", body).json()["choices"][0]["message"]["content"]
            == "general"
        )
        body["model"] = "gpt-4o-mini-2024"  # loop: the pattern's list starts over
        assert (
            _post(other, "openai-chat", body).json()["choices"][0]["message"]["content"] == "mini"
        )


def _scenario_files(tmp_path: Path, recording: Path) -> list[Path]:
    data = {
        "seed": 4,
        "responses": [
            {
                "text": "On it.",
                "tool_calls": [{"name": "get_weather", "arguments": {"city": "Lyon"}}],
            },
            {"recording": str(recording)},
        ],
        "models": {"claude-*": [{"text": "for claude", "usage": [3, 4]}]},
    }
    as_json = tmp_path / "scenario.json"
    as_json.write_text(json.dumps(data))
    as_toml = tmp_path / "scenario.toml"
    as_toml.write_text(
        'seed = 4\n[[responses]]\ntext = "On it."\n'
        'tool_calls = [{ name = "get_weather", arguments = { city = "Lyon" } }]\n'
        f"[[responses]]\nrecording = {json.dumps(str(recording))}\n"
        '[[models."claude-*"]]\ntext = "for claude"\nusage = [3, 4]\n'
    )
    return [as_json, as_toml]


def test_scenario_files_in_json_and_toml_script_the_same_server(tmp_path: Path) -> None:
    """A JSON and a TOML scenario with the same content serve the same bytes."""
    recording = tmp_path / "rec.sse"
    recording.write_bytes(b'data: {"choices":[{"index":0,"delta":{"content":"rec"}}]}\n\n')
    bodies = []
    for path in _scenario_files(tmp_path, recording):
        with Simulator(scenario=path) as other:
            assert other.seed == 4
            claude = {
                "model": "claude-x",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "x"}],
            }
            answer = _post(other, "anthropic", claude, stream=False).json()
            assert answer["content"][0]["text"] == "for claude"
            assert answer["usage"]["input_tokens"] == 3
            first = _post(other, "openai-chat").content
            second = _post(other, "openai-chat").content
            assert second == recording.read_bytes()
            bodies.append(first)
    assert bodies[0] == bodies[1]
    assert b"get_weather" in bodies[0]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"responses": [{"txt": "x"}]}', "unknown fields"),
        ('{"responses": [{"faults": ["cut:2"]}]}', "between 0 and 1"),
        ('{"responses": {"text": "x"}}', "must be a list"),
        ('{"seed": "x"}', "seed must be an integer"),
        ("[1]", "must hold an object"),
        ("{", "cannot be parsed"),
    ],
)
def test_a_bad_scenario_file_is_a_usage_error_naming_the_problem(
    tmp_path: Path, content: str, message: str
) -> None:
    """Typos in a scenario file fail when it is loaded, with the field named."""
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(toolwire.UsageError, match=message):
        Simulator(scenario=path)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("cut", "needs a value"),
        ("cut:1.5", "between 0 and 1"),
        ("cut:nan", "finite"),
        ("stall:-1", "non-negative"),
        ("drip:0", "positive"),
        ("http:200", "between 400 and 599"),
        ("length:3", "takes no value"),
        ("explode", "unknown fault"),
    ],
)
def test_a_bad_fault_spec_is_a_usage_error(spec: str, message: str) -> None:
    """Each malformed fault spec is refused with what is wrong."""
    with pytest.raises(toolwire.UsageError, match=message):
        parse_fault(spec)


@given(st.sampled_from(["cut:0.25", "cut-bytes:7", "stall:1.5", "http:429", "duplicate-chunk:3"]))
def test_fault_specs_print_back_as_themselves(spec: str) -> None:
    """A parsed fault prints as the spec it came from."""
    assert str(parse_fault(spec)) == spec


def test_faults_must_be_a_list(sim: Simulator) -> None:
    """``faults="cut:0.5"`` (a bare string) is refused rather than read letter by letter."""
    with pytest.raises(toolwire.UsageError, match="wrap"):
        sim.add_response(text="x", faults="cut:0.5")  # type: ignore[arg-type]


def test_invalid_argument_text_is_served_where_arguments_are_text(sim: Simulator) -> None:
    """Raw argument text that is not JSON streams as it is: toolwire rejects the call."""
    sim.add_response(tool_calls=[("f", '{"a": 1,,}')])
    asm = toolwire.StreamAssembler()
    asm.feed_bytes(_post(sim, "openai-chat").content)
    response = asm.close()
    assert response.tool_calls == []
    assert response.rejected[0].raw_arguments == '{"a": 1,,}'
    sim.add_response(tool_calls=[("f", '{"a": 1,,}')])
    refused = _post(sim, "gemini")
    assert refused.status_code == 500
    assert "not a JSON object" in refused.json()["error"]["message"]


def test_structured_text_is_served_as_json(sim: Simulator) -> None:
    """``text`` given as an object is served as its compact JSON (structured output)."""
    sim.add_response(text={"answer": 42, "why": ["é"]})
    body = _post(sim, "openai-chat", stream=False).json()
    assert json.loads(body["choices"][0]["message"]["content"]) == {"answer": 42, "why": ["é"]}


# --------------------------------------------------------------------- requests


def test_requests_are_recorded_with_method_path_headers_and_body(sim: Simulator) -> None:
    """``sim.requests`` holds what each request carried and what answered it."""
    sim.add_response(text="hi", id="chatcmpl-fixed")
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="sk-test", max_retries=0)
    with client:
        client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "yo"}])
    record = sim.requests[-1]
    assert (record.method, record.path, record.format, record.stream) == (
        "POST",
        "/v1/chat/completions",
        "openai-chat",
        False,
    )
    assert record.headers["authorization"] == "Bearer sk-test"
    assert record.body["messages"] == [{"role": "user", "content": "yo"}]
    assert record.response is not None and record.response.response_id == "chatcmpl-fixed"
    assert record.completed and record.status == 200


def test_openai_chat_usage_only_with_include_usage(sim: Simulator) -> None:
    """Usage comes only with include_usage: a last chunk with empty choices, others null."""
    path, body = request_body("openai-chat")
    for include in (False, True):
        sim.add_response(text="hi", usage=(5, 6))
        body["stream_options"] = {"include_usage": include}
        with httpx.Client(base_url=sim.url) as client:
            lines = client.post(path, json=body).text.splitlines()
        chunks = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
        if include:
            assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["prompt_tokens"] == 5
            assert all(c["usage"] is None for c in chunks[:-1])
        else:
            assert all("usage" not in c for c in chunks)


_REFUSED = {
    "openai-chat": {
        "model": "m",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "done"},
        ],
    },
    "openai-responses": {
        "model": "m",
        "input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}],
    },
    "anthropic": {
        "model": "m",
        "max_tokens": 5,
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "f", "input": {}}],
            },
            {"role": "user", "content": [{"type": "text", "text": "forgot the result"}]},
        ],
    },
    "gemini": {
        "contents": [
            {"role": "user", "parts": [{"text": "x"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "g", "response": {}}}]},
        ]
    },
    "bedrock-converse": {
        "messages": [
            {"role": "user", "content": [{"text": "x"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}],
            },
            {
                "role": "user",
                "content": [{"toolResult": {"toolUseId": "t2", "content": [{"text": "r"}]}}],
            },
        ]
    },
    "cohere": {
        "model": "command-a",
        "messages": [{"role": "tool", "tool_call_id": "nope", "content": "x"}],
    },
}


@pytest.mark.parametrize("fmt", sorted(_REFUSED))
def test_a_request_the_provider_would_refuse_gets_its_400(sim: Simulator, fmt: str) -> None:
    """Mismatched tool results get the provider's 400 and consume no scripted response."""
    sim.add_response(text="kept for the next request")
    answer = _post(sim, fmt, _REFUSED[fmt])
    assert answer.status_code == 400
    assert sim.requests[-1].served == "refused"
    assert sim.requests[-1].error
    assert _post(sim, fmt, stream=False).status_code == 200  # the response was not used


def test_the_sdks_raise_their_bad_request_errors_on_refusals(sim: Simulator) -> None:
    """openai and anthropic read the 400 bodies as ``BadRequestError`` with the message."""
    oc = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0)
    with oc, pytest.raises(openai.BadRequestError, match="must be a response to a preceeding"):
        oc.chat.completions.create(**_REFUSED["openai-chat"])
    ac = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
    with ac, pytest.raises(anthropic.BadRequestError, match="without `tool_result` blocks"):
        ac.messages.create(**_REFUSED["anthropic"])


def test_a_well_formed_tool_turn_is_accepted_everywhere(sim: Simulator) -> None:
    """toolwire's own tool results, for a call the simulator served, pass every check."""
    tools = toolwire.Toolbox()

    @tools.tool
    def get_weather(city: str) -> str:
        """Weather."""
        return "sunny"

    for fmt in ("openai-chat", "openai-responses", "anthropic", "gemini"):
        sim.add_response(text="Checking.", tool_calls=[("get_weather", {"city": "Lyon"})])
        sim.add_response(text="It is sunny.")
        asm = toolwire.StreamAssembler()
        asm.feed_bytes(_post(sim, fmt).content)
        response = asm.close()
        outcomes = toolwire.Executor(tools, store=toolwire.MemoryStore(), scope=fmt).run(response)
        results = toolwire.tool_results(outcomes, fmt)
        body = _follow_up(fmt, response, results, sim)
        assert _post(sim, fmt, body).status_code == 200, sim.requests[-1].error


def _follow_up(fmt: str, response: toolwire.Response, results: Any, sim: Simulator) -> Any:
    call = response.tool_calls[0]
    user = {"role": "user", "content": "Weather in Lyon?"}
    if fmt == "openai-chat":
        assistant = {
            "role": "assistant",
            "content": response.text,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.raw_arguments},
                }
            ],
        }
        return {"model": "m", "stream": True, "messages": [user, assistant, *results]}
    if fmt == "openai-responses":
        return {
            "model": "m",
            "stream": True,
            "previous_response_id": response.response_id,
            "input": list(results),
        }
    if fmt == "anthropic":
        assistant = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": response.text},
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments},
            ],
        }
        results = results if isinstance(results, list) else [results]
        return {
            "model": "m",
            "max_tokens": 9,
            "stream": True,
            "messages": [user, assistant, *results],
        }
    model = {
        "role": "model",
        "parts": [{"functionCall": {"name": call.name, "args": call.arguments}}],
    }
    results = results if isinstance(results, list) else [results]
    return {"contents": [{"role": "user", "parts": [{"text": "x"}]}, model, *results]}


# ------------------------------------------------------------- non-streamed bodies


def test_every_sdk_reads_the_non_streamed_body(sim: Simulator) -> None:
    """Non-streaming requests get each provider's body, which its SDK parses."""
    clients = Clients(sim)
    calls = [("get_weather", {"city": "Lyon"})]
    user = [{"role": "user", "content": "x"}]
    try:
        sim.add_response(text="chat", tool_calls=calls)
        chat = clients.openai.chat.completions.create(model="m", messages=user)  # type: ignore[arg-type]
        assert chat.choices[0].message.tool_calls[0].function.arguments == '{"city":"Lyon"}'  # type: ignore[union-attr, index]
        sim.add_response(text="resp", tool_calls=calls)
        resp = clients.openai.responses.create(model="m", input="x")
        assert resp.output_text == "resp"
        sim.add_response(text="claude", tool_calls=calls)
        msg = clients.anthropic.messages.create(model="m", max_tokens=9, messages=user)  # type: ignore[arg-type]
        assert msg.stop_reason == "tool_use" and msg.content[1].input == {"city": "Lyon"}  # type: ignore[union-attr]
        sim.add_response(text="gem", tool_calls=calls)
        gem = clients.gemini.models.generate_content(model="gemini-2.5-flash", contents="x")
        assert gem.function_calls[0].args == {"city": "Lyon"}  # type: ignore[index]
        sim.add_response(text="bed", tool_calls=calls)
        bed = clients.bedrock.converse(
            modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
        )
        assert bed["output"]["message"]["content"][1]["toolUse"]["input"] == {"city": "Lyon"}
        sim.add_response(text="oll", tool_calls=calls)
        oll = clients.ollama.chat(model="llama3.2", messages=user, stream=False)
        assert oll.message.tool_calls[0].function.arguments == {"city": "Lyon"}  # type: ignore[index]
        sim.add_response(text="coh", tool_calls=calls)
        coh = clients.cohere.chat(model="command-a", messages=user)  # type: ignore[arg-type]
        assert coh.finish_reason == "TOOL_CALL"
    finally:
        clients.close()


def test_sdk_errors_from_http_faults_carry_the_provider_bodies(sim: Simulator) -> None:
    """``http:429`` reaches each SDK as its own rate-limit error."""
    import botocore.exceptions
    import cohere.errors
    import ollama
    from google.genai import errors as genai_errors

    clients = Clients(sim)
    user = [{"role": "user", "content": "x"}]
    try:
        sim.add_response(faults=["http:429"])
        with pytest.raises(genai_errors.ClientError) as gem:
            clients.gemini.models.generate_content(model="g", contents="x")
        assert gem.value.code == 429 and gem.value.status == "RESOURCE_EXHAUSTED"
        sim.add_response(faults=["http:429"])
        with pytest.raises(botocore.exceptions.ClientError) as bed:
            clients.bedrock.converse(
                modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
            )
        assert bed.value.response["Error"]["Code"] == "ThrottlingException"
        sim.add_response(faults=["http:429"])
        with pytest.raises(ollama.ResponseError) as oll:
            clients.ollama.chat(model="m", messages=user, stream=False)
        assert oll.value.status_code == 429
        sim.add_response(faults=["http:429"])
        with pytest.raises(cohere.errors.TooManyRequestsError):
            clients.cohere.chat(
                model="m",
                messages=user,  # type: ignore[arg-type]
                request_options={"max_retries": 0},
            )
    finally:
        clients.close()


# ----------------------------------------------------------------------- recordings


def test_a_recording_is_served_byte_exact_with_the_framing_of_its_content(tmp_path: Path) -> None:
    """Recordings keep their bytes; the content type follows the content, not the path."""
    from toolwire.testing._wire_writing import eventstream_message

    samples = {
        "a.txt": (b"event: x\ndata: {}\n\n", "text/event-stream"),
        "b.txt": (b'{"a":1}\n{"b":2}\n', "application/x-ndjson"),
        "c.txt": (b'[{"a":1},\n{"b":2}]', "application/json"),
        "d.bin": (eventstream_message({":event-type": "messageStart"}, b"{}"), "eventstream"),
    }
    with Simulator() as other:
        for name, (data, _) in samples.items():
            (tmp_path / name).write_bytes(data)
            other.add_recording(tmp_path / name)
        for fmt, (data, kind) in zip(FORMATS, samples.values(), strict=False):
            answer = _post(other, fmt)
            assert answer.content == data
            assert kind in answer.headers["content-type"]


def test_a_recording_refuses_event_faults(tmp_path: Path, sim: Simulator) -> None:
    """Event faults would need re-encoding: only byte faults apply to a recording."""
    path = tmp_path / "r.sse"
    path.write_bytes(b"data: {}\n\n")
    with pytest.raises(toolwire.UsageError, match="byte faults"):
        sim.add_recording(path, faults=["length"])
    sim.add_recording(path, faults=["cut-bytes:3"])
    with pytest.raises(httpx.RemoteProtocolError):
        _post(sim, "openai-chat")


def test_import_toolwire_testing_does_not_load_the_server_stack() -> None:
    """Scenarios and encoders work without uvicorn: it is imported when a simulator starts."""
    import subprocess
    import sys

    code = (
        "import sys, toolwire.testing; "
        "print([m for m in ('uvicorn', 'h11', 'anyio') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_gemini_without_alt_sse_streams_a_json_array(sim: Simulator) -> None:
    """``:streamGenerateContent`` without ``alt=sse`` answers with one JSON array."""
    sim.add_response(text="array", tool_calls=[("f", {"a": 1})])
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    with httpx.Client(base_url=sim.url) as client:
        answer = client.post("/v1beta/models/g:streamGenerateContent", json=body)
    assert answer.headers["content-type"].startswith("application/json")
    chunks = answer.json()
    assert isinstance(chunks, list) and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    asm = toolwire.StreamAssembler()
    asm.feed_bytes(answer.content)
    assert asm.close().tool_calls[0].arguments == {"a": 1}


@pytest.mark.slow
def test_faults_combine_and_a_seed_fixes_where_they_land() -> None:
    """Stalls then a cut all happen; one seed gives the same bytes, other seeds move them."""
    import time

    def run(seed: int) -> tuple[list[str], bytes, float]:
        with Simulator(seed=seed) as other:
            other.add_response(text="x" * 200, faults=["stall:0.4", "cut:0.7", "stall-first:0.3"])
            path, body = request_body("openai-chat")
            received = bytearray()
            started = time.monotonic()
            with (
                httpx.Client(base_url=other.url) as client,
                pytest.raises(httpx.RemoteProtocolError),
                client.stream("POST", path, json=body) as response,
            ):
                for piece in response.iter_raw():
                    received += piece
            elapsed = time.monotonic() - started
            other.wait_for_connections_closed(5)
            return other.requests[-1].notes, bytes(received), elapsed

    notes, data, elapsed = run(8)
    assert elapsed >= 0.65  # both stalls happened (before the cut)
    again = run(8)
    assert (again[0], again[1]) == (notes, data)
    assert any(note.startswith("cut after") for note in notes)
    assert {tuple(run(seed)[0]) for seed in range(9, 14)} != {tuple(notes)}


def test_keep_bounds_what_is_remembered() -> None:
    """With ``keep=3`` only the last three requests stay in ``requests``."""
    with Simulator(keep=3, loop=True) as other:
        other.add_response(text="x")
        for _ in range(5):
            _post(other, "ollama", stream=False)
        assert len(other.requests) == 3
        assert len(other.connections) <= 3
    with pytest.raises(toolwire.UsageError):
        Simulator(keep=0)


def test_the_readme_pytest_example(toolwire_simulator: Simulator) -> None:
    """The README's example: a cut stream raises StreamAborted, its call only evidence."""
    toolwire_simulator.add_response(
        tool_calls=[("transfer", {"amount": 100, "to": "Ann"})], faults=["cut:0.8"]
    )
    client = openai.OpenAI(base_url=toolwire_simulator.base_url("openai-chat"), api_key="test")
    stream = client.chat.completions.create(model="gpt-4o", messages=[], stream=True)
    with pytest.raises(toolwire.StreamAborted) as cut, toolwire.stream(stream) as events:
        for _event in events:
            pass
    assert cut.value.partial is not None
    assert cut.value.partial.calls[0].name == "transfer"  # evidence, never executed
    client.close()


def test_concurrent_clients_each_get_one_whole_response() -> None:
    """Eight clients at once: each scripted response is served exactly once, whole."""
    from concurrent.futures import ThreadPoolExecutor

    texts = {f"answer {i} é" for i in range(8)}
    with Simulator(seed=6) as other:
        for text in sorted(texts):
            other.add_response(text=text, tool_calls=[("f", {"i": text})])

        def one(_: int) -> toolwire.Response:
            asm = toolwire.StreamAssembler()
            asm.feed_bytes(_post(other, "anthropic").content)
            return asm.close()

        with ThreadPoolExecutor(8) as pool:
            responses = list(pool.map(one, range(8)))
        assert {r.text for r in responses} == texts
        assert all(r.tool_calls[0].arguments == {"i": r.text} for r in responses)
        assert other.wait_for_connections_closed(5)
        assert all(record.completed for record in other.requests)
