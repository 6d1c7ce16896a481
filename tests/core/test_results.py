"""Tool result messages: every format for every outcome status, result JSON sent verbatim
(a string as its text; byte-identical between a first run and its replay), Gemini's
object wrapping, and typed errors for bad input."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_expected
from toolwire import (
    Outcome,
    RejectedCall,
    Response,
    StreamAssembler,
    UnknownFormat,
    UsageError,
    tool_results,
)
from toolwire._core.messages import (
    STATUS_TEXTS,
    UNNAMED_TOOL,
    outcome_text,
)
from toolwire._core.outcome import OutcomeStatus
from toolwire._core.response import ContentPart
from toolwire._providers import FORMATS
from toolwire._providers._messages import assistant_turn, turn_messages

STATUSES: tuple[str, ...] = get_args(OutcomeStatus)


def _outcome(status: str, **kw: Any) -> Outcome:
    defaults: dict[str, Any] = {"call_id": "call_1", "name": "transfer"}
    if status in ("completed", "replayed"):
        defaults.update(value={"ok": True}, result_json='{"ok":true}', idempotency_key="k")
    elif status != "skipped":
        defaults.update(error="boom")
    return Outcome(status=status, **{**defaults, **kw})  # type: ignore[arg-type]


EXPECTED_TEXT = {
    "completed": '{"ok":true}',
    "replayed": '{"ok":true}',
    "failed": 'The tool "transfer" failed: boom',
    "rejected": "boom",
    "skipped": 'The tool "transfer" was not run because another call in this turn was invalid; '
    "nothing happened. Fix the invalid call and send every call of this turn again.",
    "timed_out": 'The tool "transfer" did not finish within its timeout. The outcome is unknown; '
    "it may have run; do not assume it failed.",
    "unknown": 'The outcome of the tool "transfer" is unknown; it may have run; '
    "do not assume it failed.",
    "in_progress": 'The tool "transfer" is already running for this call (another worker holds '
    "it); its result is not available yet. Do not assume it failed.",
    "conflict": 'The tool "transfer" was already called with this call id but different '
    "arguments, so this call was not run. Use a new call for different arguments.",
    "awaiting_approval": 'The call to "transfer" is waiting for a person to approve it; it has '
    "not run yet. Do not assume it ran or failed.",
    "denied": 'The call to "transfer" was denied by a person and did not run. Their reason: boom',
}


def test_every_status_has_a_documented_text() -> None:
    """Every outcome status maps to a text; only completed and replayed are not errors."""
    assert set(EXPECTED_TEXT) == set(STATUSES)
    assert set(STATUS_TEXTS) | {"completed", "replayed"} == set(STATUSES)
    for status in STATUSES:
        text, is_error = outcome_text(_outcome(status))
        assert text == EXPECTED_TEXT[status]
        assert is_error is (status not in ("completed", "replayed"))


def test_rejected_without_a_message_and_failed_without_error_still_read_well() -> None:
    """Missing error texts fall back to clear sentences."""
    assert outcome_text(_outcome("rejected", error=None)) == (
        'The call to "transfer" was rejected: its arguments are invalid.',
        True,
    )
    assert outcome_text(_outcome("failed", error=None))[0] == (
        'The tool "transfer" failed: no error message was recorded'
    )


@pytest.mark.parametrize("status", STATUSES)
def test_openai_chat_one_tool_message_per_outcome(status: str) -> None:
    """openai-chat: {"role": "tool", "tool_call_id", "content"} per outcome."""
    assert tool_results([_outcome(status)], "openai-chat") == [
        {"role": "tool", "tool_call_id": "call_1", "content": EXPECTED_TEXT[status]}
    ]


@pytest.mark.parametrize("status", STATUSES)
def test_openai_responses_one_output_item_per_outcome(status: str) -> None:
    """openai-responses: {"type": "function_call_output", "call_id", "output"} per outcome."""
    assert tool_results([_outcome(status)], "openai-responses") == [
        {"type": "function_call_output", "call_id": "call_1", "output": EXPECTED_TEXT[status]}
    ]


@pytest.mark.parametrize("status", STATUSES)
def test_anthropic_tool_result_blocks_in_one_user_message(status: str) -> None:
    """anthropic: one user message of tool_result blocks, is_error for every non-success."""
    assert tool_results([_outcome(status)], "anthropic") == [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": EXPECTED_TEXT[status],
                    "is_error": status not in ("completed", "replayed"),
                }
            ],
        }
    ]


@pytest.mark.parametrize("status", STATUSES)
def test_gemini_function_responses_are_objects(status: str) -> None:
    """gemini: functionResponse parts; results as objects, errors as {"error": text}."""
    response = (
        {"ok": True} if status in ("completed", "replayed") else {"error": EXPECTED_TEXT[status]}
    )
    assert tool_results([_outcome(status)], "gemini") == [
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "transfer", "id": "call_1", "response": response}}
            ],
        }
    ]


@pytest.mark.parametrize("status", STATUSES)
def test_bedrock_converse_tool_results_in_one_user_message(status: str) -> None:
    """bedrock-converse: toolResult blocks with a text content and a success/error status."""
    ok = status in ("completed", "replayed")
    assert tool_results([_outcome(status)], "bedrock-converse") == [
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "call_1",
                        "content": [{"text": EXPECTED_TEXT[status]}],
                        "status": "success" if ok else "error",
                    }
                }
            ],
        }
    ]


@pytest.mark.parametrize("status", STATUSES)
def test_ollama_and_cohere_tool_messages(status: str) -> None:
    """ollama: role tool with tool_name; cohere: role tool with tool_call_id."""
    assert tool_results([_outcome(status)], "ollama") == [
        {"role": "tool", "tool_name": "transfer", "content": EXPECTED_TEXT[status]}
    ]
    assert tool_results([_outcome(status)], "cohere") == [
        {"role": "tool", "tool_call_id": "call_1", "content": EXPECTED_TEXT[status]}
    ]


def test_many_outcomes_keep_their_order_and_group_per_format() -> None:
    """Several outcomes: one message each (OpenAI) or one message with all (Anthropic, Gemini)."""
    outcomes = [_outcome("completed", call_id="a"), _outcome("skipped", call_id="b")]
    chat = tool_results(outcomes, "openai-chat")
    assert [m["tool_call_id"] for m in chat] == ["a", "b"]
    (anthropic,) = tool_results(outcomes, "anthropic")
    assert [b["tool_use_id"] for b in anthropic["content"]] == ["a", "b"]
    (gemini,) = tool_results(outcomes, "gemini")
    assert [p["functionResponse"]["id"] for p in gemini["parts"]] == ["a", "b"]
    assert tool_results(iter(outcomes), "openai-responses")[1]["call_id"] == "b"


def test_no_outcomes_give_no_messages() -> None:
    """An empty list of outcomes gives no messages in every format."""
    for fmt in FORMATS.names():
        assert tool_results([], fmt) == []


def test_gemini_leaves_out_an_empty_id() -> None:
    """A call without an id gets no ``id`` in its functionResponse."""
    (message,) = tool_results([_outcome("completed", call_id="")], "gemini")
    assert message["parts"][0]["functionResponse"] == {"name": "transfer", "response": {"ok": True}}


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c, max_size=3),
    max_leaves=10,
)


@given(value=_JSON, replayed=st.booleans())
def test_result_json_is_sent_verbatim_and_identically_on_replay(value: Any, replayed: bool):
    """The stored JSON text is the content, byte for byte, first run and replay alike (a
    stored string is sent as its text)."""
    text = json.dumps(value, separators=(", ", ": "))  # any spelling is kept as is
    first = _outcome("completed", value=value, result_json=text)
    again = _outcome("replayed", value=value, result_json=text)
    for fmt in ("openai-chat", "openai-responses", "anthropic"):
        assert tool_results([first], fmt) == tool_results([again], fmt)
    (chat,) = tool_results([again if replayed else first], "openai-chat")
    assert chat["content"] == (value if isinstance(value, str) else text)
    (gemini,) = tool_results([first], "gemini")
    response = gemini["parts"][0]["functionResponse"]["response"]
    assert response == (value if isinstance(value, dict) else {"result": value})


def test_completed_without_result_json_serialises_the_value() -> None:
    """A completed outcome without result_json sends the compact JSON of its value."""
    outcome = Outcome(call_id="c", name="t", status="completed", value={"b": 1, "a": [1, 2]})
    assert outcome_text(outcome) == ('{"a":[1,2],"b":1}', False)


@pytest.mark.parametrize("fmt", ["openai-chatt", "Anthropic", "bedrock", "", None])
def test_unknown_formats_raise_unknown_format(fmt: Any) -> None:
    """An unknown format raises UnknownFormat."""
    with pytest.raises(UnknownFormat):
        tool_results([_outcome("completed")], fmt)


@pytest.mark.parametrize(
    "outcomes",
    [
        _outcome("completed"),
        "completed",
        {"status": "completed"},
        5,
        [{"call_id": "x"}],
        [Outcome(call_id="c", name="t", status="completed", value=object())],
        [Outcome(call_id="c", name="t", status="bogus")],  # type: ignore[arg-type]
        [Outcome(call_id="c", name="t", status="completed", result_json=b"{}")],  # type: ignore[arg-type]
    ],
)
def test_bad_input_raises_usage_error(outcomes: Any) -> None:
    """Anything but a list of usable outcomes raises UsageError."""
    with pytest.raises(UsageError):
        tool_results(outcomes, "openai-chat")


def test_gemini_refuses_result_json_that_is_not_json() -> None:
    """Gemini needs the value: a result_json that is not JSON raises UsageError."""
    with pytest.raises(UsageError, match="not JSON"):
        tool_results([_outcome("completed", result_json="not json")], "gemini")


def test_recorded_corpus_calls_get_one_result_each(corpus_dir: Any) -> None:
    """For every recorded call, each format carries its id back exactly once."""
    calls = [c for r in load_expected().values() for c in r.get("tool_calls") or [] if c.get("id")]
    assert len(calls) >= 40
    outcomes = [
        Outcome(call_id=c["id"], name=c["name"], status="completed", result_json='"done"')
        for c in calls
    ]
    chat = tool_results(outcomes, "openai-chat")
    assert [m["tool_call_id"] for m in chat] == [c["id"] for c in calls]
    (anthropic,) = tool_results(outcomes, "anthropic")
    assert len(anthropic["content"]) == len(calls)
    (gemini,) = tool_results(outcomes, "gemini")
    assert all(p["functionResponse"]["response"] == {"result": "done"} for p in gemini["parts"])


# ------------------------------------------------------------------ the assistant turn


def _assemble(fmt: str, payloads: list[Any]) -> Response:
    asm = StreamAssembler(format=fmt)
    for payload in payloads:
        asm.feed(payload)
    return asm.close()


def _answer(response: Response) -> list[Outcome]:
    """What the executor gives a response with a rejected call: rejected, and skipped."""
    out = []
    for call in sorted([*response.tool_calls, *response.rejected], key=lambda c: c.index):
        if isinstance(call, RejectedCall):
            out.append(Outcome(call_id=call.id, name=call.name, status="rejected", error="bad"))
        else:
            out.append(Outcome(call_id=call.id, name=call.name, status="skipped"))
    return out


def _anthropic_stream() -> list[dict[str, Any]]:
    def block(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_start", "index": index, "content_block": body}

    def delta(index: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": "content_block_delta", "index": index, "delta": body}

    def stop(index: int) -> dict[str, Any]:
        return {"type": "content_block_stop", "index": index}

    return [
        {"type": "message_start", "message": {"id": "msg_1", "model": "claude"}},
        block(0, {"type": "thinking", "thinking": "", "signature": ""}),
        delta(0, {"type": "thinking_delta", "thinking": "Two moves."}),
        delta(0, {"type": "signature_delta", "signature": "sig-A"}),
        stop(0),
        block(1, {"type": "redacted_thinking", "data": "enc-B"}),
        stop(1),
        block(2, {"type": "text", "text": ""}),
        delta(2, {"type": "text_delta", "text": "Moving."}),
        stop(2),
        block(3, {"type": "tool_use", "id": "toolu_1", "name": "move", "input": {}}),
        delta(3, {"type": "input_json_delta", "partial_json": '{"to": "Lyon"}'}),
        stop(3),
        block(4, {"type": "tool_use", "id": "toolu_2", "name": "move", "input": {}}),
        delta(4, {"type": "input_json_delta", "partial_json": '{"to": Paris}'}),
        stop(4),
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}},
        {"type": "message_stop"},
    ]


def test_anthropic_turn_repeats_blocks_signatures_and_the_rejected_call() -> None:
    """Anthropic: thinking with its signature, redacted_thinking, text and both tool_use
    blocks in order; the rejected call's input wraps its raw text as INVALID_JSON."""
    response = _assemble("anthropic", _anthropic_stream())
    assert [c.id for c in response.rejected] == ["toolu_2"]
    turn = turn_messages(response, _answer(response), "anthropic")
    assert turn[0] == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Two moves.", "signature": "sig-A"},
            {"type": "redacted_thinking", "data": "enc-B"},
            {"type": "text", "text": "Moving."},
            {"type": "tool_use", "id": "toolu_1", "name": "move", "input": {"to": "Lyon"}},
            {
                "type": "tool_use",
                "id": "toolu_2",
                "name": "move",
                "input": {"INVALID_JSON": '{"to": Paris}'},
            },
        ],
    }
    assert [b["tool_use_id"] for b in turn[1]["content"]] == ["toolu_1", "toolu_2"]


def test_openai_chat_turn_carries_raw_text_of_the_rejected_call() -> None:
    """OpenAI chat: the assistant message has both calls; the rejected one's arguments
    are the raw text that arrived (the API takes a string)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": "chatcmpl-1", "model": "gpt", "choices": [choice]}

    def call(index: int, id: str, args: str) -> dict[str, Any]:
        entry = {"index": index, "id": id, "function": {"name": "move", "arguments": args}}
        return {"tool_calls": [entry]}

    response = _assemble(
        "openai",
        [
            chunk({"content": "Moving."}),
            chunk(call(0, "call_a", '{"to": "Lyon"}')),
            chunk(call(1, "call_b", "{to: Paris}")),
            chunk({}, "tool_calls"),
        ],
    )
    turn = turn_messages(response, _answer(response), "openai-chat")
    assert turn[0] == {
        "role": "assistant",
        "content": "Moving.",
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "move", "arguments": '{"to": "Lyon"}'},
            },
            {
                "id": "call_b",
                "type": "function",
                "function": {"name": "move", "arguments": "{to: Paris}"},
            },
        ],
    }
    assert [m["tool_call_id"] for m in turn[1:]] == ["call_a", "call_b"]


def test_responses_turn_repeats_items_with_ids_and_the_reasoning_item() -> None:
    """Responses: the reasoning item as it came (encrypted content kept), the message with
    its id, and function_call items with item id and call id; raw text when rejected."""
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "enc"}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}

    def fc(n: int, args: str) -> dict[str, Any]:
        return {
            "type": "function_call",
            "id": f"fc_{n}",
            "call_id": f"call_{n}",
            "name": "move",
            "arguments": args,
        }

    def item(kind: str, n: int, body: dict[str, Any]) -> dict[str, Any]:
        return {"type": f"response.output_item.{kind}", "output_index": n, "item": body}

    response = _assemble(
        "openai-responses",
        [
            {"type": "response.created", "response": {"id": "resp_1", "model": "gpt"}},
            item("added", 0, {**reasoning, "encrypted_content": None}),
            item("done", 0, reasoning),
            item("added", 1, message),
            {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Moving."},
            item("done", 1, message),
            item("added", 2, fc(1, "")),
            {
                "type": "response.function_call_arguments.delta",
                "item_id": "fc_1",
                "delta": '{"to": "Lyon"}',
            },
            item("done", 2, fc(1, '{"to": "Lyon"}')),
            item("added", 3, fc(2, "")),
            {"type": "response.function_call_arguments.delta", "item_id": "fc_2", "delta": "{to}"},
            item("done", 3, fc(2, "{to}")),
            {"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}},
        ],
    )
    turn = turn_messages(response, _answer(response), "openai-responses")
    assert turn[:4] == [
        reasoning,
        {
            "type": "message",
            "role": "assistant",
            "id": "msg_1",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Moving.", "annotations": []}],
        },
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "move",
            "arguments": '{"to": "Lyon"}',
            "id": "fc_1",
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "move",
            "arguments": "{to}",
            "id": "fc_2",
        },
    ]
    assert [i["call_id"] for i in turn[4:]] == ["call_1", "call_2"]


def test_gemini_turn_keeps_thought_signatures_in_their_parts() -> None:
    """Gemini: a signed text part keeps its signature; the first call keeps its own; ids
    (synthesised ones too) match the function responses."""

    def chunk(*parts: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": list(parts)}}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "responseId": "r1", "modelVersion": "gemini-3"}

    response = _assemble(
        "gemini",
        [
            chunk({"text": "Moving"}),
            chunk({"text": " now.", "thoughtSignature": "sig-T"}),
            chunk(
                {
                    "functionCall": {"name": "move", "args": {"to": "Lyon"}},
                    "thoughtSignature": "sig-C",
                },
                {"functionCall": {"name": "move", "args": {"to": "Paris"}}},
                finish="STOP",
            ),
        ],
    )
    first, second = response.tool_calls
    turn = turn_messages(response, _answer(response), "gemini")
    assert turn[0] == {
        "role": "model",
        "parts": [
            {"text": "Moving now.", "thoughtSignature": "sig-T"},
            {
                "functionCall": {"name": "move", "args": {"to": "Lyon"}, "id": first.id},
                "thoughtSignature": "sig-C",
            },
            {"functionCall": {"name": "move", "args": {"to": "Paris"}, "id": second.id}},
        ],
    }
    assert [p["functionResponse"]["id"] for p in turn[1]["parts"]] == [first.id, second.id]


def test_bedrock_turn_keeps_the_reasoning_signature() -> None:
    """Bedrock: reasoningContent with its signature, text, and toolUse blocks; the rejected
    call's input is {"INVALID_JSON": raw}."""

    def delta(index: int, **body: Any) -> dict[str, Any]:
        return {"contentBlockDelta": {"contentBlockIndex": index, "delta": body}}

    def tool(index: int, use_id: str, raw: str) -> list[dict[str, Any]]:
        start = {"toolUse": {"toolUseId": use_id, "name": "move"}}
        return [
            {"contentBlockStart": {"contentBlockIndex": index, "start": start}},
            delta(index, toolUse={"input": raw}),
            {"contentBlockStop": {"contentBlockIndex": index}},
        ]

    response = _assemble(
        "bedrock-converse",
        [
            delta(0, reasoningContent={"text": "Two moves."}),
            delta(0, reasoningContent={"signature": "sig-R"}),
            delta(1, text="Moving."),
            *tool(2, "tu_1", '{"to": "Lyon"}'),
            *tool(3, "tu_2", "{to"),
            {"messageStop": {"stopReason": "tool_use"}},
        ],
    )
    turn = turn_messages(response, _answer(response), "bedrock-converse")
    assert turn[0] == {
        "role": "assistant",
        "content": [
            {"reasoningContent": {"reasoningText": {"text": "Two moves.", "signature": "sig-R"}}},
            {"text": "Moving."},
            {"toolUse": {"toolUseId": "tu_1", "name": "move", "input": {"to": "Lyon"}}},
            {"toolUse": {"toolUseId": "tu_2", "name": "move", "input": {"INVALID_JSON": "{to"}}},
        ],
    }
    assert [b["toolResult"]["toolUseId"] for b in turn[1]["content"]] == ["tu_1", "tu_2"]


def test_cohere_turn_carries_the_tool_plan() -> None:
    """Cohere: the tool plan comes back as tool_plan, next to both calls."""

    def call(index: int, kind: str, **body: Any) -> dict[str, Any]:
        return {
            "type": f"tool-call-{kind}",
            "index": index,
            "delta": {"message": {"tool_calls": body}},
        }

    response = _assemble(
        "cohere",
        [
            {"type": "message-start", "id": "m1"},
            {"type": "tool-plan-delta", "delta": {"message": {"tool_plan": "I will move."}}},
            call(0, "start", id="c1", type="function", function={"name": "move", "arguments": ""}),
            call(0, "delta", function={"arguments": '{"to": "Lyon"}'}),
            {"type": "tool-call-end", "index": 0},
            call(
                1, "start", id="c2", type="function", function={"name": "move", "arguments": "{x"}
            ),
            {"type": "tool-call-end", "index": 1},
            {"type": "message-end", "delta": {"finish_reason": "TOOL_CALL"}},
        ],
    )
    turn = turn_messages(response, _answer(response), "cohere")
    assert turn[0] == {
        "role": "assistant",
        "tool_plan": "I will move.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "move", "arguments": '{"to": "Lyon"}'},
            },
            {"id": "c2", "type": "function", "function": {"name": "move", "arguments": "{x"}},
        ],
    }
    assert [m["tool_call_id"] for m in turn[1:]] == ["c1", "c2"]


def test_ollama_turn_sends_object_arguments_and_answers_by_name() -> None:
    """Ollama: arguments as objects (INVALID_JSON for text that is not JSON), thinking kept."""
    calls = [
        {"function": {"name": "move", "arguments": {"to": "Lyon"}}},
        {"function": {"name": "move", "arguments": "{to"}},
    ]
    response = _assemble(
        "ollama",
        [
            {
                "model": "llama",
                "created_at": "t",
                "message": {"thinking": "Two.", "tool_calls": calls},
                "done": False,
            },
            {"model": "llama", "created_at": "t", "done": True, "done_reason": "stop"},
        ],
    )
    turn = turn_messages(response, _answer(response), "ollama")
    assert turn[0] == {
        "role": "assistant",
        "content": "",
        "thinking": "Two.",
        "tool_calls": [
            {"function": {"name": "move", "arguments": {"to": "Lyon"}}},
            {"function": {"name": "move", "arguments": {"INVALID_JSON": "{to"}}},
        ],
    }
    assert [m["tool_name"] for m in turn[1:]] == ["move", "move"]


def _ids_in_turn(fmt: str, turn: list[dict[str, Any]]) -> list[str]:
    """The call ids an assistant turn carries, in order."""
    if fmt in ("openai-chat", "cohere"):
        return [c["id"] for c in turn[0].get("tool_calls", [])] if turn else []
    if fmt == "openai-responses":
        return [
            i["call_id"] for i in turn if i.get("type") in ("function_call", "custom_tool_call")
        ]
    if fmt == "anthropic":
        return [b["id"] for m in turn for b in m["content"] if b["type"] == "tool_use"]
    if fmt == "gemini":
        return [p["functionCall"]["id"] for m in turn for p in m["parts"] if "functionCall" in p]
    if fmt == "bedrock-converse":
        return [b["toolUse"]["toolUseId"] for m in turn for b in m["content"] if "toolUse" in b]
    return [c["function"]["name"] for c in turn[0].get("tool_calls", [])]  # ollama: by name


def _ids_in_results(fmt: str, results: list[dict[str, Any]]) -> list[str]:
    """The call ids the tool results answer, in order."""
    if fmt in ("openai-chat", "cohere"):
        return [m["tool_call_id"] for m in results]
    if fmt == "openai-responses":
        return [m["call_id"] for m in results]
    if fmt == "anthropic":
        return [b["tool_use_id"] for m in results for b in m["content"]]
    if fmt == "gemini":
        return [p["functionResponse"]["id"] for m in results for p in m["parts"]]
    if fmt == "bedrock-converse":
        return [b["toolResult"]["toolUseId"] for m in results for b in m["content"]]
    return [m["tool_name"] for m in results]


def _with_rejected(response: Response) -> Response:
    """``response`` plus a call whose arguments are not JSON (and one without a name)."""
    n = len(response.tool_calls) + len(response.rejected)
    bad = [
        RejectedCall(id=f"bad_{n}", name="move", raw_arguments="{to", reason="x", index=n),
        RejectedCall(id=f"bad_{n + 1}", name="", raw_arguments="", reason="x", index=n + 1),
    ]
    parts = [*response.parts, *(ContentPart(kind="call", call=c.index) for c in bad)]
    return dataclasses.replace(response, rejected=[*response.rejected, *bad], parts=parts)


@pytest.mark.parametrize(
    "fmt",
    [
        "openai-chat",
        "openai-responses",
        "anthropic",
        "gemini",
        "bedrock-converse",
        "ollama",
        "cohere",
    ],
)
def test_every_result_answers_a_call_the_turn_carries(corpus_dir: Any, fmt: str) -> None:
    """For every recorded response (plus rejected calls), in every format, the assistant
    turn carries exactly the calls that the tool results answer, each once."""
    from corpus_support import NAMES, run_payloads, stream_payloads

    checked = 0
    for name in NAMES:
        _, outcome = run_payloads(name, stream_payloads(name))
        if not isinstance(outcome, Response):
            continue
        response = _with_rejected(outcome)
        turn = assistant_turn(response, _answer(response), fmt)
        results = tool_results(_answer(response), fmt)
        assert sorted(_ids_in_turn(fmt, turn)) == sorted(_ids_in_results(fmt, results)), name
        assert json.loads(json.dumps(turn)) == turn  # plain JSON, ready to send
        checked += 1
    assert checked >= 40


def test_outcomes_must_answer_exactly_the_calls() -> None:
    """A call without an outcome, or an outcome for no call, is UsageError; a call id
    that repeats is answered once per call."""
    response = _assemble("anthropic", _anthropic_stream())
    outcomes = _answer(response)
    with pytest.raises(UsageError, match="has no outcome"):
        assistant_turn(response, outcomes[:1], "anthropic")
    stray = Outcome(call_id="nobody", name="move", status="skipped")
    with pytest.raises(UsageError, match="answers no call"):
        turn_messages(response, [*outcomes, stray], "anthropic")
    twice = dataclasses.replace(
        response,
        tool_calls=[response.tool_calls[0], dataclasses.replace(response.tool_calls[0], index=9)],
        rejected=[],
    )
    same = Outcome(call_id="toolu_1", name="move", status="skipped")
    assert len(_ids_in_turn("anthropic", assistant_turn(twice, [same, same], "anthropic"))) == 2
    with pytest.raises(UsageError):
        assistant_turn(twice, [same], "anthropic")


def test_a_call_without_a_name_is_carried_and_answered_under_one_name() -> None:
    """A rejected call whose name never arrived is sent as unnamed_tool both ways."""
    response = _with_rejected(_assemble("anthropic", _anthropic_stream()))
    turn = turn_messages(response, _answer(response), "gemini")
    calls = [p["functionCall"]["name"] for p in turn[0]["parts"] if "functionCall" in p]
    answers = [p["functionResponse"]["name"] for p in turn[1]["parts"]]
    assert calls[-1] == answers[-1] == UNNAMED_TOOL
