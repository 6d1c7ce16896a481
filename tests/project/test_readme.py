"""The README's example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import functools
import io
import itertools
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import toolwire
from conftest import REPO
from toolwire.testing import Simulator


def _example() -> str:
    text = (REPO / "README.md").read_text("utf-8")
    match = re.search(r"## Example\n\n```python\n(.*?)```", text, re.S)
    assert match, "README.md has no '## Example' python block"
    return match.group(1)


def test_readme_example_is_short() -> None:
    """The README's offline example fits in 15 lines of code."""
    lines = [line for line in _example().splitlines() if line.strip()]
    assert len(lines) <= 15, len(lines)


def test_readme_example_runs_and_adds() -> None:
    """Running the README's example previews the call and executes it once, printing 5."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(_example(), "README.md", "exec"), {"__name__": "readme"})
    printed = out.getvalue().splitlines()
    assert printed[-1] == "5"
    assert any(line.startswith("ToolCallStarted") for line in printed)
    previews = [line for line in printed if line.startswith("ToolCallArguments")]
    assert previews == ["ToolCallArguments {}", "ToolCallArguments {'a': 2, 'b': 3}"]


# ------------------------------------------------------------------ the agent loops


def _loops() -> list[str]:
    text = (REPO / "README.md").read_text("utf-8")
    section = text[text.index("## An agent loop") : text.index("## Example")]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 2, "the agent-loop section has an OpenAI and an Anthropic block"
    return blocks


def test_readme_loops_are_ten_lines_of_glue_or_fewer() -> None:
    """Each loop is a durable conversation: from opening it to printing its answer, at most
    eleven lines."""
    for block in _loops():
        lines = [line for line in block.splitlines() if line.strip()]
        start = next(i for i, line in enumerate(lines) if "toolwire.Conversation(" in line)
        end = next(i for i, line in enumerate(lines) if line.startswith("print(conv."))
        assert end - start + 1 <= 11, lines[start : end + 1]
        assert "toolwire.run_turn" not in block and "Executor(" not in block


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Simulator]:
    """The simulator, with the SDKs' environment pointing at it (as ``openai.OpenAI()``
    and ``anthropic.Anthropic()`` read it) and a fresh working directory for agent.db."""
    with Simulator(seed=21) as simulator:
        monkeypatch.setenv("OPENAI_BASE_URL", simulator.base_url("openai-chat"))
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", simulator.base_url("anthropic"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.chdir(tmp_path)
        yield simulator


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How many times each tool body ran, counted by the toolbox's decorator (the README
    defines its tool itself; this counts its runs without changing its code)."""
    runs: Counter[str] = Counter()
    register = toolwire.Toolbox.tool

    def counting(self: toolwire.Toolbox, fn: Any, /) -> Any:
        @functools.wraps(fn)
        def counted(*args: Any, **kwargs: Any) -> Any:
            runs[f"{fn.__name__}{args}{sorted(kwargs.items())}"] += 1  # by arguments
            return fn(*args, **kwargs)

        return register(self, counted)

    monkeypatch.setattr(toolwire.Toolbox, "tool", counting)
    return runs


@pytest.fixture
def turns(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every Turn ``conv.run_turn`` returned to the README's code, and every error it
    raised, in order."""
    seen: list[Any] = []
    run_turn = toolwire.Conversation.run_turn

    def recording(self: toolwire.Conversation, *args: Any, **kwargs: Any) -> toolwire.Turn:
        try:
            turn = run_turn(self, *args, **kwargs)
        except Exception as exc:
            seen.append(exc)
            raise
        seen.append(turn)
        return turn

    monkeypatch.setattr(toolwire.Conversation, "run_turn", recording)
    return seen


def _run_readme_loops() -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "readme"}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for block in _loops():
            exec(compile(block, "README.md", "exec"), namespace)
    namespace["printed"] = out.getvalue().splitlines()
    return namespace


def _figures(sim: Simulator) -> dict[str, int]:
    """What the simulator saw: requests, refusals (tool results that answer no call),
    cuts, and the requests a client left early with the bytes it never had to read."""
    assert sim.wait_for_connections_closed(10)
    left = [r for r in sim.requests if r.client_closed and not r.completed and r.status == 200]
    return {
        "requests": len(sim.requests),
        "refused": sum(1 for r in sim.requests if r.served == "refused"),
        "http errors": sum(1 for r in sim.requests if r.status >= 400),
        "left early": len(left),
        "bytes saved": sum(r.body_bytes - r.bytes_sent for r in left),
        "body bytes of those": sum(r.body_bytes for r in left),
    }


def _clean_script(sim: Simulator) -> None:
    sim.add_response(
        text="Checking both.",
        tool_calls=[("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Paris"})],
    )
    sim.add_response(tool_calls=[("get_weather", {"city": "Nice"})])
    sim.add_response(text="Sunny in Lyon, Paris and Nice.")


def test_readme_loops_run_three_turns_with_parallel_calls(
    sim: Simulator, executions: Counter[str], turns: list[Any]
) -> None:
    """Both README loops, through the real openai and anthropic clients, hold a three-turn
    conversation with parallel calls: each call runs once, every request is accepted."""
    for _ in range(2):
        _clean_script(sim)
    namespace = _run_readme_loops()
    assert namespace["printed"] == ["Sunny in Lyon, Paris and Nice."] * 2
    # three calls per loop, one run each: each city once per loop
    assert sorted(executions.values()) == [2, 2, 2] and sum(executions.values()) == 6
    figures = _figures(sim)
    assert figures["requests"] == 6 and figures["refused"] == 0
    assert [len(t.outcomes) for t in turns] == [2, 1, 0] * 2
    assert [r.format for r in sim.requests] == ["openai-chat"] * 3 + ["anthropic"] * 3


def test_readme_loops_run_again_resume_from_the_store_without_asking_or_running(
    sim: Simulator, executions: Counter[str], turns: list[Any]
) -> None:
    """The README's loops run a second time in the same directory (a restarted process):
    both conversations are restored from agent.db as done, the model is not asked and no
    tool runs again, and the same answers are printed."""
    for _ in range(2):
        _clean_script(sim)
    _run_readme_loops()
    before = (dict(executions), len(sim.requests), len(turns))
    again = _run_readme_loops()
    assert again["printed"] == ["Sunny in Lyon, Paris and Nice."] * 2
    assert (dict(executions), len(sim.requests), len(turns)) == before


def _faulty_script(sim: Simulator) -> None:
    both = [("get_weather", {"city": "Lyon"}), ("get_weather", {"city": "Paris"})]
    sim.add_response(text="Checking both.", tool_calls=both, faults=["cut:0.5"])
    sim.add_response(text="Checking both.", tool_calls=both, faults=["stall:0.5"])
    sim.add_response(faults=["http:500"])
    sim.add_response(
        tool_calls=[("get_weather", {"city": 5}), ("get_weather", {"city": "Marseille, France"})],
        faults=["drip:4000"],
    )
    sim.add_response(tool_calls=[("get_weather", {"city": "Nice"})])
    sim.add_response(text="Sunny in Lyon, Paris and Nice.")


@pytest.mark.slow
def test_readme_loops_survive_a_cut_a_stall_a_500_and_an_invalid_call(
    sim: Simulator, executions: Counter[str], turns: list[Any]
) -> None:
    """The same loops with faults injected: the cut stream runs nothing and is asked
    again, the stall is waited out, the 500 retried, the invalid call stopped and
    answered; each call runs exactly once and no request is refused."""
    for _ in range(2):
        _faulty_script(sim)
    namespace = _run_readme_loops()
    assert namespace["printed"] == ["Sunny in Lyon, Paris and Nice."] * 2
    # Lyon, Paris and Nice once per loop: the cut and the invalid turn ran nothing
    assert sorted(executions.values()) == [2, 2, 2] and sum(executions.values()) == 6
    figures = _figures(sim)
    aborted = [t for t in turns if isinstance(t, toolwire.Turn) and t.aborted is not None]
    failed = [t for t in turns if not isinstance(t, toolwire.Turn)]
    print(
        f"\nREADME loops with faults: {len(turns) - len(failed)} turns, {len(failed)} stream "
        f"errors, {sum(executions.values())} executions, {len(aborted)} early aborts, {figures}"
    )
    assert [type(t).__name__ for t in turns] == ["StreamAborted"] + ["Turn"] * 4 + [
        "StreamAborted"
    ] + ["Turn"] * 4
    assert [t.aborted.kind for t in aborted] == ["invalid_arguments"] * 2
    assert figures["refused"] == 0  # no tool result without its call
    assert figures["http errors"] == 2
    cut = [r for r in sim.requests if any(n.startswith("cut after") for n in r.notes)]
    assert len(cut) == 2
    # a conversation records each response whole before any tool runs, so the invalid
    # call is stopped (answered, nothing run) only once the response is read to its end
    assert figures["left early"] == 0


# ------------------------------------------------------------------ structured output


def _example_block(marker: str) -> str:
    """The python block of the README's example section that contains ``marker``."""
    text = (REPO / "README.md").read_text("utf-8")
    section = text[text.index("## Example") : text.index("## How it compares")]
    blocks = [b for b in re.findall(r"```python\n(.*?)```", section, re.S) if marker in b]
    assert len(blocks) == 1, f"the example section has one block with {marker!r}"
    return blocks[0]


def _structured_example() -> str:
    return _example_block("OutputPreview")


def _grows(before: Any, after: Any) -> bool:
    """Whether ``after`` only extends ``before``: strings by a suffix, lists by new items
    (their last one may grow), dicts by new keys (their values grow in turn)."""
    if before is None:
        return True
    if isinstance(before, str):
        return isinstance(after, str) and after.startswith(before)
    if isinstance(before, list):
        return (
            isinstance(after, list)
            and len(after) >= len(before)
            and all(_grows(b, a) for b, a in zip(before, after, strict=False))
        )
    if isinstance(before, dict):
        return isinstance(after, dict) and all(_grows(v, after.get(k)) for k, v in before.items())
    return bool(before == after)


def test_readme_structured_example_is_five_lines() -> None:
    """The typed live preview takes five lines: the with, the loop, the check, the show and
    the validated result (the model class and the statement's wrapped line aside)."""
    lines = [line for line in _structured_example().splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("with "))
    body = [line for line in lines[start:] if not line.startswith(" " * 40)]
    assert len(body) == 5, body


def test_readme_structured_example_shows_typed_previews_that_only_grow(sim: Simulator) -> None:
    """Through the real openai client's .stream() helper, the example's previews are
    Recipe instances that only grow, and the result is the validated Recipe."""
    from pydantic import BaseModel

    steps = ["Whisk flour, eggs and milk.", "Rest the batter.", "Fry each side for a minute."]
    sim.add_response(text={"title": "Pancakes", "steps": steps}, faults=["drip:3000"])
    shown: list[Any] = []
    namespace: dict[str, Any] = {
        "__name__": "readme",
        "BaseModel": BaseModel,
        "toolwire": toolwire,
        "client": __import__("openai").OpenAI(),
        "messages": [{"role": "user", "content": "A pancake recipe, please."}],
        # a preview is live (later text extends it): what was shown is kept as a copy
        "show": lambda preview: shown.append(preview.model_copy(deep=True)),
    }
    with namespace["client"]:
        exec(compile(_structured_example(), "README.md", "exec"), namespace)
    recipe_type = namespace["Recipe"]
    assert namespace["recipe"] == recipe_type(title="Pancakes", steps=steps)
    assert all(isinstance(preview, recipe_type) for preview in shown)
    dumps = [preview.model_dump() for preview in shown]
    assert len({repr(d) for d in dumps}) >= 3  # seen growing, not only at the end
    assert all(_grows(a, b) for a, b in itertools.pairwise(dumps))
    assert dumps[-1] == namespace["recipe"].model_dump()


# ------------------------------------------------------------------ the pytest example

# What the README's pytest example leaves to its reader: the tool and the agent loop (the
# README's own loop, around toolwire.run_turn).
_AGENT = """
import toolwire

weather_calls = []
tools = toolwire.Toolbox()


@tools.tool
def get_weather(city: str) -> str:
    \"\"\"The current weather in a city.\"\"\"
    weather_calls.append(city)
    return f"Sunny in {city}"


def my_agent(client, question):
    executor = toolwire.Executor(tools, scope="readme-test")
    messages = [{"role": "user", "content": question}]
    for _ in range(5):
        try:
            turn = toolwire.run_turn(lambda: client.chat.completions.create(
                model="m", messages=messages, tools=tools.definitions("openai"), stream=True),
                tools, executor=executor)
        except toolwire.StreamError:
            continue
        messages += turn.messages
        if turn.done:
            return turn.response.text
"""


def test_readme_pytest_example_is_ten_lines() -> None:
    """The README's pytest example is ten lines: the import, the test and its eight lines."""
    lines = [line for line in _example_block("toolwire_simulator").splitlines() if line.strip()]
    assert len(lines) <= 10, lines


@pytest.mark.slow
def test_readme_pytest_example_passes_through_the_plugin(tmp_path: Path) -> None:
    """The README's pytest example, with a tool and an agent loop filled in, passes under
    pytest with toolwire's installed plugin: the cut turn ran nothing, the retry ran once."""
    test_file = tmp_path / "test_agent.py"
    test_file.write_text(_AGENT + "\n" + _example_block("toolwire_simulator"), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


@pytest.mark.slow
def test_readme_pytest_example_fails_for_an_agent_that_runs_cut_calls(tmp_path: Path) -> None:
    """The same example catches an agent that runs what a cut stream handed out (an
    accumulate-and-json.loads loop that ignores the broken connection)."""
    careless = _AGENT.replace(
        "        except toolwire.StreamError:\n            continue",
        "        except toolwire.StreamError as exc:\n"
        "            for call in exc.partial.calls:  # repair the cut JSON and run it\n"
        "                get_weather(**__import__('json').loads(call.raw_arguments + '\"}'))\n"
        "            continue",
    )
    assert careless != _AGENT
    test_file = tmp_path / "test_agent.py"
    test_file.write_text(careless + "\n" + _example_block("toolwire_simulator"), "utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert 'assert weather_calls == ["Lyon"]' in done.stdout  # it ran the cut call


def test_measured_tables_state_their_runs_and_load() -> None:
    """Every benchmark table of the README's "Measured" section says how many runs its
    figures come from and how loaded the machine was, so a reader can reproduce it."""
    text = (REPO / "README.md").read_text("utf-8")
    section = text.split("\n## Measured\n", 1)[1].split("\n## ", 1)[0]
    tables = section.split("\n### ")[1:]
    assert tables, "README.md has no '## Measured' subsections"
    form = re.compile(r"^\*Measured:\* (?:one run|min–max of \d+ runs)\b[^\n]*\bload\b", re.M)
    for table in tables:
        title = table.splitlines()[0]
        if title.startswith("Reliability"):
            continue  # test results, not timings
        assert form.search(table), f"'### {title}' does not say how it was measured"
