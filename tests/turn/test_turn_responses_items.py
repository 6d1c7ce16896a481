"""run_turn on Responses streams with items the client must not answer: xAI's server-run
X search beside a client call."""

from __future__ import annotations

import copy
from collections import Counter

import toolwire
from providers.test_openai_responses_items import XAI_SEARCH, _xai_stream
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
