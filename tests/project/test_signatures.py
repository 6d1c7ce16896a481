"""Public callables write every parameter in their signature: ``inspect.signature``,
``help()`` and mypy see each keyword with its default, and no function takes a
``**options`` bundle or carries a rewritten ``__signature__``."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pytest

import toolwire
from toolwire._output.assembler import StreamAssembler
from toolwire.stores import AdminStore, AsyncAdminStore, AsyncStore, Store
from toolwire.stores.memory import MemoryStore
from toolwire.stores.postgres import AsyncPostgresStore, PostgresStore
from toolwire.stores.redis import AsyncRedisStore, RedisStore
from toolwire.stores.sqlite import SQLiteStore
from toolwire.testing import Simulator
from toolwire.testing._scenario import make_response

KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
VAR_KEYWORD = inspect.Parameter.VAR_KEYWORD


def keywords(func: Any) -> dict[str, Any]:
    """The keyword-only parameters of ``func``'s signature, with their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(func).parameters.items()
        if p.kind is KEYWORD_ONLY
    }


def defaults(func: Any) -> dict[str, Any]:
    """The default value of each parameter of ``func`` that has one."""
    return {
        name: p.default
        for name, p in inspect.signature(func).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def written(func: Any) -> bool:
    """Whether ``func`` takes no ``**`` bundle and its signature is its code's own."""
    func = inspect.unwrap(func)
    return "__signature__" not in vars(func) and not any(
        p.kind is VAR_KEYWORD for p in inspect.signature(func).parameters.values()
    )


TURN_KEYWORDS = {
    "format": "auto",
    "early_abort": True,
    "first_event_timeout": 600.0,
    "idle_timeout": 120.0,
    "total_timeout": None,
    "on_event": None,
    "turn": None,
    "prices": None,
    "output": None,
    "output_tool": None,
}


@pytest.mark.parametrize("func", [toolwire.run_turn, toolwire.arun_turn])
def test_run_turn_lists_its_keywords_with_defaults(func: Any) -> None:
    """run_turn and arun_turn show each keyword, in order, with the default the code uses."""
    shown = keywords(func)
    assert shown.pop("executor") is inspect.Parameter.empty
    assert list(shown.items()) == list(TURN_KEYWORDS.items())
    assert written(func)
    assert "early_abort: 'bool' = True" in str(inspect.signature(func))


@pytest.mark.parametrize("handle", [toolwire.StreamHandle, toolwire.AsyncStreamHandle])
def test_stream_handles_show_the_assembler_defaults(handle: Any) -> None:
    """The stream handles list the assembler settings they pass on, with its defaults."""
    shown = keywords(handle)
    assembler = defaults(StreamAssembler)
    for name in ("prices", "json_events", "output", "output_tool", "tools", "early_abort"):
        assert shown[name] == assembler[name]
    assert shown["first_event_timeout"] == 600.0 and shown["idle_timeout"] == 120.0
    assert written(handle.__init__)


@pytest.mark.parametrize("func", [toolwire.record, toolwire.arecord])
def test_record_lists_the_stream_keywords_and_on_event(func: Any) -> None:
    """record and arecord show the stream handle's keywords they pass on, and on_event."""
    shown = keywords(func)
    assert shown.pop("on_event") is None
    handle = keywords(toolwire.StreamHandle)
    assert shown == {name: handle[name] for name in shown}
    assert set(shown) == {
        "format",
        "first_event_timeout",
        "idle_timeout",
        "total_timeout",
        "prices",
        "output",
        "output_tool",
    }
    assert written(func)


@pytest.mark.parametrize("cls", [toolwire.Conversation, toolwire.AsyncConversation])
def test_conversation_run_turn_lists_run_turns_keywords(cls: Any) -> None:
    """conv.run_turn shows run_turn's keywords (but turn=, its own) and on_token_limit."""
    shown = keywords(cls.run_turn)
    assert shown.pop("on_token_limit") == "raise"
    assert shown == {k: v for k, v in TURN_KEYWORDS.items() if k != "turn"}
    assert written(cls.run_turn)


def test_add_response_lists_make_response_keywords() -> None:
    """Simulator.add_response shows make_response's keywords, defaults and for_model."""
    shown = keywords(Simulator.add_response)
    assert shown.pop("for_model") is None
    assert shown == {k: v for k, v in keywords(make_response).items() if k != "text"}
    assert written(Simulator.add_response)
    unknown = "add_response() got an unexpected keyword argument 'colour'"
    with Simulator() as sim, pytest.raises(TypeError, match=re.escape(unknown)):
        sim.add_response("hi", colour="red")  # type: ignore[call-arg]


def test_unknown_keyword_of_run_turn_is_a_type_error() -> None:
    """An unknown keyword raises Python's TypeError naming it."""
    tools = toolwire.Toolbox()
    executor = toolwire.Executor(tools, scope="signatures")
    with pytest.raises(
        TypeError, match="run_turn\\(\\) got an unexpected keyword argument 'colour'"
    ):
        toolwire.run_turn(iter([]), tools, executor=executor, colour="red")  # type: ignore[call-arg]


STORE_METHODS = ("claim", "heartbeat", "finish", "release", "get", "purge")
ADMIN_METHODS = ("records", "resolve")


def test_the_store_protocol_writes_every_parameter() -> None:
    """Store.claim reads alone: every keyword is written, required ones without a default."""
    claim = inspect.signature(Store.claim).parameters
    required = ["args_hash", "idempotency_key", "owner", "lease", "retention", "reclaim"]
    identity = ["scope", "turn", "tool_name", "call_id"]
    assert list(claim) == ["self", "key", *required, *identity]
    assert all(claim[name].kind is KEYWORD_ONLY for name in [*required, *identity])
    assert all(claim[name].default is inspect.Parameter.empty for name in required)
    assert all(claim[name].default is None for name in identity)
    assert keywords(AdminStore.records)["limit"] == 100
    for protocol in (Store, AsyncStore, AdminStore, AsyncAdminStore):
        for name in (*STORE_METHODS, *ADMIN_METHODS):
            if hasattr(protocol, name):
                assert written(getattr(protocol, name)), (protocol, name)


@pytest.mark.parametrize(
    ("store", "protocol"),
    [
        (MemoryStore, AdminStore),
        (SQLiteStore, AdminStore),
        (PostgresStore, AdminStore),
        (RedisStore, AdminStore),
        (AsyncPostgresStore, AsyncAdminStore),
        (AsyncRedisStore, AsyncAdminStore),
    ],
)
def test_every_store_shows_the_protocols_signatures(store: type, protocol: type) -> None:
    """Each backend's operations have exactly the Protocol's parameters and defaults."""
    for name in (*STORE_METHODS, *ADMIN_METHODS):
        mine = inspect.signature(getattr(store, name))
        theirs = inspect.signature(getattr(protocol, name))
        assert [(p.name, p.kind, p.default) for p in mine.parameters.values()] == [
            (p.name, p.kind, p.default) for p in theirs.parameters.values()
        ], (store.__name__, name)
