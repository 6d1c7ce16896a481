"""``to_dict`` / ``from_dict``: responses, outcomes and turns assembled from random streams
of every format come back equal from their JSON-safe dicts."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from simulator_support import FORMATS, scenarios
from toolwire.testing import EncodeOptions, encoder_for, serialise
from toolwire.testing._scenario import make_response

_settings = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def body(fmt: str, spec: dict[str, Any], seed: int) -> bytes:
    encoder = encoder_for(fmt)
    rng = random.Random(seed)
    response = encoder.ids(make_response(**spec), rng=rng)
    frames = encoder.stream(response, rng=rng, options=EncodeOptions(include_usage=True))
    return b"".join(serialise(frames, encoder.framing))


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True) if b > a]


def through_json(data: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(data, allow_nan=False))
    return out


@_settings
@given(
    fmt=st.sampled_from(FORMATS),
    spec=scenarios(),
    seed=st.integers(0, 2**16),
    cuts=st.lists(st.integers(0, 4000), max_size=8),
)
def test_a_response_of_any_stream_survives_its_dict(
    fmt: str, spec: dict[str, Any], seed: int, cuts: list[int]
) -> None:
    """``Response.from_dict(to_dict(r)) == r`` through JSON, for any stream, chunked
    whole, at chosen points and byte by byte (all assemble the same response)."""
    data = body(fmt, spec, seed)
    responses = []
    for pieces in ([data], chunked(data, cuts), [data[i : i + 1] for i in range(len(data))]):
        assembler = toolwire.StreamAssembler()
        for piece in pieces:
            assembler.feed_bytes(piece)
        responses.append(assembler.close())
    response = responses[0]
    assert responses[1] == response and responses[2] == response
    assert toolwire.Response.from_dict(through_json(response.to_dict())) == response


@_settings
@given(fmt=st.sampled_from(FORMATS), spec=scenarios(max_calls=2), seed=st.integers(0, 2**16))
def test_a_turn_and_its_outcomes_survive_their_dicts(
    fmt: str, spec: dict[str, Any], seed: int
) -> None:
    """A whole turn (response, outcomes of every kind, messages, usage) comes back equal."""
    tools = toolwire.Toolbox()
    names = {name for name, *_ in spec["tool_calls"]}
    for name in sorted(names)[:1]:  # one known tool; the other calls are rejected

        def run(**kwargs: Any) -> dict[str, Any]:
            return {"got": sorted(kwargs)}

        tools.add(name, {"type": "object"}, run)
    executor = toolwire.Executor(tools, scope="dicts", run_on_rejection=True)
    turn = toolwire.run_turn([body(fmt, spec, seed)], tools, executor=executor, turn="t")
    again = toolwire.Turn.from_dict(through_json(turn.to_dict()))
    assert again == turn
    for outcome in turn.outcomes:
        assert toolwire.Outcome.from_dict(through_json(outcome.to_dict())) == outcome


def test_an_early_aborted_turn_survives_its_dict() -> None:
    """A turn that stopped reading early keeps its verdict and the partial it carries."""
    tools = toolwire.Toolbox()
    spec = {"tool_calls": [("nope", {"a": 1})]}
    executor = toolwire.Executor(tools, scope="dicts")
    turn = toolwire.run_turn([body("openai-chat", spec, 1)], tools, executor=executor)
    assert turn.aborted is not None and turn.aborted.partial is not None
    assert toolwire.Turn.from_dict(through_json(turn.to_dict())) == turn


def test_values_without_a_json_form_come_back_as_their_stored_json() -> None:
    """An outcome's value comes back as the JSON its result_json holds (what a replay
    from the store gives), a structured output as its JSON value."""
    outcome = toolwire.Outcome(
        call_id="c", name="t", status="completed", value=(1, 2), result_json="[1,2]"
    )
    assert toolwire.Outcome.from_dict(outcome.to_dict()).value == [1, 2]
    odd = toolwire.Outcome(call_id="c", name="t", status="failed", value=object())
    with pytest.raises(toolwire.UsageError):
        odd.to_dict()


def test_bytes_in_a_turn_are_refused_naming_where_they_are() -> None:
    """A turn whose messages hold bytes (Bedrock's image blocks do) is refused by
    ``to_dict`` with a ``UsageError`` that names the path to the bytes and why."""
    tools = toolwire.Toolbox()
    spec = {"tool_calls": [("nope", {"a": 1})]}
    executor = toolwire.Executor(tools, scope="dicts")
    turn = toolwire.run_turn([body("openai-chat", spec, 1)], tools, executor=executor)
    image = {"image": {"format": "png", "source": {"bytes": b"\x89PNG"}}}
    held = dataclasses.replace(turn, messages=[{"role": "user", "content": [image]}])
    with pytest.raises(toolwire.UsageError) as caught:
        held.to_dict()
    message = str(caught.value)
    assert "[0]['content'][0]['image']['source']['bytes'] is a bytes" in message
    assert "Bedrock" in message
    odd = toolwire.Outcome(call_id="c", name="t", status="failed", value={"k": [b"x"]})
    with pytest.raises(toolwire.UsageError, match=r"\['k'\]\[0\] is a bytes"):
        odd.to_dict()


@pytest.mark.parametrize(
    ("cls", "data"),
    [
        (toolwire.Response, {"version": 99}),
        (toolwire.Response, {"version": 1, "text": "x"}),
        (toolwire.Outcome, {"version": 1}),
        (toolwire.Turn, []),
    ],
)
def test_a_dict_that_is_not_one_is_refused(cls: Any, data: Any) -> None:
    """A newer version, a missing field or a non-dict raises UsageError."""
    with pytest.raises(toolwire.UsageError):
        cls.from_dict(data)
