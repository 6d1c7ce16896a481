"""A toolwire conversation as a Temporal workflow (extra ``toolwire[temporal]``).

Each turn is TWO activities: the model activity records the response (its JSON is kept in
the workflow's history); the tools activity replays it on a toolwire store, scoped to the
workflow id. One activity doing both would, when retried, ask the model again (new call
ids) and run the tools again. See "On Temporal" in ``docs/durable-agents.md``.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from .._conversation.recording import record
    from .._core.recording import Recording
    from .._errors import TokenLimitExceeded, UsageError
    from .._execution.executor import Executor
    from .._tools.toolbox import Toolbox
    from .._turn.run import run_turn
    from ..stores.sqlite import SQLiteStore

__all__ = [
    "MODEL_ACTIVITY",
    "TOOLS_ACTIVITY",
    "ConversationActivities",
    "ConversationInput",
    "ConversationResult",
    "ConversationWorkflow",
    "ModelInput",
    "ToolsInput",
    "ToolsResult",
]

MODEL_ACTIVITY = "toolwire.model"
TOOLS_ACTIVITY = "toolwire.tools"
BUSY = "ToolwireCallsBusy"
"""The error type of a tools activity that found calls another worker still holds."""


@dataclass
class ConversationInput:
    """What the workflow starts from: the initial ``messages`` (provider format), at most
    ``max_turns`` turns, and the activities' timeouts in seconds (``heartbeat_timeout``
    lets Temporal notice a dead worker before ``start_to_close_timeout``)."""

    messages: list[dict[str, Any]]
    max_turns: int = 20
    model_timeout: float = 120.0
    tools_timeout: float = 600.0
    heartbeat_timeout: float | None = None
    maximum_attempts: int = 0
    """Attempts per activity (0: unlimited, Temporal's default)."""
    retry_interval: float = 1.0
    """Seconds before an activity's first retry (doubled each time, Temporal's default)."""


@dataclass
class ConversationResult:
    """The finished conversation: every message, and the number of turns."""

    messages: list[dict[str, Any]]
    turns: int


@dataclass
class ModelInput:
    """The model activity's input: the turn number and the history so far."""

    turn: int
    messages: list[dict[str, Any]]


@dataclass
class ToolsInput:
    """The tools activity's input: the turn number and the model activity's recording."""

    turn: int
    recording: str


@dataclass
class ToolsResult:
    """The tools activity's result: ``turn`` is ``Turn.to_dict()`` (its ``messages`` are
    the assistant turn and the tool results), ``done`` whether no tool was asked for."""

    turn: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    done: bool = False


class _Heartbeat:
    """Heartbeats the current activity from a thread while the body runs (only when the
    activity has a heartbeat timeout: a third of it apart)."""

    def __init__(self) -> None:
        timeout = activity.info().heartbeat_timeout
        self.interval = None if timeout is None else timeout.total_seconds() / 3
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> _Heartbeat:
        if self.interval is not None and self.interval > 0:
            context = contextvars.copy_context()
            self.thread = threading.Thread(target=context.run, args=(self._beat,), daemon=True)
            self.thread.start()
        return self

    def _beat(self) -> None:
        assert self.interval is not None
        while not self.stop.wait(self.interval):
            activity.heartbeat()

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()


class ConversationActivities:
    """The two activities of :class:`ConversationWorkflow`, bound to the application's
    ``tools``, its ``factory`` (``factory(messages)`` makes the streaming call, as for
    ``Conversation.run_turn``) and a toolwire ``store`` (a sync store, or a path for a
    ``SQLiteStore``; workers on several machines need a shared one, Postgres or Redis).
    ``executor_options`` go to the :class:`Executor` (``timeout``, ``lease``...).

    The activities are sync: run the worker with an ``activity_executor``
    (``Worker(..., activities=acts.activities, activity_executor=ThreadPoolExecutor())``).
    """

    def __init__(
        self,
        tools: Toolbox,
        factory: Callable[[list[dict[str, Any]]], Any],
        *,
        store: Any = "toolwire.db",
        **executor_options: Any,
    ) -> None:
        if not isinstance(tools, Toolbox):
            raise UsageError(f"tools must be a toolwire.Toolbox, not {type(tools).__name__}")
        if not callable(factory):
            raise UsageError(f"factory must be a callable taking the messages, not {factory!r}")
        self.tools = tools
        self.factory = factory
        self.store = SQLiteStore(store) if isinstance(store, str) else store
        Executor(tools, store=self.store, scope="check", **executor_options)  # check them now
        self.executor_options = executor_options

    @property
    def activities(self) -> list[Callable[..., Any]]:
        """The activities to give the worker."""
        return [self.model, self.run_tools]

    @activity.defn(name=MODEL_ACTIVITY)
    def model(self, given: ModelInput) -> str:
        """Ask the model and return its response as recording JSON. A stream that did
        not end properly fails the activity (retried: the model is asked again)."""
        with _Heartbeat():
            try:
                return record(self.factory(given.messages)).to_json()
            except (TokenLimitExceeded, UsageError) as exc:
                raise ApplicationError(
                    str(exc), type=type(exc).__name__, non_retryable=True
                ) from exc

    @activity.defn(name=TOOLS_ACTIVITY)
    def run_tools(self, given: ToolsInput) -> ToolsResult:
        """Replay the recorded response and run its calls with the executor scoped to the
        workflow id: calls that finished are replayed from the store, never run again."""
        scope = activity.info().workflow_id
        executor = Executor(self.tools, store=self.store, scope=scope, **self.executor_options)
        with _Heartbeat():
            turn = run_turn(
                Recording.from_json(given.recording),
                self.tools,
                executor=executor,
                turn=f"turn-{given.turn}",
            )
        if any(outcome.status == "in_progress" for outcome in turn.outcomes):
            raise ApplicationError(
                f"turn {given.turn} of {scope!r} has calls another worker still holds",
                type=BUSY,
            )
        return ToolsResult(turn=turn.to_dict(), messages=turn.messages, done=turn.done)


async def _activity(
    name: str,
    argument: Any,
    result_type: type[Any],
    timeout: float,
    heartbeat: timedelta | None,
    retry: RetryPolicy,
) -> Any:
    """Run one activity of the conversation under its timeout and the shared heartbeat
    timeout and retry policy."""
    return await workflow.execute_activity(
        name,
        argument,
        result_type=result_type,
        start_to_close_timeout=timedelta(seconds=timeout),
        heartbeat_timeout=heartbeat,
        retry_policy=retry,
    )


@workflow.defn(name="toolwire.Conversation")
class ConversationWorkflow:
    """A conversation, two activities a turn, until the model asks for no tool. The
    workflow does no I/O: its history is built from the activities' results."""

    @workflow.run
    async def run(self, given: ConversationInput) -> ConversationResult:
        messages = list(given.messages)
        retry = RetryPolicy(
            initial_interval=timedelta(seconds=given.retry_interval),
            maximum_attempts=given.maximum_attempts,
        )
        heartbeat = (
            None if given.heartbeat_timeout is None else timedelta(seconds=given.heartbeat_timeout)
        )
        for number in range(given.max_turns):
            model = ModelInput(turn=number, messages=messages)
            recording: str = await _activity(
                MODEL_ACTIVITY, model, str, given.model_timeout, heartbeat, retry
            )
            tools = ToolsInput(turn=number, recording=recording)
            result: ToolsResult = await _activity(
                TOOLS_ACTIVITY, tools, ToolsResult, given.tools_timeout, heartbeat, retry
            )
            messages = [*messages, *result.messages]
            if result.done:
                return ConversationResult(messages=messages, turns=number + 1)
        raise ApplicationError(
            f"the conversation did not finish within {given.max_turns} turns",
            type="ToolwireMaxTurns",
            non_retryable=True,
        )
