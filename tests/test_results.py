"""Tool result messages: every format for every outcome status, result JSON sent verbatim
(byte-identical between a first run and its replay), Gemini's object wrapping, and typed
errors for bad input."""

from __future__ import annotations

import json
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import load_expected
from toolwire import Outcome, UnknownFormat, tool_results
from toolwire._outcome import OutcomeStatus
from toolwire._providers import names
from toolwire._results import STATUS_TEXTS, InvalidOutcome, outcome_text

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
    for fmt in names():
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
    """The stored JSON text is the content, byte for byte, first run and replay alike."""
    text = json.dumps(value, separators=(", ", ": "))  # any spelling is kept as is
    first = _outcome("completed", value=value, result_json=text)
    again = _outcome("replayed", value=value, result_json=text)
    for fmt in ("openai-chat", "openai-responses", "anthropic"):
        assert tool_results([first], fmt) == tool_results([again], fmt)
    (chat,) = tool_results([again if replayed else first], "openai-chat")
    assert chat["content"] == text
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
def test_bad_input_raises_invalid_outcome(outcomes: Any) -> None:
    """Anything but a list of usable outcomes raises InvalidOutcome (a ValueError)."""
    with pytest.raises(InvalidOutcome) as info:
        tool_results(outcomes, "openai-chat")
    assert isinstance(info.value, ValueError)


def test_gemini_refuses_result_json_that_is_not_json() -> None:
    """Gemini needs the value: a result_json that is not JSON raises InvalidOutcome."""
    with pytest.raises(InvalidOutcome, match="not JSON"):
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
