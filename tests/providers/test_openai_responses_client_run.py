"""Responses built-in calls the client runs (computer, shell, local shell, apply_patch):
ToolCalls of their kind with the item's action as arguments, echoed as their done items;
fed whole, byte by byte and at Hypothesis-chosen splits; a broken action is a typed error."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from adapter_support import assemble_bytes, assemble_every_way, sse_body
from drivers_support import splits
from responses_support import APPROVAL, CLIENT_RUN, NAMES, response_events
from toolwire._providers.openai_responses import assistant_turn


def _check(response: toolwire.Response) -> None:
    calls = response.tool_calls
    assert [(c.kind, c.name, c.id) for c in calls] == [
        (i["type"], n, i["call_id"]) for i, n in zip(CLIENT_RUN, NAMES, strict=True)
    ]
    assert [c.arguments for c in calls] == [i.get("action", i.get("operation")) for i in CLIENT_RUN]
    assert assistant_turn(response) == CLIENT_RUN
    assert response.finish_reason == "tool_calls"


def test_client_run_calls_whole_and_byte_by_byte() -> None:
    """Each built-in call is a ToolCall of its kind, echoed exactly as its done item."""
    response, _ = assemble_every_way(response_events(CLIENT_RUN))
    _check(response)


@given(st.lists(st.integers(0, 5000), max_size=16))
def test_client_run_calls_at_any_split(cuts: list[int]) -> None:
    """Fed at Hypothesis-chosen splits, the calls are the same."""
    response, _ = assemble_bytes(splits(sse_body(response_events(CLIENT_RUN)), cuts))
    _check(response)


def test_a_computer_call_with_batched_actions() -> None:
    """A computer call that carries ``actions`` (a list) has them as its arguments."""
    item = {k: v for k, v in CLIENT_RUN[0].items() if k != "action"}
    item["actions"] = [{"type": "screenshot"}]
    response, _ = assemble_every_way(response_events([item]))
    assert response.tool_calls[0].arguments == {"actions": [{"type": "screenshot"}]}


def test_an_action_that_is_not_an_object_is_a_format_error() -> None:
    """A shell call whose action is a string raises StreamFormatError."""
    item = copy.deepcopy(CLIENT_RUN[1])
    item["action"] = "ls"
    with pytest.raises(toolwire.StreamFormatError):
        assemble_every_way(response_events([item]))


def test_failed_outcomes_are_answered_with_each_kinds_item() -> None:
    """Failed outcomes of the four calls are answered with the four kinds' output items."""
    response, _ = assemble_every_way(response_events(CLIENT_RUN))
    outcomes = [
        toolwire.Outcome(call_id=c.id, name=c.name, status="failed", error="no")
        for c in response.tool_calls
    ]
    items = toolwire.tool_results(outcomes, "openai-responses", response=response)
    assert [i["type"] for i in items] == [
        "computer_call_output", "shell_call_output", "local_shell_call_output",
        "apply_patch_call_output",
    ]  # fmt: skip


@given(st.lists(st.integers(0, 3000), max_size=12))
def test_an_mcp_approval_request_is_a_call_at_any_split(cuts: list[int]) -> None:
    """An mcp_approval_request is a call of its kind whose id is the request's id, fed
    whole, byte by byte and at any split, and is echoed as it came."""
    events = response_events([APPROVAL])
    whole, _ = assemble_every_way(events)
    split, _ = assemble_bytes(splits(sse_body(events), cuts))
    for response in (whole, split):
        (call,) = response.tool_calls
        assert (call.kind, call.id, call.name) == ("mcp_approval_request", "mcpr_1", "mcp_approval")
        assert call.arguments["arguments"] == '{"sides": 6}'
        assert assistant_turn(response) == [APPROVAL]
