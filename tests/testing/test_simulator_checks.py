"""The providers' request checks as properties: a conversation whose every call is answered
passes; dropping one answer, or answering an unknown id, is refused, in every format that
checks tool results."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolwire.testing._formats import check_request

CHECKED = ("openai-chat", "cohere", "anthropic", "bedrock-converse", "gemini")
turns = st.lists(st.integers(0, 3), min_size=1, max_size=4)  # calls per assistant turn


def _lookup(_: str) -> set[str] | None:
    return None


def conversation(fmt: str, calls_per_turn: list[int], rng: random.Random) -> dict[str, Any]:
    """A valid request body: each assistant turn's calls answered right after it."""
    names = [[f"t{t}c{c}" for c in range(k)] for t, k in enumerate(calls_per_turn)]
    if fmt in ("openai-chat", "cohere"):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for ids in names:
            calls = [
                {"id": i, "type": "function", "function": {"name": i, "arguments": "{}"}}
                for i in ids
            ]
            messages.append({"role": "assistant", "content": "ok", "tool_calls": calls})
            answers = [{"role": "tool", "tool_call_id": i, "content": "r"} for i in ids]
            rng.shuffle(answers)
            messages += answers
            messages.append({"role": "user", "content": "next"})
        return {"model": "m", "messages": messages}
    if fmt in ("anthropic", "bedrock-converse"):
        messages = [{"role": "user", "content": [_text(fmt, "go")]}]
        for ids in names:
            messages.append(
                {"role": "assistant", "content": [_text(fmt, "ok"), *(_use(fmt, i) for i in ids)]}
            )
            answers = [_result(fmt, i) for i in ids]
            rng.shuffle(answers)
            messages.append({"role": "user", "content": [*answers, _text(fmt, "next")]})
        return {"model": "m", "messages": messages}
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for ids in names:
        parts = [{"functionCall": {"name": i, "args": {}}} for i in ids] or [{"text": "ok"}]
        contents.append({"role": "model", "parts": parts})
        answers = [{"functionResponse": {"name": i, "response": {}}} for i in ids]
        rng.shuffle(answers)
        contents.append({"role": "user", "parts": answers or [{"text": "next"}]})
    return {"contents": contents}


def _text(fmt: str, text: str) -> dict[str, Any]:
    return {"type": "text", "text": text} if fmt == "anthropic" else {"text": text}


def _use(fmt: str, call_id: str) -> dict[str, Any]:
    if fmt == "anthropic":
        return {"type": "tool_use", "id": call_id, "name": call_id, "input": {}}
    return {"toolUse": {"toolUseId": call_id, "name": call_id, "input": {}}}


def _result(fmt: str, call_id: str) -> dict[str, Any]:
    if fmt == "anthropic":
        return {"type": "tool_result", "tool_use_id": call_id, "content": "r"}
    return {"toolResult": {"toolUseId": call_id, "content": [{"text": "r"}]}}


def _answers(fmt: str, body: dict[str, Any]) -> list[tuple[list[Any], int]]:
    """(container, position) of every answer in ``body``."""
    out = []
    if fmt in ("openai-chat", "cohere"):
        messages = body["messages"]
        out = [(messages, i) for i, m in enumerate(messages) if m["role"] == "tool"]
    elif fmt == "gemini":
        for turn in body["contents"]:
            out += [
                (turn["parts"], i) for i, p in enumerate(turn["parts"]) if "functionResponse" in p
            ]
    else:
        for message in body["messages"]:
            content = message["content"]
            out += [
                (content, i)
                for i, block in enumerate(content)
                if block.get("type") == "tool_result" or "toolResult" in block
            ]
    return out


@pytest.mark.parametrize("fmt", CHECKED)
@given(calls=turns, seed=st.integers())
def test_a_fully_answered_conversation_passes(fmt: str, calls: list[int], seed: int) -> None:
    """Every call answered in the next message(s), in any order: accepted."""
    body = conversation(fmt, calls, random.Random(seed))
    assert check_request(fmt, body, _lookup) is None


@pytest.mark.parametrize("fmt", CHECKED)
@given(calls=turns, seed=st.integers(), data=st.data())
def test_a_missing_or_unknown_answer_is_refused(
    fmt: str, calls: list[int], seed: int, data: st.DataObject
) -> None:
    """Dropping one answer, or pointing it at an id no call has, is refused."""
    body = conversation(fmt, calls, random.Random(seed))
    answers = _answers(fmt, body)
    if not answers:
        return
    container, position = data.draw(st.sampled_from(answers))
    if data.draw(st.booleans()):
        del container[position]
        if isinstance(container, list) and not container and fmt == "gemini":
            container.append({"text": "no answer"})
    else:
        answer = container[position]
        if fmt in ("openai-chat", "cohere"):
            answer["tool_call_id"] = "unknown"
        elif fmt == "gemini":
            answer["functionResponse"]["name"] = "unknown"
        elif fmt == "anthropic":
            answer["tool_use_id"] = "unknown"
        else:
            answer["toolResult"]["toolUseId"] = "unknown"
    assert check_request(fmt, body, _lookup) is not None


@given(calls=st.integers(1, 3))
def test_responses_outputs_must_answer_a_known_call(calls: int) -> None:
    """``function_call_output`` ids must be in the input or the previous response."""
    ids = [f"call_{i}" for i in range(calls)]
    outputs = [{"type": "function_call_output", "call_id": i, "output": "r"} for i in ids]
    served = {"resp_1": set(ids)}
    body = {"model": "m", "previous_response_id": "resp_1", "input": outputs}
    assert check_request("openai-responses", body, served.get) is None
    inline = [{"type": "function_call", "call_id": i, "name": "f", "arguments": "{}"} for i in ids]
    assert check_request("openai-responses", {"input": [*inline, *outputs]}, served.get) is None
    assert check_request("openai-responses", {"input": outputs}, served.get) is not None
    unknown = {"previous_response_id": "resp_9", "input": outputs}
    assert check_request("openai-responses", unknown, served.get) is not None


def test_anthropic_roles_must_alternate_and_start_with_user() -> None:
    """Two user turns in a row, or an assistant first, are refused."""
    twice = {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]}
    assert "alternate" in (check_request("anthropic", twice, _lookup) or "")
    first = {"messages": [{"role": "assistant", "content": "a"}]}
    assert "first message" in (check_request("anthropic", first, _lookup) or "")


def test_ollama_checks_nothing() -> None:
    """Ollama matches tool results by position and name: any body that is an object passes."""
    body = {"messages": [{"role": "tool", "content": "orphan"}]}
    assert check_request("ollama", body, _lookup) is None


def test_gemini_checks_read_the_snake_case_keys_google_genai_sends() -> None:
    """google-genai sends ``function_call`` / ``function_response``: a call turn answered
    by nothing is refused in that spelling too, and a matching answer passes."""
    call = {"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]}
    unanswered = {"contents": [{"role": "user", "parts": [{"text": "go"}]}, call,
                               {"role": "user", "parts": [{"text": "and?"}]}]}  # fmt: skip
    assert "number of function response parts" in (
        check_request("gemini", unanswered, _lookup) or ""
    )
    answer = {"role": "user", "parts": [{"function_response": {"name": "f", "response": {}}}]}
    answered = {"contents": [{"role": "user", "parts": [{"text": "go"}]}, call, answer]}
    assert check_request("gemini", answered, _lookup) is None
