"""``toolwire demo`` (what ``make demo`` runs): the four parts and their key facts, in under
30 seconds, into a pipe and in a terminal; ``--workdir`` keeps a store that ``toolwire
store`` reads."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_support import Terminal
from toolwire._cli.demo.agent import report_text

DEMO = [sys.executable, "-m", "toolwire", "demo"]
BUDGET = 30.0  # seconds the demo may take after installation (the promise)
# one demo run: its result, its wall time and the directory it kept
DemoRun = tuple[subprocess.CompletedProcess[str], float, Path]


def run_demo(*args: str, timeout: float = BUDGET) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run ``toolwire demo`` with ``args`` into a pipe; the result and its wall time."""
    start = time.monotonic()
    done = subprocess.run(
        [*DEMO, *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    return done, time.monotonic() - start


def part(out: str, number: int) -> str:
    """The text of part ``number`` of the demo's plain output."""
    start = out.index(f"\n{number} · ")
    end = out.find(f"\n{number + 1} · ", start)
    return out[start : end if end >= 0 else len(out)]


@pytest.fixture(scope="module")
def fast_demo(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    """One ``toolwire demo --fast --workdir DIR`` run that several tests read (a demo run
    costs seconds of CPU): its result, its wall time and the kept directory."""
    workdir = tmp_path_factory.mktemp("demo") / "run"
    done, elapsed = run_demo("--fast", "--workdir", str(workdir))
    return done, elapsed, workdir


def test_demo_shows_the_four_parts_fast_and_exits_0(fast_demo: DemoRun) -> None:
    """``toolwire demo --fast`` (with ``--workdir``) exits 0 within 30 s, each part states
    its key facts, and it says where it kept the store."""
    done, elapsed, workdir = fast_demo
    assert done.returncode == 0, done.stderr
    assert elapsed < BUDGET
    assert done.stderr == ""
    out = done.stdout
    conversation = part(out, 1)
    assert "turn 1  I'll read both notes and look up the exchange rate." in conversation
    assert "read_file(path='notes/sales.md')  completed" in conversation
    assert (
        "get_exchange_rate(base='USD', quote='EUR', date='2025-09-30')  completed → 0.92"
        in conversation
    )
    size = f"{len(report_text()):,}"
    assert (
        f"write_file(path='reports/q3.md', content=<{size} characters>)  completed" in conversation
    )
    growth = re.findall(
        r"turn 2 streaming: write_file content, ([\d,]+) characters so far", conversation
    )
    assert len(growth) >= 3  # the content was seen growing
    assert "tools ran once each (get_exchange_rate ×1, read_file ×2, write_file ×1)" in conversation
    assert f"reports/q3.md: {size} characters" in conversation

    cut = part(out, 2)
    toolwire = "refused: StreamAborted, 3 calls arrived; 0 tools ran"
    assert f"connection reset: {toolwire}" in cut and f"connection ended cleanly: {toolwire}" in cut
    helper = cut[
        cut.index("openai .stream() helper") : cut.index("openai ChatCompletionStreamState")
    ]
    assert "connection reset: raised APIConnectionError; 0 tools ran" in helper
    assert (
        "connection ended cleanly: 3 calls, finish_reason None; 2 tools ran "
        "(read_file, read_file); then JSONDecodeError on get_exchange_rate" in helper
    )
    assert "toolwire ran 0 tools from the cut turn; the other readers ran 8" in cut

    crash = part(out, 3)
    killed = re.search(r"SIGKILL to pid (\d+) inside write_file", crash)
    assert killed is not None and crash.index("process 1") < killed.start()
    restarted = crash[crash.index("process 2") : crash.index("runs.log: ")]
    assert "turn 2  replayed from its recording: the model is not asked again" in restarted
    assert "turn 1" not in restarted  # restored from the store, neither asked nor rerun
    assert "content=<" in restarted and "  unknown: " in restarted  # told, not run again
    assert "turn 3  The report is in reports/q3.md" in restarted
    assert "runs.log: 4 tool runs over the two processes, 0 run twice" in crash
    assert "the model was asked 2 times for 3 turns" in crash
    assert "the store's records (SQLiteStore.records()): 15" in crash
    assert len(re.findall(r"· part 1\s+call_\S+\s+completed", crash)) == 4
    assert len(re.findall(r"· part 3\s+call_\S+\s+completed", crash)) == 3
    assert len(re.findall(r"write_file · part 3\s+call_\S+\s+unknown", crash)) == 1
    assert (
        len(re.findall(r"conversation · turn \d (response|messages)\s+-\s+completed", crash)) == 6
    )
    assert "call: the tool call and the part that made it" in crash  # the columns explained

    summary = part(out, 4)
    assert re.search(r"tool calls run by toolwire\s+7, each once", summary)
    assert re.search(
        r"calls cut short by the kill \(told to the model as unknown\)\s+1, 0 of", summary
    )
    assert re.search(
        r"calls refused \(their stream did not end properly\)\s+6, 0 of them ran", summary
    )
    assert re.search(r"model turns read by toolwire\s+7, 2 of them aborted", summary)
    assert re.search(r"estimated cost \(example prices\)\s+\$0\.0\d+ at 2\.00 / 8\.00 USD", summary)
    assert re.search(r"aborted streams' cost\s+\$0\.0\d+ for 2 streams", summary)
    assert out.endswith(f"kept in {workdir}: toolwire store list --db {workdir / 'toolwire.db'}\n")


@pytest.mark.slow
def test_demo_with_pacing_stays_within_the_budget(fast_demo: DemoRun) -> None:
    """Without ``--fast`` into a pipe nothing is paced either (only the live view is),
    and the output is the same apart from times, ports, paths, keys, pids, the tables'
    widths and the lines that follow the growing report (where it was when each was
    written depends on how the socket delivered the bytes)."""
    fast, _, _ = fast_demo
    slow, elapsed = run_demo()
    assert slow.returncode == 0 and elapsed < BUDGET

    def steady(out: str) -> list[str]:
        keep = []
        for line in out.splitlines():
            if (
                "toolwire demo · " in line
                or "so far" in line
                or line.startswith(("done in", "kept in"))
            ):
                continue
            line = re.sub(r"\d+\.\d+s|[0-9a-f]{12,}…|pid \d+", "_", line)
            keep.append(re.sub(r" +", " ", line))  # a table's widths follow its ages
        return keep

    assert steady(slow.stdout) == steady(fast.stdout)


@pytest.mark.slow
def test_workdir_keeps_a_store_that_toolwire_store_reads(fast_demo: DemoRun) -> None:
    """``--workdir`` keeps the workspace and the SQLite store; ``toolwire store list``
    reads the records back: the tool calls of parts 1 and 3 (the one the kill cut short
    unknown) and the conversation's own."""
    done, _, workdir = fast_demo
    assert done.returncode == 0, done.stderr
    assert (workdir / "reports" / "q3.md").read_text("utf-8") == report_text()
    listed = subprocess.run(
        [
            sys.executable,
            "-m",
            "toolwire",
            "store",
            "list",
            "--db",
            str(workdir / "toolwire.db"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    records = json.loads(listed.stdout)
    assert sorted(r["status"] for r in records) == ["completed"] * 14 + ["unknown"]


def test_workdir_that_is_not_empty_is_refused(tmp_path: Path) -> None:
    """A ``--workdir`` with files in it is refused with exit 2: a store left there would
    replay the demo's calls instead of running them."""
    (tmp_path / "something").write_text("x")
    done, _ = run_demo("--fast", "--workdir", str(tmp_path))
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"toolwire demo: --workdir {tmp_path}: not an empty directory\n"


@pytest.mark.slow
def test_terminal_shows_the_report_growing_and_typed_previews(terminal: Terminal) -> None:
    """In a terminal, the live view shows the parallel calls' previews and then the
    ``write_file`` panel with the content growing, and the demo ends with exit 0."""
    terminal.start([*DEMO], width=120, height=40)
    previews = terminal.wait_for(
        lambda s: "turn 1 · streaming" in s and "read_file(path=" in s and s
    )
    assert "get_exchange_rate(" in previews or "read_file(path=" in previews

    def panel(screen: str) -> int | None:
        found = re.search(r"content: ([\d,]+) characters", screen)
        return (
            int(found.group(1).replace(",", ""))
            if found and "turn 2 · streaming" in screen
            else None
        )

    first = terminal.wait_for(panel)
    second = terminal.wait_for(lambda s: (n := panel(s)) and n > first and n)
    assert second > first
    final = terminal.wait_for(lambda s: "EXIT=" in s and s, timeout=BUDGET)
    assert "EXIT=0" in final
    assert "done in" in final
