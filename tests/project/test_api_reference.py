"""``docs/api.md`` is what ``docs/api_reference.py`` renders from the docstrings today."""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("api_reference", DOCS / "api_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_page_is_current() -> None:
    """The committed page equals a fresh rendering: a public name, a signature or a
    docstring's first paragraph changed without the page fails here."""
    generator = _generator()
    fresh = generator.render()
    committed = (DOCS / "api.md").read_text("utf-8")
    diff = "".join(
        list(
            difflib.unified_diff(
                committed.splitlines(True), fresh.splitlines(True), "docs/api.md", "rendered"
            )
        )[:60]
    )
    assert committed == fresh, (
        f"docs/api.md is out of date; regenerate it with `{generator.REGENERATE}`\n{diff}"
    )


def test_api_reference_covers_every_public_name() -> None:
    """Every name of ``toolwire.__all__`` and of the public subpackages has an entry."""
    generator = _generator()
    page = generator.render()
    for module in generator.public_modules():
        assert f"## `{module.__name__}`" in page
        for name in module.__all__:
            assert f"### `{name}`" in page, f"{module.__name__}.{name} has no entry"
