"""The documentation harness's matching rules (docs/page_runner.py, which docs/conftest.py
imports): what a console block's expected output accepts."""

from __future__ import annotations

from docs.page_runner import matches as _matches


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
