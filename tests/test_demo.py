"""`make demo` runs: replays the example stream, executes once, refuses a cut stream."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO


def test_demo_runs_end_to_end() -> None:
    """The demo executes each call once, replays them, and refuses the truncated stream."""
    done = subprocess.run(
        [sys.executable, str(REPO / "examples" / "demo.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = done.stdout
    assert "get_weather: completed" in out
    assert "write_file: completed" in out
    assert "get_weather: replayed" in out and "write_file: replayed" in out
    assert "tool bodies run: {'get_weather': 1, 'write_file': 1}" in out
    assert "StreamAborted" in out
