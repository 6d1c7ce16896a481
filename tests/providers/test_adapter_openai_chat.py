"""OpenAI Chat Completions and OpenAI-compatible servers: one small hand-written stream per
real-world quirk (provider-quirks.md), each assembled to the right calls or error."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire
from toolwire import (
    Finished,
    ReasoningDelta,
    StreamAssembler,
    TextDelta,
    ToolCallArguments,
    ToolCallRejected,
    ToolCallStarted,
)


def chunk(
    delta: dict[str, Any] | None = None,
    finish: str | None = None,
    *,
    index: int = 0,
    **top: Any,
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` with a single choice."""
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m"}
    body["choices"] = [{"index": index, "delta": delta or {}, "finish_reason": finish}]
    body.update(top)
    return body


def tc(
    index: int | None = None,
    id: str | None = None,
    name: str | None = None,
    args: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """One ``tool_calls[]`` entry; ``None`` fields are left out."""
    entry: dict[str, Any] = dict(extra)
    if index is not None:
        entry["index"] = index
    if id is not None:
        entry["id"] = id
    function: dict[str, Any] = {}
    if name is not None:
        function["name"] = name
    if args is not None:
        function["arguments"] = args
    entry["function"] = function
    return entry


def calls(*entries: dict[str, Any]) -> dict[str, Any]:
    """A delta carrying tool-call entries."""
    return {"tool_calls": list(entries)}


def assemble(payloads: list[Any], **kwargs: Any) -> tuple[list[Any], toolwire.Response]:
    """Feed ``payloads`` (in both orders of feeding: dict and JSON text) and close."""
    asm = StreamAssembler(**kwargs)
    events = [e for p in payloads for e in asm.feed(p)]
    response = asm.close()
    again = StreamAssembler(**kwargs)
    for p in payloads:
        again.feed(p if isinstance(p, str) else json.dumps(p))
    assert again.close() == response
    return events, response


def summary(response: toolwire.Response) -> list[tuple[str, str, Any]]:
    """(id, name, arguments) of every finished call."""
    return [(c.id, c.name, c.arguments) for c in response.tool_calls]


def test_id_and_name_repeated_in_every_chunk_are_not_concatenated() -> None:
    """Fireworks/DeepSeek/Qwen/MiniMax repeat id and name on every fragment: set once."""
    stream = [
        chunk(calls(tc(0, "call_a", "read_file", '{"pa'))),
        chunk(calls(tc(0, "call_a", "read_file", 'th": '))),
        chunk(calls(tc(0, "call_a", "read_file", '"x"}'))),
        chunk(finish="tool_calls"),
    ]
    events, response = assemble(stream)
    assert summary(response) == [("call_a", "read_file", {"path": "x"})]
    assert sum(isinstance(e, ToolCallStarted) for e in events) == 1


def test_missing_index() -> None:
    """Calls without ``index`` (Gemini's OpenAI endpoint, Mistral) still assemble."""
    stream = [
        chunk(calls(tc(None, "c1", "a", '{"x":'))),
        chunk(calls(tc(None, None, None, "1}"))),
        chunk(calls(tc(None, "c2", "b", "{}"))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "a", {"x": 1}), ("c2", "b", {})]


def test_index_starting_at_one_and_sparse() -> None:
    """Indexes are hints: starting at 1 or sparse, calls are numbered 0, 1, ..."""
    stream = [
        chunk({"content": "Reading it."}),
        chunk(calls(tc(1, "t1", "read", ""))),
        chunk(calls(tc(1, None, None, '{"p": 1}'))),
        chunk(calls(tc(5, "t2", "write", '{"p": 2}'))),
        chunk(finish="tool_calls"),
    ]
    events, response = assemble(stream)
    assert summary(response) == [("t1", "read", {"p": 1}), ("t2", "write", {"p": 2})]
    assert [c.index for c in response.tool_calls] == [0, 1]
    assert [e.index for e in events if isinstance(e, ToolCallStarted)] == [0, 1]
    assert response.tool_calls[0].metadata["provider_index"] == 1
    assert response.text == "Reading it."


def test_index_zero_for_every_parallel_call() -> None:
    """Ollama/Groq: a new id and a name at a taken index opens a new call."""
    stream = [
        chunk(calls(tc(0, "c1", "ls", '{"path": "a"}'))),
        chunk(calls(tc(0, "c2", "ls", '{"path": "b"}'))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "ls", {"path": "a"}), ("c2", "ls", {"path": "b"})]


def test_fresh_id_on_every_nameless_fragment() -> None:
    """Kimi/LM Studio send a new id on each fragment without a name: one call, first id."""
    stream = [
        chunk(calls(tc(0, "id1", "search", '{"q"'))),
        chunk(calls(tc(0, "id2", None, ': "a'))),
        chunk(calls(tc(0, "id3", None, 'b"}'))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("id1", "search", {"q": "ab"})]


def test_two_ids_for_one_call_at_one_index() -> None:
    """Poolside: a different id without a name at the same index continues the call."""
    stream = [
        chunk(calls(tc(0, "first", "f", '{"a"'))),
        chunk(calls(tc(0, "second", None, ": 1}"))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("first", "f", {"a": 1})]


def test_first_fragment_without_name_is_buffered_until_the_name_arrives() -> None:
    """A nameless first fragment waits; Started comes with the name, then its buffered args."""
    stream = [
        chunk(calls(tc(0, "c1", None, '{"city": '))),
        chunk(calls(tc(0, None, "weather", '"Paris"}'))),
        chunk(finish="tool_calls"),
    ]
    events, response = assemble(stream)
    assert summary(response) == [("c1", "weather", {"city": "Paris"})]
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["ToolCallStarted", "ToolCallArguments", "ToolCallArguments", "Finished"]
    assert [e.delta for e in events if isinstance(e, ToolCallArguments)] == [
        '{"city": ',
        '"Paris"}',
    ]


def test_arguments_null_or_absent() -> None:
    """``arguments: null`` and a missing ``arguments`` key are no fragment."""
    stream = [
        chunk(
            calls(
                {
                    "index": 0,
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "f", "arguments": None},
                }
            )
        ),
        chunk(calls({"index": 0, "function": {}})),
        chunk(calls(tc(0, None, None, '{"a": 1}'))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]


def test_several_fragments_of_one_index_in_one_chunk() -> None:
    """vLLM/Bedrock: several entries for the same index in one chunk append in order."""
    stream = [
        chunk(calls(tc(0, "c1", "f", '{"a"'), tc(0, None, None, ": "), tc(0, None, None, "1}"))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]


def test_whole_calls_in_one_chunk() -> None:
    """Two complete calls in one chunk become two calls."""
    stream = [
        chunk(calls(tc(0, "c1", "f", '{"a": 1}'), tc(1, "c2", "g", '{"b": 2}'))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1}), ("c2", "g", {"b": 2})]


def test_last_fragment_in_the_finish_chunk() -> None:
    """watsonx/Mistral: the finish chunk carries the last fragment; it lands first."""
    stream = [
        chunk(calls(tc(0, "c1", "f", '{"a": '))),
        chunk(calls(tc(0, None, "", "1}")), "tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]


def test_empty_string_id_and_name_count_as_absent() -> None:
    """Alibaba sends ``id: ""`` and watsonx ``name: ""`` on continuations."""
    stream = [
        chunk(calls(tc(0, "c1", "f", ""))),
        chunk(calls(tc(0, "", "", '{"a": 1}', type="function"))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]


def test_azure_content_filter_chunks_and_usage_only_chunk_and_done() -> None:
    """Empty ``choices`` chunks, a usage-only final chunk and ``[DONE]`` are fine."""
    stream = [
        {"choices": [], "object": "", "prompt_filter_results": [{"content_filter_results": {}}]},
        chunk({"role": "assistant", "content": "hi"}),
        chunk(finish="stop"),
        {
            "id": "chatcmpl-1",
            "choices": [],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        },
        "[DONE]",
    ]
    events, response = assemble(stream)
    assert response.text == "hi"
    assert response.finish_reason == "stop"
    assert response.usage is not None and response.usage.total_tokens == 5
    assert isinstance(events[-1], toolwire.UsageReported)


def test_error_payload_is_a_provider_error() -> None:
    """An ``{"error": ...}`` payload makes close() raise ProviderError with the error."""
    asm = StreamAssembler()
    asm.feed(chunk({"content": "x"}))
    asm.feed({"error": {"message": "overloaded", "code": "503"}})
    with pytest.raises(toolwire.ProviderError) as info:
        asm.close()
    assert info.value.error == {"message": "overloaded", "code": "503"}
    assert info.value.partial is not None and info.value.partial.text == "x"


def test_sse_error_event_is_a_provider_error() -> None:
    """Groq's ``event: error`` (data with ``error``) raises ProviderError, no calls."""
    asm = StreamAssembler()
    asm.feed_bytes(b'data: {"id":"x","choices":[{"index":0,"delta":{"reasoning":"hm"}}]}\n\n')
    asm.feed_bytes(b'event: error\ndata: {"error":{"code":"tool_use_failed"}}\n\n')
    with pytest.raises(toolwire.ProviderError) as info:
        asm.close()
    assert info.value.error == {"code": "tool_use_failed"}
    assert info.value.partial is not None and info.value.partial.reasoning == "hm"


def test_finish_stop_with_calls_is_a_tool_turn() -> None:
    """Forced tool choice ends with ``stop``: the calls count, finish_reason says so."""
    stream = [chunk(calls(tc(0, "c1", "f", "{}"))), chunk(finish="stop")]
    events, response = assemble(stream)
    assert response.finish_reason == "tool_calls"
    assert response.raw_finish_reason == "stop"
    assert events[-1] == Finished(finish_reason="tool_calls", raw_finish_reason="stop")


@pytest.mark.parametrize(
    ("reason", "error"),
    [("length", toolwire.TokenLimitExceeded), ("content_filter", toolwire.ContentFiltered)],
)
def test_length_and_content_filter_raise(reason: str, error: type[Exception]) -> None:
    """``length`` and ``content_filter`` raise, returning no calls even if they parse."""
    asm = StreamAssembler()
    asm.feed(chunk(calls(tc(0, "c1", "f", '{"a": 1}'))))
    asm.feed(chunk(finish=reason))
    with pytest.raises(error) as info:
        asm.close()
    partial = info.value.partial  # type: ignore[attr-defined]
    assert [c.raw_arguments for c in partial.calls] == ['{"a": 1}']


def test_unterminated_arguments_under_tool_calls_is_truncation() -> None:
    """vLLM reports ``tool_calls`` after a max_tokens cut: unterminated JSON raises."""
    asm = StreamAssembler()
    asm.feed(chunk(calls(tc(0, "c1", "write", '{"path": "a.py", "content": "de'))))
    asm.feed(chunk(finish="tool_calls"))
    with pytest.raises(toolwire.TokenLimitExceeded) as info:
        asm.close()
    assert "write" in str(info.value)


def test_two_objects_under_one_index_is_rejected() -> None:
    """``{"q":"A"}{"q":"B"}`` under one index is rejected at once, never half-executed."""
    stream = [
        chunk(calls(tc(0, "c1", "search", '{"q":"A"}'))),
        chunk(calls(tc(0, None, None, '{"q":"B"}'))),
        chunk(finish="tool_calls"),
    ]
    events, response = assemble(stream)
    assert response.tool_calls == []
    assert [r.raw_arguments for r in response.rejected] == ['{"q":"A"}{"q":"B"}']
    rejected = [e for e in events if isinstance(e, ToolCallRejected)]
    assert len(rejected) == 1 and rejected[0].offset == 9
    assert response.finish_reason == "tool_calls"


def test_n_greater_than_one_assembles_the_chosen_choice() -> None:
    """With ``n > 1`` only the chosen choice is assembled."""
    stream = [
        chunk({"content": "zero"}, index=0),
        chunk({"content": "one"}, index=1),
        chunk(calls(tc(0, "c1", "f", "{}")), index=1),
        chunk(finish="stop", index=0),
        chunk(finish="tool_calls", index=1),
    ]
    _, first = assemble(stream)
    _, second = assemble(stream, choice=1)
    assert (first.text, first.tool_calls) == ("zero", [])
    assert second.text == "one" and summary(second) == [("c1", "f", {})]


def test_reasoning_content_and_reasoning_are_reasoning() -> None:
    """DeepSeek/xAI ``reasoning_content`` and Groq ``reasoning`` go to reasoning, not text."""
    stream = [
        chunk({"reasoning_content": "think ", "content": None}),
        chunk({"reasoning": "more", "channel": "analysis"}),
        chunk({"content": "answer"}),
        chunk(finish="stop"),
    ]
    events, response = assemble(stream)
    assert (response.reasoning, response.text) == ("think more", "answer")
    assert [type(e) for e in events[:3]] == [ReasoningDelta, ReasoningDelta, TextDelta]


def test_role_null_and_type_null() -> None:
    """Mistral's ``role: null`` and ``type: null`` are accepted."""
    stream = [
        chunk(
            {
                "role": None,
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": None,
                        "index": 0,
                        "function": {"name": "f", "arguments": '{"a": 1}'},
                    }
                ],
            }
        ),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]


def test_arguments_given_as_an_object_are_serialised() -> None:
    """Servers that send ``arguments`` as an object get it as JSON text."""
    stream = [chunk(calls(tc(0, "c1", "f", {"a": [1, 2]}))), chunk(finish="tool_calls")]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": [1, 2]})]
    assert response.tool_calls[0].raw_arguments == '{"a": [1, 2]}'


def test_legacy_function_call_delta() -> None:
    """The legacy ``function_call`` delta is one call."""
    stream = [
        chunk({"function_call": {"name": "f", "arguments": '{"a"'}}),
        chunk({"function_call": {"arguments": ": 1}"}}),
        chunk(finish="function_call"),
    ]
    _, response = assemble(stream)
    assert [(c.name, c.arguments) for c in response.tool_calls] == [("f", {"a": 1})]


def test_usage_in_x_groq() -> None:
    """Groq's usage inside ``x_groq`` is reported."""
    stream = [chunk(finish="stop", x_groq={"usage": {"prompt_tokens": 1, "completion_tokens": 2}})]
    _, response = assemble(stream)
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1, 2)


@pytest.mark.parametrize(
    "payload",
    [
        {"choices": {"index": 0}},
        {"choices": ["x"]},
        {"choices": [{"index": "0", "delta": {}}]},
        {"choices": [{"index": 0, "delta": "text"}]},
        {"choices": [{"index": 0, "delta": {"content": 5}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [7]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": "0"}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": 1}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": []}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"name": 3}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": 3}}]}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]},
        {"choices": [], "usage": [1]},
    ],
)
def test_wrong_types_are_format_errors(payload: dict[str, Any]) -> None:
    """Wrong types raise StreamFormatError naming the payload, never KeyError/TypeError."""
    asm = StreamAssembler(format="openai-chat")
    with pytest.raises(toolwire.StreamFormatError) as info:
        asm.feed(payload)
    assert info.value.payload == payload
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(chunk(finish="stop"))


def test_second_call_named_later_at_a_new_index_with_a_new_id() -> None:
    """A nameless fragment with a new id at a new index is another call, named later."""
    stream = [
        chunk(calls(tc(0, "c1", "f", '{"a": 1}'))),
        chunk(calls(tc(1, "c2", None, '{"b": '))),
        chunk(calls(tc(1, None, "g", "2}"))),
        chunk(finish="tool_calls"),
    ]
    events, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1}), ("c2", "g", {"b": 2})]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    assert [(e.id, e.name, e.index) for e in started] == [("c1", "f", 0), ("c2", "g", 1)]


def test_nameless_fragment_at_a_new_index_without_id_joins_the_open_call() -> None:
    """Without a name or a new id, a fragment never opens a call: it joins the latest."""
    stream = [
        chunk(calls(tc(0, "c1", "f", '{"a": '))),
        chunk(calls(tc(3, None, None, "1}"))),
        chunk(finish="tool_calls"),
    ]
    _, response = assemble(stream)
    assert summary(response) == [("c1", "f", {"a": 1})]
