"""The README's example runs as written and prints what it says."""

from __future__ import annotations

import contextlib
import io
import re

from conftest import REPO


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
