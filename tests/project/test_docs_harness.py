"""The documentation harness (docs/page_runner.py, whose rules docs/conftest.py shares): what
a console block's expected output accepts, and how a page runs on its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from docs_support import ROOT, page_runner

RUNNER = ROOT / "docs" / "page_runner.py"
_matches = page_runner.matches
install_lines = page_runner.install_lines
install_words = page_runner.install_words


def test_exact_lines_match() -> None:
    """Lines equal but for trailing spaces match."""
    assert _matches(["one", "two"], ["one  ", "two"])
    assert not _matches(["one", "two"], ["one", "three"])


def test_ellipsis_line_stands_for_any_number_of_lines() -> None:
    """A line '...' matches zero or more lines."""
    assert _matches(["a", "...", "z"], ["a", "z"])
    assert _matches(["a", "...", "z"], ["a", "b", "c", "z"])
    assert not _matches(["a", "...", "z"], ["a", "b"])


def test_ellipsis_inside_a_line_stands_for_any_text() -> None:
    """'...' inside a line matches any text on that line only."""
    assert _matches(["exit ..."], ["exit 3"])
    assert _matches(["usage input ... output 20"], ["usage input 50 · output 20"])
    assert not _matches(["exit ..."], ["exit 3", "more"])


def test_regular_expression_characters_are_literal() -> None:
    """Expected text is not a regular expression."""
    assert _matches(["a.b (c)"], ["a.b (c)"])
    assert not _matches(["a.b"], ["axb"])


def _run(tmp_path: Path, text: str) -> tuple[int, str]:
    """``python docs/page_runner.py`` on a page of ``text``: its status and output."""
    page = tmp_path / "page.md"
    page.write_text(text)
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(page)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout


def test_blocks_share_a_namespace_and_a_fresh_directory(tmp_path: Path) -> None:
    """Python blocks share names, run in a new empty directory that a console block sees,
    and shown blocks (sh, text) never run."""
    page = (
        "```python\nimport os\nx = 2\nstart = os.getcwd()\nassert os.listdir() == []\n```\n\n"
        "```sh\nexit 3\n```\n\n"
        "```python\nopen('note.txt', 'w').write(str(x * 21))\n```\n\n"
        "```console\n$ cat note.txt; echo\n42\n$ pwd\n...toolwire-docs-...\n```\n"
    )
    status, out = _run(tmp_path, page)
    assert status == 0, out
    assert out.endswith("3 blocks passed, 0 skipped\n")


def test_a_failing_python_block_stops_the_page_with_its_line(tmp_path: Path) -> None:
    """A raising block fails the page (exit 1) with a traceback naming the page's line;
    later blocks do not run."""
    page = "# t\n\n```python\nx = 1\nraise ValueError('no')\n```\n\n```console\n$ echo ran\n```\n"
    status, out = _run(tmp_path, page)
    assert status == 1
    assert "page.md:4: the python block failed" in out
    assert 'page.md", line 5' in out and "ValueError: no" in out and "ran" not in out


def test_a_console_mismatch_or_status_fails_the_page(tmp_path: Path) -> None:
    """Output other than the one shown, or a non-zero exit, fails with both shown."""
    status, out = _run(tmp_path, "```console\n$ echo one\ntwo\n```\n")
    assert status == 1 and "expected:\ntwo\ngot:\none" in out
    status, out = _run(tmp_path, "```console\n$ echo gone; exit 3\n```\n")
    assert status == 1 and "exited 3:\ngone" in out


def test_skip_comments_skip_by_condition(tmp_path: Path) -> None:
    """``skip: next`` skips one block, ``if(...)`` only when its condition (read in the
    page's namespace) holds, ``skip: start``/``end`` the blocks between."""
    page = (
        "```python\nflag = True\n```\n\n"
        '<!-- skip: next if(flag, reason="flag set") -->\n\n```python\nraise SystemExit(9)\n```\n\n'
        "<!-- skip: next if(not flag) -->\n\n```python\nran = 1\n```\n\n"
        "<!-- skip: start -->\n\n```python\nraise SystemExit(9)\n```\n\n"
        "```console\n$ exit 9\n```\n\n<!-- skip: end -->\n\n"
        "```python\nassert ran == 1\n```\n"
    )
    status, out = _run(tmp_path, page)
    assert status == 0, out
    assert "python block skipped: flag set" in out
    assert out.endswith("3 blocks passed, 3 skipped\n")


def test_an_unclosed_block_or_a_bad_skip_is_refused(tmp_path: Path) -> None:
    """A page that cannot be read exits 2 and says why."""
    status, out = _run(tmp_path, "```python\nx = 1\n")
    assert status == 2 and "line 1: the python block is not closed" in out
    status, out = _run(tmp_path, "<!-- skip: end -->\n")
    assert status == 2 and "'skip: end' must follow 'skip: start'" in out


def test_install_lines_are_read_from_sh_blocks_only() -> None:
    """Only a ``pip install toolwire...`` line of an sh block is an install line; its
    extras and other requirements are split apart."""
    text = (
        "Prose: `pip install 'toolwire[demo]'`.\n\n```text\npip install \"toolwire\"\n```\n\n"
        '```sh\npip install "toolwire[cli,testing]" openai  # the SDK\ntoolwire demo\n```\n'
    )
    [line] = install_lines(text)
    assert install_words(line) == (["cli", "testing"], ["openai"])
