"""Durable conversations on every store: each response is recorded before its tools run,
a restart replays the recorded turn (the model is not asked again, a call that ran is not
run again, only calls that never started run), and the history is restored."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

import toolwire
import toolwire._conversation.conversation
from store_backends import Backend, Facade, backend, namespace, postgres_dsn, redis_url

__all__ = ["backend", "postgres_dsn", "redis_url"]  # fixtures used here

USER = [{"role": "user", "content": "Pay Ann and Bob."}]


class Crash(BaseException):
    """Stands for the process dying at that instant."""


def chunk(rid: str, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": rid,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


class Model:
    """A scripted model: each request gets the next script entry with NEW ids (a new
    generation, as a provider answers a request made again); requests are counted."""

    def __init__(self, *script: list[str] | str | Callable[[str], list[Any]]) -> None:
        self.script = list(script)
        self.requests: list[list[dict[str, Any]]] = []

    def payloads(self, messages: list[dict[str, Any]]) -> list[Any]:
        self.requests.append(messages)
        n = len(self.requests)
        rid = f"gen-{n}"
        entry = self.script.pop(0)
        if callable(entry):
            return entry(rid)
        if isinstance(entry, str):
            return [chunk(rid, {"content": entry}), chunk(rid, {}, "stop")]
        out = [
            chunk(
                rid,
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": f"call_{n}_{i}",
                            "type": "function",
                            "function": {"name": "pay", "arguments": f'{{"to": "{to}"}}'},
                        }
                    ]
                },
            )
            for i, to in enumerate(entry)
        ]
        return [*out, chunk(rid, {}, "tool_calls")]

    def __call__(self, messages: list[dict[str, Any]]) -> list[Any]:
        return self.payloads(messages)


def pay_tools(runs: Counter[str]) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool
    def pay(to: str, ctx: toolwire.ToolContext) -> str:
        """Pay someone."""
        runs[ctx.idempotency_key] += 1
        return f"paid {to}"

    return tools


class Crashing:
    """A store that dies (raises Crash) at one chosen write: the finish of the ``n``-th
    conversation record, or the claim of the ``n``-th tool call."""

    def __init__(self, inner: Any, *, record: int | None = None, call: int | None = None):
        self.inner = inner
        self.records = record
        self.calls = call

    def claim(self, key: str, **options: Any) -> Any:
        if not key.startswith("conv/") and self.calls is not None:
            self.calls -= 1
            if self.calls < 0:
                raise Crash
        return self.inner.claim(key, **options)

    def finish(self, key: str, **options: Any) -> Any:
        if key.startswith("conv/") and self.records is not None:
            self.records -= 1
            if self.records < 0:
                raise Crash
        return self.inner.finish(key, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class Side:
    """One conversation process on a backend: sync, or async on the facade's loop."""

    def __init__(self, facade: Facade, tools: toolwire.Toolbox, store: Any = None) -> None:
        self.facade = facade
        self.tools = tools
        self.store = facade.store if store is None else store

    def open(self, messages: list[dict[str, Any]] | None = None, **options: Any) -> Side:
        options.setdefault("max_concurrency", 1)
        if self.facade.is_async:
            self.conv: Any = toolwire.AsyncConversation(
                "chat-1", store=self.store, tools=self.tools, messages=messages, **options
            )
            self.facade.raw_await(self.conv.load())
        else:
            self.conv = toolwire.Conversation(
                "chat-1", store=self.store, tools=self.tools, messages=messages, **options
            )
        return self

    def run_turn(self, model: Model, **options: Any) -> toolwire.Turn:
        if not self.facade.is_async:
            turn: toolwire.Turn = self.conv.run_turn(model, **options)
            return turn

        def factory(messages: list[dict[str, Any]]) -> Any:
            items = model(messages)

            async def replay() -> Any:
                for item in items:
                    yield item

            return replay()

        turn = self.facade.raw_await(self.conv.run_turn(factory, **options))
        return turn


def answers(messages: list[dict[str, Any]]) -> None:
    """Every tool result answers a call of an assistant message before it, once."""
    asked = [c["id"] for m in messages for c in m.get("tool_calls") or []]
    answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert sorted(asked) == sorted(answered)


def reopen(backend: Backend, ns: str) -> Facade:
    return backend.open(ns)


def test_a_conversation_runs_to_its_end_and_a_new_process_restores_it(backend: Backend) -> None:
    """Two turns to done; a new store object on the same database restores the same
    messages, turn count and done, without asking the model."""
    runs: Counter[str] = Counter()
    ns = namespace()
    first = Side(backend.open(ns), pay_tools(runs)).open(USER)
    model = Model(["Ann", "Bob"], "Done.")
    while not first.conv.done:
        first.run_turn(model)
    assert first.conv.turns == 2 and len(model.requests) == 2
    assert list(runs.values()) == [1, 1]
    answers(first.conv.messages)
    assert first.conv.messages[-1] == {"role": "assistant", "content": "Done."}
    assert first.conv.pending == []
    again = Side(reopen(backend, ns), pay_tools(runs)).open()
    assert again.conv.messages == first.conv.messages
    assert (again.conv.turns, again.conv.done) == (2, True)
    with pytest.raises(toolwire.UsageError):
        again.run_turn(model)
    assert len(model.requests) == 2


def test_other_initial_messages_for_a_known_id_are_a_mismatch(backend: Backend) -> None:
    """Restoring with the same messages or None works; other messages raise."""
    ns = namespace()
    runs: Counter[str] = Counter()
    Side(backend.open(ns), pay_tools(runs)).open(USER)
    Side(reopen(backend, ns), pay_tools(runs)).open(USER)
    with pytest.raises(toolwire.ConversationMismatch):
        Side(reopen(backend, ns), pay_tools(runs)).open([{"role": "user", "content": "No."}])


@pytest.mark.parametrize("crash", ["after_recording", "after_tools", "between_calls"])
def test_a_restart_replays_the_recorded_turn_and_runs_nothing_twice(
    backend: Backend, crash: str
) -> None:
    """Whatever instant the process dies at after the response was recorded, the restart
    does not ask the model for that turn again, each call's tool runs once in all, and the
    messages answer every call."""
    if backend.name.endswith("async"):
        pytest.skip("the crashing wrapper is a sync store")
    runs: Counter[str] = Counter()
    ns = namespace()
    facade = backend.open(ns)
    where = {
        "after_recording": {"call": 0},  # the response is recorded, no tool started
        "after_tools": {"record": 2},  # start and response written, the messages never
        "between_calls": {"call": 1},  # the first call ran, the second never started
    }[crash]
    crashing = Crashing(facade.store, **where)
    model = Model(["Ann", "Bob", "Cy"], "Done.")
    with pytest.raises(Crash):
        Side(facade, pay_tools(runs), crashing).open(USER).run_turn(model)
    assert len(model.requests) == 1
    # a record claimed but never finished is taken over once its lease has run out
    backend.jump(ns, toolwire._conversation.conversation.RECORD_LEASE + 1)
    restarted = Side(reopen(backend, ns), pay_tools(runs)).open()
    turn = restarted.run_turn(model)
    assert len(model.requests) == 1  # the recorded turn was replayed, not asked again
    assert [call.id for call in turn.response.tool_calls] == ["call_1_0", "call_1_1", "call_1_2"]
    assert sorted(runs.values()) == [1, 1, 1]
    replayed = [outcome.status for outcome in turn.outcomes].count("replayed")
    assert replayed == {"after_recording": 0, "after_tools": 3, "between_calls": 1}[crash]
    restarted.run_turn(model)
    assert restarted.conv.done and len(model.requests) == 2
    answers(restarted.conv.messages)


def test_a_stream_that_did_not_end_records_nothing_and_is_asked_again(backend: Backend) -> None:
    """A cut stream raises its StreamError; the next run_turn asks the model again."""
    runs: Counter[str] = Counter()
    side = Side(backend.open(namespace()), pay_tools(runs)).open(USER)
    model = Model(lambda rid: [chunk(rid, {"content": "half"})], "Done.")
    with pytest.raises(toolwire.StreamAborted):
        side.run_turn(model)
    assert side.conv.turns == 0
    side.run_turn(model)
    assert len(model.requests) == 2 and side.conv.done
    assert model.requests[1] == USER


def test_a_token_limit_can_continue_the_conversation(backend: Backend) -> None:
    """With on_token_limit="continue" the cut answer and a note are recorded as a turn,
    so the next request tells the model what happened instead of repeating itself."""
    runs: Counter[str] = Counter()
    side = Side(backend.open(namespace()), pay_tools(runs)).open(USER)
    cut = Model(lambda rid: [chunk(rid, {"content": "A very long"}), chunk(rid, {}, "length")])
    with pytest.raises(toolwire.TokenLimitExceeded):
        side.run_turn(cut)
    model = Model(
        lambda rid: [chunk(rid, {"content": "A very long"}), chunk(rid, {}, "length")], "Short."
    )
    turn = side.run_turn(model, on_token_limit="continue")
    assert turn.response.finish_reason == "length" and not turn.done
    assert side.conv.turns == 1
    note = side.conv.messages[-2:]
    assert note[0] == {"role": "assistant", "content": "A very long"}
    assert note[1]["role"] == "user" and "token limit" in note[1]["content"]
    side.run_turn(model)
    assert model.requests[1][-2:] == note and side.conv.done
    assert not runs


def test_token_limit_messages_in_every_format() -> None:
    """The continuation is an assistant turn and a user note in the provider's format."""
    from toolwire._core.response import Partial

    partial = Partial(
        text="", reasoning="", calls=[], usage=None, raw_finish_reason="length",
        response_id=None, model=None,
    )  # fmt: skip
    error = toolwire.TokenLimitExceeded("cut", partial)
    for fmt in ("openai-chat", "openai-responses", "anthropic", "gemini", "bedrock-converse"):
        messages = toolwire.token_limit_messages(error, fmt)
        assert len(messages) == 2, fmt
        assert "token limit" in str(messages[-1]), fmt
    with pytest.raises(toolwire.UsageError):
        toolwire.token_limit_messages(ValueError("x"), "openai-chat")  # type: ignore[arg-type]


def test_the_token_limit_note_is_each_formats_own_user_message() -> None:
    """The note is a user message in the shape its format's provider writes (Gemini parts,
    Bedrock content blocks, text content elsewhere, aliases included)."""
    from toolwire._conversation.token_limit import TOKEN_LIMIT_NOTE
    from toolwire._core.response import Partial

    partial = Partial(
        text="", reasoning="", calls=[], usage=None, raw_finish_reason="length",
        response_id=None, model=None,
    )  # fmt: skip
    error = toolwire.TokenLimitExceeded("cut", partial)
    note = TOKEN_LIMIT_NOTE
    assert toolwire.token_limit_messages(error, "gemini")[-1] == {
        "role": "user",
        "parts": [{"text": note}],
    }
    assert toolwire.token_limit_messages(error, "bedrock-converse")[-1] == {
        "role": "user",
        "content": [{"text": note}],
    }
    for fmt in ("openai", "openai-chat", "openai-responses", "anthropic", "cohere", "ollama"):
        assert toolwire.token_limit_messages(error, fmt)[-1] == {"role": "user", "content": note}
