"""Hostile streams: only typed errors escape (lone surrogates in identities), every
identifier and the merged usage are bounded, usage reports cost linear time, and
synthesised call ids tell responses apart exactly where the wire does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

import toolwire
from toolwire import StreamAssembler, StreamLimitExceeded


def chat(
    delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any
) -> dict[str, Any]:
    """One OpenAI chat chunk (``top`` replaces or adds response-level members)."""
    body: dict[str, Any] = {"id": "chatcmpl-1", "model": "m", "created": 1700000000}
    body["choices"] = [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
    body.update(top)
    return body


def idless_call(name: str = "f", args: str = "{}") -> dict[str, Any]:
    """A tool-call delta whose entry has no id (the shape of servers that send none)."""
    return {"tool_calls": [{"index": 0, "function": {"name": name, "arguments": args}}]}


def run(payloads: list[Any], **kwargs: Any) -> toolwire.Response:
    """Feed ``payloads`` to a new assembler and close it."""
    asm = StreamAssembler(**kwargs)
    for payload in payloads:
        asm.feed(payload)
    return asm.close()


# -------------------------------------------------------------------- typed errors


@pytest.mark.parametrize("field", ["id", "model"])
def test_a_lone_surrogate_in_the_identity_still_synthesises_ids(field: str) -> None:
    """A lone surrogate in the response id or model, with a call without id, gives a
    synthesised id (before: an untyped UnicodeEncodeError, raised again by every close)."""
    first = chat(idless_call(), **{field: "x\ud800y"})
    asm = StreamAssembler()
    started = asm.feed(first)
    asm.feed(chat(finish="tool_calls"))
    response = asm.close()
    (call,) = response.tool_calls
    assert call.synthetic_id and call.id.startswith("call_")
    assert [e.id for e in started if isinstance(e, toolwire.ToolCallStarted)] == [call.id]
    assert asm.close() is response
    assert asm.partial().calls[0].id == call.id


def test_a_lone_surrogate_in_an_aborted_stream_gives_its_partial() -> None:
    """The partial of a failing stream with such an identity is built, not a crash."""
    asm = StreamAssembler()
    asm.feed(chat(idless_call(args='{"a":'), id="\udfff"))
    for _ in range(2):
        with pytest.raises(toolwire.StreamAborted) as info:
            asm.close()
        assert info.value.partial is not None and info.value.partial.calls[0].synthetic_id


# --------------------------------------------------------------------------- limits

_LONG = "x" * 65


def _call_id() -> list[Any]:
    entry = {"index": 0, "id": _LONG, "function": {"name": "f", "arguments": "{}"}}
    return [chat({"tool_calls": [entry]})]


def _name() -> list[Any]:
    return [chat(idless_call(name=_LONG))]


def _response_id() -> list[Any]:
    return [chat({"content": "hi"}, id=_LONG)]


def _model() -> list[Any]:
    return [chat({"content": "hi"}, model=_LONG)]


def _created() -> list[Any]:
    return [{"model": "llama", "created_at": _LONG, "message": {"content": "hi"}, "done": False}]


def _item_id() -> list[Any]:
    item = {"type": "function_call", "id": _LONG, "call_id": "c1", "name": "f", "arguments": ""}
    return [{"type": "response.output_item.added", "output_index": 0, "item": item}]


@pytest.mark.parametrize(
    "payloads",
    [_call_id, _name, _response_id, _model, _created, _item_id],
    ids=lambda f: f.__name__,
)
def test_every_identifier_is_bounded(payloads: Callable[[], list[Any]]) -> None:
    """An id, name, response id, model, timestamp or item id longer than max_id_chars
    raises StreamLimitExceeded naming the limit, and the failure sticks."""
    asm = StreamAssembler(max_id_chars=64)
    with pytest.raises(StreamLimitExceeded) as info:
        for payload in payloads():
            asm.feed(payload)
    assert (info.value.limit, info.value.value) == ("max_id_chars", 64)
    assert info.value.partial is not None
    with pytest.raises(StreamLimitExceeded):
        asm.close()


def test_identifiers_at_the_limit_are_accepted() -> None:
    """An identifier of exactly max_id_chars characters is fine."""
    entry = {"index": 0, "id": "i" * 64, "function": {"name": "n" * 64, "arguments": "{}"}}
    response = run(
        [chat({"tool_calls": [entry]}, id="r" * 64), chat(finish="tool_calls")], max_id_chars=64
    )
    assert response.tool_calls[0].id == "i" * 64 and response.response_id == "r" * 64


def test_the_default_identifier_limit_refuses_a_huge_id() -> None:
    """By default (1024 characters) a call id of a million characters is refused."""
    entry = {"index": 0, "id": "x" * 1_000_000, "function": {"name": "f", "arguments": "{}"}}
    with pytest.raises(StreamLimitExceeded, match="call id"):
        StreamAssembler().feed(chat({"tool_calls": [entry]}))


def _usage(i: int, key: str) -> dict[str, Any]:
    return {"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": i, key: i}}


def test_usage_fields_are_bounded() -> None:
    """A stream inventing a new usage member per chunk stops at max_usage_fields."""
    asm = StreamAssembler(format="openai-chat", max_usage_fields=10)
    asm.feed(chat({"content": "hi"}))
    with pytest.raises(StreamLimitExceeded) as info:
        for i in range(100):
            asm.feed(_usage(i, f"k{i}"))
    assert (info.value.limit, info.value.value) == ("max_usage_fields", 10)
    assert info.value.partial is not None and info.value.partial.usage is not None


@pytest.mark.slow
def test_usage_reports_cost_linear_time() -> None:
    """Four times the usage chunks cost about four times the CPU time (bound: under 8x, so
    a loaded machine cannot fail it, while quadratic work would be about 16x), with every
    chunk adding or changing members up to the default bound."""

    def cost(n: int) -> float:
        best = float("inf")
        for _ in range(5):
            asm = StreamAssembler(format="openai-chat")
            asm.feed(chat({"content": "hi"}))
            chunks = [_usage(i, f"k{i % 200}") for i in range(n)]
            start = time.process_time()
            for chunk in chunks:
                asm.feed(chunk)
            best = min(best, time.process_time() - start)
        return best

    ratio = cost(16000) / cost(4000)
    assert ratio < 8.0, ratio


def test_usage_merges_key_by_key_and_events_keep_their_snapshot() -> None:
    """Each UsageReported holds the usage as it was then; Usage.raw merges the reports."""
    asm = StreamAssembler(format="openai-chat")
    asm.feed(chat({"content": "hi"}))
    (first,) = asm.feed({"choices": [], "usage": {"prompt_tokens": 1, "a": 1}})
    (second,) = asm.feed({"choices": [], "usage": {"completion_tokens": 2, "b": 2}})
    assert isinstance(first, toolwire.UsageReported) and isinstance(second, toolwire.UsageReported)
    assert dict(first.usage.raw) == {"prompt_tokens": 1, "a": 1}
    assert dict(second.usage.raw) == {"prompt_tokens": 1, "a": 1, "completion_tokens": 2, "b": 2}
    assert (second.usage.input_tokens, second.usage.output_tokens) == (1, 2)


# ------------------------------------------------------------ ids across responses


def _chat_stream(created: int) -> list[Any]:
    # an OpenAI-compatible server that sends neither a response id nor call ids
    first = chat(idless_call(), created=created)
    del first["id"]
    return [first, chat(finish="tool_calls", created=created)]


def _gemini_stream(create_time: str) -> list[Any]:
    content = {"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]}
    body = {"candidates": [{"content": content, "finishReason": "STOP"}]}
    return [{**body, "modelVersion": "gemini-2.0-flash", "createTime": create_time}]


def _ollama_stream(created_at: str) -> list[Any]:
    call = {"function": {"name": "f", "arguments": {}}}
    return [
        {
            "model": "llama",
            "created_at": created_at,
            "message": {"tool_calls": [call]},
            "done": False,
        },
        {"model": "llama", "created_at": created_at, "done": True, "done_reason": "stop"},
    ]


@pytest.mark.parametrize(
    ("make", "one", "other"),
    [
        (_chat_stream, 1700000000, 1700000001),
        (_gemini_stream, "2026-05-19T14:59:42.780296Z", "2026-05-19T14:59:43.120000Z"),
        (_ollama_stream, "2026-05-19T14:59:42.78Z", "2026-05-19T14:59:50.01Z"),
    ],
    ids=["openai-chat created", "gemini createTime", "ollama created_at"],
)
def test_synthesised_ids_differ_between_responses_and_repeat_for_the_same_bytes(
    make: Callable[[Any], list[Any]], one: Any, other: Any
) -> None:
    """Two responses without call ids that the wire's timestamp tells apart get different
    synthesised ids; the same payloads always give the same ids."""
    first = run(make(one))
    again = run(make(one))
    second = run(make(other))
    (a,), (b,), (c,) = first.tool_calls, again.tool_calls, second.tool_calls
    assert a.synthetic_id and b.synthetic_id and c.synthetic_id
    assert a.id == b.id != c.id
    assert first.created is not None and first.created != second.created


def test_responses_keep_their_creation_time() -> None:
    """The Responses API's created_at becomes Response.created."""
    created = {"id": "resp_1", "model": "gpt", "created_at": 1741290958}
    response = run(
        [
            {"type": "response.created", "response": created},
            {"type": "response.completed", "response": {**created, "status": "completed"}},
        ]
    )
    assert response.created == "1741290958"
