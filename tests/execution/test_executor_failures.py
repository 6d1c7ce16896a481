"""Failures a person can debug: logs with tracebacks, replays marked as replays, a
configurable retry policy for exception types, and a hook for what the model reads."""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import executor_support
from executor_support import Counter, response
from toolwire import (
    AsyncExecutor,
    EffectInDoubt,
    Executor,
    MemoryStore,
    RetryableError,
    Toolbox,
    ToolCall,
    ToolContext,
)
from toolwire._execution.executor import ERROR_TEXT_LIMIT, default_error_text
from toolwire._execution.idempotency import arguments_hash, call_key

EXECUTORS = ["sync", "async"]


def run(kind: str, executor_kwargs: dict[str, Any], tools: Toolbox, r: Any) -> list[Any]:
    """Run ``r`` through a fresh executor of ``kind`` built with ``executor_kwargs``."""
    if kind == "sync":
        return Executor(tools, **executor_kwargs).run(r)
    return asyncio.run(AsyncExecutor(tools, **executor_kwargs).run(r))


runs = executor_support.runs


@pytest.fixture
def tools(runs: Counter) -> Toolbox:
    """Tools that fail in the ways the issue describes."""
    box = Toolbox()
    prices = {"MSFT": 1}
    downstream = {"up": False}

    @box.tool
    def quote(symbol: str) -> int:
        """A lookup with a bug: KeyError for unknown symbols."""
        runs.hit("quote")
        return prices[symbol]

    @box.tool
    def post(text: str) -> str:
        """Talks to a downstream that is down the first time."""
        runs.hit("post")
        if not downstream["up"]:
            downstream["up"] = True
            raise ConnectionRefusedError(111, "Connection refused")
        return "posted"

    @box.tool
    def wait_for(seconds: int) -> str:
        """A downstream that times out the first time."""
        runs.hit("wait_for")
        if runs["wait_for"] == 1:
            raise TimeoutError("read timed out")
        return "ok"

    @box.tool
    async def resolve(host: str) -> str:
        """A name lookup that fails (an OSError subclass judged transient)."""
        runs.hit("resolve")
        if runs["resolve"] == 1:
            raise socket.gaierror(-3, "Temporary failure in name resolution")
        return host

    @box.tool
    def noisy(n: int) -> None:
        """Raises with a huge message full of internals."""
        runs.hit("noisy")
        raise RuntimeError("secret-token-123 " + "x" * 5000)

    @box.tool
    def busy(n: int) -> None:
        """Asks for a retry explicitly."""
        runs.hit("busy")
        raise RetryableError("busy")

    return box


@pytest.mark.parametrize("kind", EXECUTORS)
def test_failure_is_logged_with_traceback_and_fields(
    kind: str, tools: Toolbox, caplog: pytest.LogCaptureFixture
) -> None:
    """A raising tool logs ERROR on toolwire.executor: traceback and structured fields."""
    caplog.set_level(logging.INFO, logger="toolwire")
    [o] = run(kind, {"scope": "s"}, tools, response(("c1", "quote", {"symbol": "AAPL"})))
    assert o.status == "failed" and o.error == "KeyError: 'AAPL'"
    [entry] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert entry.name == "toolwire.executor"
    assert entry.exc_info is not None and entry.exc_info[0] is KeyError
    assert "return prices[symbol]" in caplog.text  # the tool's own frame is in the log
    fields = (entry.tool_name, entry.call_id, entry.idempotency_key, entry.status)  # type: ignore[attr-defined]
    assert fields == ("quote", "c1", o.idempotency_key, "failed")
    assert entry.replayed is False  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", EXECUTORS)
def test_replayed_failure_is_marked_replayed(
    kind: str, tools: Toolbox, runs: Counter, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored failure comes back failed *and* replayed=True, without a new traceback."""
    caplog.set_level(logging.INFO, logger="toolwire")
    store = MemoryStore()
    r = response(("c1", "quote", {"symbol": "AAPL"}))
    [first] = run(kind, {"scope": "s", "store": store}, tools, r)
    caplog.clear()
    [again] = run(kind, {"scope": "s", "store": store}, tools, r)
    assert (first.status, first.replayed) == ("failed", False)
    assert (again.status, again.replayed, again.error) == ("failed", True, first.error)
    assert runs["quote"] == 1
    [entry] = caplog.records
    assert entry.levelno == logging.INFO and entry.exc_info is None and "replayed" in entry.message
    assert (entry.status, entry.replayed) == ("failed", True)  # type: ignore[attr-defined]


def test_replayed_flag_for_every_status(tools: Toolbox, runs: Counter) -> None:
    """replayed is True exactly for outcomes read from an earlier run's record."""
    store = MemoryStore()
    ex = Executor(tools, scope="s", store=store)
    ok = response(("c1", "quote", {"symbol": "MSFT"}))
    [done] = ex.run(ok)
    [replay] = ex.run(ok)
    [clash] = ex.run(response(("c1", "quote", {"symbol": "IBM"})))
    args = {"symbol": "X"}
    store.claim(
        call_key("s", "resp_1", "quote", "held"), args_hash=arguments_hash(args),
        idempotency_key="k", owner="other", lease=60, retention=600, reclaim=False,
    )  # fmt: skip
    [held] = ex.run(response(("held", "quote", args)))
    assert (done.status, done.replayed) == ("completed", False)
    assert (replay.status, replay.replayed) == ("replayed", True)
    assert (clash.status, clash.replayed) == ("conflict", False)
    assert (held.status, held.replayed) == ("in_progress", False)


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize(("tool", "args"), [
    ("post", {"text": "t"}), ("wait_for", {"seconds": 1}), ("resolve", {"host": "h"}),
])  # fmt: skip
def test_transient_errors_release_the_claim_by_default(
    kind: str, tool: str, args: dict[str, Any], tools: Toolbox, runs: Counter
) -> None:
    """ConnectionError, TimeoutError and gaierror: failed now, run again next time."""
    store = MemoryStore()
    r = response(("c1", tool, args))
    [first] = run(kind, {"scope": "s", "store": store}, tools, r)
    assert first.status == "failed" and not first.replayed
    assert store.get(call_key("s", "resp_1", tool, "c1")) is None  # released
    [second] = run(kind, {"scope": "s", "store": store}, tools, r)
    assert second.status == "completed" and runs[tool] == 2


def test_retry_policy_is_configurable(tools: Toolbox, runs: Counter) -> None:
    """retry_on=() stores a ConnectionError as a failure; retry_on=(KeyError,) releases one."""
    store = MemoryStore()
    post = response(("c1", "post", {"text": "t"}))
    [first] = Executor(tools, scope="s", store=store, retry_on=()).run(post)
    [again] = Executor(tools, scope="s", store=store, retry_on=()).run(post)
    assert (first.status, again.status, again.replayed) == ("failed", "failed", True)
    assert runs["post"] == 1
    quote = response(("c2", "quote", {"symbol": "AAPL"}))
    for _ in range(2):
        [o] = Executor(tools, scope="s", store=store, retry_on=(KeyError,)).run(quote)
        assert o.status == "failed" and not o.replayed
    assert runs["quote"] == 2
    [busy] = Executor(tools, scope="s", store=store, retry_on=()).run(
        response(("c3", "busy", {"n": 1}))
    )
    assert busy.status == "failed" and store.get(call_key("s", "resp_1", "busy", "c3")) is None


@pytest.mark.parametrize("kind", EXECUTORS)
def test_default_error_text_is_bounded(kind: str, tools: Toolbox) -> None:
    """By default the model reads the type and message, cut at ERROR_TEXT_LIMIT characters."""
    [o] = run(kind, {"scope": "s"}, tools, response(("c1", "noisy", {"n": 1})))
    assert o.status == "failed" and o.error is not None
    assert len(o.error) == ERROR_TEXT_LIMIT and o.error.endswith("…")
    assert o.error.startswith("RuntimeError: secret-token-123 xxx")


@pytest.mark.parametrize("kind", EXECUTORS)
def test_error_text_hook_decides_what_the_model_reads(
    kind: str, tools: Toolbox, runs: Counter
) -> None:
    """error_text(exc, call) is stored, replayed and sent; the log keeps the full exception."""
    store = MemoryStore()
    seen: list[tuple[type[BaseException], ToolCall]] = []

    def hide(exc: BaseException, call: ToolCall) -> str:
        seen.append((type(exc), call))
        return f"{call.name} failed; the operator was told"

    settings = {"scope": "s", "store": store, "error_text": hide}
    r = response(("c1", "noisy", {"n": 1}))
    [first] = run(kind, settings, tools, r)
    [again] = run(kind, settings, tools, r)
    assert first.error == again.error == "noisy failed; the operator was told"
    assert again.replayed and runs["noisy"] == 1
    assert seen == [(RuntimeError, r.tool_calls[0])]


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize("broken", ["raises", "not-a-str"])
def test_a_broken_error_text_hook_falls_back_to_the_default(
    kind: str, broken: str, tools: Toolbox, caplog: pytest.LogCaptureFixture
) -> None:
    """A hook that raises or returns a non-str costs the default text and a log line."""

    def hook(exc: BaseException, call: ToolCall) -> Any:
        if broken == "raises":
            raise ValueError("hook bug")
        return 42

    [o] = run(
        kind, {"scope": "s", "error_text": hook}, tools, response(("c1", "quote", {"symbol": "Z"}))
    )
    assert o.status == "failed" and o.error == "KeyError: 'Z'"
    assert "error_text failed" in caplog.text


@given(message=st.text(max_size=2000), name=st.sampled_from(["ValueError", "E"]))
def test_default_error_text_property(message: str, name: str) -> None:
    """The default text is never longer than the limit and starts with the type name."""
    exc = type(name, (Exception,), {})(message)
    call = ToolCall(id="c", name="t", arguments={}, raw_arguments="{}", index=0)
    text = default_error_text(exc, call)
    assert len(text) <= ERROR_TEXT_LIMIT and text.startswith(name)
    if len(name) + 2 + len(message) <= ERROR_TEXT_LIMIT:
        assert text == (f"{name}: {message}" if message else name)


def test_context_key_survives_a_retry(tools: Toolbox) -> None:
    """A released call runs again under the same idempotency key (forward it downstream)."""
    box = Toolbox()
    keys: list[str] = []

    @box.tool
    def charge(amount: int, ctx: ToolContext) -> int:
        """Fails with a dropped connection once."""
        keys.append(ctx.idempotency_key)
        if len(keys) == 1:
            raise ConnectionResetError("peer reset")
        return amount

    ex = Executor(box, scope="s")
    r = response(("c1", "charge", {"amount": 5}))
    assert [o.status for o in ex.run(r) + ex.run(r)] == ["failed", "completed"]
    assert keys[0] == keys[1]


@pytest.mark.parametrize("kind", EXECUTORS)
@pytest.mark.parametrize("idempotent", [False, True])
def test_effect_in_doubt_is_unknown_and_never_run_again(kind: str, idempotent: bool) -> None:
    """EffectInDoubt, even as a ConnectionError, ends unknown; only an idempotent tool reruns."""

    class CutOff(EffectInDoubt, ConnectionError):
        """A request cut off after it was sent (also a ConnectionError: retry_on's)."""

    tools = Toolbox()
    sent: list[str] = []

    @tools.tool(idempotent=idempotent)
    def send(text: str) -> str:
        """Sends a request whose answer never comes."""
        sent.append(text)
        raise CutOff("the connection dropped after the request went out")

    store = MemoryStore()
    r = response(("c1", "send", {"text": "t"}))
    [first] = run(kind, {"scope": "s", "store": store}, tools, r)
    assert first.status == "unknown" and "connection dropped" in (first.error or "")
    record = store.get(call_key("s", "resp_1", "send", "c1"))
    [second] = run(kind, {"scope": "s", "store": store}, tools, r)
    if idempotent:  # safe to repeat: the claim is given back and the call runs again
        assert record is None and len(sent) == 2
    else:
        assert record is not None and record.status == "unknown"
        assert second.status == "unknown" and second.replayed and sent == ["t"]
