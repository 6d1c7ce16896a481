"""``Conversation`` / ``AsyncConversation``: every model response is recorded on the store
before any of its tools runs, so a restart never asks a recorded turn again and never runs a
started call twice (a call cut short is ``unknown``, and the model is told so).

Storage: write-once records of the store protocol (claim, then finish with the JSON text)
under reserved keys, kept for the store's longest retention: ``conv/{id}/start`` (the
initial messages), ``conv/{id}/turn/{n}/response`` (the turn's recording) and
``conv/{id}/turn/{n}/messages`` (its assistant turn and tool results, once they ran).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import inspect
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .._core.events import StreamEvent
from .._core.recording import Recording
from .._core.response import ContentPart, Response
from .._errors import ConversationMismatch, StoreError, TokenLimitExceeded, UsageError
from .._execution.approvals import PendingCall
from .._execution.executor import AsyncExecutor, Executor
from .._streaming.drivers import FIRST_EVENT_TIMEOUT, IDLE_TIMEOUT, StreamHandle
from .._tools.toolbox import Toolbox
from .._turn.run import Turn, arun_turn, run_turn
from ..accounting.pricing import Prices
from ..stores._requests import MAX_SECONDS
from .recording import arecord, record
from .token_limit import token_limit_messages

__all__ = ["AsyncConversation", "Conversation"]

RECORD_LEASE = 5.0
"""Seconds a conversation record's claim holds before another process may take it over
(a claim is followed at once by its finish; only a process killed in between leaves one)."""
RETENTION = MAX_SECONDS
"""How long conversation records are kept after their last write: the stores' longest."""
_ARGS_HASH = "toolwire-conversation-record/v1"
_VERSION = 1
_POLL = 0.1

Factory = Callable[[list[dict[str, Any]]], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class _TurnChoices:
    """The keyword arguments of ``conv.run_turn`` as given (its signature states each one
    with its default): those of ``run_turn`` and ``on_token_limit``."""

    format: str
    early_abort: bool
    first_event_timeout: float | None
    idle_timeout: float | None
    total_timeout: float | None
    on_event: Callable[[StreamEvent], object] | None
    prices: Prices | None
    output: Any
    output_tool: str | None
    on_token_limit: Literal["raise", "continue"]

    def live(self) -> dict[str, Any]:
        """The keyword arguments of ``record``, which reads the live stream."""
        return {
            "format": self.format,
            "first_event_timeout": self.first_event_timeout,
            "idle_timeout": self.idle_timeout,
            "total_timeout": self.total_timeout,
            "on_event": self.on_event,
            "prices": self.prices,
            "output": self.output,
            "output_tool": self.output_tool,
        }

    def replay(self) -> dict[str, Any]:
        """The keyword arguments of ``run_turn``, which replays the recorded stream."""
        return {
            "early_abort": self.early_abort,
            "prices": self.prices,
            "output": self.output,
            "output_tool": self.output_tool,
        }


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        raise UsageError("a conversation's messages must be JSON values") from None


class _State:
    """What both conversation classes share: the keys, the record texts and the history,
    without any I/O."""

    def __init__(
        self, conversation_id: Any, tools: Any, messages: Any, executor: Executor | AsyncExecutor
    ) -> None:
        if not isinstance(conversation_id, str) or not conversation_id:
            raise UsageError(f"conversation_id must be a non-empty str, not {conversation_id!r}")
        if not isinstance(tools, Toolbox):
            raise UsageError(f"tools must be a toolwire.Toolbox, not {type(tools).__name__}")
        if messages is not None and not isinstance(messages, list):
            raise UsageError(f"messages must be a list of messages or None, not {messages!r}")
        self.id = conversation_id
        self.tools = tools
        if messages is not None:
            _canonical(messages)  # UsageError unless JSON
        self.given = None if messages is None else json.loads(json.dumps(messages))
        self.executor = executor
        self.start: list[dict[str, Any]] | None = None
        self.history: list[list[dict[str, Any]]] = []
        self.finished = False

    # -- keys and texts

    def key(self, *parts: object) -> str:
        return "/".join(("conv", self.id, *(str(part) for part in parts)))

    def start_text(self) -> str:
        return json.dumps({"version": _VERSION, "messages": self.given or []})

    def restore_start(self, text: str) -> None:
        stored = _decode(text)["messages"]
        if self.given is not None and _canonical(stored) != _canonical(self.given):
            raise ConversationMismatch(
                f"conversation {self.id!r} is already stored with other initial messages; "
                "pass messages=None to restore it, or use another conversation id"
            )
        self.start = stored

    def add_turn(self, text: str) -> None:
        data = _decode(text)
        self.history.append(data["messages"])
        self.finished = bool(data["done"])

    @staticmethod
    def turn_text(messages: list[dict[str, Any]], done: bool) -> str:
        data = {"version": _VERSION, "messages": messages, "done": done}
        return json.dumps(data, default=_bytes_json)

    # -- the history

    def loaded(self) -> list[dict[str, Any]]:
        if self.start is None:
            raise UsageError("await conv.load() (or conv.run_turn()) before reading its state")
        return self.start

    def messages(self) -> list[dict[str, Any]]:
        out = list(self.loaded())
        for turn in self.history:
            out.extend(turn)
        copied: list[dict[str, Any]] = copy.deepcopy(out)  # the caller's to change
        return copied

    def check(self, choices: _TurnChoices) -> None:
        """Refuse a turn of a finished conversation, or an unknown ``on_token_limit``."""
        if self.loaded() is not None and self.finished:
            raise UsageError(
                f"conversation {self.id!r} is done (the model asked for no tool); "
                "its answer is the last message"
            )
        on_limit = choices.on_token_limit
        if on_limit not in ("raise", "continue"):
            raise UsageError(f"on_token_limit must be 'raise' or 'continue', not {on_limit!r}")

    def identity(self, turn: int) -> str:
        return f"turn-{turn}"

    def gated(self) -> bool:
        """Whether any tool may wait for approval (else no turn can be pending)."""
        return any(tool.requires_approval is not False for tool in self.tools)

    def decided(self, turn: Turn) -> bool:
        """Whether a replayed turn, now settled, answered calls that waited for a decision
        (the caller then asks the model on at once)."""
        if self.finished or not self.gated():
            return False
        return bool(self.executor._gated(turn.response, turn.identity))

    @staticmethod
    def response_of(text: str) -> Response:
        """The response a turn's recording holds (assembled again; nothing runs)."""
        with StreamHandle(Recording.from_json(text)) as handle:
            for _ in handle:
                pass
        return handle.response

    def busy_deadline(self) -> float:
        """When a call still held by another worker is given up on: a dead worker's lease
        has run out long before, a live one has had its longest timeout."""
        executor = self.executor
        longest = max([executor.timeout, *(executor._timeout_of(tool) for tool in self.tools)])
        return time.monotonic() + 2 * executor.lease + longest + executor.cancel_grace

    def busy(self, turn: int) -> ConversationMismatch:
        return ConversationMismatch(
            f"turn {turn} of conversation {self.id!r} has calls that another worker still "
            "holds: another process is running this conversation"
        )

    def cut_turn(self, error: TokenLimitExceeded, messages: list[dict[str, Any]]) -> Turn:
        partial = error.partial
        text = partial.text if partial is not None else ""
        response = Response(
            text=text,
            reasoning=partial.reasoning if partial is not None else "",
            tool_calls=[],
            rejected=[],
            finish_reason="length",
            raw_finish_reason=partial.raw_finish_reason if partial is not None else None,
            usage=partial.usage if partial is not None else None,
            response_id=partial.response_id if partial is not None else None,
            model=partial.model if partial is not None else None,
            format=partial.format if partial is not None else None,
            created=partial.created if partial is not None else None,
            parts=[ContentPart(kind="text", text=text)] if text else [],
        )
        return Turn(
            response=response, outcomes=[], messages=messages, usage=response.usage, done=False
        )


_BYTES = "$toolwire"


def _bytes_json(value: Any) -> Any:
    """The JSON form of the bytes in a turn's messages (Bedrock image and document
    blocks): ``{"$toolwire": "bytes", "data": base64}``, read back by :func:`_decode`."""
    if isinstance(value, bytes):
        return {_BYTES: "bytes", "data": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"a {type(value).__name__} in a turn's messages has no JSON form")


def _bytes_back(item: dict[str, Any]) -> Any:
    if item.get(_BYTES) == "bytes" and len(item) == 2 and isinstance(item.get("data"), str):
        return base64.b64decode(item["data"])
    return item


def _decode(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text, object_hook=_bytes_back)
    except ValueError:
        raise StoreError("a conversation record is not JSON: the store is corrupt") from None
    if not isinstance(data, dict) or not isinstance(data.get("version"), int):
        raise StoreError("a conversation record has no version: the store is corrupt")
    if data["version"] > _VERSION:
        raise UsageError(
            f"this conversation was stored by a newer toolwire (record version "
            f"{data['version']}): upgrade toolwire to continue it"
        )
    return data


def _awaiting(turn: Turn) -> bool:
    return any(outcome.status == "awaiting_approval" for outcome in turn.outcomes)


def _in_progress(turn: Turn) -> bool:
    """Whether a call of ``turn`` is still running elsewhere (claimed by another process)."""
    return any(outcome.status == "in_progress" for outcome in turn.outcomes)


def _busy_pause(lease: float) -> float:
    """How long to wait before replaying a turn whose calls run elsewhere."""
    return min(0.25, lease / 4)


def _check_factory(factory: object) -> None:
    if not callable(factory):
        raise UsageError(f"factory must be a callable taking the messages, not {factory!r}")


def _continue_notes(
    error: TokenLimitExceeded, choices: _TurnChoices, live: dict[str, Any]
) -> list[dict[str, Any]]:
    """The messages that continue after ``error`` (``on_token_limit="continue"``);
    ``error`` itself otherwise."""
    if choices.on_token_limit != "continue":
        raise error
    return token_limit_messages(error, _format_of(error, live))


def _format_of(error: TokenLimitExceeded, live: dict[str, Any]) -> str:
    fmt = error.partial.format if error.partial is not None else None
    if fmt is None:
        fmt = live.get("format")
    if not isinstance(fmt, str) or fmt == "auto":
        raise error
    return fmt


def _claim_options(owner: str, key: str) -> dict[str, Any]:
    return {
        "args_hash": _ARGS_HASH,
        "idempotency_key": key,
        "owner": owner,
        "lease": RECORD_LEASE,
        "retention": RETENTION,
        "reclaim": True,
    }


def _settled(key: str, claim: Any) -> str | None:
    """The stored text a claim that was not acquired found, ``None`` while it is being
    written (or its writer died: its lease runs out, then the claim takes it over)."""
    record = claim.record
    if record.status == "completed" and record.result is not None:
        return str(record.result)
    if record.status == "in_progress":
        return None
    raise StoreError(f"the conversation record {key!r} is {record.status}: not written by toolwire")


class Conversation:
    """A durable conversation on a store (see ``docs/durable-agents.md``).

    ``Conversation(conversation_id, *, store, tools, messages=None, **executor_options)``
    restores the conversation from ``store`` when the id is known (the stored messages
    win; other initial ``messages`` for a known id raise :class:`ConversationMismatch`).
    The tools run with an :class:`Executor` built on ``store``, scoped to the
    conversation id, with ``executor_options`` (``timeout``, ``lease``...).

    ``messages`` is the whole history (provider format), ``turns`` the number of turns
    recorded, ``done`` whether the model asked for no tool in the last one, ``pending``
    the calls of the current turn waiting for approval (:meth:`approve`, :meth:`deny`).
    """

    def __init__(
        self,
        conversation_id: str,
        *,
        store: Any,
        tools: Toolbox,
        messages: list[dict[str, Any]] | None = None,
        **executor_options: Any,
    ) -> None:
        if inspect.iscoroutinefunction(getattr(store, "claim", None)):
            raise UsageError("Conversation takes a sync store; use AsyncConversation")
        executor = Executor(tools, store=store, scope=conversation_id, **executor_options)
        self._state = _State(conversation_id, tools, messages, executor)
        self._store = executor.store
        self.executor = executor
        self._load()

    @property
    def conversation_id(self) -> str:
        """The conversation's id."""
        return self._state.id

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The whole history: the initial messages, then every turn's messages."""
        return self._state.messages()

    @property
    def turns(self) -> int:
        """How many turns are recorded with their messages."""
        return len(self._state.history)

    @property
    def done(self) -> bool:
        """Whether the last turn's model asked for no tool."""
        return self._state.finished

    @property
    def pending(self) -> list[PendingCall]:
        """The calls of the current turn awaiting approval, as the store holds them now
        (a decision taken by another process shows at once)."""
        state = self._state
        if not state.gated():
            return []
        text = self._read(state.key("turn", len(state.history), "response"))
        if text is None:
            return []
        number = len(state.history)
        return self.executor.pending(state.response_of(text), turn=state.identity(number))

    def approve(self, key: str, *, arguments: dict[str, Any] | None = None) -> None:
        """Approve the pending call ``key`` (optionally with edited ``arguments``, validated
        again); the next :meth:`run_turn` runs it. See :meth:`Executor.approve`."""
        self.executor.approve(key, arguments=arguments)

    def deny(self, key: str, reason: str) -> None:
        """Deny the pending call ``key``; the next :meth:`run_turn` tells the model
        ``reason``. See :meth:`Executor.deny`."""
        self.executor.deny(key, reason)

    def _read(self, key: str) -> str | None:
        record = self._store.get(key)
        if record is None or record.status != "completed" or record.result is None:
            return None
        return str(record.result)

    def _write(self, key: str, text: str) -> str:
        """Write ``text`` once under ``key``; the text stored there (another writer's if
        one came first)."""
        owner = uuid.uuid4().hex
        while True:
            claim = self._store.claim(key, **_claim_options(owner, key))
            if claim.acquired:
                fence = claim.record.fence
                done = self._store.finish(
                    key, owner=owner, fence=fence, status="completed", result=text, error=None
                )
                if done:
                    return text
                continue
            found = _settled(key, claim)
            if found is not None:
                return found
            time.sleep(_POLL)

    def _load(self) -> None:
        state = self._state
        text = self._read(state.key("start"))
        if text is None:
            text = self._write(state.key("start"), state.start_text())
        state.restore_start(text)
        while (text := self._read(state.key("turn", len(state.history), "messages"))) is not None:
            state.add_turn(text)

    def run_turn(
        self,
        factory: Factory,
        *,
        format: str = "auto",
        early_abort: bool = True,
        first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
        idle_timeout: float | None = IDLE_TIMEOUT,
        total_timeout: float | None = None,
        on_event: Callable[[StreamEvent], object] | None = None,
        prices: Prices | None = None,
        output: Any = None,
        output_tool: str | None = None,
        on_token_limit: Literal["raise", "continue"] = "raise",
    ) -> Turn:
        """Run the next turn: ``factory(messages)`` makes the streaming call (not called
        when the turn's response is already recorded: a restart replays it). The response
        is recorded before any tool runs; the stored outcomes are replayed and only calls
        that never started run; then the turn's messages are saved and appended.

        A stream that did not end properly records nothing and raises its
        :class:`StreamError`; the next ``run_turn`` asks the model again. With
        ``on_token_limit="continue"``, a :class:`TokenLimitExceeded` instead records the
        :func:`token_limit_messages` as the turn and returns it
        (``turn.response.finish_reason == "length"``). The other keyword arguments are
        those of ``run_turn``.
        """
        choices = _TurnChoices(
            format=format,
            early_abort=early_abort,
            first_event_timeout=first_event_timeout,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
            on_event=on_event,
            prices=prices,
            output=output,
            output_tool=output_tool,
            on_token_limit=on_token_limit,
        )
        return self._run_turn(factory, choices)

    def _run_turn(self, factory: Factory, choices: _TurnChoices) -> Turn:
        state = self._state
        state.check(choices)
        number = len(state.history)
        text = self._read(state.key("turn", number, "response"))
        replayed = text is not None
        if text is None:
            made = self._record(factory, choices, number)
            if isinstance(made, Turn):
                return made  # cut at the output token limit, and recorded as such
            text = made
        turn = self._replay(Recording.from_json(text), choices, number)
        if _awaiting(turn):
            return turn  # recorded, not settled: the next run_turn replays it
        key = state.key("turn", number, "messages")
        state.add_turn(self._write(key, state.turn_text(turn.messages, turn.done)))
        if replayed and state.decided(turn):
            return self._run_turn(factory, choices)  # the decisions are answered: ask on
        return turn

    def _record(self, factory: Factory, choices: _TurnChoices, number: int) -> str | Turn:
        """Record turn ``number``'s live response: its text as stored, or the turn cut at
        the output token limit (with ``on_token_limit="continue"``)."""
        state = self._state
        live = choices.live()
        _check_factory(factory)
        try:
            recording = record(factory(state.messages()), **live)
        except TokenLimitExceeded as exc:
            notes = _continue_notes(exc, choices, live)
            key = state.key("turn", number, "messages")
            state.add_turn(self._write(key, state.turn_text(notes, False)))
            return state.cut_turn(exc, notes)
        return self._write(state.key("turn", number, "response"), recording.to_json())

    def _replay(self, recording: Recording, choices: _TurnChoices, number: int) -> Turn:
        """Replay turn ``number``'s recording until no call of it is still in progress
        elsewhere (another process runs it); :class:`ConversationMismatch` past the wait."""
        state = self._state
        deadline = state.busy_deadline()
        while True:
            turn = run_turn(
                recording,
                state.tools,
                executor=self.executor,
                turn=state.identity(number),
                **choices.replay(),
            )
            if not _in_progress(turn):
                return turn
            if time.monotonic() > deadline:
                raise state.busy(number)
            time.sleep(_busy_pause(self.executor.lease))


class AsyncConversation:
    """The asyncio form of :class:`Conversation`: ``await conv.run_turn(factory)``, where
    ``factory(messages)`` returns an async stream (or an awaitable of one). The state is
    read from the store by ``await conv.load()`` (``run_turn`` loads it first); the
    properties raise :class:`UsageError` before. Takes an async or a sync store."""

    def __init__(
        self,
        conversation_id: str,
        *,
        store: Any,
        tools: Toolbox,
        messages: list[dict[str, Any]] | None = None,
        **executor_options: Any,
    ) -> None:
        executor = AsyncExecutor(tools, store=store, scope=conversation_id, **executor_options)
        self._state = _State(conversation_id, tools, messages, executor)
        self._store = executor.store
        self._async = inspect.iscoroutinefunction(getattr(self._store, "claim", None))
        self.executor = executor
        self._pending: list[PendingCall] = []

    @property
    def conversation_id(self) -> str:
        """The conversation's id."""
        return self._state.id

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The whole history: the initial messages, then every turn's messages."""
        return self._state.messages()

    @property
    def turns(self) -> int:
        """How many turns are recorded with their messages."""
        self._state.loaded()
        return len(self._state.history)

    @property
    def done(self) -> bool:
        """Whether the last turn's model asked for no tool."""
        self._state.loaded()
        return self._state.finished

    @property
    def pending(self) -> list[PendingCall]:
        """The calls of the current turn awaiting approval, as of the last ``load()``,
        ``run_turn()``, ``approve()`` or ``deny()`` (``await conv.refresh()`` reads them
        again)."""
        self._state.loaded()
        return list(self._pending)

    async def refresh(self) -> list[PendingCall]:
        """Read the pending calls from the store again; return them."""
        await self.load()
        state = self._state
        self._pending = []
        if state.gated():
            text = await self._read(state.key("turn", len(state.history), "response"))
            if text is not None:
                response = state.response_of(text)
                number = len(state.history)
                self._pending = await self.executor.pending(response, turn=state.identity(number))
        return list(self._pending)

    async def approve(self, key: str, *, arguments: dict[str, Any] | None = None) -> None:
        """:meth:`Conversation.approve`, awaited."""
        await self.executor.approve(key, arguments=arguments)
        self._pending = [call for call in self._pending if call.key != key]

    async def deny(self, key: str, reason: str) -> None:
        """:meth:`Conversation.deny`, awaited."""
        await self.executor.deny(key, reason)
        self._pending = [call for call in self._pending if call.key != key]

    async def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        method = getattr(self._store, name)
        if self._async:
            return await method(*args, **kwargs)
        return await asyncio.to_thread(method, *args, **kwargs)

    async def _read(self, key: str) -> str | None:
        record = await self._call("get", key)
        if record is None or record.status != "completed" or record.result is None:
            return None
        return str(record.result)

    async def _write(self, key: str, text: str) -> str:
        owner = uuid.uuid4().hex
        while True:
            claim = await self._call("claim", key, **_claim_options(owner, key))
            if claim.acquired:
                fence = claim.record.fence
                done = await self._call(
                    "finish",
                    key,
                    owner=owner,
                    fence=fence,
                    status="completed",
                    result=text,
                    error=None,
                )
                if done:
                    return text
                continue
            found = _settled(key, claim)
            if found is not None:
                return found
            await asyncio.sleep(_POLL)

    async def load(self) -> AsyncConversation:
        """Read the conversation's state from the store (once; later calls do nothing)."""
        state = self._state
        if state.start is not None:
            return self
        text = await self._read(state.key("start"))
        if text is None:
            text = await self._write(state.key("start"), state.start_text())
        state.restore_start(text)
        while (
            text := await self._read(state.key("turn", len(state.history), "messages"))
        ) is not None:
            state.add_turn(text)
        await self.refresh()
        return self

    async def run_turn(
        self,
        factory: Factory,
        *,
        format: str = "auto",
        early_abort: bool = True,
        first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
        idle_timeout: float | None = IDLE_TIMEOUT,
        total_timeout: float | None = None,
        on_event: Callable[[StreamEvent], object] | None = None,
        prices: Prices | None = None,
        output: Any = None,
        output_tool: str | None = None,
        on_token_limit: Literal["raise", "continue"] = "raise",
    ) -> Turn:
        """:meth:`Conversation.run_turn`, awaited."""
        choices = _TurnChoices(
            format=format,
            early_abort=early_abort,
            first_event_timeout=first_event_timeout,
            idle_timeout=idle_timeout,
            total_timeout=total_timeout,
            on_event=on_event,
            prices=prices,
            output=output,
            output_tool=output_tool,
            on_token_limit=on_token_limit,
        )
        return await self._run_turn(factory, choices)

    async def _run_turn(self, factory: Factory, choices: _TurnChoices) -> Turn:
        await self.load()
        state = self._state
        state.check(choices)
        number = len(state.history)
        text = await self._read(state.key("turn", number, "response"))
        replayed = text is not None
        if text is None:
            made = await self._record(factory, choices, number)
            if isinstance(made, Turn):
                return made  # cut at the output token limit, and recorded as such
            text = made
        turn = await self._replay(Recording.from_json(text), choices, number)
        if _awaiting(turn):
            await self.refresh()
            return turn  # recorded, not settled: the next run_turn replays it
        key = state.key("turn", number, "messages")
        state.add_turn(await self._write(key, state.turn_text(turn.messages, turn.done)))
        self._pending = []
        if replayed and state.decided(turn):
            return await self._run_turn(factory, choices)  # the decisions are answered
        return turn

    async def _record(self, factory: Factory, choices: _TurnChoices, number: int) -> str | Turn:
        """:meth:`Conversation._record`, awaited."""
        state = self._state
        live = choices.live()
        _check_factory(factory)
        try:
            recording = await arecord(factory(state.messages()), **live)
        except TokenLimitExceeded as exc:
            notes = _continue_notes(exc, choices, live)
            key = state.key("turn", number, "messages")
            state.add_turn(await self._write(key, state.turn_text(notes, False)))
            return state.cut_turn(exc, notes)
        return await self._write(state.key("turn", number, "response"), recording.to_json())

    async def _replay(self, recording: Recording, choices: _TurnChoices, number: int) -> Turn:
        """:meth:`Conversation._replay`, awaited."""
        state = self._state
        deadline = state.busy_deadline()
        while True:
            turn = await arun_turn(
                recording,
                state.tools,
                executor=self.executor,
                turn=state.identity(number),
                **choices.replay(),
            )
            if not _in_progress(turn):
                return turn
            if time.monotonic() > deadline:
                raise state.busy(number)
            await asyncio.sleep(_busy_pause(self.executor.lease))
