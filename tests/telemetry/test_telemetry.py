"""Logs, spans and metrics: every stream outcome through the real ``openai`` client against
the simulator, and every tool status through the executors, recorded by the OpenTelemetry
SDK's in-memory exporters with the GenAI semantic conventions."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import toolwire
from executor_support import response
from toolwire import _telemetry
from toolwire.accounting import ModelPrice, Prices
from toolwire.testing import Simulator

MODEL = "gpt-4o-2024-08-06"
CALLS = [("write_file", {"path": "a.py", "content": "print('hello')\n"})]


# ----------------------------------------------------------------------- recording


@dataclass
class Recorded:
    """What the in-memory exporters hold."""

    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader
    tracer_provider: TracerProvider

    def finished(self) -> list[ReadableSpan]:
        """The spans ended so far."""
        return list(self.spans.get_finished_spans())

    def points(self, name: str) -> list[Any]:
        """Every data point of the metric ``name``."""
        data = self.metrics.get_metrics_data()
        found: list[Any] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        found.extend(metric.data.data_points)
        return found


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    """SDK providers with in-memory exporters, used by toolwire for this test only (the
    process-wide providers stay unset, so other tests record nothing)."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    with _telemetry.providers(tracer_provider, meter_provider):
        yield Recorded(spans, reader, tracer_provider)
    meter_provider.shutdown()
    tracer_provider.shutdown()


@pytest.fixture(scope="module")
def sim() -> Iterator[Simulator]:
    """One simulator for the module."""
    with Simulator(seed=11) as simulator:
        yield simulator


@pytest.fixture(scope="module")
def client(sim: Simulator) -> Iterator[openai.OpenAI]:
    """The real openai client, pointed at the simulator, without retries."""
    made = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    yield made
    made.close()


def create(client: openai.OpenAI) -> Any:
    """A streamed chat completion that asks for usage, as production code should."""
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Write the file."}],
        stream=True,
        stream_options={"include_usage": True},
    )


def drive(source: Any, **options: Any) -> toolwire.StreamError | None:
    """Read a stream to its end; the error it ended with, if any."""
    try:
        with toolwire.stream(source, **options) as s:
            for _ in s:
                pass
    except toolwire.StreamError as exc:
        return exc
    return None


def chat_span(recorded: Recorded) -> ReadableSpan:
    """The one ``chat`` span recorded."""
    spans = [s for s in recorded.finished() if s.name.startswith("chat")]
    assert len(spans) == 1, [s.name for s in recorded.finished()]
    return spans[0]


# ------------------------------------------------------------------ stream outcomes


def test_a_completed_stream_has_a_chat_span_with_the_conventions(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """Completed: ``chat {model}``, CLIENT, the GenAI attributes, usage with cache included."""
    sim.add_response("On it.", tool_calls=CALLS, model=MODEL, usage=(120, 30))
    assert drive(create(client)) is None
    span = chat_span(recorded)
    attributes = dict(span.attributes or {})
    assert span.name == f"chat {MODEL}" and span.kind is trace.SpanKind.CLIENT
    assert span.status.status_code is trace.StatusCode.UNSET
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == "openai"
    assert attributes["gen_ai.request.model"] == attributes["gen_ai.response.model"] == MODEL
    assert str(attributes["gen_ai.response.id"]).startswith("chatcmpl-")
    assert attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert attributes["gen_ai.usage.input_tokens"] == 120
    assert attributes["gen_ai.usage.output_tokens"] == 30
    assert attributes["toolwire.usage.estimated"] is False
    assert attributes["toolwire.outcome"] == "completed" and "error.type" not in attributes


def test_completed_streams_record_token_usage_and_duration(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """``gen_ai.client.token.usage`` gets one input and one output point; the duration one."""
    sim.add_response("Hello.", model=MODEL, usage=(50, 7))
    assert drive(create(client)) is None
    tokens = {
        p.attributes["gen_ai.token.type"]: p for p in recorded.points("gen_ai.client.token.usage")
    }
    assert (tokens["input"].sum, tokens["output"].sum) == (50, 7)
    assert tokens["input"].attributes["gen_ai.provider.name"] == "openai"
    assert tokens["output"].attributes["gen_ai.request.model"] == MODEL
    assert "toolwire.usage.estimated" not in tokens["output"].attributes
    assert tokens["input"].explicit_bounds[:3] == (1, 4, 16)
    (duration,) = recorded.points("gen_ai.client.operation.duration")
    assert duration.count == 1 and 0 < duration.sum < 10
    assert duration.attributes["gen_ai.operation.name"] == "chat"
    assert "error.type" not in duration.attributes


# fault -> (outcome, error class)
OUTCOMES: dict[str, tuple[str, type[toolwire.StreamError]]] = {
    "cut:0.5": ("aborted", toolwire.StreamAborted),
    "stall:5": ("timed_out", toolwire.StreamTimeout),
    "length": ("token_limit", toolwire.TokenLimitExceeded),
    "error-event": ("error", toolwire.ProviderError),
}


@pytest.mark.parametrize("fault", sorted(OUTCOMES))
def test_each_failed_stream_outcome_is_an_error_span_with_its_type(
    fault: str, recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """Cut, stalled, token limit, error event: the span says which, with usage so far."""
    sim.add_response("Writing the file now.", tool_calls=CALLS, model=MODEL, faults=[fault])
    outcome, kind = OUTCOMES[fault]
    error = drive(create(client), idle_timeout=0.5)
    assert isinstance(error, kind)
    span = chat_span(recorded)
    attributes = dict(span.attributes or {})
    assert span.status.status_code is trace.StatusCode.ERROR
    assert attributes["error.type"] == attributes["toolwire.outcome"] == outcome
    assert attributes["toolwire.error"] == type(error).__name__
    assert "gen_ai.usage.output_tokens" in attributes
    (duration,) = recorded.points("gen_ai.client.operation.duration")
    assert duration.attributes["error.type"] == outcome
    if fault == "length":
        assert attributes["gen_ai.response.finish_reasons"] == ("length",)


def test_a_cut_stream_records_its_estimated_output(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """A stream cut before its usage chunk: the output is estimated, on span and metric."""
    sim.add_response("A long answer " * 20, model=MODEL, faults=["cut:0.6"])
    error = drive(create(client))
    assert isinstance(error, toolwire.StreamAborted)
    usage = error.partial.usage  # type: ignore[union-attr]
    assert usage is not None and usage.estimated and usage.input_tokens is None
    attributes = dict(chat_span(recorded).attributes or {})
    assert attributes["toolwire.usage.estimated"] is True
    assert attributes["gen_ai.usage.output_tokens"] == usage.output_tokens
    assert "gen_ai.usage.input_tokens" not in attributes
    (output,) = recorded.points("gen_ai.client.token.usage")
    assert output.attributes["gen_ai.token.type"] == "output"
    assert output.attributes["toolwire.usage.estimated"] is True
    assert "does not stop the provider's meter" in str(error)


def test_a_filtered_stream_is_traced_as_filtered(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI, tmp_path: Path
) -> None:
    """A content-filter finish (served as a recording) ends as ``filtered``."""
    chunk = {"id": "chatcmpl-f", "object": "chat.completion.chunk", "model": MODEL}
    events = [
        {**chunk, "choices": [{"index": 0, "delta": {"content": "I can"}, "finish_reason": None}]},
        {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]},
    ]
    path = tmp_path / "filtered.sse"
    path.write_text("".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n")
    sim.add_recording(path)
    assert isinstance(drive(create(client)), toolwire.ContentFiltered)
    attributes = dict(chat_span(recorded).attributes or {})
    assert attributes["error.type"] == "filtered"
    assert attributes["gen_ai.response.finish_reasons"] == ("content_filter",)


def test_leaving_the_block_early_is_aborted_and_an_early_abort_says_so(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """Breaking out is ``aborted``; after the early-abort hook (run_turn's) ``early_abort``."""
    for early in (False, True):
        sim.add_response("Streaming a long text " * 30, model=MODEL)
        with toolwire.stream(create(client)) as s:
            for _ in s:
                if early:
                    s._early_abort("unknown tool 'rm_rf'")
                break
        assert isinstance(s.error, toolwire.StreamAborted)
        if early:
            assert "stopped early: unknown tool 'rm_rf'" in str(s.error)
    aborted, stopped = (dict(s.attributes or {}) for s in recorded.finished())
    assert aborted["error.type"] == "aborted"
    assert stopped["error.type"] == "early_abort"
    assert stopped["toolwire.early_abort"] == "unknown tool 'rm_rf'"


def test_the_stream_span_is_a_child_of_the_current_span(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """An application's span around the stream is the chat span's parent."""
    sim.add_response("Hi.", model=MODEL)
    tracer = recorded.tracer_provider.get_tracer("app")
    with tracer.start_as_current_span("invoke_agent") as parent:
        assert drive(create(client)) is None
    span = chat_span(recorded)
    assert span.parent is not None
    assert span.parent.span_id == parent.get_span_context().span_id


def test_async_streams_are_traced_too(recorded: Recorded, sim: Simulator) -> None:
    """``astream`` over the real AsyncOpenAI client records the same span."""
    sim.add_response("Hi there.", model=MODEL, usage=(9, 3))

    async def main() -> None:
        async with openai.AsyncOpenAI(
            base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0
        ) as aclient:
            stream = await aclient.chat.completions.create(
                model="gpt-4o",
                messages=[{"role": "user", "content": "Hi"}],
                stream=True,
                stream_options={"include_usage": True},
            )
            async with toolwire.astream(stream) as s:
                async for _ in s:
                    pass

    asyncio.run(main())
    attributes = dict(chat_span(recorded).attributes or {})
    assert attributes["gen_ai.usage.input_tokens"] == 9
    assert attributes["toolwire.outcome"] == "completed"


def test_a_priced_stream_puts_its_cost_on_the_span(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """``stream(..., prices=...)`` prices the response, and the span carries the cost."""
    sim.add_response("Hi.", model=MODEL, usage=(1_000_000, 0))
    prices = Prices({"gpt-4o": ModelPrice(input=2.5, output=10)})
    with toolwire.stream(create(client), prices=prices) as s:
        for _ in s:
            pass
    assert s.response.usage is not None and s.response.usage.cost is not None
    attributes = dict(chat_span(recorded).attributes or {})
    assert attributes["toolwire.cost"] == 2.5 and attributes["toolwire.cost.currency"] == "USD"


# --------------------------------------------------------------------------- logging


def test_every_stream_end_is_logged_with_structured_fields(
    caplog: pytest.LogCaptureFixture, sim: Simulator, client: openai.OpenAI
) -> None:
    """One record per stream on ``toolwire.stream``: DEBUG when completed, INFO otherwise."""
    sim.add_response("Hi.", model=MODEL, usage=(10, 2))
    sim.add_response("Hi.", model=MODEL, faults=["length"])
    with caplog.at_level(logging.DEBUG, logger="toolwire.stream"):
        assert drive(create(client)) is None
        assert isinstance(drive(create(client)), toolwire.TokenLimitExceeded)
    done, limited = (r for r in caplog.records if r.name == "toolwire.stream")
    assert done.levelno == logging.DEBUG and limited.levelno == logging.INFO
    assert (done.outcome, done.model, done.input_tokens, done.output_tokens) == (  # type: ignore[attr-defined]
        "completed", MODEL, 10, 2,
    )  # fmt: skip
    assert done.response_id.startswith("chatcmpl-")  # type: ignore[attr-defined]
    assert done.wire_format == "openai-chat" and done.provider == "openai"  # type: ignore[attr-defined]
    assert limited.outcome == "token_limit"  # type: ignore[attr-defined]
    assert limited.error_type == "TokenLimitExceeded"  # type: ignore[attr-defined]
    assert limited.finish_reason == "length" and limited.duration > 0  # type: ignore[attr-defined]


def test_telemetry_failures_never_break_a_stream(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tracer that raises costs a log line; the stream still gives its response."""

    class Broken:
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("exporter down")

    payloads = [
        {"id": "c", "model": MODEL, "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    with (
        _telemetry.providers(Broken(), None),
        caplog.at_level(logging.ERROR),
        toolwire.stream(payloads) as s,
    ):
        for _ in s:
            pass
    assert s.response.text == "Hi"
    assert "could not start a span" in caplog.text


# ------------------------------------------------------------------------ tool spans


def make_tools(gate: threading.Event, started: threading.Event) -> toolwire.Toolbox:
    """Tools for every status: one that works, fails, sleeps past its timeout, or waits."""
    tools = toolwire.Toolbox()

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    @tools.tool
    def explode() -> None:
        """Fail."""
        raise ValueError("boom")

    @tools.tool(timeout=0.2)
    async def slow() -> None:
        """Overrun its timeout (cancelled there, so its record is unknown)."""
        await asyncio.sleep(0.6)

    @tools.tool
    def wait() -> str:
        """Wait for the gate."""
        started.set()
        gate.wait(5)
        return "done"

    return tools


def test_every_tool_status_has_its_span(recorded: Recorded) -> None:
    """completed, replayed, failed, rejected, skipped, timed_out, unknown, in_progress and
    conflict each give an ``execute_tool {name}`` span, errors typed by their status."""
    gate, started = threading.Event(), threading.Event()
    tools = make_tools(gate, started)
    store = toolwire.MemoryStore()
    run = toolwire.Executor(tools, store=store, scope="telemetry", timeout=2).run

    statuses: dict[str, str] = {}

    def record(outcomes: list[toolwire.Outcome], tag: str) -> None:
        for outcome in outcomes:
            statuses[f"{tag}:{outcome.call_id}"] = outcome.status

    first = response(("c_add", "add", {"a": 1, "b": 2}), ("c_fail", "explode", {}))
    record(run(first), "1")  # completed, failed
    record(run(first), "2")  # replayed, failed (replayed)
    record(run(response(("c_bad", "nope", {}), ("c_ok", "add", {"a": 1, "b": 1}))), "3")
    slow = response(("c_slow", "slow", {}), response_id="resp_slow")
    record(run(slow), "4")  # timed_out
    record(run(slow), "5")  # unknown
    record(run(response(("c_add", "add", {"a": 5, "b": 5}))), "6")  # conflict
    waiting = response(("c_wait", "wait", {}), response_id="resp_wait")
    worker = threading.Thread(target=lambda: record(run(waiting), "7"))
    worker.start()
    assert started.wait(5)  # the worker holds the call and its tool runs
    record(run(waiting), "8")  # in_progress
    gate.set()
    worker.join()

    assert statuses == {
        "1:c_add": "completed",
        "1:c_fail": "failed",
        "2:c_add": "replayed",
        "2:c_fail": "failed",
        "3:c_bad": "rejected",
        "3:c_ok": "skipped",
        "4:c_slow": "timed_out",
        "5:c_slow": "unknown",
        "6:c_add": "conflict",
        "7:c_wait": "completed",
        "8:c_wait": "in_progress",
    }
    seen = [s for s in recorded.finished() if s.name.startswith("execute_tool")]
    assert len(seen) == len(statuses)
    assert {(s.attributes or {})["toolwire.tool.status"] for s in seen} == {
        "completed", "replayed", "failed", "rejected", "skipped", "timed_out", "unknown",
        "in_progress", "conflict",
    }  # fmt: skip
    for span in seen:
        attributes = dict(span.attributes or {})
        status = attributes["toolwire.tool.status"]
        assert span.name == f"execute_tool {attributes['gen_ai.tool.name']}"
        assert span.kind is trace.SpanKind.INTERNAL
        assert attributes["gen_ai.operation.name"] == "execute_tool"
        assert attributes["gen_ai.tool.type"] == "function"
        if status in ("failed", "rejected", "timed_out", "unknown", "conflict"):
            assert attributes["error.type"] == status, attributes
            assert span.status.status_code is trace.StatusCode.ERROR
        else:
            assert "error.type" not in attributes, attributes
            assert span.status.status_code is trace.StatusCode.UNSET
    failures = [s for s in seen if (s.attributes or {})["gen_ai.tool.call.id"] == "c_fail"]
    ran, replayed = failures
    assert [e.name for e in ran.events] == ["exception"]  # the tool's traceback
    assert (ran.attributes or {})["toolwire.tool.replayed"] is False
    assert not replayed.events and (replayed.attributes or {})["toolwire.tool.replayed"] is True
    durations = recorded.points("gen_ai.client.operation.duration")
    kinds = {p.attributes.get("error.type") for p in durations}
    assert {"failed", "rejected", "timed_out", "unknown", "conflict", None} <= kinds
    assert all(p.attributes["gen_ai.operation.name"] == "execute_tool" for p in durations)


def test_an_async_tool_s_own_spans_nest_under_its_call(recorded: Recorded) -> None:
    """AsyncExecutor runs an async tool inside its ``execute_tool`` span."""
    tools = toolwire.Toolbox()
    tracer = recorded.tracer_provider.get_tracer("app")

    @tools.tool
    async def fetch(url: str) -> str:
        """Fetch."""
        with tracer.start_as_current_span("http GET"):
            await asyncio.sleep(0)
        return url

    executor = toolwire.AsyncExecutor(tools, scope="nesting")
    outcomes = asyncio.run(
        executor.run(response(("c1", "fetch", {"url": "a"}), ("c2", "fetch", {"url": "b"})))
    )
    assert [o.status for o in outcomes] == ["completed", "completed"]
    spans = recorded.finished()
    calls = {s.context.span_id: s for s in spans if s.name == "execute_tool fetch"}
    inner = [s for s in spans if s.name == "http GET"]
    assert len(calls) == 2 and len(inner) == 2
    assert {s.parent.span_id for s in inner if s.parent is not None} == set(calls)


# --------------------------------------------------------------- without telemetry


def run_python(code: str) -> str:
    """Run ``code`` in a fresh interpreter; its standard output."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def test_without_opentelemetry_imported_nothing_is_imported_or_recorded() -> None:
    """A stream and a tool run import neither opentelemetry nor anything of it."""
    out = run_python(
        """
        import sys, toolwire
        payloads = [
            {"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        with toolwire.stream(payloads) as s:
            for _ in s:
                pass
        print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
        """
    )
    assert out == "[]"


def test_the_global_tracer_and_meter_providers_are_used() -> None:
    """With the application's providers set globally, a stream is traced and measured."""
    out = run_python(
        """
        import json
        from opentelemetry import metrics, trace
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        import toolwire

        spans = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        payloads = [
            {"id": "c", "model": "m1", "choices": [{"index": 0, "delta": {"content": "Hi"}}]},
            {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
        with toolwire.stream(payloads) as s:
            for _ in s:
                pass
        names = [m.name for r in reader.get_metrics_data().resource_metrics
                 for sc in r.scope_metrics for m in sc.metrics]
        print(json.dumps([[s.name for s in spans.get_finished_spans()], sorted(names)]))
        """
    )
    assert json.loads(out) == [
        ["chat m1"],
        ["gen_ai.client.operation.duration", "gen_ai.client.token.usage"],
    ]


def test_the_api_without_an_sdk_records_nothing() -> None:
    """opentelemetry-api imported but no provider set: no span is even started."""
    out = run_python(
        """
        import opentelemetry.trace, opentelemetry.metrics
        from toolwire import _telemetry
        print(_telemetry._tracer() is None, _telemetry._instruments() is None)
        """
    )
    assert out == "True True"


def test_run_turn_s_early_abort_is_traced_as_such_and_its_usage_priced(
    recorded: Recorded, sim: Simulator, client: openai.OpenAI
) -> None:
    """A turn stopped at an unknown tool traces ``early_abort``; ``prices=`` prices its usage."""
    tools = toolwire.Toolbox()

    @tools.tool
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    sim.add_response(tool_calls=[("rm_rf", {"path": "/" * 400})], model=MODEL)
    prices = Prices({"gpt-4o": ModelPrice(input=2.5, output=10)})
    executor = toolwire.Executor(tools, store=toolwire.MemoryStore(), scope="telemetry")
    turn = toolwire.run_turn(create(client), tools, executor=executor, prices=prices)
    assert turn.aborted is not None and turn.aborted.kind == "unknown_tool"
    assert turn.usage is not None and turn.usage.cost is not None
    attributes = dict(chat_span(recorded).attributes or {})
    assert attributes["error.type"] == "early_abort"
    assert attributes["toolwire.early_abort"] == "unknown_tool"


def test_a_warning_prints_nothing_in_an_application_without_logging_set_up() -> None:
    """With no logging configured, a toolwire log record (here an ``error_text`` hook that
    fails) does not reach stderr through Python's last-resort handler."""
    script = textwrap.dedent(
        """
        import toolwire
        tools = toolwire.Toolbox()

        @tools.tool
        def boom() -> int:
            "Fail."
            raise ValueError("no")

        def bad_hook(exc, call):
            raise RuntimeError("hook")

        response = toolwire.Response(text="", reasoning="", tool_calls=[toolwire.ToolCall(
            id="c1", name="boom", arguments={}, raw_arguments="{}", index=0)],
            rejected=[], finish_reason="tool_calls", raw_finish_reason="tool_calls",
            usage=None, model=None, response_id="r1")
        executor = toolwire.Executor(tools, scope="s", error_text=bad_hook)
        print(executor.run(response)[0].status)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "failed"
    assert done.stderr == ""
