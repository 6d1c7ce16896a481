"""Approval before execution, at the executor (no conversation), on every store: a call
that needs approval is stored awaiting and not run, the others run; ``approve`` and
``deny`` decide durably and race-safely; an edit is validated again."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest

import toolwire
from executor_support import response
from store_backends import Backend, Facade, backend, namespace, postgres_dsn, redis_url

__all__ = ["backend", "postgres_dsn", "redis_url"]  # fixtures used here


def money_tools(runs: Counter[str], **approval: Any) -> toolwire.Toolbox:
    tools = toolwire.Toolbox()

    @tools.tool(requires_approval=approval.get("rule", True))
    def transfer(amount: int, to: str) -> dict[str, Any]:
        """Move money."""
        runs[f"transfer {amount} {to}"] += 1
        return {"sent": amount, "to": to}

    @tools.tool
    def balance(account: str) -> int:
        """Read a balance."""
        runs[f"balance {account}"] += 1
        return 100

    return tools


class Side:
    """One process's executor on a backend (sync, or async on the facade's loop)."""

    def __init__(self, facade: Facade, tools: toolwire.Toolbox) -> None:
        self.facade = facade
        kind = toolwire.AsyncExecutor if facade.is_async else toolwire.Executor
        self.executor: Any = kind(tools, store=facade.store, scope="tenant/chat-1")

    def _do(self, value: Any) -> Any:
        return self.facade.raw_await(value) if self.facade.is_async else value

    def run(self, r: toolwire.Response) -> list[toolwire.Outcome]:
        outcomes: list[toolwire.Outcome] = self._do(self.executor.run(r))
        return outcomes

    def approve(self, key: str, arguments: Any = None) -> None:
        self._do(self.executor.approve(key, arguments=arguments))

    def deny(self, key: str, reason: Any) -> None:
        self._do(self.executor.deny(key, reason))

    def pending(self, r: toolwire.Response) -> list[toolwire.PendingCall]:
        found: list[toolwire.PendingCall] = self._do(self.executor.pending(r))
        return found


PAY = response(
    ("call_1", "transfer", {"amount": 5, "to": "ann"}), ("call_2", "balance", {"account": "a"})
)


def test_a_call_that_needs_approval_waits_and_the_other_calls_run(backend: Backend) -> None:
    """The gated call is awaiting_approval and did not run; the other call ran; the
    model is told it waits; pending lists it with its key, name, arguments, call id."""
    runs: Counter[str] = Counter()
    side = Side(backend.open(namespace()), money_tools(runs))
    waiting, read = side.run(PAY)
    assert (waiting.status, read.status) == ("awaiting_approval", "completed")
    assert runs == Counter({"balance a": 1})
    [text] = toolwire.tool_results([waiting], "openai-chat")
    assert "waiting for a person to approve" in text["content"]
    [pending] = side.pending(PAY)
    assert pending == toolwire.PendingCall(
        key=waiting.idempotency_key or "",
        name="transfer",
        arguments={"amount": 5, "to": "ann"},
        call_id="call_1",
    )
    assert side.run(PAY)[0].status == "awaiting_approval"  # still, and still not run
    assert runs == Counter({"balance a": 1})


def test_an_approval_from_another_executor_runs_the_call_once(backend: Backend) -> None:
    """An executor on another store object approves; the next run of the same response
    runs the call once; later runs replay it; nothing is pending any more."""
    runs: Counter[str] = Counter()
    ns = namespace()
    first = Side(backend.open(ns), money_tools(runs))
    key = first.run(PAY)[0].idempotency_key
    assert key is not None
    Side(backend.open(ns), money_tools(runs)).approve(key)
    ran, read = first.run(PAY)
    assert (ran.status, ran.value) == ("completed", {"sent": 5, "to": "ann"})
    assert read.status == "replayed"
    assert first.run(PAY)[0].status == "replayed"
    assert runs == Counter({"transfer 5 ann": 1, "balance a": 1})
    assert first.pending(PAY) == []


def test_a_denied_call_never_runs_and_the_model_reads_the_reason(backend: Backend) -> None:
    """After deny, every run answers the call "denied" with the reason; it never runs."""
    runs: Counter[str] = Counter()
    ns = namespace()
    side = Side(backend.open(ns), money_tools(runs))
    key = side.run(PAY)[0].idempotency_key
    assert key is not None
    Side(backend.open(ns), money_tools(runs)).deny(key, "not above 3 today")
    for _ in range(2):
        denied = side.run(PAY)[0]
        assert (denied.status, denied.error) == ("denied", "not above 3 today")
    [text] = toolwire.tool_results([denied], "openai-chat")
    assert "denied" in text["content"] and "not above 3 today" in text["content"]
    assert runs["transfer 5 ann"] == 0


def test_an_edit_is_validated_again_and_a_bad_one_changes_nothing(backend: Backend) -> None:
    """Arguments that do not fit the tool raise ArgumentsInvalid and leave the call
    awaiting; a good edit is recorded and is what runs."""
    runs: Counter[str] = Counter()
    side = Side(backend.open(namespace()), money_tools(runs))
    key = side.run(PAY)[0].idempotency_key
    assert key is not None
    with pytest.raises(toolwire.ArgumentsInvalid):
        side.approve(key, {"amount": "lots", "to": "ann"})
    assert [p.key for p in side.pending(PAY)] == [key]  # nothing lost
    side.approve(key, {"amount": 3, "to": "ann"})
    record = side.facade.get(f"approval/{key}")
    assert record is not None and '"edited":true' in (record.result or "")
    ran = side.run(PAY)[0]
    assert ran.value == {"sent": 3, "to": "ann"}
    assert runs["transfer 3 ann"] == 1 and runs["transfer 5 ann"] == 0


def test_unknown_and_already_decided_keys_raise_approval_error(backend: Backend) -> None:
    """approve/deny of a key no call awaits raise ApprovalError (status None); a second
    decision raises it with the first decision's status; the first decision stands."""
    runs: Counter[str] = Counter()
    side = Side(backend.open(namespace()), money_tools(runs))
    with pytest.raises(toolwire.ApprovalError) as absent:
        side.approve("no-such-key")
    assert absent.value.status is None
    with pytest.raises(toolwire.ApprovalError):
        side.deny("no-such-key", "why")
    key = side.run(PAY)[0].idempotency_key
    assert key is not None
    side.deny(key, "no")
    with pytest.raises(toolwire.ApprovalError) as decided:
        side.approve(key)
    assert decided.value.status == "denied"
    assert side.run(PAY)[0].status == "denied"


def test_deny_needs_a_reason() -> None:
    """An empty reason is a UsageError, and the call still awaits."""
    runs: Counter[str] = Counter()
    executor = toolwire.Executor(money_tools(runs), scope="s")
    key = executor.run(PAY)[0].idempotency_key
    assert key is not None
    with pytest.raises(toolwire.UsageError):
        executor.deny(key, "  ")
    assert [p.key for p in executor.pending(PAY)] == [key]


def test_a_predicate_gates_only_the_calls_it_picks() -> None:
    """requires_approval=<predicate on the ValidCall>: a small transfer runs at once, a
    large one waits; a predicate that raises counts as needing approval."""
    runs: Counter[str] = Counter()
    tools = money_tools(runs, rule=lambda call: call.arguments["amount"] > 100)
    executor = toolwire.Executor(tools, scope="s")
    small = response(("c1", "transfer", {"amount": 5, "to": "ann"}))
    large = response(("c2", "transfer", {"amount": 500, "to": "bob"}), response_id="r2")
    assert executor.run(small)[0].status == "completed"
    assert executor.run(large)[0].status == "awaiting_approval"
    assert runs == Counter({"transfer 5 ann": 1})

    def broken(call: toolwire.ValidCall) -> bool:
        raise RuntimeError("cannot tell")

    careful = toolwire.Executor(money_tools(runs, rule=broken), scope="s")
    assert careful.run(small)[0].status == "awaiting_approval"


def test_requires_approval_must_be_a_bool_or_a_callable() -> None:
    """Anything else is a ToolDefinitionError at registration."""
    tools = toolwire.Toolbox()
    with pytest.raises(toolwire.ToolDefinitionError):

        @tools.tool(requires_approval="yes")  # type: ignore[call-overload]
        def act() -> None:
            """Act."""

    with pytest.raises(toolwire.ToolDefinitionError):
        tools.add("raw", {"type": "object"}, lambda: None, requires_approval=1)  # type: ignore[arg-type]
    gated = tools.add("ok", {"type": "object"}, lambda: None, requires_approval=True)
    assert gated.requires_approval is True


@pytest.mark.parametrize("kind", ["sqlite", "postgres", "redis"])
def test_approve_racing_runs_runs_the_tool_at_most_once(
    kind: str, request: pytest.FixtureRequest, tmp_path: Any
) -> None:
    """Threads run the response over and over on their own store objects while another
    approves: the tool runs exactly once; each outcome is awaiting, completed, replayed
    or in_progress (another thread holds the call), never a second run."""
    opened: list[Any] = []

    def open_store() -> Any:
        if kind == "sqlite":
            store: Any = toolwire.SQLiteStore(tmp_path / "race.db")
        elif kind == "postgres":
            from toolwire.stores.postgres import PostgresStore

            store = PostgresStore(request.getfixturevalue("postgres_dsn"), table=f"race_{tag}")
        else:
            from toolwire.stores.redis import RedisStore

            store = RedisStore(request.getfixturevalue("redis_url"), prefix=f"race-{tag}:")
        opened.append(store)
        return store

    tag = namespace()
    lock = threading.Lock()
    runs: Counter[str] = Counter()
    tools = money_tools(runs)
    key = toolwire.Executor(tools, store=open_store(), scope="s").run(PAY)[0].idempotency_key
    assert key is not None
    seen: set[str] = set()
    errors: list[BaseException] = []
    start = threading.Barrier(5)

    def runner() -> None:
        try:
            executor = toolwire.Executor(tools, store=open_store(), scope="s")
            start.wait()
            for _ in range(15):
                outcome = executor.run(PAY)[0]
                with lock:
                    seen.add(outcome.status)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runner) for _ in range(4)]
    for thread in threads:
        thread.start()
    approver = toolwire.Executor(tools, store=open_store(), scope="s")
    start.wait()
    approver.approve(key)
    for thread in threads:
        thread.join()
    try:
        assert not errors, errors
        assert approver.run(PAY)[0].status in ("completed", "replayed")
        assert runs["transfer 5 ann"] == 1
        assert seen <= {"awaiting_approval", "completed", "replayed", "in_progress"}
    finally:
        for store in opened:
            store.close()


def test_racing_decisions_have_exactly_one_winner(backend: Backend) -> None:
    """Approve and deny at the same moment from many threads: one succeeds, every other
    raises ApprovalError, and the record holds the winner's decision."""
    if backend.name.endswith("async"):
        pytest.skip("threads race the sync stores; the async ones share this code")
    runs: Counter[str] = Counter()
    ns = namespace()
    key = Side(backend.open(ns), money_tools(runs)).run(PAY)[0].idempotency_key
    assert key is not None
    sides = [Side(backend.open(ns), money_tools(runs)) for _ in range(6)]
    start = threading.Barrier(len(sides))
    won: list[str] = []
    lost: list[BaseException] = []

    def decide(i: int, side: Side) -> None:
        start.wait()
        try:
            if i % 2:
                side.deny(key, f"no {i}")
            else:
                side.approve(key)
            won.append("denied" if i % 2 else "approved")
        except toolwire.ApprovalError as exc:
            lost.append(exc)

    threads = [threading.Thread(target=decide, args=pair) for pair in enumerate(sides)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(lost) == len(sides) - 1
    status = sides[0].run(PAY)[0].status
    assert status == ("denied" if won == ["denied"] else "completed")


def test_approved_arguments_that_no_longer_fit_fail_without_running() -> None:
    """An approval record whose edited arguments the tool refuses at run time (its schema
    changed since) gives a failed outcome; the tool does not run."""
    runs: Counter[str] = Counter()
    store = toolwire.MemoryStore()
    executor = toolwire.Executor(money_tools(runs), store=store, scope="s")
    key = executor.run(PAY)[0].idempotency_key
    assert key is not None
    executor.approve(key, arguments={"amount": 1, "to": "ann"})
    record = store.get(f"approval/{key}")
    assert record is not None and record.result is not None
    stale = record.result.replace('"amount":1', '"amount":"one"')
    store.close()
    later = toolwire.MemoryStore()
    claim = later.claim(
        f"approval/{key}",
        args_hash=record.args_hash,
        idempotency_key=key,
        owner="w",
        lease=30.0,
        retention=3600.0,
        reclaim=False,
    )
    later.finish(f"approval/{key}", owner="w", fence=claim.record.fence, status="unknown",
                 result=record.result, error="waiting")  # fmt: skip
    assert later.resolve(f"approval/{key}", status="completed", result=stale)
    failed = toolwire.Executor(money_tools(runs), store=later, scope="s").run(PAY)[0]
    assert failed.status == "failed" and "could not be started" in (failed.error or "")
    assert runs["transfer 1 ann"] == 0 and sum(runs.values()) == 2  # only the two balance reads
