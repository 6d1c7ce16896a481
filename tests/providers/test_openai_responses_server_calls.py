"""Calls xAI ran on its own servers, told apart by rule (an ``xs_call`` call id), not by a
list of names: echoed as items and never handed out, whatever the tool's name; OpenAI's
own custom tool calls, status and all, stay client calls. Fed whole, byte by byte and at
Hypothesis-chosen splits."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapter_support import assemble_bytes, assemble_every_way, sse_body
from drivers_support import splits
from toolwire._providers.openai_responses import assistant_turn, server_run

RESPONSE_ID = "0c1d2e3f-4a5b-6c7d-8e9f-a0b1c2d3e4f5"
ANSWER = "The video shows the launch."


def _server_item(call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    """A server-run call as xAI's Responses stream reports it (ids as in its recordings)."""
    return {
        "call_id": call_id,
        "input": arguments,
        "name": name,
        "type": "custom_tool_call",
        "id": f"ctc_{RESPONSE_ID}_{call_id}",
        "status": status,
    }


VIDEO = _server_item(
    "xs_call_31415926", "view_x_video", '{"video_url":"https://video.example/v.mp4"}', "completed"
)
# a name xAI has not documented yet: the rule must not depend on it
INVENTED = _server_item("xs_call-27182818-0", "x_hologram_scan", '{"depth":3}', "completed")


def _xai_stream() -> list[dict[str, Any]]:
    """A grok response that ran two server tools (one interleaved with a web search the
    server also ran) and then answered in the same response."""
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    response = {"id": RESPONSE_ID, "model": "grok-4-fast-reasoning", "status": "in_progress"}
    add("response.created", response=response)
    add("response.in_progress", response=response)
    search = {
        "id": f"ws_{RESPONSE_ID}_call_16180339",
        "type": "web_search_call",
        "status": "in_progress",
        "action": {"type": "search", "query": "", "sources": []},
    }
    for index, item in enumerate((VIDEO, INVENTED)):
        added = {**item, "input": "", "status": "in_progress"}
        add("response.output_item.added", output_index=index, item=added)
        text = item["input"]
        for piece in (text[:5], text[5:]):
            add("response.custom_tool_call_input.delta", output_index=index,
                item_id=item["id"], delta=piece)  # fmt: skip
        add("response.custom_tool_call_input.done", output_index=index, item_id=item["id"],
            input=text)  # fmt: skip
        if index == 0:
            # the server interleaves its other tools before this call's done item
            add("response.output_item.added", output_index=2, item=search)
            add("response.web_search_call.completed", output_index=2, item_id=search["id"])
            add("response.output_item.done", output_index=2,
                item={**search, "status": "completed"})  # fmt: skip
    add("response.output_item.done", output_index=1, item=INVENTED)
    add("response.output_item.done", output_index=0, item=VIDEO)
    message = {"id": f"msg_{RESPONSE_ID}", "type": "message", "role": "assistant"}
    add("response.output_item.added", output_index=3,
        item={**message, "content": [], "status": "in_progress"})  # fmt: skip
    for piece in (ANSWER[:9], ANSWER[9:]):
        add("response.output_text.delta", output_index=3, item_id=message["id"],
            content_index=0, delta=piece)  # fmt: skip
    content = [{"type": "output_text", "text": ANSWER, "annotations": [], "logprobs": []}]
    add("response.output_item.done", output_index=3,
        item={**message, "content": content, "status": "completed"})  # fmt: skip
    add("response.completed", response={**response, "status": "completed"})
    return events


def _check_xai(events: list[Any]) -> None:
    """No tool call and no rejection, no call event, the answer as text, the server calls
    echoed as their done items where they stand among the other items."""
    response = events[0]
    assert response.tool_calls == [] and response.rejected == []
    assert response.finish_reason == "stop"
    assert response.text == ANSWER
    assert not [e for e in events[1] if "Call" in type(e).__name__]
    turn = assistant_turn(response)
    assert [i["type"] for i in turn] == [
        "web_search_call",
        "custom_tool_call",
        "custom_tool_call",
        "message",
    ]
    assert turn[1:3] == [INVENTED, VIDEO]


def test_server_calls_of_any_name_are_echoed_never_client_calls() -> None:
    """A server-run ``view_x_video`` and a server call of a name nobody listed are no client
    calls: the response answers in text, and the calls are echoed, whole and byte by
    byte."""
    _check_xai(list(assemble_every_way(_xai_stream())))


@given(st.lists(st.integers(0, 8000), max_size=16))
def test_server_calls_are_echoed_at_any_split(cuts: list[int]) -> None:
    """Fed at Hypothesis-chosen splits, the server calls are still echoed, never calls."""
    _check_xai(list(assemble_bytes(splits(sse_body(_xai_stream()), cuts))))


def _openai_custom_stream(name: str) -> list[dict[str, Any]]:
    """An OpenAI custom tool call, its items carrying a ``status`` as OpenAI's API returns
    them, under the given name."""
    events: list[dict[str, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        events.append({"type": kind, "sequence_number": len(events), **fields})

    item = {"id": "ctc_68a1", "type": "custom_tool_call", "call_id": "call_Qm3x", "name": name}
    add("response.created", response={"id": "resp_1", "model": "gpt-5", "status": "in_progress"})
    add("response.output_item.added", output_index=0,
        item={**item, "input": "", "status": "in_progress"})  # fmt: skip
    for piece in ("from:x", "ai media"):
        add("response.custom_tool_call_input.delta", output_index=0, item_id="ctc_68a1",
            delta=piece)  # fmt: skip
    add("response.custom_tool_call_input.done", output_index=0, item_id="ctc_68a1",
        input="from:xai media")  # fmt: skip
    add("response.output_item.done", output_index=0,
        item={**item, "input": "from:xai media", "status": "completed"})  # fmt: skip
    add("response.completed", response={"id": "resp_1", "model": "gpt-5", "status": "completed"})
    return events


def _check_openai(response: Any, name: str) -> None:
    (call,) = response.tool_calls
    assert (call.id, call.name, call.kind) == ("call_Qm3x", name, "custom_tool_call")
    assert call.arguments == "from:xai media"
    assert response.finish_reason == "tool_calls"


@given(
    st.sampled_from(["x_keyword_search", "view_x_video", "grep"]),
    st.lists(st.integers(0, 3000), max_size=16),
)
def test_an_openai_custom_call_with_a_status_stays_a_client_call(
    name: str, cuts: list[int]
) -> None:
    """OpenAI's custom tool call carries a status too, and may bear a name xAI uses for a
    server tool: it is still a client call, whole, byte by byte and at any split."""
    events = _openai_custom_stream(name)
    _check_openai(assemble_every_way(events)[0], name)
    _check_openai(assemble_bytes(splits(sse_body(events), cuts))[0], name)


def test_the_rule_reads_the_call_id_only() -> None:
    """The rule: a ``custom_tool_call`` whose call id starts ``xs_call`` is server-run, of
    any name, with or without a status; an OpenAI ``call_`` id, or a function call, is
    not."""
    assert server_run(VIDEO) and server_run(INVENTED)
    assert server_run({k: v for k, v in VIDEO.items() if k != "status"})
    assert not server_run({**VIDEO, "call_id": "call_31415926"})
    assert not server_run({**VIDEO, "call_id": None})
    assert not server_run({**VIDEO, "type": "function_call"})
