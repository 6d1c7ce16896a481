"""Runs the documentation: every ``python`` and ``console`` block of ``docs/*.md`` is a test
(sybil), so ``make test`` fails when a page stops being true.

Conventions (``docs/README.md`` states them for writers):

* A page runs top to bottom in a fresh temporary directory, its working directory, and its
  ``python`` blocks share one namespace: a block may use what an earlier one defined, and
  a file an earlier block wrote is there for a later ``console`` block.
* A ``python`` block runs as it is written. A block that needs a provider uses
  :class:`toolwire.testing.Simulator`: nothing leaves the machine.
* A ``console`` block runs: each ``$ `` line is one bash command (in that directory, with
  this Python's ``bin`` first on ``PATH``, so ``toolwire`` is the one under test); the lines
  after it, up to the next ``$ ``, are its expected output, stdout and stderr together.
  A line ``...`` stands for any number of lines and ``...`` inside a line for any text.
  Each command must exit 0: a command expected to fail shows its status itself
  (``toolwire replay cut.sse > /dev/null; echo "exit $?"``).
* ``sh`` (and ``text``, ``toml``, ``json``) blocks are shown, never run: commands that
  install, need a network or run until stopped (``make demo``, ``pip install``,
  ``toolwire serve``), and file contents.

Each page gets a new namespace and directory; the logging configuration and the current
directory are put back after it, so pages cannot leak into each other or into the tests.

``docs/page_runner.py`` runs a page by the same rules without pytest or sybil (standard
library only), in a venv holding only the page's documented install; the console logic
lives there and is imported here.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from sybil import Example, Sybil
from sybil.integration import pytest as sybil_pytest
from sybil.parsers.markdown import CodeBlockParser, PythonCodeBlockParser, SkipParser

from docs import page_runner

BIN = str(Path(sys.executable).parent)


def evaluate_console(example: Example) -> str | None:
    """Run each ``$`` command of a console block (:func:`docs.page_runner.evaluate_console`,
    which ``python docs/page_runner.py PAGE`` uses too); a message when one fails or its
    output is not the one shown."""
    return page_runner.evaluate_console(str(example.parsed), cwd=os.getcwd(), bin_dir=BIN)


def setup(namespace: dict[str, Any]) -> None:
    """Give the page a fresh working directory; remember what it may change."""
    folder = tempfile.mkdtemp(prefix="toolwire-docs-")
    root = logging.getLogger()
    namespace["__docs__"] = (os.getcwd(), folder, root.level, list(root.handlers))
    os.chdir(folder)


def teardown(namespace: dict[str, Any]) -> None:
    """Put the directory and the logging configuration back; delete the page's files."""
    cwd, folder, level, handlers = namespace["__docs__"]
    os.chdir(cwd)
    shutil.rmtree(folder, ignore_errors=True)
    root = logging.getLogger()
    root.setLevel(level)
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for name in list(logging.root.manager.loggerDict):
        if name == "toolwire" or name.startswith("toolwire."):
            logger = logging.getLogger(name)
            for handler in list(logger.handlers):
                logger.removeHandler(handler)
                handler.close()
            logger.setLevel(logging.NOTSET)
            logger.propagate = True


_sybil_filter = sybil_pytest.SybilItem._traceback_filter


def _traceback_filter(self: Any, excinfo: Any) -> Any:
    # sybil 10 expects the example's own frame under the failure and crashes pytest's
    # report (INTERNALERROR, the whole run lost) when there is none, as for a warning that
    # the suite's filterwarnings turned into an error: show pytest's traceback instead.
    try:
        return _sybil_filter(self, excinfo)
    except IndexError:
        return excinfo.traceback


sybil_pytest.SybilItem._traceback_filter = _traceback_filter  # type: ignore[method-assign]

pytest_collect_file = Sybil(
    parsers=[
        PythonCodeBlockParser(),
        CodeBlockParser(language="console", evaluator=evaluate_console),
        SkipParser(),
    ],
    patterns=["*.md"],
    setup=setup,
    teardown=teardown,
).pytest()
