"""run_turn on Responses streams with items the client must not answer: xAI's server-run
calls, beside a client call or before the answer."""

from __future__ import annotations

import copy
from collections import Counter

import toolwire
from providers.test_openai_responses_items import XAI_SEARCH, _xai_stream
from providers.test_openai_responses_server_calls import ANSWER, INVENTED, VIDEO
from providers.test_openai_responses_server_calls import _xai_stream as server_calls_stream
from turn_support import counted_tools


def test_an_xai_server_search_beside_a_client_call_runs_only_the_client_call() -> None:
    """The X search the server ran is echoed and never answered; the valid call beside it
    runs (before, the turn aborted on the search as an unknown tool)."""
    events = copy.deepcopy(_xai_stream())
    for event in events:
        item = event.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            item["name"] = "get_weather"
            if item["arguments"]:
                item["arguments"] = '{"city": "Lyon"}'
        if event["type"] == "response.function_call_arguments.delta":
            event["delta"] = '{"city": "Lyon"}'
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    turn = toolwire.run_turn(iter(events), tools, executor=toolwire.Executor(tools, scope="x"))
    assert turn.aborted is None and not turn.done
    assert [(o.name, o.status) for o in turn.outcomes] == [("get_weather", "completed")]
    assert turn.messages[0] == XAI_SEARCH
    assert [m.get("call_id") for m in turn.messages if m["type"].endswith("_output")] == ["call_1"]


def test_an_xai_turn_of_server_calls_of_any_name_completes_with_its_answer() -> None:
    """A grok turn whose server ran ``view_x_video`` and a tool of a name nobody listed,
    then answered, completes with that answer: nothing is rejected as an unknown tool,
    nothing runs, and the next request repeats the server calls unanswered (before, the
    turn aborted on ``view_x_video`` as an unknown tool)."""
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    turn = toolwire.run_turn(
        iter(server_calls_stream()), tools, executor=toolwire.Executor(tools, scope="x")
    )
    assert turn.aborted is None and turn.done
    assert turn.response.text == ANSWER and turn.response.rejected == []
    assert turn.outcomes == [] and not runs
    echoed = [m for m in turn.messages if m.get("type") == "custom_tool_call"]
    assert echoed == [INVENTED, VIDEO]
    assert not [m for m in turn.messages if m.get("type", "").endswith("_output")]
