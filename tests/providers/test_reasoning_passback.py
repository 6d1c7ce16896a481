"""Issue 19's passback rules: Gemini parts echoed as they came, OpenAI-compatible reasoning
(DeepSeek/Kimi, OpenRouter, Mistral chunks) and signatures sent back, the [DONE] profile."""

from __future__ import annotations

import functools
import json
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from adapter_support import assemble_bytes, assemble_every_way
from toolwire import StreamAborted, StreamFormatError
from toolwire._providers import FORMATS
from toolwire.testing import Simulator

MESSAGES: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Lyon?"}]
CALL = ("get_weather", {"city": "Lyon"})


def tools() -> toolwire.Toolbox:
    box = toolwire.Toolbox()

    @box.tool
    def get_weather(city: str) -> str:
        """The weather."""
        return f"Sunny in {city}"

    return box


def gemini_chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-2.5-flash"}


CODE = {"executableCode": {"language": "PYTHON", "code": "print(6 * 7)"}}
RESULT = {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "42\n"}}
SERVER_CALL = {
    "toolCall": {"toolType": "GOOGLE_SEARCH_WEB", "id": "srv1", "args": {"q": "lyon"}},
    "thoughtSignature": "c2lnLXNlcnZlcg==",
}
SERVER_RESPONSE = {"toolResponse": {"id": "srv1", "response": {"hits": 3}}}
CLIENT_CALL = {
    "functionCall": {"name": "get_weather", "args": {"city": "Lyon"}},
    "thoughtSignature": "c2lnLWNsaWVudA==",
}


def test_gemini_code_execution_and_server_tool_parts_are_echoed_in_order() -> None:
    """executableCode, codeExecutionResult and a signed server-side toolCall/toolResponse
    go back unchanged and in order; only the functionCall is a client call."""
    payloads = [
        gemini_chunk({"text": "Let me compute. "}, CODE),
        gemini_chunk(RESULT, SERVER_CALL),
        gemini_chunk(SERVER_RESPONSE, CLIENT_CALL, finish="STOP"),
    ]
    response, _ = assemble_every_way(payloads)
    assert [c.name for c in response.tool_calls] == ["get_weather"]
    (turn,) = FORMATS.provider("gemini").assistant_turn(response)
    expected = [{"text": "Let me compute. "}, CODE, RESULT, SERVER_CALL, SERVER_RESPONSE]
    assert turn["parts"][:5] == expected
    client = turn["parts"][5]
    assert client["thoughtSignature"] == CLIENT_CALL["thoughtSignature"]
    assert client["functionCall"]["args"] == {"city": "Lyon"} and len(turn["parts"]) == 6


def test_gemini_unknown_and_signature_only_parts_are_echoed_unchanged() -> None:
    """A part type toolwire does not know, and a part holding only a signature, come back
    as they were sent, in their place between the text runs."""
    unknown = {"futurePart": {"x": [1, 2]}, "thoughtSignature": "AAA="}
    lone = {"thoughtSignature": "QkJC"}
    payloads = [gemini_chunk({"text": "a"}, unknown, {"text": "b"}, lone, finish="STOP")]
    response, _ = assemble_every_way(payloads)
    (turn,) = FORMATS.provider("gemini").assistant_turn(response)
    assert turn["parts"] == [{"text": "a"}, unknown, {"text": "b"}, lone]
    assert response.text == "ab"


GEMINI_PARTS = [
    gemini_chunk({"text": "Let me compute. "}, CODE),
    gemini_chunk(RESULT, SERVER_CALL),
    gemini_chunk(SERVER_RESPONSE, {"futurePart": {"x": 1}}, CLIENT_CALL, finish="STOP"),
]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_gemini_parts_assemble_the_same_at_any_split(data: st.DataObject) -> None:
    """Gemini's server-side and unknown parts, as an SSE body cut at Hypothesis-chosen
    points, give the same response (parts included) as fed whole."""
    body = b"".join(f"data: {json.dumps(p)}\r\n\r\n".encode() for p in GEMINI_PARTS)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    whole = assemble_bytes([body])[0]
    assert [p.kind for p in whole.parts] == ["text", "item", "item", "item", "item", "item", "call"]
    assert assemble_bytes(pieces)[0] == whole


# --------------------------------------------------------------- OpenAI-compatible


def chat(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return {
        "id": "chatcmpl-1",
        "model": "m",
        "object": "chat.completion.chunk",
        "choices": [choice],
    }


def test_openrouter_reasoning_details_are_merged_and_echoed() -> None:
    """Streamed reasoning_details entries of one index join into one entry (text summed,
    the signature kept), a new index is a new entry, and the list goes back as a whole."""
    payloads = [
        chat(
            {
                "reasoning": "Pla",
                "reasoning_details": [
                    {
                        "type": "reasoning.text",
                        "text": "Pla",
                        "index": 0,
                        "format": "anthropic-claude-v1",
                    }
                ],
            }
        ),
        chat(
            {
                "reasoning": "n.",
                "reasoning_details": [
                    {"type": "reasoning.text", "text": "n.", "signature": None, "index": 0}
                ],
            }
        ),
        chat({"reasoning_details": [{"type": "reasoning.text", "signature": "SIG", "index": 0}]}),
        chat({"reasoning_details": [{"type": "reasoning.encrypted", "data": "ENC", "index": 1}]}),
        chat(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city": "Lyon"}'},
                    }
                ]
            }
        ),
        chat({}, "tool_calls"),
    ]
    response, _ = assemble_every_way(payloads)
    (message,) = FORMATS.provider("openai-chat").assistant_turn(response)
    assert message["reasoning_details"] == [
        {
            "type": "reasoning.text",
            "text": "Plan.",
            "index": 0,
            "format": "anthropic-claude-v1",
            "signature": "SIG",
        },
        {"type": "reasoning.encrypted", "data": "ENC", "index": 1},
    ]
    assert "reasoning" not in message and "reasoning_content" not in message
    assert response.reasoning == "Plan."


MISTRAL = [
    chat(
        {
            "role": "assistant",
            "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "The user "}]}],
        }
    ),
    chat({"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "greets."}]}]}),
    chat({"content": [{"type": "text", "text": "Hello"}]}),
    chat({"content": "!"}),
    chat({"content": ""}, "stop"),
]


def test_mistral_content_chunks_are_read_and_echoed_as_chunks() -> None:
    """Magistral's thinking and text chunks are reasoning and text, and go back as Mistral's
    own content chunks, in order."""
    response, _ = assemble_every_way(MISTRAL)
    assert (response.reasoning, response.text) == ("The user greets.", "Hello!")
    (message,) = FORMATS.provider("openai-chat").assistant_turn(response)
    assert message["content"] == [
        {"type": "thinking", "thinking": [{"type": "text", "text": "The user greets."}]},
        {"type": "text", "text": "Hello!"},
    ]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_mistral_chunks_assemble_the_same_at_any_split(data: st.DataObject) -> None:
    """The Mistral stream as an SSE body, cut at Hypothesis-chosen points, gives the same
    response as fed whole."""
    body = b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in MISTRAL) + b"data: [DONE]\n\n"
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert assemble_bytes(pieces)[0] == assemble_bytes([body])[0]


@pytest.mark.parametrize(
    "content",
    [[{"text": "no type"}], [{"type": "thinking", "thinking": "not a list"}], ["bare"], 5],
)
def test_broken_content_chunks_raise_a_typed_format_error(content: Any) -> None:
    """A content list that is not Mistral's chunk shape is a StreamFormatError, not a
    crash, after a well-formed chunk list was read."""
    asm = toolwire.StreamAssembler(format="openai-chat")
    asm.feed(MISTRAL[0])
    assert asm.partial().reasoning == "The user "
    with pytest.raises(StreamFormatError):
        asm.feed(chat({"content": content}))


# ------------------------------------------------- real SDK against the simulator


def first_turn(sim: Simulator, client: openai.OpenAI, model: str, **response: Any) -> Any:
    sim.add_response(tool_calls=[CALL], **response)
    box = tools()
    source = client.chat.completions.create(model=model, messages=MESSAGES, stream=True)
    return toolwire.run_turn(source, box, executor=toolwire.Executor(box, scope="passback"))


def second_request(client: openai.OpenAI, model: str, messages: list[Any], **extra: Any) -> str:
    source = client.chat.completions.create(
        model=model, messages=[*MESSAGES, *messages], stream=True, extra_body=extra or None
    )
    with toolwire.stream(source, total_timeout=30) as handle:
        for _ in handle:
            pass
    return handle.response.text


@pytest.mark.parametrize("model", ["deepseek-reasoner", "kimi-k2-thinking"])
def test_reasoning_content_goes_back_after_a_tool_call(model: str) -> None:
    """DeepSeek/Kimi thinking mode: the next request carries reasoning_content on the
    assistant message and is accepted; without it the simulator answers DeepSeek's 400."""
    with (
        Simulator() as sim,
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as client,
    ):
        turn = first_turn(sim, client, model, reasoning="I should look it up.")
        assert turn.messages[0]["reasoning_content"] == "I should look it up."
        sim.add_response("Sunny.")
        assert second_request(client, model, turn.messages) == "Sunny."
        stripped = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in turn.messages]
        with pytest.raises(openai.BadRequestError, match="reasoning_content"):
            second_request(client, model, stripped)


def test_deepseek_thinking_enabled_by_the_request_needs_the_reasoning() -> None:
    """``thinking: {"type": "enabled"}`` on deepseek-chat is thinking mode too."""
    with (
        Simulator() as sim,
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as client,
    ):
        turn = first_turn(sim, client, "deepseek-chat", reasoning="Look it up.")
        bare = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in turn.messages]
        sim.add_response("Sunny.")
        assert second_request(client, "deepseek-chat", bare) == "Sunny."  # not thinking mode
        with pytest.raises(openai.BadRequestError, match="reasoning_content"):
            second_request(client, "deepseek-chat", bare, thinking={"type": "enabled"})


def test_gemini_openai_compatible_thought_signature_goes_back_on_the_call() -> None:
    """Gemini's OpenAI-compatible endpoint: the call's extra_content.google.thought_signature
    is in ToolCall.metadata and on the echoed tool call; dropping it is Gemini 3's 400."""
    model = "gemini-3-pro-preview"
    with (
        Simulator() as sim,
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as client,
    ):
        turn = first_turn(sim, client, model, profile="extra-content-signatures")
        (call,) = turn.response.tool_calls
        signature = call.metadata["extra_content"]["google"]["thought_signature"]
        assert signature.startswith("sig-")
        (entry,) = turn.messages[0]["tool_calls"]
        assert entry["extra_content"] == {"google": {"thought_signature": signature}}
        sim.add_response("Sunny.")
        assert second_request(client, model, turn.messages) == "Sunny."
        bare = [dict(m) for m in turn.messages]
        bare[0]["tool_calls"] = [
            {k: v for k, v in e.items() if k != "extra_content"} for e in bare[0]["tool_calls"]
        ]
        with pytest.raises(openai.BadRequestError, match="thought_signature"):
            second_request(client, model, bare)


def test_mistral_chunks_through_the_openai_sdk_and_back() -> None:
    """A Magistral-shaped stream read through the openai SDK gives reasoning and text (it
    raised StreamFormatError before) and the echoed turn is accepted."""
    with (
        Simulator() as sim,
        openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as client,
    ):
        sim.add_response(
            "Checking.",
            reasoning="Think first.",
            tool_calls=[CALL],
            profile="mistral-content-chunks",
        )
        box = tools()
        source = client.chat.completions.create(
            model="magistral-medium-latest", messages=MESSAGES, stream=True
        )
        turn = toolwire.run_turn(source, box, executor=toolwire.Executor(box, scope="mistral"))
        assert (turn.response.reasoning, turn.response.text) == ("Think first.", "Checking.")
        assert turn.messages[0]["content"] == [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Think first."}]},
            {"type": "text", "text": "Checking."},
        ]
        sim.add_response("Sunny.")
        assert second_request(client, "magistral-medium-latest", turn.messages) == "Sunny."


# --------------------------------------------------------------- the [DONE] profile


@functools.cache
def done_only_body() -> bytes:
    """A simulated body of the done-marker-only profile (text and one call)."""
    with (
        Simulator() as sim,
        httpx.Client(base_url=sim.base_url("openai-chat"), timeout=10) as client,
    ):
        sim.add_response("Hi", tool_calls=[CALL], profile="done-marker-only")
        body = {"model": "m", "messages": MESSAGES, "stream": True}
        reply = client.post("chat/completions", json=body)
    assert reply.status_code == 200, reply.text
    assert b'"finish_reason": "' not in reply.content and b"[DONE]" in reply.content
    return reply.content


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_done_marker_is_the_finish_only_under_its_profile(data: st.DataObject) -> None:
    """A stream with [DONE] and no finish reason: refused as openai-chat (and auto), taken
    under openai-chat-done-marker with done_marker_finish set, whole, byte by byte and at
    Hypothesis-chosen splits; the same stream cut before [DONE] stays refused."""
    body = done_only_body()
    cuts = sorted(data.draw(st.sets(st.integers(1, len(body) - 1), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    for fmt in ("openai-chat", "auto"):
        with pytest.raises(StreamAborted):
            assemble_bytes([body], fmt)
    whole, _ = assemble_bytes([body], "openai-chat-done-marker")
    assert whole.done_marker_finish and whole.raw_finish_reason == "[DONE]"
    assert whole.finish_reason == "tool_calls" and whole.text == "Hi"
    assert [c.arguments for c in whole.tool_calls] == [CALL[1]]
    assert assemble_bytes(pieces, "openai-chat-done-marker")[0] == whole
    cut = body[: body.rindex(b"data: [DONE]")]
    with pytest.raises(StreamAborted):
        assemble_bytes([cut], "openai-chat-done-marker")


def test_done_marker_profile_byte_by_byte_and_a_normal_finish_is_unmarked() -> None:
    """Fed byte by byte the profile gives the same response; a stream that does send its
    finish reason keeps it and is not marked."""
    body = done_only_body()
    whole, _ = assemble_bytes([body], "openai-chat-done-marker")
    assert (
        assemble_bytes([body[i : i + 1] for i in range(len(body))], "openai-chat-done-marker")[0]
        == whole
    )
    normal = b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in MISTRAL) + b"data: [DONE]\n\n"
    response, _ = assemble_bytes([normal], "openai-chat-done-marker")
    assert not response.done_marker_finish and response.raw_finish_reason == "stop"


# ------------------------------------------- Gemini through google-genai and back


def genai_client(sim: Simulator) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=sim.base_url("gemini"), retry_options=types.HttpRetryOptions(attempts=1)
    )
    return genai.Client(api_key="test", http_options=options)


def test_gemini_parts_through_google_genai_and_back() -> None:
    """Code execution, a signed server-side tool call and a signed function call read
    through google-genai: one client call, and the echoed model turn (every part, each
    signature) is accepted by a Gemini 3 request; losing the call's signature is its 400."""
    from google.genai import errors, types

    box = tools()
    config = types.GenerateContentConfig(
        tools=box.definitions("gemini"),
        thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW),
    )
    user = {"role": "user", "parts": [{"text": "Weather in Lyon?"}]}
    with Simulator() as sim:
        client = genai_client(sim)
        sim.add_response(
            "Looking.",
            tool_calls=[CALL],
            profile=["code-execution", "server-tool-parts", "thought-signatures"],
        )
        source = client.models.generate_content_stream(
            model="gemini-3-pro-preview", contents=[user], config=config
        )
        turn = toolwire.run_turn(source, box, executor=toolwire.Executor(box, scope="genai"))
        assert [c.name for c in turn.response.tool_calls] == ["get_weather"]
        (model_turn, answers) = turn.messages
        kinds = [next(iter(k for k in p if k != "thoughtSignature")) for p in model_turn["parts"]]
        assert kinds == [
            "executableCode",
            "codeExecutionResult",
            "toolCall",
            "toolResponse",
            "text",
            "functionCall",
        ]
        assert model_turn["parts"][2]["thoughtSignature"]
        assert model_turn["parts"][5]["thoughtSignature"]
        sim.add_response("Sunny.")
        reply = client.models.generate_content(
            model="gemini-3-pro-preview", contents=[user, *turn.messages], config=config
        )
        assert reply.text == "Sunny."
        unsigned = {**model_turn, "parts": [dict(p) for p in model_turn["parts"]]}
        del unsigned["parts"][5]["thoughtSignature"]
        with pytest.raises(errors.ClientError, match="thought_signature"):
            client.models.generate_content(
                model="gemini-3-pro-preview", contents=[user, unsigned, answers], config=config
            )
        client.close()
