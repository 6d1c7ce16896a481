"""Retries of a turn's request: failures before the first byte (429, 500, a refused
connection) are retried under the RetryPolicy, honouring Retry-After, and reach the caller
as the SDK's own exceptions once it gives up; a begun stream is never retried."""

from __future__ import annotations

import asyncio
import email.utils
import socket
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire import RetryPolicy, UsageError
from toolwire._turn.retrying import http_status, retry_after
from toolwire.testing import Simulator
from turn_support import counted_tools

FAST = RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05)
MESSAGES = [{"role": "user", "content": "Weather in Lyon?"}]


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A fresh simulator."""
    with Simulator(seed=9) as simulator:
        yield simulator


@pytest.fixture
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    """An OpenAI client that does not retry on its own, so the policy is tested alone."""
    with openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0) as c:
        yield c


def _tools() -> tuple[toolwire.Toolbox, toolwire.Executor, Counter[str]]:
    runs: Counter[str] = Counter()
    tools = counted_tools(runs)
    return tools, toolwire.Executor(tools, scope="retry"), runs


def _request(client: openai.OpenAI) -> Any:
    return lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True)


class _Failure(Exception):
    """An SDK-like error carrying a status and response headers."""

    def __init__(self, status: int | None, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = httpx.Response(status or 500, headers=headers or {})


# ------------------------------------------------------------------ the policy alone


def test_waits_double_up_to_the_ceiling_and_stop_after_the_attempts() -> None:
    """Without jitter the waits are backoff, 2 x backoff, ... capped; the last attempt
    gets none."""
    policy = RetryPolicy(attempts=5, backoff=1.0, max_backoff=3.0, jitter=0.0)
    waits = [policy.delay(n, _Failure(503), now=0.0) for n in range(1, 6)]
    assert waits == [1.0, 2.0, 3.0, 3.0, None]


@given(
    attempt=st.integers(1, 20),
    rand=st.floats(0, 1),
    jitter=st.floats(0, 1),
    asked=st.none() | st.integers(0, 120),
)
def test_a_wait_is_jittered_within_bounds_and_never_shorter_than_asked(
    attempt: int, rand: float, jitter: float, asked: int | None
) -> None:
    """Each wait lies within [(1 - jitter) x the backoff, the backoff], raised to the
    provider's Retry-After, and a Retry-After beyond max_retry_after gives up."""
    policy = RetryPolicy(attempts=50, backoff=0.5, max_backoff=8.0, jitter=jitter)
    headers = {} if asked is None else {"retry-after": str(asked)}
    wait = policy.delay(attempt, _Failure(429, headers), now=0.0, rand=lambda: rand)
    if asked is not None and asked > policy.max_retry_after:
        assert wait is None
        return
    base = min(8.0, 0.5 * 2.0 ** (attempt - 1))
    assert wait is not None
    assert wait >= max(base * (1 - jitter), asked or 0) - 1e-9
    assert wait <= max(base, asked or 0) + 1e-9


def test_retry_after_is_read_in_milliseconds_seconds_or_as_a_date() -> None:
    """retry-after-ms wins over Retry-After; seconds and HTTP dates are both read."""
    assert retry_after(_Failure(429, {"retry-after-ms": "1500", "retry-after": "9"}), now=0) == 1.5
    assert retry_after(_Failure(429, {"retry-after": "2"}), now=0) == 2.0
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert retry_after(_Failure(429, {"retry-after": date}), now=now) == pytest.approx(30, abs=1)
    assert retry_after(_Failure(429, {"retry-after": "soon"}), now=0) is None
    assert retry_after(_Failure(429), now=0) is None


def test_only_failures_before_the_first_byte_are_retryable() -> None:
    """Retryable statuses and refused connections are retried; other statuses, stream
    errors, caller mistakes and cancellations are not."""
    policy = RetryPolicy()
    assert all(policy.retryable(_Failure(s)) for s in (408, 409, 429, 500, 502, 503, 504, 529))
    assert not any(policy.retryable(_Failure(s)) for s in (400, 401, 403, 404, 422))
    assert policy.retryable(ConnectionRefusedError())
    assert not RetryPolicy(connection_errors=False).retryable(ConnectionRefusedError())
    assert not policy.retryable(toolwire.StreamAborted("cut"))
    assert not policy.retryable(UsageError("bug"))
    assert not policy.retryable(KeyboardInterrupt())
    assert (
        http_status(httpx.HTTPStatusError("x", request=None, response=httpx.Response(503))) == 503
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "settings",
    [
        {"attempts": 0},
        {"attempts": 1.5},
        {"backoff": -1},
        {"max_backoff": float("inf")},
        {"jitter": 2},
        {"statuses": "429"},
        {"max_retry_after": "60"},
    ],
)
def test_bad_settings_are_usage_errors(settings: dict[str, Any]) -> None:
    """A policy that cannot work is refused when it is made."""
    with pytest.raises(UsageError):
        RetryPolicy(**settings)


# ------------------------------------------------------------------- with the simulator


def test_a_500_is_retried_and_the_turn_runs_once(sim: Simulator, client: openai.OpenAI) -> None:
    """A 500 before the body: the request is made again, the second answer is used."""
    tools, executor, runs = _tools()
    sim.add_response(faults=["http:500"])
    sim.add_response(tool_calls=[("get_weather", {"city": "Lyon"})])
    turn = toolwire.run_turn(_request(client), tools, executor=executor, retry=FAST)
    assert turn.attempts == 2
    assert [r.status for r in sim.requests] == [500, 200]
    assert sum(runs.values()) == 1


def test_a_429_waits_as_long_as_retry_after_says(sim: Simulator, client: openai.OpenAI) -> None:
    """The simulator's 429 says Retry-After: 1; the retry waits at least that long."""
    tools, executor, _ = _tools()
    sim.add_response(faults=["http:429"])
    sim.add_response(text="Sunny.")
    start = time.monotonic()
    turn = toolwire.run_turn(_request(client), tools, executor=executor, retry=FAST)
    assert time.monotonic() - start >= 1.0
    assert turn.done and turn.attempts == 2


def test_when_the_policy_gives_up_the_sdk_error_is_raised(
    sim: Simulator, client: openai.OpenAI
) -> None:
    """After the last attempt the caller gets the SDK's own exception."""
    tools, executor, _ = _tools()
    for _ in range(2):
        sim.add_response(faults=["http:503"])
    with pytest.raises(openai.InternalServerError):
        toolwire.run_turn(
            _request(client), tools, executor=executor, retry=RetryPolicy(attempts=2, backoff=0)
        )
    assert [r.status for r in sim.requests] == [503, 503]


def test_a_400_is_not_retried(sim: Simulator, client: openai.OpenAI) -> None:
    """A client error is raised at once: making the same request again cannot help."""
    tools, executor, _ = _tools()
    sim.add_response(faults=["http:400"])
    with pytest.raises(openai.BadRequestError):
        toolwire.run_turn(_request(client), tools, executor=executor, retry=FAST)
    assert len(sim.requests) == 1


def test_a_cut_stream_is_not_retried(sim: Simulator, client: openai.OpenAI) -> None:
    """A stream that began is a StreamError: raised, with nothing run and no retry."""
    tools, executor, runs = _tools()
    sim.add_response(tool_calls=[("get_weather", {"city": "Lyon"})], faults=["cut:0.6"])
    with pytest.raises(toolwire.StreamAborted) as caught:
        toolwire.run_turn(_request(client), tools, executor=executor, retry=FAST)
    assert caught.value.partial is not None
    assert len(sim.requests) == 1 and runs == Counter()


def test_a_manager_failing_as_it_is_entered_is_retried(sim: Simulator) -> None:
    """anthropic's messages.stream() makes its request when entered: a 529 there is
    retried, and without a callable it is raised as anthropic's own error."""
    import anthropic

    tools, executor, _ = _tools()
    client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="t", max_retries=0)
    sim.add_response(faults=["http:529"])
    sim.add_response(text="Sunny.")

    def request() -> Any:
        return client.messages.stream(model="m", max_tokens=100, messages=MESSAGES)

    assert toolwire.run_turn(request, tools, executor=executor, retry=FAST).attempts == 2
    sim.add_response(faults=["http:529"])
    with pytest.raises(anthropic.APIStatusError) as caught:
        toolwire.run_turn(request(), tools, executor=executor)
    assert caught.value.status_code == 529
    client.close()


@pytest.mark.parametrize("opened", ["send", "stream-manager"])
def test_an_httpx_response_with_an_error_status_is_retried_then_raised(
    sim: Simulator, opened: str
) -> None:
    """An httpx response with an error status (client.send(..., stream=True) or
    client.stream(...)) is not read as a stream: retried, then raised as
    httpx.HTTPStatusError with its body read."""
    tools, executor, _ = _tools()
    body = {"model": "m", "messages": MESSAGES, "stream": True}
    for _ in range(2):
        sim.add_response(faults=["http:503"])
    with httpx.Client(base_url=sim.url) as http:

        def request() -> Any:
            if opened == "send":
                built = http.build_request("POST", "/v1/chat/completions", json=body)
                return http.send(built, stream=True)
            return http.stream("POST", "/v1/chat/completions", json=body)

        with pytest.raises(httpx.HTTPStatusError) as caught:
            toolwire.run_turn(
                request, tools, executor=executor, retry=RetryPolicy(backoff=0, attempts=2)
            )
        assert caught.value.response.status_code == 503 and "error" in caught.value.response.text
        sim.add_response(faults=["http:503"])
        sim.add_response(text="Sunny.")
        assert toolwire.run_turn(request, tools, executor=executor, retry=FAST).done
    assert [r.status for r in sim.requests] == [503, 503, 503, 200]
    assert sim.wait_for_connections_closed(5)


def test_a_refused_connection_is_retried_then_raised() -> None:
    """Nothing listens: each attempt fails to connect; the SDK's APIConnectionError is
    raised after the last one."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    tools, executor, _ = _tools()
    made: list[int] = []
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="t", max_retries=0) as c:

        def request() -> Any:
            made.append(1)
            return c.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # type: ignore[arg-type]

        with pytest.raises(openai.APIConnectionError):
            toolwire.run_turn(request, tools, executor=executor, retry=FAST)
    assert len(made) == 3


def test_async_turns_retry_too(sim: Simulator) -> None:
    """arun_turn retries an un-awaited AsyncOpenAI request that fails with a 502."""
    tools = counted_tools(Counter())
    sim.add_response(faults=["http:502"])
    sim.add_response(text="Sunny.")

    async def run() -> toolwire.Turn:
        executor = toolwire.AsyncExecutor(tools, scope="async-retry")
        async with openai.AsyncOpenAI(
            base_url=sim.base_url("openai-chat"), api_key="t", max_retries=0
        ) as client:
            return await toolwire.arun_turn(
                lambda: client.chat.completions.create(model="m", messages=MESSAGES, stream=True),  # type: ignore[arg-type]
                tools,
                executor=executor,
                retry=FAST,
            )

    turn = asyncio.run(run())
    assert turn.done and turn.attempts == 2


def test_a_retry_needs_a_callable(sim: Simulator, client: openai.OpenAI) -> None:
    """A policy given with an already-made stream is a UsageError naming the callable form."""
    tools, executor, _ = _tools()
    sim.add_response(text="Sunny.")
    stream = _request(client)()
    with pytest.raises(UsageError, match="lambda"):
        toolwire.run_turn(stream, tools, executor=executor, retry=FAST)
    stream.close()
