"""Module headers stay short: design notes live in ``docs/internals.md``, not in ``src``."""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import toolwire

SRC = Path(toolwire.__file__).parent
MEDIAN_LINES = 10
MAX_LINES = 20
# The one exception: the errors module draws the whole exception tree, one line per class,
# and ``test_exports`` checks that every error is in it, so it grows with the tree.
MAX_LINES_ERRORS = 50


def _header_lines() -> dict[str, int]:
    counts = {}
    for path in sorted(SRC.rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
        counts[path.relative_to(SRC).as_posix()] = len(doc.splitlines()) if doc else 0
    return counts


def test_the_median_module_header_is_at_most_ten_lines() -> None:
    """Half the modules or more have a docstring of at most ten lines."""
    counts = _header_lines()
    assert len(counts) > 50, "the package's modules were not found"
    assert statistics.median(counts.values()) <= MEDIAN_LINES


def test_no_module_header_is_long() -> None:
    """Every module docstring fits in 20 lines; the errors module's tree in 50.

    20 lines leave room for a purpose, a guarantee, a bound and one small table (the CLI's
    exit statuses); anything longer is a design note for ``docs/internals.md``."""
    counts = _header_lines()
    long = {
        name: n
        for name, n in counts.items()
        if n > (MAX_LINES_ERRORS if name == "_errors.py" else MAX_LINES)
    }
    assert not long, f"module headers too long (move the notes to docs/internals.md): {long}"


def test_no_source_file_refers_to_api_md() -> None:
    """No file under ``src`` points to ``API.md``, which is not in the repository."""
    found = [
        path.relative_to(SRC).as_posix()
        for path in sorted(SRC.rglob("*"))
        if path.is_file() and path.suffix in {".py", ".pyi", ".md", ".txt", ".toml"}
        if "API.md" in path.read_text(encoding="utf-8")
    ]
    assert not found, found
