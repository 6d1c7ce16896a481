"""Runs one documentation page the way ``docs/conftest.py`` runs it under pytest, with the
standard library only, so a page can be run by a Python that holds nothing but the page's
own documented install (``scripts/docs_envs.py`` builds such venvs,
``tests/project/test_docs_install.py`` runs each page in its own)::

    python docs/page_runner.py docs/mcp.md

The rules are the ones ``docs/conftest.py`` states and ``docs/README.md`` tells writers: the
``python`` blocks share one namespace and run top to bottom in a fresh temporary directory;
each ``$ `` line of a ``console`` block runs in bash (this Python's ``bin`` first on
``PATH``) and its stdout and stderr must match the lines under it (:func:`matches`); a
``<!-- skip: next -->`` comment (with ``if(condition, reason=...)``, the condition read in
the page's namespace) skips the next block, ``skip: start`` ... ``skip: end`` the blocks
between. The console logic lives here only: ``docs/conftest.py`` imports it.

The page's install line (:func:`install_lines`) is the one line of a shown ``sh`` block
that reads ``pip install "toolwire[extra,...]" package ...``.

Exit status: 0 every block passed, 1 a block failed (its output, or its traceback, is
printed), 2 the page cannot be read.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "COMMAND_TIMEOUT",
    "RUNNABLE",
    "Block",
    "PageError",
    "blocks",
    "evaluate_console",
    "install_lines",
    "install_words",
    "matches",
    "run_page",
]

COMMAND_TIMEOUT = 120.0  # seconds a console command may take
RUNNABLE = ("python", "console")  # the languages of the blocks that run

_FENCE = re.compile(r"^(`{3,})\s*([\w+-]*)[^\n]*$")
_SKIP = re.compile(r"^<!--\s*skip:\s*(\w+)(?:\s+(.+?))?\s*-->\s*$")
_INSTALL = re.compile(r"^pip install [\"']?toolwire\b")
_INSTALL_WORD = re.compile(r"toolwire(?:\[([\w,-]+)\])?")


class PageError(ValueError):
    """A page that cannot be read: an unclosed block, a malformed skip comment."""


@dataclass(frozen=True)
class Block:
    """A fenced block of a page (``language`` ``"skip"``: a skip comment, its action and
    condition in ``text``); ``line`` is the page's line of its first content line."""

    language: str
    text: str
    line: int


def blocks(text: str) -> list[Block]:
    """Every fenced block and skip comment of a Markdown page, in order (fences at the
    start of a line, as every page writes them)."""
    found: list[Block] = []
    lines = text.splitlines()
    number = 0
    while number < len(lines):
        line = lines[number]
        skip = _SKIP.match(line)
        if skip is not None:
            found.append(Block("skip", f"{skip[1]} {skip[2] or ''}".strip(), number + 1))
        fence = _FENCE.match(line)
        if fence is None:
            number += 1
            continue
        ticks, language = fence[1], fence[2]
        end = number + 1
        while end < len(lines) and not re.fullmatch(ticks + "`*\\s*", lines[end]):
            end += 1
        if end == len(lines):
            raise PageError(f"line {number + 1}: the {language or 'plain'} block is not closed")
        body = "".join(f"{content}\n" for content in lines[number + 1 : end])
        found.append(Block(language, body, number + 2))
        number = end + 1
    return found


def install_lines(text: str) -> list[str]:
    """The lines of the page's ``sh`` blocks that install toolwire (``pip install
    "toolwire[...]" ...``)."""
    return [
        line.strip()
        for block in blocks(text)
        if block.language == "sh"
        for line in block.text.splitlines()
        if _INSTALL.match(line.strip())
    ]


def install_words(line: str) -> tuple[list[str], list[str]]:
    """The extras and the other requirements of an install line:
    ``pip install "toolwire[cli,testing]" openai`` gives ``(["cli", "testing"], ["openai"])``."""
    words = shlex.split(line, comments=True)
    if words[:2] != ["pip", "install"] or len(words) < 3:
        raise PageError(f"not an install line: {line!r}")
    first = _INSTALL_WORD.fullmatch(words[2])
    if first is None:
        raise PageError(f"the install line does not start with toolwire: {line!r}")
    extras = first[1].split(",") if first[1] else []
    return extras, words[3:]


# ------------------------------------------------------------------------------ console


def _line_pattern(line: str) -> str:
    """The regular expression of one expected line (``...`` inside it: any text)."""
    return ".*".join(re.escape(part) for part in line.rstrip().split("...")) + r"\n"


def matches(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """Whether ``actual`` lines match ``expected`` ones: a line ``...`` stands for any
    number of lines, ``...`` inside a line for any text, trailing spaces do not count."""
    pattern = "".join(
        r"(?:.*\n)*?" if line.strip() == "..." else _line_pattern(line) for line in expected
    )
    text = "".join(line.rstrip() + "\n" for line in actual)
    return re.fullmatch(pattern, text) is not None


def evaluate_console(block: str, *, cwd: str, bin_dir: str) -> str | None:
    """Run each ``$`` command of a console block in ``cwd`` with ``bin_dir`` first on
    ``PATH``; a message when one fails or its output is not the one shown."""
    commands: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
        elif line.strip():
            return f"console block: output before any '$ ' command: {line!r}"
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    env.pop("COLUMNS", None)
    for command, expected in commands:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=COMMAND_TIMEOUT,
            check=False,
        )
        while expected and not expected[-1].strip():
            expected.pop()
        if done.returncode != 0:
            return f"$ {command}\nexited {done.returncode}:\n{done.stdout}"
        if expected and not matches(expected, done.stdout.splitlines()):
            shown = "\n".join(expected)
            return f"$ {command}\nexpected:\n{shown}\ngot:\n{done.stdout}"
    return None


# ------------------------------------------------------------------------------ a page


class _Skipping:
    """The state of sybil's ``skip`` directive over one page: ``next`` skips the next
    block, ``start``/``end`` those between; ``if(condition, reason=...)`` skips only when
    the condition, read in the page's namespace, is true."""

    def __init__(self) -> None:
        self.action: str | None = None
        self.reason: str | None = None  # why the blocks are skipped; None: they run

    def directive(self, text: str, namespace: dict[str, Any], where: str) -> None:
        action, _, condition = text.partition(" ")
        if action not in ("start", "next", "end"):
            raise PageError(f"{where}: bad skip action {action!r}")
        if action == "end":
            if self.action != "start":
                raise PageError(f"{where}: 'skip: end' must follow 'skip: start'")
            if condition:
                raise PageError(f"{where}: 'skip: end' takes no condition")
            self.action = self.reason = None
            return
        if self.action is not None:
            raise PageError(f"{where}: 'skip: {action}' cannot follow 'skip: {self.action}'")
        self.action, self.reason = action, _skip_reason(condition, namespace)

    def skipped(self) -> str | None:
        """Why the block at hand is skipped (``None``: it runs); ``next`` then ends."""
        reason = self.reason
        if self.action == "next":
            self.action = self.reason = None
        return reason


def _skip_reason(condition: str, namespace: dict[str, Any]) -> str | None:
    """Why ``skip: ACTION CONDITION`` skips (``None``: the blocks run). ``if(flag,
    reason=...)`` skips when ``flag`` is true; any other condition is an expression whose
    true value is the reason."""
    condition = condition.strip()
    if not condition:
        return "skipped"
    scope = dict(namespace)
    if condition.startswith("if"):

        def when(flag: Any, reason: str | None = None) -> str | None:
            return (reason or condition[2:]) if flag else None

        scope["__skip_if__"] = when
        condition = "__skip_if__" + condition[2:]
    reason = eval(condition, scope)
    return str(reason) if reason else None


def run_page(path: Path, *, out: Any = None) -> int:
    """Run the page's blocks in a fresh temporary directory; print a failing block's
    output to ``out`` (stdout by default) and return the exit status."""
    out = out if out is not None else sys.stdout
    try:
        page = blocks(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, PageError) as exc:
        print(f"{path}: {exc}", file=out)
        return 2
    namespace: dict[str, Any] = {}
    skipping = _Skipping()
    folder = tempfile.mkdtemp(prefix="toolwire-docs-")
    cwd = os.getcwd()
    ran = skipped = 0
    bin_dir = str(Path(sys.executable).parent)
    os.chdir(folder)
    try:
        for block in page:
            where = f"{path}:{block.line}"
            if block.language == "skip":
                try:
                    skipping.directive(block.text, namespace, where)
                except PageError as exc:
                    print(exc, file=out)
                    return 2
                continue
            if block.language not in RUNNABLE:
                continue
            reason = skipping.skipped()
            if reason is not None:
                skipped += 1
                print(f"{where}: {block.language} block skipped: {reason}", file=out)
                continue
            ran += 1
            if block.language == "python":
                try:
                    code = compile("\n" * (block.line - 1) + block.text, str(path), "exec")
                    exec(code, namespace)
                except KeyboardInterrupt:
                    raise
                except BaseException:
                    print(f"{where}: the python block failed:", file=out)
                    traceback.print_exc(file=out)
                    return 1
                finally:
                    namespace.pop("__builtins__", None)
            else:
                failure = evaluate_console(block.text, cwd=folder, bin_dir=bin_dir)
                if failure is not None:
                    print(f"{where}: the console block failed:\n{failure}", file=out)
                    return 1
    finally:
        os.chdir(cwd)
        shutil.rmtree(folder, ignore_errors=True)
    print(f"{path}: {ran} blocks passed, {skipped} skipped", file=out)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python docs/page_runner.py PAGE.md``: run one page; its exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python docs/page_runner.py PAGE.md", file=sys.stderr)
        return 2
    return run_page(Path(args[0]).resolve())


if __name__ == "__main__":
    sys.exit(main())
