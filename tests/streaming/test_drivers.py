"""``toolwire.stream()``: the sans-IO deadline core on a fake clock, the sync driver over
corpus recordings (whole, byte by byte, Hypothesis splits), every exit path closing the
source exactly once, and real HTTP with injected faults through the ``openai``,
``anthropic`` and ``httpx`` clients."""

from __future__ import annotations

import inspect
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from drivers_support import (
    EXPECTED,
    CountingSource,
    FaultServer,
    NoClose,
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
from toolwire._streaming.deadlines import StreamDeadlines
from toolwire._streaming.drivers import SettingsError, StreamHandle, UsageError, stream

ANTHROPIC = "anthropic__text-then-two-parallel-tool-use.sse"
OPENAI = "openai-chat__parallel-two-tools.sse"
# an iterator that may block is read inline without any limit, and by a worker thread with
# one (a list is always read inline: its items are in memory)
MODES = {"inline": {"first_event_timeout": None, "idle_timeout": None}, "threaded": {}}


def consume(source: Any, **options: Any) -> Run:
    """Drive ``source`` through ``stream()`` to its end; the events and the outcome."""
    run = Run(events=[])
    with stream(source, **options) as s:
        try:
            for event in s:
                run.events.append(event)
        except toolwire.StreamError as exc:
            run.error = exc
    if run.error is None:
        run.response = s.response
    else:
        assert s.error is run.error
        with pytest.raises(type(run.error)):
            s.response  # noqa: B018
    return run


def deadlines(**limits: float | None) -> StreamDeadlines:
    """A deadline core started at instant 100.0 of a fake clock."""
    values: dict[str, float | None] = {
        "first_event_timeout": None,
        "idle_timeout": None,
        "total_timeout": None,
    }
    values.update(limits)
    return StreamDeadlines(**values, start=100.0)


# --------------------------------------------------------------- the deadline core


def test_no_limits_means_no_deadline() -> None:
    """Without limits no wait has a deadline, before or after the content began."""
    d = deadlines()
    assert d.wait(100.0) is None and d.total_expired(1e9) is None
    d.content_arrived()
    assert d.wait(1e9) is None


def test_first_event_deadline_holds_until_the_content() -> None:
    """Before the content every wait ends at start + first_event_timeout, however late
    it begins: bookkeeping events and keep-alives do not restart it."""
    d = deadlines(first_event_timeout=5, idle_timeout=1)
    for now in (100.0, 103.0, 104.9):
        hit = d.wait(now)
        assert hit is not None and hit.kind == "first_event" and hit.at == 105.0
        assert hit.setting == "first_event_timeout"


def test_idle_deadline_runs_from_the_start_of_each_wait() -> None:
    """Once content flows each wait may last idle_timeout from its own start: the time the
    caller spent in its loop body between two waits is not counted."""
    d = deadlines(first_event_timeout=5, idle_timeout=1)
    d.content_arrived()
    assert d.content
    hit = d.wait(103.0)
    assert hit is not None and hit.kind == "idle" and hit.at == 104.0
    hit = d.wait(250.0)
    assert hit is not None and hit.kind == "idle" and hit.at == 251.0


def test_no_first_event_limit_means_the_first_wait_is_unbounded() -> None:
    """``first_event_timeout=None`` is no limit (the idle limit applies only after content)."""
    d = deadlines(idle_timeout=2)
    assert d.wait(100.0) is None
    d.content_arrived()
    hit = d.wait(100.0)
    assert hit is not None and hit.kind == "idle"


def test_total_wins_when_earlier_or_tied() -> None:
    """The earliest deadline is in force; on a tie the total budget wins."""
    d = deadlines(first_event_timeout=3, total_timeout=3)
    hit = d.wait(100.0)
    assert hit is not None and hit.kind == "total"
    d = deadlines(first_event_timeout=3, total_timeout=2)
    hit = d.wait(100.0)
    assert hit is not None and hit.kind == "total" and hit.at == 102.0
    d = deadlines(idle_timeout=1, total_timeout=10)
    d.content_arrived()
    hit = d.wait(109.5)
    assert hit is not None and hit.kind == "total" and hit.at == 110.0


def test_total_is_absolute() -> None:
    """The total deadline never moves: it has passed from start + total on."""
    d = deadlines(first_event_timeout=10, total_timeout=20)
    assert d.total_expired(119.99) is None
    total = d.total_expired(120.0)
    assert total is not None and total.kind == "total" and total.at == 120.0


limit = st.one_of(st.none(), st.floats(min_value=0.001, max_value=100))


@given(
    first=limit,
    idle=limit,
    total=limit,
    content=st.booleans(),
    now=st.floats(min_value=100, max_value=400),
)
def test_deadline_of_a_wait_is_the_earliest_applicable(
    first: float | None, idle: float | None, total: float | None, content: bool, now: float
) -> None:
    """For any limits, phase and instant, a wait's deadline is the earliest that applies."""
    d = deadlines(first_event_timeout=first, idle_timeout=idle, total_timeout=total)
    if content:
        d.content_arrived()
    candidates: list[tuple[float, int, str]] = []
    if not content and first is not None:
        candidates.append((100.0 + first, 1, "first_event"))
    if content and idle is not None:
        candidates.append((now + idle, 1, "idle"))
    if total is not None:
        candidates.append((100.0 + total, 0, "total"))
    got = d.wait(now)
    assert d.until(now) == (None if got is None else got.at)  # the hot path agrees
    if not candidates:
        assert got is None
        return
    at, _, kind = min(candidates)
    assert got is not None and got.at == at and got.kind == kind
    assert (d.total_expired(now) is not None) == (total is not None and now >= 100.0 + total)


def test_defaults_are_generous_and_documented() -> None:
    """The defaults are 600 s to the first content, 120 s idle, no total; both docstrings
    say so."""
    for driver in (stream, toolwire.astream):
        params = inspect.signature(driver).parameters
        assert params["first_event_timeout"].default == 600
        assert params["idle_timeout"].default == 120
        assert params["total_timeout"].default is None
    doc = stream.__doc__ or ""
    assert "default 600" in doc and "default 120" in doc and "default ``None``" in doc


# ------------------------------------------------------------------ settings, usage


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "10", True, [1]])
def test_bad_timeouts_raise_a_settings_error(bad: Any) -> None:
    """A timeout that is not a finite number of seconds > 0 (or None) is refused up front."""
    for name in ("first_event_timeout", "idle_timeout", "total_timeout"):
        with pytest.raises(SettingsError, match=name):
            stream([], **{name: bad})


@pytest.mark.parametrize("bad", [{"a": 1}, "data: {}", b"data: {}\n\n", 42, None, object()])
def test_sources_that_are_not_streams_are_refused(bad: Any) -> None:
    """A single payload, a number or an arbitrary object is not a stream: typed error."""
    with pytest.raises(SettingsError):
        stream(bad)


def test_async_sources_are_refused_by_the_sync_driver() -> None:
    """An async iterable given to ``stream()`` is refused with a pointer to ``astream()``."""

    async def agen() -> Any:
        yield {}

    gen = agen()
    with pytest.raises(SettingsError, match="astream"):
        stream(gen)
    response = httpx.Response(200, stream=httpx.ByteStream(b""))
    assert isinstance(consume(response).error, toolwire.StreamAborted)  # readable both ways


def test_unknown_format_is_typed() -> None:
    """An unknown format name raises ``UnknownFormat`` when the stream is made."""
    with pytest.raises(toolwire.UnknownFormat):
        stream([], format="no-such-format")
    with pytest.raises(SettingsError):
        stream([], format=3)  # type: ignore[arg-type]


def test_handle_outside_with_iterated_twice_or_entered_twice(corpus_dir: Any) -> None:
    """Misuse of the handle raises ``UsageError`` and never reads the source."""
    source = CountingSource(payloads(ANTHROPIC))
    s = stream(source)
    with pytest.raises(UsageError):
        iter(s)
    with pytest.raises(UsageError):
        s.response  # noqa: B018
    with s:
        with pytest.raises(UsageError):
            s.__enter__()
        with pytest.raises(UsageError):
            s.response  # noqa: B018
        with pytest.raises(UsageError):
            next(s)  # not started with iter()
        events = list(s)
        assert events
        with pytest.raises(UsageError):
            iter(s)
        assert s.response.tool_calls
    with pytest.raises(UsageError):
        iter(s)
    assert source.closes == 1


# ------------------------------------------------------------------ corpus equality


@pytest.mark.corpus
@pytest.mark.parametrize("name", byte_names())
def test_bytes_whole_and_byte_by_byte_match_the_assembler(corpus_dir: Any, name: str) -> None:
    """Every corpus body fed whole and byte by byte gives the assembler's events and outcome."""
    data = body(name)
    want = reference([data])
    got = consume([data])
    assert got.events == want.events and got.outcome() == want.outcome()
    got = consume([data[i : i + 1] for i in range(len(data))], **MODES["inline"])
    assert got.events == want.events and got.outcome() == want.outcome()
    entry = EXPECTED[name]
    if got.response is not None:
        assert got.response.text == entry["text"]
        assert [c.name for c in got.response.tool_calls] == [c["name"] for c in entry["tool_calls"]]
    else:
        assert entry["error"] is not None or entry["finish_reason"] not in ("tool_calls", "stop")


@pytest.mark.corpus
@pytest.mark.parametrize("name", [ANTHROPIC, OPENAI])
def test_byte_by_byte_through_the_worker_thread(corpus_dir: Any, name: str) -> None:
    """Byte-by-byte items through the worker thread's bounded queue lose and reorder nothing."""
    data = body(name)
    got = consume(iter([data[i : i + 1] for i in range(len(data))]), idle_timeout=5)
    want = reference([data])
    assert got.events == want.events and got.outcome() == want.outcome()


@pytest.mark.corpus
@pytest.mark.parametrize("name", payload_names())
def test_payload_dicts_match_the_assembler(corpus_dir: Any, name: str) -> None:
    """Every SSE / JSON Lines corpus stream fed as dicts gives the assembler's result."""
    items = payloads(name)
    want = reference(items)
    for mode in MODES.values():
        got = consume(iter(items), **mode)
        assert got.events == want.events and got.outcome() == want.outcome()
    got = consume(list(items))
    assert got.events == want.events and got.outcome() == want.outcome()


@pytest.mark.corpus
@settings(max_examples=40)
@given(
    # a placeholder keeps Hypothesis from refusing an empty list where the corpus is absent;
    # the test then skips (or fails under CI) at require()
    name=st.sampled_from(byte_names() or ["corpus-absent"]),
    cuts=st.lists(st.integers(min_value=0, max_value=60_000), max_size=12),
    mode=st.sampled_from(sorted(MODES)),
)
def test_hypothesis_splits_match_the_assembler(name: str, cuts: list[int], mode: str) -> None:
    """Any split of any corpus body gives the same events and outcome as the whole body."""
    from conftest import corpus_available, require

    require(corpus_available(), "the recorded corpus is absent")
    data = body(name)
    want = reference([data])
    got = consume(iter(splits(data, [c % (len(data) + 1) for c in cuts])), **MODES[mode])
    assert got.events == want.events and got.outcome() == want.outcome()


# ------------------------------------------------------------------- exit paths


@pytest.fixture(params=sorted(MODES))
def mode(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The driver's settings for one of its two ways of pulling (inline or threaded)."""
    options: dict[str, Any] = MODES[request.param]
    return options


def test_success_closes_once_and_ends_the_worker(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """A stream read to its end is closed once, its worker ends, and the response is there."""
    source = CountingSource(payloads(ANTHROPIC))
    with stream(source, **mode) as s:
        events = list(s)
        assert source.closes == 1
    assert source.closes == 1 and not s.worker_alive
    assert s.response.tool_calls[0].name == "secret_retrieval_tool"
    assert any(isinstance(e, toolwire.Finished) for e in events)
    assert s.error is None and s.usage is not None


def test_break_closes_once_and_the_response_is_aborted(
    corpus_dir: Any, mode: dict[str, Any]
) -> None:
    """Breaking out closes the source once; ``response`` raises ``StreamAborted`` with usage."""
    source = CountingSource(payloads(ANTHROPIC))
    with stream(source, **mode) as s:
        for _event in s:
            break
    assert source.closes == 1 and not s.worker_alive
    with pytest.raises(toolwire.StreamAborted) as info:
        s.response  # noqa: B018
    assert s.error is info.value
    assert info.value.partial is not None and info.value.partial.usage is not None


def test_exception_in_the_body_closes_once_and_propagates(
    corpus_dir: Any, mode: dict[str, Any]
) -> None:
    """The caller's own exception passes through unchanged after the source was closed."""
    source = CountingSource(payloads(ANTHROPIC))
    with pytest.raises(LookupError, match="mine"), stream(source, **mode) as s:
        for _event in s:
            raise LookupError("mine")
    assert source.closes == 1 and not s.worker_alive
    assert isinstance(s.error, toolwire.StreamAborted)


def test_keyboard_interrupt_in_the_body_is_re_raised(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """A ``KeyboardInterrupt`` in the loop body is re-raised; the source is closed once."""
    source = CountingSource(payloads(ANTHROPIC))
    with pytest.raises(KeyboardInterrupt), stream(source, **mode) as s:
        for _event in s:
            raise KeyboardInterrupt
    assert source.closes == 1 and not s.worker_alive


def test_keyboard_interrupt_from_the_source_is_re_raised(
    corpus_dir: Any, mode: dict[str, Any]
) -> None:
    """A ``KeyboardInterrupt`` raised inside the source's ``next()`` reaches the caller."""
    source = CountingSource(payloads(ANTHROPIC), raise_at=(2, KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt), stream(source, **mode) as s:
        list(s)
    assert source.closes == 1 and not s.worker_alive


def test_keyboard_interrupt_while_waiting_is_re_raised_and_closes(
    corpus_dir: Any, python_sigint: None
) -> None:
    """A real SIGINT while waiting on a stalled source is re-raised at once; source closed once."""
    source = CountingSource(payloads(ANTHROPIC), block=3)
    main = threading.main_thread().ident
    assert main == threading.get_ident()
    timer = threading.Timer(0.2, signal.pthread_kill, args=(main, signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt), stream(source, idle_timeout=5) as s:
            list(s)
    finally:
        timer.cancel()
    assert time.monotonic() - started < 2
    assert source.closes == 1 and source.returned.wait(2)
    assert s.worker_alive is False or not s.worker_alive


def test_stream_error_mid_stream_closes_once(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """A payload that breaks the format raises ``StreamFormatError`` and closes the source."""
    items: list[Any] = [*payloads(ANTHROPIC)[:3], {"type": "content_block_delta"}, "[DONE]"]
    source = CountingSource(items)
    run = consume(source, **mode)
    assert isinstance(run.error, toolwire.StreamFormatError)
    assert source.closes == 1


def test_failed_stream_raises_after_its_last_events(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """A stream that ends without its terminal event yields every event, then raises."""
    items = payloads(ANTHROPIC)[:-2]
    want = reference(items)
    assert isinstance(want.error, toolwire.StreamAborted)
    source = CountingSource(items)
    got = consume(source, **mode)
    assert got.events == want.events and got.outcome() == want.outcome()
    assert source.closes == 1


def test_idle_timeout_on_a_blocked_source(corpus_dir: Any) -> None:
    """A source blocked in next() times out (idle) on time, is unblocked by close, keeps usage."""
    source = CountingSource(payloads(ANTHROPIC), block=content_index(payloads(ANTHROPIC)))
    started = time.monotonic()
    with pytest.raises(toolwire.StreamTimeout) as info, stream(source, idle_timeout=0.2) as s:
        list(s)
    elapsed = time.monotonic() - started
    assert info.value.kind == "idle" and isinstance(info.value, TimeoutError)
    assert 0.2 <= elapsed < 0.7
    assert source.closes == 1 and not s.worker_alive
    assert info.value.partial is not None and info.value.partial.usage is not None
    assert info.value.partial.usage.input_tokens == first_event_usage(ANTHROPIC)
    assert s.usage == info.value.partial.usage and s.error is info.value


def test_first_event_and_total_timeouts(corpus_dir: Any) -> None:
    """Nothing at all ends in ``first_event``; a steady trickle past the budget in ``total``."""
    source = CountingSource([], block=0)
    with (
        pytest.raises(toolwire.StreamTimeout) as info,
        stream(source, first_event_timeout=0.1, idle_timeout=5) as s,
    ):
        list(s)
    assert info.value.kind == "first_event" and source.closes == 1

    def trickle() -> Iterator[dict[str, Any]]:
        for payload in payloads(ANTHROPIC):
            time.sleep(0.05)
            yield payload

    gen = trickle()
    started = time.monotonic()
    with (
        pytest.raises(toolwire.StreamTimeout) as info,
        stream(gen, idle_timeout=1, total_timeout=0.3) as s,
    ):
        list(s)
    assert info.value.kind == "total" and time.monotonic() - started < 0.8
    assert s.partial.usage is not None
    # the generator was running when the deadline passed: the worker closed it afterwards
    deadline = time.monotonic() + 2
    while gen.gi_frame is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gen.gi_frame is None and not s.worker_alive


def test_close_errors_do_not_mask_the_original(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """An error raised by close() is kept in close_error and never replaces the outcome."""
    source = CountingSource(payloads(ANTHROPIC)[:-2], close_error=OSError("close failed"))
    run = consume(source, **mode)
    assert isinstance(run.error, toolwire.StreamAborted)
    source = CountingSource(payloads(ANTHROPIC), close_error=OSError("close failed"))
    with stream(source, **mode) as s:
        list(s)
    assert s.response.tool_calls and isinstance(s.close_error, OSError)


def test_source_errors_are_typed(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """A failing source ends in StreamAborted (chained), an SDK error event in ProviderError."""
    source = CountingSource(payloads(ANTHROPIC), raise_at=(2, ValueError("bad read")))
    run = consume(source, **mode)
    assert isinstance(run.error, toolwire.StreamAborted)
    assert isinstance(run.error.__cause__, ValueError) and "bad read" in str(run.error)
    assert run.error.partial is not None and run.error.partial.usage is not None
    err = RuntimeError("overloaded")
    err.body = {"type": "overloaded_error"}  # type: ignore[attr-defined]
    run = consume(CountingSource(payloads(ANTHROPIC), raise_at=(2, err)), **mode)
    assert isinstance(run.error, toolwire.ProviderError)
    assert run.error.error == {"type": "overloaded_error"}


def test_source_without_close_is_left_alone(corpus_dir: Any, mode: dict[str, Any]) -> None:
    """An iterable with no ``close()`` is read and its response assembled all the same."""
    run = consume(NoClose(payloads(ANTHROPIC)), **mode)
    assert run.response is not None and run.response.tool_calls


def test_usage_survives_an_abort_after_message_start(corpus_dir: Any) -> None:
    """An Anthropic stream cut right after ``message_start`` raises with its input tokens."""
    data = body(ANTHROPIC)
    cut = data[: data.index(b"\n\n") + 2]
    run = consume([cut])
    assert isinstance(run.error, toolwire.StreamAborted)
    assert run.error.partial is not None and run.error.partial.usage is not None
    assert run.error.partial.usage.input_tokens == first_event_usage(ANTHROPIC)


# ------------------------------------------------------------------ real HTTP


@pytest.fixture(scope="module")
def server(corpus_dir: Any) -> Iterator[FaultServer]:
    """The fault-injecting SSE server on a free loopback port."""
    srv = FaultServer()
    try:
        yield srv
    finally:
        srv.close()


def _open(client: str, server: FaultServer, fault: str, name: str) -> tuple[Any, Any]:
    """Start a streaming request with the real client; (source for toolwire, response)."""
    base = server.url(fault, name)
    if client == "openai":
        oc = openai.OpenAI(base_url=base, api_key="test", max_retries=0)
        src: Any = oc.chat.completions.create(model="m", messages=[], stream=True)
        return src, src.response
    if client == "anthropic":
        ac = anthropic.Anthropic(base_url=base, api_key="test", max_retries=0)
        src = ac.messages.create(model="m", max_tokens=10, messages=[], stream=True)
        return src, src.response
    hc = httpx.Client()
    response = hc.send(hc.build_request("POST", f"{base}/x"), stream=True)
    return response, response


CLIENTS = ["openai", "anthropic", "httpx"]
# fault -> (expected error, timeouts)
HTTP_FAULTS: dict[str, tuple[type[toolwire.StreamError], dict[str, float], str | None]] = {
    "stall_first": (toolwire.StreamTimeout, {"first_event_timeout": 0.3}, "first_event"),
    "stall_middle": (toolwire.StreamTimeout, {"idle_timeout": 0.3}, "idle"),
    "drip": (toolwire.StreamTimeout, {"total_timeout": 0.4, "idle_timeout": 2}, "total"),
    "reset": (toolwire.StreamAborted, {}, None),
    "eof": (toolwire.StreamAborted, {}, None),
    "error_event": (toolwire.ProviderError, {}, None),
}


def _name(client: str) -> str:
    return OPENAI if client == "openai" else ANTHROPIC


@pytest.mark.parametrize("client", CLIENTS)
def test_http_ok_stream_assembles_and_closes(server: FaultServer, client: str) -> None:
    """A whole stream over real HTTP assembles to the corpus's response; the response closes."""
    source, response = _open(client, server, "ok", _name(client))
    with stream(source, idle_timeout=5) as s:
        list(s)
    assert response.is_closed and not s.worker_alive
    assert s.response.text == EXPECTED[_name(client)]["text"]
    assert len(s.response.tool_calls) == len(EXPECTED[_name(client)]["tool_calls"])


@pytest.mark.parametrize("fault", sorted(HTTP_FAULTS))
@pytest.mark.parametrize("client", CLIENTS)
def test_http_faults_end_typed_on_time_and_disconnect(
    server: FaultServer, client: str, fault: str
) -> None:
    """Each HTTP fault ends typed within timeout + 0.5 s, response closed, server sees the exit."""
    expected, limits, kind = HTTP_FAULTS[fault]
    before = len(server.served)
    source, response = _open(client, server, fault, _name(client))
    started = time.monotonic()
    with pytest.raises(expected) as info, stream(source, **limits) as s:
        list(s)
    elapsed = time.monotonic() - started
    budget = min(limits.values()) if limits else 0.0
    assert elapsed < budget + 0.5, elapsed
    if kind is not None:
        assert isinstance(info.value, toolwire.StreamTimeout) and info.value.kind == kind
    assert response.is_closed and not s.worker_alive
    served = server.served[before]
    assert served.fault == fault
    if fault in ("stall_first", "stall_middle", "drip"):
        assert served.disconnected.wait(1.0), "the server never saw the client leave"
    if client == "anthropic" and fault not in ("stall_first",):
        partial = info.value.partial
        assert partial is not None and partial.usage is not None
        assert partial.usage.input_tokens == first_event_usage(ANTHROPIC)


def test_handle_type_is_exported_from_the_module() -> None:
    """``stream()`` returns a ``StreamHandle``."""
    assert isinstance(stream([]), StreamHandle)


class _GenaiResponse:
    """Stands for a ``google.genai`` response object: only ``model_dump()``."""

    def __init__(self, payload: dict[str, Any]) -> None:
        self._payload = payload

    def model_dump(self, **options: Any) -> dict[str, Any]:
        """The payload as the SDK's pydantic model would dump it."""
        return dict(self._payload)


@pytest.mark.corpus
@pytest.mark.parametrize("name", [n for n in payload_names() if n.startswith("gemini")])
def test_genai_like_objects_without_close(corpus_dir: Any, name: str) -> None:
    """A genai-style iterator of model_dump() objects without close() assembles like dicts."""
    items = payloads(name)
    want = reference(items)
    for mode in MODES.values():
        got = consume(NoClose([_GenaiResponse(p) for p in items]), **mode)
        assert got.events == want.events and got.outcome() == want.outcome()


@pytest.mark.corpus
def test_bytearray_and_memoryview_items_go_to_feed_bytes(corpus_dir: Any) -> None:
    """``bytearray`` and ``memoryview`` items are raw bytes, as ``bytes`` items are."""
    data = body(OPENAI)
    half = len(data) // 2
    got = consume([bytearray(data[:half]), memoryview(data[half:])])
    want = reference([data])
    assert got.events == want.events and got.outcome() == want.outcome()


def test_json_strings_and_done_are_payloads(corpus_dir: Any) -> None:
    """JSON strings and ``"[DONE]"`` go to ``feed`` as payloads, like the dicts they encode."""
    import json

    items = payloads(OPENAI)
    got = consume([json.dumps(p) for p in items] + ["[DONE]"])
    want = reference(items)
    assert got.events == want.events and got.outcome() == want.outcome()


@pytest.mark.parametrize("rounds", [4])
def test_fault_sweep_leaks_no_connection(server: FaultServer, rounds: int) -> None:
    """Repeated HTTP faults on one httpx.Client end typed on time and leave no open connection."""
    limits = {"first_event_timeout": 0.1, "idle_timeout": 0.1, "total_timeout": 0.25}
    worst = 0.0
    runs = 0
    with httpx.Client() as client:
        for _ in range(rounds):
            for fault, (expected, _limits, kind) in sorted(HTTP_FAULTS.items()):
                request = client.build_request("POST", f"{server.url(fault, ANTHROPIC)}/x")
                response = client.send(request, stream=True)
                started = time.monotonic()
                with pytest.raises(expected) as info, stream(response, **limits) as s:
                    list(s)
                overshoot = time.monotonic() - started - (0.25 if kind == "total" else 0.1)
                worst = max(worst, overshoot)
                assert kind is None or getattr(info.value, "kind", None) == kind
                assert response.is_closed and not s.worker_alive
                runs += 1
        pool = client._transport._pool  # type: ignore[attr-defined]
        open_connections = [c for c in pool.connections if not c.is_closed()]
    assert open_connections == []
    assert worst < 0.3, worst
    print(f"{runs} injected transport faults: 0 open connections, worst overshoot {worst:.3f} s")


@pytest.mark.parametrize("client", CLIENTS)
def test_http_break_mid_stream_disconnects(server: FaultServer, client: str) -> None:
    """Breaking out of a live HTTP stream closes the response and the server sees the exit."""
    before = len(server.served)
    source, response = _open(client, server, "drip", _name(client))
    with stream(source, idle_timeout=5) as s:
        for _event in s:
            break
    assert response.is_closed and not s.worker_alive
    assert server.served[before].disconnected.wait(1.0)
    assert isinstance(s.error, toolwire.StreamAborted)


def test_sync_streams_never_import_anyio() -> None:
    """``import toolwire`` and a whole sync stream leave anyio unimported (it is only
    needed by ``astream()``)."""
    import subprocess
    import sys

    code = (
        "import sys, toolwire\n"
        "s = toolwire.stream([{'choices': [{'index': 0, 'delta': {'content': 'hi'},"
        " 'finish_reason': 'stop'}]}])\n"
        "with s:\n"
        "    list(s)\n"
        "print('anyio' in sys.modules, s.response.text)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "hi"]


def test_lists_are_read_inline_even_with_limits(corpus_dir: Any) -> None:
    """A list's items are in memory, so reading it never blocks: no worker thread, whatever
    the limits, and the total limit still binds."""
    seen: list[list[str]] = []
    with stream(payloads(ANTHROPIC), idle_timeout=1, total_timeout=30) as s:
        for _event in s:
            seen.append([t.name for t in threading.enumerate() if t.name == "toolwire-stream"])
    assert s.response.tool_calls and seen and not any(seen) and not s.worker_alive

    started = time.monotonic()
    with (
        pytest.raises(toolwire.StreamTimeout) as info,
        stream(payloads(ANTHROPIC), total_timeout=0.2) as s,
    ):
        for _event in s:
            time.sleep(0.05)
    assert info.value.kind == "total" and time.monotonic() - started < 0.7
