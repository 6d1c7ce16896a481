"""Responses output items echoed losslessly: a message's ``phase`` and annotations, unknown
items in order, a custom tool call's input text; fed whole, byte by byte and at
Hypothesis-chosen splits."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import toolwire
from adapter_support import assemble_bytes, assemble_every_way, sse_body
from drivers_support import splits
from toolwire._providers.openai_responses import assistant_turn, custom_input

ANNOTATION = {
    "type": "url_citation",
    "start_index": 0,
    "end_index": 5,
    "url": "https://example.com/a",
    "title": "A",
}
MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "status": "completed",
    "role": "assistant",
    "phase": "commentary",
    "content": [
        {"type": "output_text", "text": "Hello there", "annotations": [ANNOTATION], "logprobs": []}
    ],
}
UNKNOWN = {"id": "xx_1", "type": "future_call", "status": "completed", "payload": {"a": [1]}}
CUSTOM_INPUT = 'echo "héllo"\\n\tls \\u00e9'


def _stream() -> list[dict[str, Any]]:
    """A response: an unknown item, a message with phase and annotations, a custom call."""
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    add("response.created", response={"id": "resp_1", "model": "m", "status": "in_progress"})
    add("response.output_item.added", output_index=0, item={**UNKNOWN, "status": "in_progress"})
    add("response.output_item.done", output_index=0, item=UNKNOWN)
    added = {k: v for k, v in MESSAGE.items() if k != "content"}
    add("response.output_item.added", output_index=1, item={**added, "content": []})
    add("response.output_text.delta", output_index=1, item_id="msg_1", content_index=0,
        delta="Hello ")  # fmt: skip
    add("response.output_text.annotation.added", output_index=1, item_id="msg_1",
        content_index=0, annotation_index=0, annotation=ANNOTATION)  # fmt: skip
    add("response.output_text.delta", output_index=1, item_id="msg_1", content_index=0,
        delta="there")  # fmt: skip
    add("response.output_item.done", output_index=1, item=MESSAGE)
    custom = {"id": "ct_1", "type": "custom_tool_call", "call_id": "call_c", "name": "shell"}
    add("response.output_item.added", output_index=2, item={**custom, "input": ""})
    for piece in (CUSTOM_INPUT[:7], CUSTOM_INPUT[7:]):
        add("response.custom_tool_call_input.delta", output_index=2, item_id="ct_1", delta=piece)
    add("response.custom_tool_call_input.done", output_index=2, item_id="ct_1",
        input=CUSTOM_INPUT)  # fmt: skip
    add("response.output_item.done", output_index=2, item={**custom, "input": CUSTOM_INPUT})
    add("response.completed", response={"id": "resp_1", "model": "m", "status": "completed"})
    return events


def _expected_turn() -> list[dict[str, Any]]:
    custom = {"type": "custom_tool_call", "call_id": "call_c", "name": "shell", "id": "ct_1"}
    return [UNKNOWN, MESSAGE, {**custom, "input": CUSTOM_INPUT}]


def test_message_phase_annotations_and_unknown_items_are_echoed_in_order() -> None:
    """The assistant turn repeats the unknown item, the message with its phase and
    annotations, and the custom call's text, in order, whole and byte by byte."""
    response, _ = assemble_every_way(_stream())
    assert assistant_turn(response) == _expected_turn()


@given(st.lists(st.integers(0, 5000), max_size=16))
def test_the_echo_is_the_same_at_any_split(cuts: list[int]) -> None:
    """Fed at Hypothesis-chosen splits, the echo is the same items."""
    response, _ = assemble_bytes(splits(sse_body(_stream()), cuts))
    assert assistant_turn(response) == _expected_turn()


def _answers(response: Any) -> list[dict[str, Any]]:
    outcome = toolwire.Outcome(call_id="call_c", name="shell", status="completed", value="ok")
    return toolwire.tool_results([outcome], "openai-responses", response=response)


def test_a_custom_call_has_its_kind_and_its_own_output_item() -> None:
    """The custom call is a ToolCall of kind ``custom_tool_call`` answered with a
    ``custom_tool_call_output``, whole and byte by byte; without the response, a function
    call's output."""
    response, _ = assemble_every_way(_stream())
    assert [c.kind for c in response.tool_calls] == ["custom_tool_call"]
    assert _answers(response) == [
        {"type": "custom_tool_call_output", "call_id": "call_c", "output": "ok"}
    ]
    outcome = toolwire.Outcome(call_id="call_c", name="shell", status="completed", value="ok")
    assert toolwire.tool_results([outcome], "openai-responses")[0]["type"] == (
        "function_call_output"
    )


@given(st.lists(st.integers(0, 5000), max_size=16))
def test_the_custom_call_kind_is_the_same_at_any_split(cuts: list[int]) -> None:
    """Fed at Hypothesis-chosen splits, the custom call keeps its kind and its answer."""
    response, _ = assemble_bytes(splits(sse_body(_stream()), cuts))
    assert [c.kind for c in response.tool_calls] == ["custom_tool_call"]
    assert _answers(response)[0]["type"] == "custom_tool_call_output"


def test_a_message_without_its_done_event_keeps_its_phase() -> None:
    """A message cut before ``output_item.done`` is rebuilt with the phase it was added
    with."""
    events = [e for e in _stream() if not (
        e["type"] == "response.output_item.done" and e["item"]["type"] == "message"
    )]  # fmt: skip
    response, _ = assemble_every_way(events)
    (message,) = [i for i in assistant_turn(response) if i.get("type") == "message"]
    assert message["phase"] == "commentary"
    assert message["content"][0]["text"] == "Hello there"


@given(st.text(max_size=40), st.integers(0, 300), st.booleans())
def test_custom_input_reads_any_prefix_of_the_literal(text: str, cut: int, ascii: bool) -> None:
    """The input text of a whole literal is the text; of a cut one, a prefix of it."""
    literal = json.dumps(text, ensure_ascii=ascii)
    assert custom_input(literal) == text
    got = custom_input(literal[: max(1, min(cut, len(literal) - 1))])
    assert text.startswith(got)


def _xai_stream() -> list[dict[str, Any]]:
    """An xAI response: an X search the server ran (a ``custom_tool_call`` whose call id
    starts ``xs_call``), then a client function call."""
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    search = {"id": "xs_1", "type": "custom_tool_call", "call_id": "xs_call_1",
              "name": "x_keyword_search", "status": "in_progress", "input": ""}  # fmt: skip
    add("response.created", response={"id": "resp_x", "model": "grok", "status": "in_progress"})
    add("response.output_item.added", output_index=0, item=search)
    add("response.custom_tool_call_input.delta", output_index=0, item_id="xs_1",
        delta='{"query":"toolwire"}')  # fmt: skip
    add("response.custom_tool_call_input.done", output_index=0, item_id="xs_1",
        input='{"query":"toolwire"}')  # fmt: skip
    add("response.output_item.done", output_index=0, item=XAI_SEARCH)
    call = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "lookup"}
    add("response.output_item.added", output_index=1, item={**call, "arguments": ""})
    add("response.function_call_arguments.delta", output_index=1, item_id="fc_1",
        delta='{"q": 1}')  # fmt: skip
    add("response.output_item.done", output_index=1, item={**call, "arguments": '{"q": 1}'})
    add("response.completed", response={"id": "resp_x", "model": "grok", "status": "completed"})
    return events


XAI_SEARCH = {
    "id": "xs_1",
    "type": "custom_tool_call",
    "call_id": "xs_call_1",
    "name": "x_keyword_search",
    "status": "completed",
    "input": '{"query":"toolwire"}',
}


@given(st.lists(st.integers(0, 5000), max_size=16))
def test_xai_server_searches_are_echoed_never_client_calls(cuts: list[int]) -> None:
    """xAI's X search, already run by the server, is no client call: only the function
    call beside it is handed out, and the search item is echoed, in order."""
    for response in (
        assemble_every_way(_xai_stream())[0],
        assemble_bytes(splits(sse_body(_xai_stream()), cuts))[0],
    ):
        assert [c.name for c in response.tool_calls] == ["lookup"]
        assert response.finish_reason == "tool_calls"
        turn = assistant_turn(response)
        assert turn[0] == XAI_SEARCH
        assert [i["type"] for i in turn] == ["custom_tool_call", "function_call"]
