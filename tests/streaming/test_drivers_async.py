"""``toolwire.astream()``: the async driver over corpus recordings (whole, byte by byte,
Hypothesis splits), every exit path closing the source exactly once with cancellation
re-raised, and real HTTP with injected faults through the async ``openai``,
``anthropic`` and ``httpx`` clients."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import anthropic
import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from drivers_support import (
    EXPECTED,
    AsyncCountingSource,
    FaultServer,
    Run,
    body,
    byte_names,
    content_index,
    first_event_usage,
    payload_names,
    payloads,
    reference,
    splits,
)
from toolwire._streaming.drivers import (
    AsyncStreamHandle,
    SettingsError,
    UsageError,
    astream,
)

ANTHROPIC = "anthropic__text-then-two-parallel-tool-use.sse"
OPENAI = "openai-chat__parallel-two-tools.sse"
T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run ``main()`` in a fresh event loop, bounded so that no test can hang."""

    async def bounded() -> T:
        return await asyncio.wait_for(main(), 30)

    return asyncio.run(bounded())


async def items_of(items: list[Any]) -> AsyncIterator[Any]:
    """An async generator over ``items``, yielding to the loop between them."""
    for item in items:
        await asyncio.sleep(0)
        yield item


async def consume(source: Any, **options: Any) -> Run:
    """Drive ``source`` through ``astream()`` to its end; the events and the outcome."""
    result = Run(events=[])
    async with astream(source, **options) as s:
        try:
            async for event in s:
                result.events.append(event)
        except toolwire.StreamError as exc:
            result.error = exc
    if result.error is None:
        result.response = s.response
    else:
        assert s.error is result.error
        with pytest.raises(type(result.error)):
            s.response  # noqa: B018
    return result


# ------------------------------------------------------------------ settings, usage


def test_sync_sources_and_single_values_are_refused() -> None:
    """A sync iterable, a sync httpx response or a single payload is refused, typed."""
    for bad in ([{}], iter([b""]), {"a": 1}, b"data: {}", 7):
        with pytest.raises(SettingsError):
            astream(bad)
    with pytest.raises(SettingsError, match="stream"):
        astream(httpx.Response(200, stream=_SyncOnly()))
    with pytest.raises(SettingsError, match="idle_timeout"):
        astream(items_of([]), idle_timeout=-1)


class _SyncOnly(httpx.SyncByteStream):
    """An httpx body that can only be read synchronously."""

    def __iter__(self) -> Iterator[bytes]:
        yield b""


def test_handle_misuse_is_typed(corpus_dir: Any) -> None:
    """Iterating outside ``async with``, twice, or entering twice raises ``UsageError``."""

    async def main() -> None:
        source = AsyncCountingSource(payloads(ANTHROPIC))
        s = astream(source)
        with pytest.raises(UsageError):
            s.__aiter__()
        with pytest.raises(UsageError):
            s.response  # noqa: B018
        async with s:
            with pytest.raises(UsageError):
                await s.__aenter__()
            with pytest.raises(UsageError):
                await s.__anext__()
            events = [e async for e in s]
            assert events
            with pytest.raises(UsageError):
                s.__aiter__()
        assert s.response.tool_calls and source.closes == 1
        assert isinstance(s, AsyncStreamHandle)

    run(main)


# ------------------------------------------------------------------ corpus equality


@pytest.mark.slow
@pytest.mark.corpus
@pytest.mark.parametrize("name", byte_names())
def test_bytes_whole_and_byte_by_byte_match_the_assembler(corpus_dir: Any, name: str) -> None:
    """Every corpus body, whole and byte by byte, gives the assembler's events and outcome."""
    data = body(name)
    want = reference([data])

    async def main() -> None:
        got = await consume(items_of([data]))
        assert got.events == want.events and got.outcome() == want.outcome()
        got = await consume(items_of([data[i : i + 1] for i in range(len(data))]))
        assert got.events == want.events and got.outcome() == want.outcome()

    run(main)
    if want.response is not None:
        assert want.response.text == EXPECTED[name]["text"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", payload_names())
def test_payload_dicts_match_the_assembler(corpus_dir: Any, name: str) -> None:
    """Every SSE / JSON Lines corpus stream fed as dicts gives the assembler's result."""
    items = payloads(name)
    want = reference(items)
    got = run(lambda: consume(items_of(items)))
    assert got.events == want.events and got.outcome() == want.outcome()


@pytest.mark.corpus
@settings(max_examples=40)
@given(
    # a placeholder keeps Hypothesis from refusing an empty list where the corpus is absent;
    # the test then skips (or fails under CI) at require()
    name=st.sampled_from(byte_names() or ["corpus-absent"]),
    cuts=st.lists(st.integers(min_value=0, max_value=60_000), max_size=12),
)
def test_hypothesis_splits_match_the_assembler(name: str, cuts: list[int]) -> None:
    """Any split of any corpus body gives the same events and outcome as the whole body."""
    from conftest import corpus_available, require

    require(corpus_available(), "the recorded corpus is absent")
    data = body(name)
    want = reference([data])
    pieces = splits(data, [c % (len(data) + 1) for c in cuts])
    got = run(lambda: consume(items_of(pieces)))
    assert got.events == want.events and got.outcome() == want.outcome()


# ------------------------------------------------------------------- exit paths


def test_success_closes_once(corpus_dir: Any) -> None:
    """A stream read to its end is closed once and gives its response and usage."""
    source = AsyncCountingSource(payloads(ANTHROPIC))
    got = run(lambda: consume(source))
    assert source.closes == 1 and got.response.tool_calls and got.response.usage is not None


def test_break_and_body_exception_close_once(corpus_dir: Any) -> None:
    """break or an exception in the body closes once; response raises StreamAborted with usage."""

    async def main() -> None:
        source = AsyncCountingSource(payloads(ANTHROPIC))
        async with astream(source) as s:
            async for _event in s:
                break
        assert source.closes == 1
        with pytest.raises(toolwire.StreamAborted) as info:
            s.response  # noqa: B018
        assert info.value.partial is not None and info.value.partial.usage is not None

        source = AsyncCountingSource(payloads(ANTHROPIC))
        with pytest.raises(LookupError, match="mine"):
            async with astream(source) as s:
                async for _event in s:
                    raise LookupError("mine")
        assert source.closes == 1 and isinstance(s.error, toolwire.StreamAborted)

    run(main)


def test_cancellation_while_waiting_is_re_raised_and_closes(corpus_dir: Any) -> None:
    """Cancelling a task stalled on its source re-raises; the read is cancelled, closed once."""
    source = AsyncCountingSource(payloads(ANTHROPIC), block=2)
    seen: list[str] = []

    async def reader() -> None:
        async with astream(source, idle_timeout=5) as s:
            async for _event in s:
                seen.append("event")

    async def main() -> None:
        task = asyncio.create_task(reader())
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()

    started = time.monotonic()
    run(main)
    assert time.monotonic() - started < 1
    assert source.closes == 1 and source.cancelled == 1 and seen


def test_cancellation_in_the_body_is_re_raised(corpus_dir: Any) -> None:
    """A cancellation arriving in the loop body is re-raised after the source was closed."""
    source = AsyncCountingSource(payloads(ANTHROPIC))

    async def reader() -> None:
        async with astream(source) as s:
            async for _event in s:
                await asyncio.sleep(5)

    async def main() -> None:
        task = asyncio.create_task(reader())
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    assert source.closes == 1


def test_a_second_cancellation_during_close_still_closes(corpus_dir: Any) -> None:
    """A second cancellation during the close does not stop it, and is re-raised."""
    closing = asyncio.Event

    class SlowClose(AsyncCountingSource):
        async def aclose(self) -> None:
            self.closing.set()
            await asyncio.sleep(0.2)
            await super().aclose()

    async def main() -> None:
        source = SlowClose(payloads(ANTHROPIC), block=2)
        source.closing = closing()  # type: ignore[attr-defined]

        async def reader() -> None:
            async with astream(source) as s:
                async for _event in s:
                    pass

        task = asyncio.create_task(reader())
        await asyncio.sleep(0.05)
        task.cancel()
        await source.closing.wait()  # type: ignore[attr-defined]
        task.cancel()  # again, while closing
        with pytest.raises(asyncio.CancelledError):
            await task
        assert source.closes == 1

    run(main)


def test_outer_timeout_is_the_callers_not_a_stream_timeout(corpus_dir: Any) -> None:
    """An outer asyncio.wait_for raises its own timeout: the caller's cancellation is kept."""
    source = AsyncCountingSource(payloads(ANTHROPIC), block=2)

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError) as info:
            await asyncio.wait_for(consume(source, idle_timeout=5), 0.1)
        assert not isinstance(info.value, toolwire.StreamTimeout)

    run(main)
    assert source.closes == 1


def test_timeouts_fire_on_time_with_usage(corpus_dir: Any) -> None:
    """Stalled or slow sources end in idle, first_event or total on time, closed, usage kept."""

    async def main() -> None:
        source = AsyncCountingSource(payloads(ANTHROPIC), block=content_index(payloads(ANTHROPIC)))
        started = time.monotonic()
        got = await consume(source, idle_timeout=0.2)
        assert time.monotonic() - started < 0.6
        assert isinstance(got.error, toolwire.StreamTimeout) and got.error.kind == "idle"
        assert got.error.partial is not None and got.error.partial.usage is not None
        assert got.error.partial.usage.input_tokens == first_event_usage(ANTHROPIC)
        assert source.closes == 1 and source.cancelled == 1

        source = AsyncCountingSource([], block=0)
        got = await consume(source, first_event_timeout=0.1)
        assert isinstance(got.error, toolwire.StreamTimeout) and got.error.kind == "first_event"
        assert source.closes == 1

        async def slow() -> AsyncIterator[Any]:
            for payload in payloads(ANTHROPIC):
                await asyncio.sleep(0.05)
                yield payload

        started = time.monotonic()
        got = await consume(slow(), total_timeout=0.3)
        assert time.monotonic() - started < 0.7
        assert isinstance(got.error, toolwire.StreamTimeout) and got.error.kind == "total"

    run(main)


def test_source_errors_and_close_errors_are_typed(corpus_dir: Any) -> None:
    """A failing source ends in StreamAborted (chained); a failing aclose() masks nothing."""

    async def main() -> None:
        source = AsyncCountingSource(
            payloads(ANTHROPIC), raise_at=(2, ConnectionResetError("peer reset"))
        )
        got = await consume(source)
        assert isinstance(got.error, toolwire.StreamAborted)
        assert isinstance(got.error.__cause__, ConnectionResetError)
        source = AsyncCountingSource(payloads(ANTHROPIC), close_error=OSError("close failed"))
        async with astream(source) as s:
            [e async for e in s]
        assert s.response.tool_calls and isinstance(s.close_error, OSError)
        assert source.closes == 1

    run(main)


def test_usage_survives_an_abort_after_message_start(corpus_dir: Any) -> None:
    """An Anthropic stream cut right after ``message_start`` raises with its input tokens."""
    data = body(ANTHROPIC)
    cut = data[: data.index(b"\n\n") + 2]
    got = run(lambda: consume(items_of([cut])))
    assert isinstance(got.error, toolwire.StreamAborted)
    assert got.error.partial is not None and got.error.partial.usage is not None
    assert got.error.partial.usage.input_tokens == first_event_usage(ANTHROPIC)


# ------------------------------------------------------------------ real HTTP


@pytest.fixture(scope="module")
def server(corpus_dir: Any) -> Iterator[FaultServer]:
    """The fault-injecting SSE server on a free loopback port."""
    srv = FaultServer()
    try:
        yield srv
    finally:
        srv.close()


async def _open(client: str, server: FaultServer, fault: str) -> tuple[Any, Any, Any]:
    """Start a streaming request with the real async client: (source, response, client)."""
    name = OPENAI if client == "openai" else ANTHROPIC
    base = server.url(fault, name)
    if client == "openai":
        oc = openai.AsyncOpenAI(base_url=base, api_key="test", max_retries=0)
        src: Any = await oc.chat.completions.create(model="m", messages=[], stream=True)
        return src, src.response, oc
    if client == "anthropic":
        ac = anthropic.AsyncAnthropic(base_url=base, api_key="test", max_retries=0)
        src = await ac.messages.create(model="m", max_tokens=10, messages=[], stream=True)
        return src, src.response, ac
    hc = httpx.AsyncClient()
    response = await hc.send(hc.build_request("POST", f"{base}/x"), stream=True)
    return response, response, hc


CLIENTS = ["openai", "anthropic", "httpx"]
HTTP_FAULTS: dict[str, tuple[type[toolwire.StreamError], dict[str, float], str | None]] = {
    "stall_first": (toolwire.StreamTimeout, {"first_event_timeout": 0.3}, "first_event"),
    "stall_middle": (toolwire.StreamTimeout, {"idle_timeout": 0.3}, "idle"),
    "drip": (toolwire.StreamTimeout, {"total_timeout": 0.4, "idle_timeout": 2}, "total"),
    "reset": (toolwire.StreamAborted, {}, None),
    "eof": (toolwire.StreamAborted, {}, None),
    "error_event": (toolwire.ProviderError, {}, None),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_http_ok_stream_assembles_and_closes(server: FaultServer, client: str) -> None:
    """A whole stream over real HTTP assembles to the corpus's response; the response closes."""
    name = OPENAI if client == "openai" else ANTHROPIC

    async def main() -> None:
        source, response, _client = await _open(client, server, "ok")
        got = await consume(source, idle_timeout=5)
        assert response.is_closed
        assert got.response.text == EXPECTED[name]["text"]
        assert len(got.response.tool_calls) == len(EXPECTED[name]["tool_calls"])

    run(main)


@pytest.mark.parametrize("fault", sorted(HTTP_FAULTS))
@pytest.mark.parametrize("client", CLIENTS)
def test_http_faults_end_typed_on_time_and_disconnect(
    server: FaultServer, client: str, fault: str
) -> None:
    """Each HTTP fault ends typed within timeout + 0.5 s, response closed, server sees the exit."""
    expected, limits, kind = HTTP_FAULTS[fault]
    before = len(server.served)

    async def main() -> None:
        source, response, _client = await _open(client, server, fault)
        started = time.monotonic()
        got = await consume(source, **limits)
        elapsed = time.monotonic() - started
        budget = min(limits.values()) if limits else 0.0
        assert elapsed < budget + 0.5, elapsed
        assert isinstance(got.error, expected), got.error
        if kind is not None:
            assert isinstance(got.error, toolwire.StreamTimeout) and got.error.kind == kind
        assert response.is_closed
        if client == "anthropic" and fault != "stall_first":
            partial = got.error.partial
            assert partial is not None and partial.usage is not None
            assert partial.usage.input_tokens == first_event_usage(ANTHROPIC)

    run(main)
    served = server.served[before]
    assert served.fault == fault
    if fault in ("stall_first", "stall_middle", "drip"):
        assert served.disconnected.wait(1.0), "the server never saw the client leave"


@pytest.mark.parametrize("client", CLIENTS)
def test_http_break_mid_stream_disconnects(server: FaultServer, client: str) -> None:
    """Breaking out of a live HTTP stream closes the response and the server sees the exit."""
    before = len(server.served)

    async def main() -> None:
        source, response, _client = await _open(client, server, "drip")
        async with astream(source, idle_timeout=5) as s:
            async for _event in s:
                break
        assert response.is_closed and isinstance(s.error, toolwire.StreamAborted)

    run(main)
    assert server.served[before].disconnected.wait(1.0)
