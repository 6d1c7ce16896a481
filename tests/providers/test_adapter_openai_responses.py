"""OpenAI Responses API streams: items, argument deltas and restatements, custom tools,
reasoning and text, terminal events and errors, each on a small hand-written stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

import toolwire
from toolwire import StreamAssembler, ToolCallEnded, ToolCallRejected, ToolCallStarted


class Stream:
    """Builds a Responses event sequence with increasing sequence numbers."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def add(self, type: str, **fields: Any) -> Stream:
        """Append one event."""
        self.events.append({"type": type, "sequence_number": len(self.events), **fields})
        return self

    def created(self) -> Stream:
        """``response.created`` with an id and a model."""
        return self.add(
            "response.created", response={"id": "resp_1", "model": "gpt-x", "status": "in_progress"}
        )

    def item(
        self,
        index: int,
        item_id: str,
        call_id: str,
        name: str,
        args: str = "",
        *,
        done: bool = False,
        kind: str = "function_call",
    ) -> Stream:
        """``output_item.added`` (or ``.done``) for a function call."""
        key = "input" if kind == "custom_tool_call" else "arguments"
        item = {"type": kind, "id": item_id, "call_id": call_id, "name": name, key: args}
        event = "response.output_item.done" if done else "response.output_item.added"
        return self.add(event, output_index=index, item=item)

    def delta(self, index: int, item_id: str, text: str) -> Stream:
        """One ``function_call_arguments.delta``."""
        return self.add(
            "response.function_call_arguments.delta",
            output_index=index,
            item_id=item_id,
            delta=text,
        )

    def args_done(self, index: int, item_id: str, text: str) -> Stream:
        """``function_call_arguments.done`` restating the arguments."""
        return self.add(
            "response.function_call_arguments.done",
            output_index=index,
            item_id=item_id,
            arguments=text,
        )

    def completed(self, status: str = "completed", **response: Any) -> Stream:
        """A terminal ``response.<status>`` event."""
        body = {"id": "resp_1", "model": "gpt-x", "status": status, **response}
        return self.add(f"response.{status}", response=body)


def run(events: list[dict[str, Any]]) -> tuple[list[Any], toolwire.Response]:
    """Assemble ``events`` with format detection; also check JSON-text feeding agrees."""
    asm = StreamAssembler()
    out = [e for p in events for e in asm.feed(p)]
    response = asm.close()
    again = StreamAssembler(format="openai-responses")
    for p in events:
        again.feed(json.dumps(p))
    assert again.close() == response
    assert asm.format == "openai-responses"
    return out, response


def test_function_call_with_argument_deltas() -> None:
    """Deltas accumulate by ``item_id``; the public id is ``call_id``; ``item_id`` is kept."""
    s = Stream().created().item(0, "fc_1", "call_1", "get_weather")
    s.delta(0, "fc_1", '{"city"').delta(0, "fc_1", ': "Paris"}')
    s.args_done(0, "fc_1", '{"city": "Paris"}').item(
        0, "fc_1", "call_1", "get_weather", '{"city": "Paris"}', done=True
    )
    s.completed(
        usage={
            "input_tokens": 5,
            "output_tokens": 7,
            "total_tokens": 12,
            "output_tokens_details": {"reasoning_tokens": 3},
        }
    )
    events, response = run(s.events)
    (call,) = response.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", {"city": "Paris"})
    assert call.metadata["item_id"] == "fc_1"
    assert response.finish_reason == "tool_calls" and response.raw_finish_reason == "completed"
    assert (response.response_id, response.model) == ("resp_1", "gpt-x")
    assert response.usage is not None and response.usage.reasoning_tokens == 3
    assert sum(isinstance(e, ToolCallEnded) for e in events) == 1


def test_arguments_only_in_done() -> None:
    """LM Studio sends no deltas: the arguments in ``.done`` are fed as one fragment."""
    s = Stream().created().item(2, "fc_9", "call_9", "weather")
    s.args_done(2, "fc_9", '{"location": "SF"}').item(
        2, "fc_9", "call_9", "weather", '{"location": "SF"}', done=True
    )
    s.completed()
    _, response = run(s.events)
    assert [(c.id, c.arguments) for c in response.tool_calls] == [("call_9", {"location": "SF"})]


def test_done_contradicting_the_deltas_rejects_the_call() -> None:
    """Final arguments that are not an extension of the streamed text reject the call."""
    s = Stream().created().item(0, "fc_1", "call_1", "f").delta(0, "fc_1", '{"a": 1}')
    s.args_done(0, "fc_1", '{"a": 2}').item(
        0, "fc_1", "call_1", "f", '{"a": 2}', done=True
    ).completed()
    events, response = run(s.events)
    assert response.tool_calls == []
    assert "contradict the streamed fragments" in response.rejected[0].reason
    assert any(isinstance(e, ToolCallRejected) for e in events)


def test_done_restating_the_same_value_in_other_text_is_accepted() -> None:
    """A restatement with other spacing and member order is the same JSON value: the call
    stands, with the text that streamed."""
    streamed = '{"a": 1, "b": [true, null]}'
    s = Stream().created().item(0, "fc_1", "call_1", "f").delta(0, "fc_1", streamed)
    s.args_done(0, "fc_1", '{"b":[true,null],"a":1.0}')
    s.item(0, "fc_1", "call_1", "f", '{"b":[true,null],"a":1}', done=True).completed()
    _, response = run(s.events)
    assert response.rejected == []
    (call,) = response.tool_calls
    assert (call.arguments, call.raw_arguments) == ({"a": 1, "b": [True, None]}, streamed)


def test_parallel_items_interleaved() -> None:
    """Two function calls interleaved by ``item_id`` stay apart."""
    s = Stream().created().item(0, "fc_a", "call_a", "f").item(1, "fc_b", "call_b", "f")
    s.delta(1, "fc_b", '{"p": ').delta(0, "fc_a", '{"p": ').delta(0, "fc_a", '"a"}').delta(
        1, "fc_b", '"b"}'
    )
    s.item(0, "fc_a", "call_a", "f", '{"p": "a"}', done=True).item(
        1, "fc_b", "call_b", "f", '{"p": "b"}', done=True
    )
    s.completed()
    events, response = run(s.events)
    assert [(c.id, c.arguments) for c in response.tool_calls] == [
        ("call_a", {"p": "a"}),
        ("call_b", {"p": "b"}),
    ]
    assert [e.id for e in events if isinstance(e, ToolCallStarted)] == ["call_a", "call_b"]


def test_custom_tool_input_is_a_json_string() -> None:
    """A custom tool's free-form input streams as one JSON string argument."""
    s = Stream().created().item(0, "ct_1", "call_c", "shell", kind="custom_tool_call")
    s.add(
        "response.custom_tool_call_input.delta", output_index=0, item_id="ct_1", delta='echo "hi"\n'
    )
    s.add("response.custom_tool_call_input.delta", output_index=0, item_id="ct_1", delta="ls")
    s.add(
        "response.custom_tool_call_input.done",
        output_index=0,
        item_id="ct_1",
        input='echo "hi"\nls',
    )
    s.item(0, "ct_1", "call_c", "shell", 'echo "hi"\nls', done=True, kind="custom_tool_call")
    s.completed()
    _, response = run(s.events)
    (call,) = response.tool_calls
    assert call.arguments == 'echo "hi"\nls'
    assert call.metadata["type"] == "custom_tool_call"


def test_text_and_reasoning_deltas() -> None:
    """output_text deltas are text; reasoning summary and reasoning text are reasoning."""
    s = Stream().created()
    s.add(
        "response.reasoning_summary_text.delta",
        item_id="rs",
        output_index=0,
        summary_index=0,
        delta="plan ",
    )
    s.add(
        "response.reasoning_text.delta", item_id="rs", output_index=0, content_index=0, delta="more"
    )
    s.add(
        "response.output_text.delta", item_id="msg", output_index=1, content_index=0, delta="Hello"
    )
    s.add("response.output_text.done", item_id="msg", output_index=1, content_index=0, text="Hello")
    s.completed()
    _, response = run(s.events)
    assert (response.text, response.reasoning, response.finish_reason) == (
        "Hello",
        "plan more",
        "stop",
    )


@pytest.mark.parametrize(
    ("details", "error"),
    [
        ({"reason": "max_output_tokens"}, toolwire.TokenLimitExceeded),
        ({"reason": "content_filter"}, toolwire.ContentFiltered),
    ],
)
def test_incomplete_raises(details: dict[str, Any], error: type[Exception]) -> None:
    """``response.incomplete`` raises by its reason and returns no call (strands #4135)."""
    s = Stream().created().item(0, "fc_1", "call_1", "f").delta(0, "fc_1", '{"a": 1}')
    s.completed("incomplete", incomplete_details=details)
    asm = StreamAssembler()
    for p in s.events:
        asm.feed(p)
    with pytest.raises(error) as info:
        asm.close()
    partial = info.value.partial  # type: ignore[attr-defined]
    assert partial.raw_finish_reason == details["reason"]
    assert [c.raw_arguments for c in partial.calls] == ['{"a": 1}']


def test_failed_and_error_events_are_provider_errors() -> None:
    """``response.failed`` and a top-level ``error`` event raise ProviderError."""
    s = Stream().created().completed("failed", error={"code": "server_error", "message": "boom"})
    asm = StreamAssembler()
    for p in s.events:
        asm.feed(p)
    with pytest.raises(toolwire.ProviderError) as info:
        asm.close()
    assert info.value.error == {"code": "server_error", "message": "boom"}
    s = Stream().created().add("error", code="rate_limit", message="slow down", param=None)
    asm = StreamAssembler()
    for p in s.events:
        asm.feed(p)
    with pytest.raises(toolwire.ProviderError):
        asm.close()


def test_no_terminal_event_is_aborted() -> None:
    """A stream without completed/incomplete/failed raises StreamAborted."""
    s = Stream().created().item(0, "fc_1", "call_1", "f").delta(0, "fc_1", "{}")
    s.item(0, "fc_1", "call_1", "f", "{}", done=True)
    asm = StreamAssembler()
    for p in s.events:
        asm.feed(p)
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    assert info.value.partial is not None and info.value.partial.calls[0].ended


def test_delta_for_an_item_that_never_started() -> None:
    """An argument delta for an unknown ``item_id`` is a format error."""
    s = Stream().created().delta(0, "fc_x", "{}")
    asm = StreamAssembler()
    asm.feed(s.events[0])
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(s.events[1])


def test_delta_after_item_done_is_a_format_error() -> None:
    """A fragment after ``output_item.done`` breaks the call's state table."""
    s = Stream().created().item(0, "fc_1", "call_1", "f").delta(0, "fc_1", "{}")
    s.item(0, "fc_1", "call_1", "f", "{}", done=True).delta(0, "fc_1", " ")
    asm = StreamAssembler()
    for p in s.events[:-1]:
        asm.feed(p)
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed(s.events[-1])


def test_sequence_numbers_must_increase() -> None:
    """A repeated or decreasing ``sequence_number`` is a format error."""
    asm = StreamAssembler()
    asm.feed({"type": "response.created", "sequence_number": 4, "response": {"id": "r"}})
    with pytest.raises(toolwire.StreamFormatError):
        asm.feed({"type": "response.in_progress", "sequence_number": 4, "response": {"id": "r"}})


def test_unknown_event_types_are_ignored() -> None:
    """Event types the adapter does not know produce nothing."""
    s = Stream().created().add("response.web_search_call.searching", output_index=0).completed()
    events, response = run(s.events)
    assert response.finish_reason == "stop"
    assert [type(e).__name__ for e in events] == ["Finished"]


@pytest.mark.parametrize(
    "payload",
    [
        {"type": 5},
        {"type": "response.created", "response": []},
        {"type": "response.output_item.added", "item": "x"},
        {"type": "response.output_item.added", "item": {"type": "function_call", "id": 1}},
        {
            "type": "response.output_item.added",
            "output_index": "0",
            "item": {"type": "function_call"},
        },
        {"type": "response.function_call_arguments.delta", "item_id": "a", "delta": None},
        {"type": "response.output_text.delta", "delta": 3},
        {"type": "response.completed", "response": {"usage": "x"}},
        {"type": "response.created", "sequence_number": "1", "response": {}},
    ],
)
def test_wrong_types_are_format_errors(payload: dict[str, Any]) -> None:
    """Wrong types in Responses events raise StreamFormatError naming the payload."""
    asm = StreamAssembler(format="openai-responses")
    with pytest.raises(toolwire.StreamFormatError) as info:
        asm.feed(payload)
    assert info.value.payload == payload
