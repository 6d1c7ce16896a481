"""Public functions that take their keywords as ``**options: Unpack[...]`` still show
every keyword, with its default, to ``inspect.signature`` and ``help()``."""

from __future__ import annotations

import inspect
import re
from typing import Any, TypedDict

import pytest

import toolwire
from toolwire._core.signatures import defaults_of, spelled_out
from toolwire._output.assembler import StreamAssembler
from toolwire._turn.run import TurnOptions
from toolwire.testing import Simulator
from toolwire.testing._scenario import make_response

KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY


def keywords(func: Any) -> dict[str, Any]:
    """The keyword-only parameters of ``func``'s signature, with their defaults."""
    return {
        name: p.default
        for name, p in inspect.signature(func).parameters.items()
        if p.kind is KEYWORD_ONLY
    }


@pytest.mark.parametrize("func", [toolwire.run_turn, toolwire.arun_turn])
def test_run_turn_lists_its_keywords_with_defaults(func: Any) -> None:
    """run_turn and arun_turn show each TurnOptions key with the default the code uses."""
    shown = keywords(func)
    assert shown.pop("executor") is inspect.Parameter.empty
    assert list(shown) == list(TurnOptions.__annotations__)
    assert shown == {
        "format": "auto",
        "early_abort": True,
        "first_event_timeout": 600.0,
        "idle_timeout": 120.0,
        "total_timeout": None,
        "on_event": None,
        "turn": None,
        "prices": None,
        "output": None,
        "output_tool": None,
    }
    assert not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(func).parameters.values()
    )
    assert "early_abort: 'bool' = True" in str(inspect.signature(func))


@pytest.mark.parametrize("handle", [toolwire.StreamHandle, toolwire.AsyncStreamHandle])
def test_stream_handles_show_the_assembler_defaults(handle: Any) -> None:
    """The stream handles list the assembler settings they pass on, with its defaults."""
    shown = keywords(handle)
    assembler = defaults_of(StreamAssembler)
    for name in ("prices", "json_events", "output", "output_tool", "tools", "early_abort"):
        assert shown[name] == assembler[name]
    assert shown["first_event_timeout"] == 600.0 and shown["idle_timeout"] == 120.0


def test_add_response_lists_make_response_keywords() -> None:
    """Simulator.add_response shows make_response's keywords, defaults and for_model."""
    shown = keywords(Simulator.add_response)
    assert shown.pop("for_model") is None
    assert shown == {k: v for k, v in keywords(make_response).items() if k != "text"}
    unknown = "add_response() got an unexpected keyword argument 'colour'"
    with Simulator() as sim, pytest.raises(TypeError, match=re.escape(unknown)):
        sim.add_response("hi", colour="red")  # type: ignore[call-arg]


def test_unknown_keyword_of_run_turn_is_a_type_error() -> None:
    """An unknown keyword raises TypeError naming it, as a spelled-out signature would."""
    tools = toolwire.Toolbox()
    executor = toolwire.Executor(tools, scope="signatures")
    with pytest.raises(
        TypeError, match="run_turn\\(\\) got an unexpected keyword argument 'colour'"
    ):
        toolwire.run_turn(iter([]), tools, executor=executor, colour="red")  # type: ignore[call-arg]


def test_spelled_out_needs_a_var_keyword_parameter() -> None:
    """The decorator refuses a function that does not end with **options."""

    class Options(TypedDict, total=False):
        size: int

    def plain(a: int) -> None:
        """No **options."""

    with pytest.raises(TypeError, match="does not end with"):
        spelled_out(Options, {})(plain)
