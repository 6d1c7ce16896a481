"""Every source a caller already holds, through the real SDK clients against a local HTTP
server (``drivers_support.FaultServer``): openai's ``create(stream=True)`` and its
``chat.completions.stream()`` / ``responses.stream()`` managers, anthropic's
``create(stream=True)`` and ``messages.stream()`` manager (entered or not), google-genai's
``generate_content_stream``, boto3's ``converse_stream`` (AWS event-stream), httpx's
``client.stream()``. Each assembles like its recording, ends typed and on time under
faults, is closed (or exited) exactly once on every way out, and needs no thread of its
own where its socket is reachable."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import anthropic
import boto3
import httpx
import httpx2
import openai
import pytest
from botocore.config import Config
from google import genai
from google.genai import types as genai_types
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from drivers_support import MAX_STALL, FaultServer, Run, body, payloads, reference

OPENAI = "openai-chat__parallel-two-tools.sse"
RESPONSES = "openai-responses__parallel-two-function-calls.sse"
ANTHROPIC = "anthropic__text-then-two-parallel-tool-use.sse"
GEMINI = "gemini__gemini25-two-calls-one-chunk.sse"
BEDROCK = "bedrock-converse__nova-text-then-tooluse.eventstream"
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def server(corpus_dir: Any) -> Iterator[FaultServer]:
    """The fault-injecting server on a free loopback port."""
    srv = FaultServer()
    try:
        yield srv
    finally:
        srv.close()


# ----------------------------------------------------------------- counting closes


class CountingManager:
    """A plain context manager around an SDK's stream manager that counts its exits (the
    driver enters and exits whatever context manager yields a stream)."""

    def __init__(self, manager: Any) -> None:
        self.manager = manager
        self.exits = 0

    def __enter__(self) -> Any:
        return self.manager.__enter__()

    def __exit__(self, *exc_info: Any) -> Any:
        self.exits += 1
        return self.manager.__exit__(*exc_info)

    async def __aenter__(self) -> Any:
        return await self.manager.__aenter__()

    async def __aexit__(self, *exc_info: Any) -> Any:
        self.exits += 1
        return await self.manager.__aexit__(*exc_info)


def count_closes(obj: Any, method: str = "close") -> list[int]:
    """Count calls of ``obj.<method>()`` (still calling it): a list that grows per call."""
    calls: list[int] = []
    original = getattr(obj, method)

    def counted(*args: Any) -> Any:
        calls.append(1)
        return original(*args)

    setattr(obj, method, counted)
    return calls


@dataclass
class Opened:
    """A source as a caller holds it, the corpus stream it serves, and its close count."""

    source: Any
    name: str
    closes: Callable[[], int]
    threaded: bool = False  # a source that hides its socket: read by a worker thread
    keep: list[Any] = field(default_factory=list)


# ----------------------------------------------------------------- sync sources


def _openai(server: FaultServer, fault: str, name: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url(fault, name), api_key="test", max_retries=0)


def _anthropic(server: FaultServer, fault: str) -> anthropic.Anthropic:
    base = server.url(fault, ANTHROPIC)
    return anthropic.Anthropic(base_url=base, api_key="test", max_retries=0)


def _stream_closes(stream: Any) -> Callable[[], int]:
    calls = count_closes(stream)
    return lambda: len(calls)


def _manager(manager: Any) -> tuple[CountingManager, Callable[[], int]]:
    counted = CountingManager(manager)
    return counted, lambda: counted.exits


@contextlib.contextmanager
def open_sync(kind: str, server: FaultServer, fault: str) -> Iterator[Opened]:
    """Make the request of ``kind`` with its real client against ``fault``."""
    with contextlib.ExitStack() as stack:
        if kind == "openai.create":
            src: Any = _openai(server, fault, OPENAI).chat.completions.create(
                model="m", messages=USER, stream=True
            )
            yield Opened(src, OPENAI, _stream_closes(src))
        elif kind == "openai.chat.stream":
            mgr, exits = _manager(
                _openai(server, fault, OPENAI).chat.completions.stream(model="m", messages=USER)
            )
            yield Opened(mgr, OPENAI, exits)
        elif kind == "openai.chat.stream-entered":
            mgr = _openai(server, fault, OPENAI).chat.completions.stream(model="m", messages=USER)
            src = stack.enter_context(mgr)
            yield Opened(src, OPENAI, _stream_closes(src))
        elif kind == "openai.responses.create":
            src = _openai(server, fault, RESPONSES).responses.create(
                model="m", input="hi", stream=True
            )
            yield Opened(src, RESPONSES, _stream_closes(src))
        elif kind == "openai.responses.stream":
            mgr, exits = _manager(
                _openai(server, fault, RESPONSES).responses.stream(model="m", input="hi")
            )
            yield Opened(mgr, RESPONSES, exits)
        elif kind == "anthropic.create":
            src = _anthropic(server, fault).messages.create(
                model="m", max_tokens=10, messages=USER, stream=True
            )
            yield Opened(src, ANTHROPIC, _stream_closes(src))
        elif kind == "anthropic.messages.stream":
            mgr, exits = _manager(
                _anthropic(server, fault).messages.stream(model="m", max_tokens=10, messages=USER)
            )
            yield Opened(mgr, ANTHROPIC, exits)
        elif kind == "anthropic.messages.stream-entered":
            mgr = _anthropic(server, fault).messages.stream(model="m", max_tokens=10, messages=USER)
            src = stack.enter_context(mgr)
            yield Opened(src, ANTHROPIC, _stream_closes(src))
        elif kind == "httpx.client.stream":
            client = stack.enter_context(httpx.Client())
            mgr, exits = _manager(client.stream("POST", f"{server.url(fault, OPENAI)}/x"))
            yield Opened(mgr, OPENAI, exits)
        elif kind == "genai":
            options = genai_types.HttpOptions(
                base_url=server.url(fault, GEMINI), api_version="v1beta", timeout=1000
            )
            # the client closes its HTTP client when it is garbage: keep it
            client = genai.Client(api_key="test", http_options=options)
            src = client.models.generate_content_stream(model="m", contents="hi")
            # a generator cannot count its close(): it is closed once it has no frame left
            closed = lambda: int(src.gi_frame is None)  # noqa: E731
            yield Opened(src, GEMINI, closed, threaded=True, keep=[client])
        elif kind == "boto3":
            client = boto3.client(
                "bedrock-runtime",
                endpoint_url=server.url(fault, BEDROCK),
                region_name="us-east-1",
                aws_access_key_id="test",
                aws_secret_access_key="test",
                config=Config(read_timeout=1, retries={"max_attempts": 1}),
            )
            result = client.converse_stream(
                modelId="m", messages=[{"role": "user", "content": [{"text": "hi"}]}]
            )
            yield Opened(result, BEDROCK, _stream_closes(result["stream"]), threaded=True)
        else:
            raise AssertionError(kind)


SYNC_KINDS = [
    "openai.create",
    "openai.chat.stream",
    "openai.chat.stream-entered",
    "openai.responses.create",
    "openai.responses.stream",
    "anthropic.create",
    "anthropic.messages.stream",
    "anthropic.messages.stream-entered",
    "httpx.client.stream",
    "genai",
    "boto3",
]


def consume(source: Any, **options: Any) -> tuple[Run, toolwire.StreamHandle]:
    """Drive ``source`` through ``stream()`` to its end: the run and the handle."""
    run = Run(events=[])
    with toolwire.stream(source, **options) as s:
        try:
            for event in s:
                run.events.append(event)
        except toolwire.StreamError as exc:
            run.error = exc
    if run.error is None:
        run.response = s.response
    return run, s


def summary(response: Any) -> tuple[Any, ...]:
    """What a response says, without the encoding of opaque provider fields (google-genai
    re-encodes a thought signature's bytes as URL-safe base64 when it dumps an object)."""
    calls = [(c.id, c.name, c.arguments) for c in response.tool_calls]
    return (response.text, calls, response.finish_reason, response.usage)


def stream_threads() -> list[str]:
    """The names of the per-stream worker threads alive now."""
    return [t.name for t in threading.enumerate() if t.name == "toolwire-stream"]


@pytest.mark.parametrize("kind", SYNC_KINDS)
def test_every_sync_source_assembles_like_its_recording(server: FaultServer, kind: str) -> None:
    """Each kind of sync source gives the recording's events and response, is closed (or
    exited) exactly once, and gets a worker thread only if it hides its socket."""
    with open_sync(kind, server, "ok") as opened:
        want = reference([body(opened.name)])
        before = stream_threads()
        with toolwire.stream(opened.source) as s:
            events = []
            for event in s:
                events.append(event)
                if not opened.threaded:
                    assert stream_threads() == before, "a thread for a socket-backed source"
        assert events == want.events
        assert summary(s.response) == summary(want.response)
        assert opened.closes() == 1
        assert not s.worker_alive


@pytest.mark.parametrize("kind", SYNC_KINDS)
def test_every_sync_source_times_out_on_a_stall_and_closes_once(
    server: FaultServer, kind: str
) -> None:
    """A stall after the first content ends in an idle ``StreamTimeout`` within timeout +
    0.5 s, usage kept, the source closed once; the server sees the client leave."""
    with open_sync(kind, server, "stall_middle") as opened:
        before = len(server.served) - 1
        started = time.monotonic()
        run, s = consume(opened.source, idle_timeout=0.3)
        elapsed = time.monotonic() - started
        assert isinstance(run.error, toolwire.StreamTimeout) and run.error.kind == "idle"
        assert elapsed < 0.8, elapsed
        assert opened.closes() == 1 or opened.threaded  # a blocked generator closes later
        served = server.served[before]
        if opened.threaded:
            # the worker stays blocked until the SDK's own read timeout (1 s here) at most
            deadline = time.monotonic() + 3
            while s.worker_alive and time.monotonic() < deadline:
                time.sleep(0.02)
            assert not s.worker_alive and opened.closes() == 1
        assert served.disconnected.wait(MAX_STALL), "the server never saw the client leave"
        if opened.name == ANTHROPIC:
            assert run.error.partial is not None and run.error.partial.usage is not None


@pytest.mark.parametrize("kind", SYNC_KINDS)
def test_every_sync_source_reports_the_providers_error_event(
    server: FaultServer, kind: str
) -> None:
    """The provider's own error event mid-stream ends in ``ProviderError`` with its body,
    and the source is closed once."""
    with open_sync(kind, server, "error_event") as opened:
        run, s = consume(opened.source)
        assert isinstance(run.error, toolwire.ProviderError), run.error
        assert run.error.error is not None
        assert opened.closes() == 1
        assert not s.worker_alive


@pytest.mark.parametrize("kind", SYNC_KINDS)
def test_breaking_out_of_every_sync_source_closes_it_once(server: FaultServer, kind: str) -> None:
    """Breaking out of a dripping stream closes (or exits) the source once, ends in
    ``StreamAborted``, and the server sees the client leave."""
    with open_sync(kind, server, "drip") as opened:
        before = len(server.served) - 1
        with toolwire.stream(opened.source) as s:
            for _event in s:
                break
        assert isinstance(s.error, toolwire.StreamAborted)
        deadline = time.monotonic() + 3
        while (s.worker_alive or opened.closes() != 1) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert opened.closes() == 1 and not s.worker_alive
        assert server.served[before].disconnected.wait(MAX_STALL)


@pytest.mark.parametrize("kind", ["openai.create", "anthropic.create", "openai.responses.create"])
def test_silent_thinking_before_the_content_is_bounded_by_the_first_event_limit(
    server: FaultServer, kind: str
) -> None:
    """After the bookkeeping events (role delta, ``message_start``, ``response.created``) a
    silence longer than the idle limit is a model thinking: only ``first_event_timeout``
    bounds it."""
    with open_sync(kind, server, "think") as opened:
        run, _ = consume(opened.source, idle_timeout=0.2, first_event_timeout=5)
        assert run.error is None, run.error
        assert summary(run.response) == summary(reference([body(opened.name)]).response)
    with open_sync(kind, server, "think") as opened:
        started = time.monotonic()
        run, _ = consume(opened.source, idle_timeout=5, first_event_timeout=0.3)
        assert isinstance(run.error, toolwire.StreamTimeout), run.error
        assert run.error.kind == "first_event" and time.monotonic() - started < 0.8
        assert opened.closes() == 1


def test_a_slow_loop_body_is_not_an_idle_timeout(server: FaultServer) -> None:
    """Time spent in the caller's loop body does not count against ``idle_timeout``: a
    healthy stream read by a slow consumer ends properly."""
    with open_sync("anthropic.create", server, "ok") as opened:
        with toolwire.stream(opened.source, idle_timeout=0.1) as s:
            for _event in s:
                time.sleep(0.15)
        assert s.response.tool_calls and opened.closes() == 1


@settings(max_examples=12, deadline=None)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=6000), max_size=10),
    kind=st.sampled_from(["openai.create", "anthropic.messages.stream", "boto3"]),
)
def test_any_tcp_split_gives_the_recordings_events(
    server: FaultServer, cuts: list[int], kind: str
) -> None:
    """Whatever TCP segments the body arrives in, an SDK source gives the same events."""
    fault = "cuts:" + ",".join(str(c) for c in cuts)
    with open_sync(kind, server, fault) as opened:
        run, _ = consume(opened.source)
        want = reference([body(opened.name)])
        assert run.events == want.events and run.outcome() == want.outcome()
        assert opened.closes() == 1


@pytest.mark.parametrize("kind", ["openai.create", "openai.chat.stream-entered", "anthropic"])
def test_a_partly_read_sdk_stream_goes_on_with_raw_events_once(
    server: FaultServer, kind: str
) -> None:
    """An SDK stream the caller already read from is read on as the SDK's raw events, each
    once (never the helper streams' derived events): what the assembler gives equals the
    remaining payloads fed alone."""
    with contextlib.ExitStack() as stack:
        if kind == "anthropic":
            mgr = _anthropic(server, "ok").messages.stream(model="m", max_tokens=10, messages=USER)
            source: Any = stack.enter_context(mgr)
            name = ANTHROPIC
        elif kind == "openai.create":
            source = _openai(server, "ok", OPENAI).chat.completions.create(
                model="m", messages=USER, stream=True
            )
            name = OPENAI
        else:
            mgr2 = _openai(server, "ok", OPENAI).chat.completions.stream(model="m", messages=USER)
            source = stack.enter_context(mgr2)
            name = OPENAI
        next(iter(source))  # the caller took one event (the SDK read one raw event)
        closes = count_closes(source)
        run, _ = consume(source, idle_timeout=5)
        want = reference(payloads(name)[1:])
        assert run.events == want.events and run.outcome() == want.outcome()
        assert len(closes) == 1


def test_sdk_and_httpx_sources_share_one_watchdog_and_no_worker(server: FaultServer) -> None:
    """Five socket-backed streams open at once run in the caller's thread: no worker per
    stream, one process-wide watchdog thread at most."""
    with contextlib.ExitStack() as stack:
        handles = []
        for kind in ("openai.create", "anthropic.messages.stream", "httpx.client.stream") * 2:
            opened = stack.enter_context(open_sync(kind, server, "ok"))
            handles.append(stack.enter_context(toolwire.stream(opened.source)))
        for s in handles:
            next(iter(s))
        names = [t.name for t in threading.enumerate()]
        assert "toolwire-stream" not in names and names.count("toolwire-deadlines") <= 1
        for s in handles:
            with contextlib.suppress(StopIteration):
                while True:
                    next(s)
            assert s.response.tool_calls


def test_ctrl_c_during_a_stalled_socket_read_is_re_raised_and_closes(
    server: FaultServer, python_sigint: None
) -> None:
    """A real SIGINT while the caller's thread is blocked reading a stalled SDK stream is
    re-raised at once; the manager is exited once and the server sees the client leave."""
    main = threading.main_thread().ident
    assert main == threading.get_ident()
    with open_sync("anthropic.messages.stream", server, "stall_middle") as opened:
        before = len(server.served)
        timer = threading.Timer(0.3, signal.pthread_kill, args=(main, signal.SIGINT))
        started = time.monotonic()
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt), toolwire.stream(opened.source) as s:
                list(s)
        finally:
            timer.cancel()
        assert time.monotonic() - started < 2
        assert opened.closes() == 1 and isinstance(s.error, toolwire.StreamAborted)
        assert server.served[before].disconnected.wait(1.0)


SWEEP_FAULTS: dict[str, tuple[type[toolwire.StreamError], str | None]] = {
    "stall_first": (toolwire.StreamTimeout, "first_event"),
    "stall_middle": (toolwire.StreamTimeout, "idle"),
    "drip": (toolwire.StreamTimeout, "total"),
    "reset": (toolwire.StreamAborted, None),
    "eof": (toolwire.StreamAborted, None),
    "error_event": (toolwire.ProviderError, None),
}


@pytest.mark.slow
def test_fault_sweep_through_sdk_sources_leaks_no_connection(server: FaultServer) -> None:
    """Every fault through the openai and anthropic clients (create, the stream managers)
    sharing one HTTP client ends typed within budget + 0.3 s and leaves 0 open
    connections in its pool."""
    limits = {"first_event_timeout": 0.1, "idle_timeout": 0.1, "total_timeout": 0.25}
    worst, runs = 0.0, 0
    with httpx2.Client() as http:
        makers: dict[str, Callable[[str], Any]] = {
            "openai.create": lambda f: (
                _openai(server, f, OPENAI)
                .with_options(http_client=http)
                .chat.completions.create(model="m", messages=USER, stream=True)
            ),
            "openai.chat.stream": lambda f: (
                _openai(server, f, OPENAI)
                .with_options(http_client=http)
                .chat.completions.stream(model="m", messages=USER)
            ),
            "openai.responses.stream": lambda f: (
                _openai(server, f, RESPONSES)
                .with_options(http_client=http)
                .responses.stream(model="m", input="hi")
            ),
            "anthropic.messages.stream": lambda f: (
                _anthropic(server, f)
                .with_options(http_client=http)
                .messages.stream(model="m", max_tokens=10, messages=USER)
            ),
        }
        for _round in range(2):
            for kind, make in makers.items():
                for fault, (expected, timeout_kind) in SWEEP_FAULTS.items():
                    source = make(fault)
                    error = None
                    # deadlines run from the entry of the block (a manager's request and
                    # headers before it are bounded by the SDK's own timeout)
                    with toolwire.stream(source, **limits) as s:
                        started = time.monotonic()
                        with contextlib.suppress(toolwire.StreamError):
                            list(s)
                    budget = 0.25 if timeout_kind == "total" else 0.1
                    worst = max(worst, time.monotonic() - started - budget)
                    error = s.error
                    assert isinstance(error, expected), (kind, fault, error)
                    assert timeout_kind is None or getattr(error, "kind", None) == timeout_kind
                    runs += 1
        pool = http._transport._pool  # type: ignore[attr-defined]
        open_connections = [c for c in pool.connections if not c.is_closed()]
    assert open_connections == []
    assert worst < 0.3, worst
    print(f"{runs} faults through SDK sources: 0 open connections, worst overshoot {worst:.3f} s")


# ----------------------------------------------------------------- refusals


@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_whole_responses_and_wrong_kinds_are_refused_naming_the_call_that_works() -> None:
    """A whole (non-streamed) SDK response, boto3's ``converse()`` result, a coroutine or
    an async manager given to ``stream()`` raise ``SettingsError`` naming what works."""
    from anthropic.types import Message
    from openai.types.chat import ChatCompletion

    cases: list[tuple[Any, str]] = [
        (ChatCompletion.model_construct(id="x", choices=[]), "stream=True"),
        (Message.model_construct(id="x", content=[]), "messages.stream"),
        (genai_types.GenerateContentResponse(), "generate_content_stream"),
        ({"output": {"message": {}}, "stopReason": "end_turn"}, "converse_stream"),
    ]
    for source, hint in cases:
        with pytest.raises(toolwire.SettingsError, match=hint.replace(".", r"\.")):
            toolwire.stream(source)
    client = anthropic.AsyncAnthropic(api_key="test", base_url="http://127.0.0.1:9")
    manager = client.messages.stream(model="m", max_tokens=10, messages=USER)
    with pytest.raises(toolwire.SettingsError, match="astream"):
        toolwire.stream(manager)

    async def create() -> None:
        return None

    coroutine = create()
    with pytest.raises(toolwire.SettingsError, match="astream"):
        toolwire.stream(coroutine)
    coroutine.close()
    sync_manager = anthropic.Anthropic(api_key="test").messages.stream(
        model="m", max_tokens=10, messages=USER
    )
    with pytest.raises(toolwire.SettingsError, match=r"toolwire\.stream\(\)"):
        toolwire.astream(sync_manager)


def test_a_manager_that_yields_no_stream_is_refused_and_exited_once() -> None:
    """A context manager whose entered value cannot be streamed raises
    ``SettingsError`` from ``__enter__``, and is exited exactly once."""

    class Yields42:
        exits = 0

        def __enter__(self) -> int:
            return 42

        def __exit__(self, *exc_info: Any) -> None:
            Yields42.exits += 1

    manager = Yields42()
    handle = toolwire.stream(manager)
    with pytest.raises(toolwire.SettingsError, match="int"), handle:
        pass
    assert Yields42.exits == 1 and isinstance(handle.error, toolwire.StreamAborted)


# ----------------------------------------------------------------- async sources


def run_async(main: Callable[[], Any]) -> Any:
    """Run ``main()`` in a fresh event loop, bounded so that no test can hang."""

    async def bounded() -> Any:
        return await asyncio.wait_for(main(), 30)

    return asyncio.run(bounded())


def _aopenai(server: FaultServer, fault: str, name: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.url(fault, name), api_key="test", max_retries=0)


def _aanthropic(server: FaultServer, fault: str) -> anthropic.AsyncAnthropic:
    base = server.url(fault, ANTHROPIC)
    return anthropic.AsyncAnthropic(base_url=base, api_key="test", max_retries=0)


@contextlib.asynccontextmanager
async def open_async(kind: str, server: FaultServer, fault: str) -> AsyncIterator[Opened]:
    """Make the request of ``kind`` with its real async client against ``fault``."""
    async with contextlib.AsyncExitStack() as stack:
        if kind == "openai.create":
            src: Any = await _aopenai(server, fault, OPENAI).chat.completions.create(
                model="m", messages=USER, stream=True
            )
            yield Opened(src, OPENAI, _stream_closes(src))
        elif kind == "openai.create-not-awaited":
            coroutine = _aopenai(server, fault, OPENAI).chat.completions.create(
                model="m", messages=USER, stream=True
            )
            seen: list[Any] = []
            yield Opened(coroutine, OPENAI, lambda: len(seen), keep=seen)
        elif kind == "openai.chat.stream":
            mgr, exits = _manager(
                _aopenai(server, fault, OPENAI).chat.completions.stream(model="m", messages=USER)
            )
            yield Opened(mgr, OPENAI, exits)
        elif kind == "openai.responses.stream":
            mgr, exits = _manager(
                _aopenai(server, fault, RESPONSES).responses.stream(model="m", input="hi")
            )
            yield Opened(mgr, RESPONSES, exits)
        elif kind == "anthropic.messages.stream":
            mgr, exits = _manager(
                _aanthropic(server, fault).messages.stream(model="m", max_tokens=10, messages=USER)
            )
            yield Opened(mgr, ANTHROPIC, exits)
        elif kind == "anthropic.messages.stream-entered":
            manager = _aanthropic(server, fault).messages.stream(
                model="m", max_tokens=10, messages=USER
            )
            src = await stack.enter_async_context(manager)
            yield Opened(src, ANTHROPIC, _stream_closes(src))
        elif kind == "httpx.client.stream":
            client = await stack.enter_async_context(httpx.AsyncClient())
            mgr, exits = _manager(client.stream("POST", f"{server.url(fault, OPENAI)}/x"))
            yield Opened(mgr, OPENAI, exits)
        elif kind == "genai":
            options = genai_types.HttpOptions(
                base_url=server.url(fault, GEMINI), api_version="v1beta", timeout=1000
            )
            client = genai.Client(api_key="test", http_options=options)  # kept, as above
            src = await client.aio.models.generate_content_stream(model="m", contents="hi")
            yield Opened(src, GEMINI, lambda: int(src.ag_frame is None), keep=[client])
        else:
            raise AssertionError(kind)


ASYNC_KINDS = [
    "openai.create",
    "openai.create-not-awaited",
    "openai.chat.stream",
    "openai.responses.stream",
    "anthropic.messages.stream",
    "anthropic.messages.stream-entered",
    "httpx.client.stream",
    "genai",
]


async def aconsume(source: Any, **options: Any) -> tuple[Run, toolwire.AsyncStreamHandle]:
    """Drive ``source`` through ``astream()`` to its end: the run and the handle."""
    run = Run(events=[])
    async with toolwire.astream(source, **options) as s:
        try:
            async for event in s:
                run.events.append(event)
        except toolwire.StreamError as exc:
            run.error = exc
    if run.error is None:
        run.response = s.response
    return run, s


@pytest.mark.parametrize("kind", ASYNC_KINDS)
def test_every_async_source_assembles_like_its_recording(server: FaultServer, kind: str) -> None:
    """Each kind of async source gives the recording's events and response, closed (or
    exited) exactly once; an un-awaited ``create()`` is awaited by the driver."""

    async def main() -> None:
        async with open_async(kind, server, "ok") as opened:
            run, _ = await aconsume(opened.source)
            want = reference([body(opened.name)])
            assert run.events == want.events
            assert summary(run.response) == summary(want.response)
            assert opened.closes() == 1 or kind == "openai.create-not-awaited"

    run_async(main)


@pytest.mark.parametrize("kind", ASYNC_KINDS)
def test_every_async_source_times_out_on_a_stall_and_closes_once(
    server: FaultServer, kind: str
) -> None:
    """A stall after the first content ends in an idle ``StreamTimeout`` within timeout +
    0.5 s, the source closed once, and the server sees the client leave."""

    async def main() -> None:
        async with open_async(kind, server, "stall_middle") as opened:
            started = time.monotonic()
            run, _ = await aconsume(opened.source, idle_timeout=0.3)
            assert time.monotonic() - started < 0.8
            assert isinstance(run.error, toolwire.StreamTimeout) and run.error.kind == "idle"
            assert opened.closes() == 1 or kind == "openai.create-not-awaited"

    before = len(server.served)
    run_async(main)
    assert server.served[before].disconnected.wait(1.0), "the server never saw the client leave"


@pytest.mark.parametrize("kind", ASYNC_KINDS)
def test_cancelling_a_task_stalled_on_any_async_source_re_raises_and_closes(
    server: FaultServer, kind: str
) -> None:
    """A task cancelled while it waits on a stalled source re-raises ``CancelledError``;
    the source is closed (or exited) once and the server sees the client leave."""

    async def main() -> None:
        async with open_async(kind, server, "stall_middle") as opened:

            async def reader() -> None:
                async with toolwire.astream(opened.source) as s:
                    async for _event in s:
                        pass

            task = asyncio.create_task(reader())
            await asyncio.sleep(0.3)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert opened.closes() == 1 or kind == "openai.create-not-awaited"

    before = len(server.served)
    run_async(main)
    assert server.served[before].disconnected.wait(1.0), "the server never saw the client leave"


def test_async_fault_sweep_through_sdk_managers_leaks_no_connection(server: FaultServer) -> None:
    """Every fault through the async openai and anthropic stream managers sharing one HTTP
    client ends typed within budget + 0.3 s and leaves 0 open connections."""
    limits = {"first_event_timeout": 0.1, "idle_timeout": 0.1, "total_timeout": 0.25}

    async def main() -> tuple[int, float, list[Any]]:
        worst, runs = 0.0, 0
        async with httpx2.AsyncClient() as http:
            for fault, (expected, timeout_kind) in SWEEP_FAULTS.items():
                for manager in (
                    _aopenai(server, fault, OPENAI)
                    .with_options(http_client=http)
                    .chat.completions.stream(model="m", messages=USER),
                    _aanthropic(server, fault)
                    .with_options(http_client=http)
                    .messages.stream(model="m", max_tokens=10, messages=USER),
                ):
                    async with toolwire.astream(manager, **limits) as s:
                        started = time.monotonic()  # deadlines run from here, as above
                        with contextlib.suppress(toolwire.StreamError):
                            [event async for event in s]
                    budget = 0.25 if timeout_kind == "total" else 0.1
                    worst = max(worst, time.monotonic() - started - budget)
                    assert isinstance(s.error, expected), (fault, s.error)
                    assert timeout_kind is None or getattr(s.error, "kind", None) == timeout_kind
                    runs += 1
            pool = http._transport._pool  # type: ignore[attr-defined]
            return runs, worst, [c for c in pool.connections if not c.is_closed()]

    runs, worst, open_connections = run_async(main)
    assert open_connections == [] and worst < 0.3, (open_connections, worst)
    print(f"{runs} faults through async SDK managers: 0 open, worst overshoot {worst:.3f} s")
