"""A durable conversation as a DBOS workflow (extra ``toolwire[dbos]``).

Two steps per turn, never one: the model step records the response (its checkpointed
value is the recording's JSON); the tools step replays that recording with an executor
scoped to the workflow id, on a store of DBOS's own database. A single step that both
asked the model and ran the tools would, when retried, get new call ids and run the tools
again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from dbos import DBOS, StepOptions

from .._conversation.recording import record
from .._core.recording import Recording
from .._errors import StreamError, TokenLimitExceeded, UsageError
from .._execution.executor import Executor
from .._tools.toolbox import Toolbox
from .._turn.run import run_turn

__all__ = ["conversation_workflow", "run_conversation", "store_of_dbos"]

Factory = Callable[[list[dict[str, Any]]], Any]

_stores: dict[str, Any] = {}
_stores_lock = threading.Lock()


def _retry_stream(error: BaseException) -> bool:
    """A broken stream is asked again; an answer cut at the token limit would be cut again."""
    return isinstance(error, StreamError) and not isinstance(error, TokenLimitExceeded)


MODEL_STEP: StepOptions = {
    "retries_allowed": True,
    "max_attempts": 3,
    "interval_seconds": 1.0,
    "should_retry": _retry_stream,
}
"""The model step's default options: a stream that broke is asked again, up to 3 times."""
TOOLS_STEP: StepOptions = {"retries_allowed": True, "max_attempts": 3, "interval_seconds": 1.0}
"""The tools step's default options (a retry replays: completed calls are not run again)."""


def store_of_dbos() -> Any:
    """The toolwire store on the launched DBOS's system database, one per process: a
    :class:`~toolwire.SQLiteStore` on the same SQLite file (its table beside DBOS's), or a
    :class:`~toolwire.stores.postgres.PostgresStore` on the same PostgreSQL database."""
    from dbos._dbos import _get_dbos_instance  # DBOS exposes its configuration no other way

    url = _get_dbos_instance()._config.get("system_database_url")
    if not isinstance(url, str):
        raise UsageError("DBOS has no system_database_url: pass store= to the workflow")
    with _stores_lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = _open_store(url)
        return store


def _open_store(url: str) -> Any:
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        from ..stores.sqlite import SQLiteStore

        if not parsed.database or parsed.database == ":memory:":
            raise UsageError("DBOS on an in-memory SQLite database: pass store= to the workflow")
        return SQLiteStore(parsed.database)
    if backend == "postgresql":
        from ..stores.postgres import PostgresStore

        dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresStore(dsn)
    raise UsageError(f"no toolwire store for DBOS on {backend!r}: pass store= to the workflow")


def _ask(factory: Factory, messages: list[dict[str, Any]], options: dict[str, Any]) -> str:
    """The model step: make the streaming call and record the whole response."""
    return record(factory(messages), **options).to_json()


def _run_tools(
    text: str, tools: Toolbox, store: Any, number: int, options: dict[str, Any]
) -> dict[str, Any]:
    """The tools step: replay the recorded response with the executor scoped to the
    workflow id; wait out a call a dead attempt still holds (it ends ``unknown``)."""
    workflow_id = DBOS.workflow_id
    assert workflow_id is not None
    executor = Executor(
        tools, store=store_of_dbos() if store is None else store, scope=workflow_id, **options
    )
    recording = Recording.from_json(text)
    longest = max([executor.timeout, *(executor._timeout_of(tool) for tool in tools)])
    deadline = time.monotonic() + 2 * executor.lease + longest + executor.cancel_grace
    while True:
        turn = run_turn(recording, tools, executor=executor, turn=f"turn-{number}")
        if not any(outcome.status == "in_progress" for outcome in turn.outcomes):
            return {"messages": turn.messages, "done": turn.done}
        if time.monotonic() > deadline:
            raise UsageError(
                f"turn {number} of workflow {workflow_id!r} has calls another worker still "
                "holds: another process is running this conversation"
            )
        time.sleep(min(0.25, executor.lease / 4))


def run_conversation(
    factory: Factory,
    tools: Toolbox,
    messages: list[dict[str, Any]],
    *,
    store: Any = None,
    record_options: dict[str, Any] | None = None,
    model_step: StepOptions | None = None,
    tools_step: StepOptions | None = None,
    **executor_options: Any,
) -> list[dict[str, Any]]:
    """Run a conversation to its answer inside the calling DBOS workflow, two steps a turn;
    the whole history. ``factory(messages)`` makes the streaming call (the model step);
    the tools run with an :class:`Executor` on ``store`` (default :func:`store_of_dbos`)
    scoped to the workflow id, with ``executor_options``. ``record_options`` go to
    :func:`toolwire.record`; ``model_step`` / ``tools_step`` replace the steps' DBOS
    options (:data:`MODEL_STEP`, :data:`TOOLS_STEP`)."""
    if DBOS.workflow_id is None:
        raise UsageError("run_conversation runs inside a DBOS workflow (@DBOS.workflow())")
    if not callable(factory):
        raise UsageError(f"factory must be a callable taking the messages, not {factory!r}")
    if not isinstance(tools, Toolbox):
        raise UsageError(f"tools must be a toolwire.Toolbox, not {type(tools).__name__}")
    if not isinstance(messages, list):
        raise UsageError(f"messages must be a list of messages, not {messages!r}")
    live = dict(record_options or {})
    history = list(messages)
    number = 0
    while True:
        ask: StepOptions = {**(MODEL_STEP if model_step is None else model_step)}
        ask["name"] = f"toolwire.model.{number}"
        text = DBOS.run_step(ask, _ask, factory, list(history), live)
        run: StepOptions = {**(TOOLS_STEP if tools_step is None else tools_step)}
        run["name"] = f"toolwire.tools.{number}"
        result = DBOS.run_step(run, _run_tools, text, tools, store, number, executor_options)
        history.extend(result["messages"])
        if result["done"]:
            return history
        number += 1


def conversation_workflow(
    factory: Factory,
    tools: Toolbox,
    *,
    name: str | None = None,
    store: Any = None,
    record_options: dict[str, Any] | None = None,
    model_step: StepOptions | None = None,
    tools_step: StepOptions | None = None,
    **executor_options: Any,
) -> Callable[[list[dict[str, Any]]], list[dict[str, Any]]]:
    """A DBOS workflow ``workflow(messages) -> history`` running :func:`run_conversation`;
    call it at import time, before ``DBOS.launch()``, so that recovery finds it. Its name
    is ``name``, by default ``toolwire.conversation:{module}.{qualname}`` of ``factory``.
    Start it under an id: ``with SetWorkflowID("chat-42"): workflow(messages)``."""
    if name is None:
        module = getattr(factory, "__module__", None)
        qualname = getattr(factory, "__qualname__", None)
        if not module or not qualname or "<" in qualname:
            raise UsageError("give the workflow a name= (the factory has no stable name)")
        name = f"toolwire.conversation:{module}.{qualname}"

    def conversation(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return run_conversation(
            factory,
            tools,
            messages,
            store=store,
            record_options=record_options,
            model_step=model_step,
            tools_step=tools_step,
            **executor_options,
        )

    conversation.__qualname__ = conversation.__name__ = name
    workflow: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
    workflow = DBOS.workflow(name=name)(conversation)
    return workflow
