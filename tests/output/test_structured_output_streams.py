"""Structured output on real streams: every byte cut of a structured-output stream in all seven
wire formats (the simulator's encoders) gives no output and a ``StreamError``; the drivers
take ``output=`` and stop early; the real ``openai`` and ``anthropic`` clients talk to the
simulator with ``response_format`` / ``output_format`` and with a forced tool."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from pydantic import BaseModel

import toolwire
from output_support import chat_payloads
from toolwire import StreamAssembler, StreamError
from toolwire.testing import EncodeOptions, Simulator, encoder_for, serialise
from toolwire.testing._scenario import make_response

FORMATS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock-converse",
    "ollama",
    "cohere",
)


class Step(BaseModel):
    explanation: str
    output: str


class Solution(BaseModel):
    steps: list[Step]
    final_answer: str


SOLUTION = {
    "steps": [
        {"explanation": "Subtract 7 from both sides.", "output": "8x = -30"},
        {"explanation": "Divide by 8 — «exactly».", "output": "x = -3.75"},
    ],
    "final_answer": "x = -3.75 🎯",
}


# small, so that every byte offset of every format is cut (escapes and non-ASCII kept)
CUT = {"steps": [{"explanation": "«a»", "output": 'x"1'}], "final_answer": "é"}


def _body(fmt: str, seed: int = 0) -> bytes:
    """The streamed body of a response whose text is ``CUT``'s JSON."""
    encoder = encoder_for(fmt)
    rng = random.Random(seed)
    response = encoder.ids(make_response(text=CUT), rng=rng)
    frames = encoder.stream(response, rng=rng, options=EncodeOptions(include_usage=True))
    return b"".join(serialise(frames, encoder.framing))


def _outcome(data: bytes) -> Any:
    asm = StreamAssembler(output=Solution)
    try:
        asm.feed_bytes(data)
        return asm.close()
    except StreamError as exc:
        return exc


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_byte_cut_of_a_structured_stream_gives_no_output(fmt: str) -> None:
    """Cut at every byte offset, a structured-output stream ends in a ``StreamError``; only
    a cut after the terminal event (what follows it is framing) still gives the output,
    whole."""
    body = _body(fmt)
    full = _outcome(body)
    assert isinstance(full, toolwire.Response)
    assert full.output == Solution.model_validate(CUT)
    outcomes = [_outcome(body[:k]) for k in range(len(body))]
    failed = [k for k, o in enumerate(outcomes) if not isinstance(o, toolwire.Response)]
    assert failed, fmt
    terminal = failed[-1]  # every cut up to here fails; later ones are whole
    for k, outcome in enumerate(outcomes):
        if k <= terminal:
            assert isinstance(outcome, StreamError), (fmt, k, outcome)
            assert not isinstance(outcome, toolwire.Response)
        else:
            assert outcome.output == full.output
    # the cuts that keep the output all keep the terminal event
    finished = _outcome(body[: terminal + 1])
    assert isinstance(finished, toolwire.Response)


def test_the_driver_takes_output_and_aborts_early() -> None:
    """``toolwire.stream(..., output=)`` gives ``response.output``; with ``early_abort=True``
    output that can never be valid stops the reading and closes the source."""
    text = json.dumps(SOLUTION)
    with toolwire.stream(iter(chat_payloads([text[:30], text[30:]])), output=Solution) as s:
        kinds = [type(e).__name__ for e in s]
    assert s.response.output == Solution.model_validate(SOLUTION)
    assert "OutputPreview" in kinds
    assert s.output_preview == s.response.output

    closed: list[bool] = []
    read: list[int] = []

    class Source:
        def __init__(self) -> None:
            self.payloads = chat_payloads(["Sure! Here", " is the JSON: {}", "more"] * 20)

        def __iter__(self) -> Iterator[Any]:
            for i, payload in enumerate(self.payloads):
                read.append(i)
                yield payload

        def close(self) -> None:
            closed.append(True)

    with (
        pytest.raises(toolwire.OutputSyntaxError) as info,
        # no deadlines: the source is read inline, so what was read is exactly what the
        # driver asked for (a worker thread would read ahead into its queue)
        toolwire.stream(
            Source(),
            output=Solution,
            early_abort=True,
            first_event_timeout=None,
            idle_timeout=None,
        ) as s,
    ):
        for _ in s:
            pass
    assert info.value.offset == 0
    assert closed == [True] and len(read) == 2  # the opening chunk, then the bad one


async def _async_read(payloads: list[Any]) -> toolwire.Response:
    async def source() -> Any:
        for payload in payloads:
            yield payload

    async with toolwire.astream(source(), output=Solution) as s:
        async for _ in s:
            pass
    return s.response


def test_the_async_driver_takes_output() -> None:
    """``astream(..., output=)`` gives the same output."""
    import asyncio

    text = json.dumps(SOLUTION)
    response = asyncio.run(
        _async_read(chat_payloads([text[i : i + 9] for i in range(0, 99, 9)] + [text[99:]]))
    )
    assert response.output == Solution.model_validate(SOLUTION)


# ------------------------------------------------------------------- real SDK clients


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """A simulator of its own for each SDK test (its queue starts empty)."""
    with Simulator(seed=5) as simulator:
        yield simulator


def _json_schema() -> dict[str, Any]:
    return {
        "type": "json_schema",
        "json_schema": {"name": "solution", "schema": Solution.model_json_schema(), "strict": True},
    }


def test_openai_chat_with_response_format(sim: Simulator) -> None:
    """The openai client's stream with ``response_format`` gives ``response.output``; so does
    its ``.stream()`` manager with the pydantic model."""
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    sim.add_response(text=SOLUTION)
    created = client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Solve 8x + 7 = -23"}],
        response_format=_json_schema(),  # type: ignore[arg-type]
        stream=True,
    )
    with toolwire.stream(created, output=Solution) as s:
        previews = [e.preview for e in s if type(e) is toolwire.OutputPreview]
    assert s.response.output == Solution.model_validate(SOLUTION)
    assert previews and isinstance(previews[0], Solution)
    sim.add_response(text=SOLUTION)
    manager = client.chat.completions.stream(
        model="gpt-4o",
        messages=[{"role": "user", "content": "Solve 8x + 7 = -23"}],
        response_format=Solution,
    )
    with toolwire.stream(manager, output=Solution) as s:
        for _ in s:
            pass
    assert s.response.output == Solution.model_validate(SOLUTION)
    assert sim.requests[-1].body["response_format"]["type"] == "json_schema"


def test_openai_responses_with_text_format(sim: Simulator) -> None:
    """The Responses API with ``text.format`` gives the same output."""
    client = openai.OpenAI(base_url=sim.base_url("openai-responses"), api_key="test", max_retries=0)
    sim.add_response(text=SOLUTION)
    fmt = _json_schema()["json_schema"]
    created = client.responses.create(
        model="gpt-4o",
        input="Solve 8x + 7 = -23",
        text={"format": {"type": "json_schema", **fmt}},  # type: ignore[typeddict-item]
        stream=True,
    )
    with toolwire.stream(created, output=Solution) as s:
        for _ in s:
            pass
    assert s.response.output == Solution.model_validate(SOLUTION)


def test_anthropic_with_output_format_and_with_a_forced_tool(sim: Simulator) -> None:
    """The anthropic client: JSON text under ``output_format``, and the classic forced tool
    whose arguments are the output (not a call to execute)."""
    client = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="test", max_retries=0)
    sim.add_response(text=SOLUTION)
    created = client.messages.create(
        model="claude-simulated",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Solve 8x + 7 = -23"}],
        extra_body={
            "output_format": {"type": "json_schema", "schema": Solution.model_json_schema()}
        },
        stream=True,
    )
    with toolwire.stream(created, output=Solution) as s:
        for _ in s:
            pass
    assert s.response.output == Solution.model_validate(SOLUTION)

    sim.add_response(tool_calls=[("answer", SOLUTION)])
    created = client.messages.create(
        model="claude-simulated",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Solve 8x + 7 = -23"}],
        tools=[
            {
                "name": "answer",
                "description": "The answer.",
                "input_schema": Solution.model_json_schema(),
            }
        ],
        tool_choice={"type": "tool", "name": "answer"},
        stream=True,
    )
    with toolwire.stream(created, output=Solution, output_tool="answer") as s:
        events = list(s)
    assert s.response.output == Solution.model_validate(SOLUTION)
    assert s.response.tool_calls == []
    assert not any(type(e) is toolwire.ToolCallStarted for e in events)


def test_a_cut_structured_stream_from_the_simulator_is_an_error(sim: Simulator) -> None:
    """The simulator's ``cut`` fault on a structured output: a ``StreamError``, no output."""
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    for fault in ("cut:0.5", "length", "no-terminal"):
        sim.add_response(text=SOLUTION, faults=[fault])
        created = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Solve"}],
            response_format=_json_schema(),  # type: ignore[arg-type]
            stream=True,
        )
        with (
            pytest.raises((StreamError, openai.APIError)),
            toolwire.stream(created, output=Solution) as s,
        ):
            for _ in s:
                pass


# ---------------------------------------------------------------------------- refusals

REFUSAL = "I can't help with that."


@pytest.mark.parametrize("fmt", ["openai-chat", "openai-responses", "anthropic"])
def test_a_refusal_ends_with_output_refused_carrying_its_words(fmt: str) -> None:
    """OpenAI's refusal channel (chat and Responses) and Anthropic's refusal stop end the
    stream with ``OutputRefused`` and the refusal's words, never output or text."""
    encoder = encoder_for(fmt)
    rng = random.Random(3)
    response = encoder.ids(make_response(refusal=REFUSAL), rng=rng)
    frames = encoder.stream(response, rng=rng, options=EncodeOptions())
    asm = StreamAssembler(output=Solution)
    asm.feed_bytes(b"".join(serialise(frames, encoder.framing)))
    with pytest.raises(toolwire.OutputRefused) as info:
        asm.close()
    assert info.value.refusal == REFUSAL
    assert isinstance(info.value, toolwire.ContentFiltered)
    if fmt != "anthropic":
        assert info.value.partial is not None and info.value.partial.text == ""


def test_gemini_declines_with_a_safety_finish_and_others_cannot_serve_a_refusal() -> None:
    """Gemini's ``SAFETY`` finish is ``ContentFiltered``; formats without a refusal channel
    refuse to encode one."""
    from toolwire.testing._wire_writing import Unencodable

    encoder = encoder_for("gemini")
    rng = random.Random(3)
    response = encoder.ids(make_response(refusal=REFUSAL), rng=rng)
    asm = StreamAssembler(output=Solution)
    asm.feed_bytes(
        b"".join(
            serialise(encoder.stream(response, rng=rng, options=EncodeOptions()), encoder.framing)
        )
    )
    with pytest.raises(toolwire.ContentFiltered):
        asm.close()
    for fmt in ("bedrock-converse", "ollama", "cohere"):
        other = encoder_for(fmt)
        with pytest.raises(Unencodable):
            other.stream(
                other.ids(make_response(refusal=REFUSAL), rng=rng), rng=rng, options=EncodeOptions()
            )


def test_the_openai_client_sees_a_refusal_as_output_refused(sim: Simulator) -> None:
    """A refusal served to the real openai client ends ``toolwire.stream`` with
    ``OutputRefused``; ``output=`` serves a model instance as the text's JSON."""
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    sim.add_response(refusal=REFUSAL)
    sim.add_response(output=Solution.model_validate(SOLUTION))
    for expected in (toolwire.OutputRefused, None):
        created = client.chat.completions.create(
            model="gpt-4o",
            messages=[{"role": "user", "content": "Solve"}],
            response_format=_json_schema(),  # type: ignore[arg-type]
            stream=True,
        )
        if expected is None:
            with toolwire.stream(created, output=Solution) as s:
                for _ in s:
                    pass
            assert s.response.output == Solution.model_validate(SOLUTION)
        else:
            with pytest.raises(expected) as info, toolwire.stream(created, output=Solution) as s:
                for _ in s:
                    pass
            assert info.value.refusal == REFUSAL


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_forced_output_tool_gives_the_output_in_every_format(fmt: str) -> None:
    """The forced-tool pattern (Anthropic's and Bedrock's classic structured output) reads
    the same in every wire format: the call's arguments are ``Response.output``."""
    encoder = encoder_for(fmt)
    rng = random.Random(4)
    response = encoder.ids(make_response(tool_calls=[("answer", SOLUTION)]), rng=rng)
    frames = encoder.stream(response, rng=rng, options=EncodeOptions())
    asm = StreamAssembler(output=Solution, output_tool="answer")
    events = asm.feed_bytes(b"".join(serialise(frames, encoder.framing))) + asm.feed_eof()
    result = asm.close()
    assert result.output == Solution.model_validate(SOLUTION)
    assert result.tool_calls == [] and result.finish_reason == "stop"
    assert any(type(e) is toolwire.OutputPreview for e in events)


def test_scenarios_take_output_and_refusal() -> None:
    """``output=`` serves a model instance (or any JSON value) as the text; it cannot come
    with ``text=``; a refusal must be text."""
    served = make_response(output=Solution.model_validate(SOLUTION))
    assert Solution.model_validate_json(served.text) == Solution.model_validate(SOLUTION)
    assert json.loads(make_response(output=[1, 2]).text) == [1, 2]
    with pytest.raises(toolwire.UsageError):
        make_response(text="x", output={"a": 1})
    with pytest.raises(toolwire.UsageError):
        make_response(refusal=5)  # type: ignore[arg-type]


def test_run_turn_gives_the_structured_output_and_runs_the_forced_tool_never(
    sim: Simulator,
) -> None:
    """``run_turn(..., output=)`` gives ``turn.output``, typed previews reach ``on_event``,
    and a forced output tool is the output, not a call to execute (the turn is done)."""
    tools = toolwire.Toolbox()
    executor = toolwire.Executor(tools, store=toolwire.MemoryStore(), scope="structured")
    client = openai.OpenAI(base_url=sim.base_url("openai-chat"), api_key="test", max_retries=0)
    sim.add_response(text=SOLUTION)
    previews: list[Any] = []

    def seen(event: Any) -> None:
        if type(event) is toolwire.OutputPreview:
            previews.append(event.preview)

    turn = toolwire.run_turn(
        client.chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Solve"}], stream=True
        ),
        tools,
        executor=executor,
        output=Solution,
        on_event=seen,
    )
    assert turn.output == Solution.model_validate(SOLUTION) and turn.done
    assert previews and isinstance(previews[-1], Solution)

    answer = anthropic.Anthropic(base_url=sim.base_url("anthropic"), api_key="test")
    sim.add_response(tool_calls=[("answer", SOLUTION)])
    turn = toolwire.run_turn(
        answer.messages.create(
            model="claude-simulated",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Solve"}],
            stream=True,
        ),
        tools,
        executor=executor,
        output=Solution,
        output_tool="answer",
    )
    assert turn.output == Solution.model_validate(SOLUTION)
    assert turn.done and turn.outcomes == []
