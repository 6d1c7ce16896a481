"""Each docs page runs from its own documented install: ``scripts/docs_envs.py`` builds
``.venv-docs/<page>`` from the page's one ``pip install "toolwire[...]" ...`` line (before
pytest, in ``make test``: nothing is downloaded here), and each page's blocks run there with
``docs/page_runner.py``, so a dependency the page forgets to name fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require
from docs_support import ROOT, docs_envs

RUNNER = ROOT / "docs" / "page_runner.py"
PAGE_TIMEOUT = 600.0  # seconds a page may take (the Temporal dev server starts in one)
PAGES = [page.name for page in docs_envs.runnable_pages()]


def _without_this_venv() -> dict[str, str]:
    """The environment for a page's venv: nothing of the venv running the tests (its
    ``bin`` on ``PATH``, ``VIRTUAL_ENV``, ``PYTHONPATH``) can lend the page a package."""
    mine = {str(Path(sys.executable).parent), str(Path(sys.prefix) / "bin")}
    if os.environ.get("VIRTUAL_ENV"):
        mine.add(str(Path(os.environ["VIRTUAL_ENV"]) / "bin"))
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    path = os.environ.get("PATH", "").split(os.pathsep)
    env["PATH"] = os.pathsep.join(p for p in path if p and p not in mine)
    return env


def test_some_pages_run_code() -> None:
    """The pages with runnable blocks are found (the parametrisation below is not empty)."""
    assert {"concepts.md", "cli.md", "idempotency.md", "durable-agents.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_each_page_names_exactly_one_install(page: str) -> None:
    """A page with runnable blocks has exactly one ``pip install "toolwire[...]"`` line
    in its ``sh`` blocks, and its extras exist in pyproject.toml."""
    line = docs_envs.install_line(ROOT / "docs" / page)
    extras, _ = docs_envs.page_runner.install_words(line)
    tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    unknown = set(extras) - set(declared["optional-dependencies"])
    assert not unknown, f"docs/{page} installs extras pyproject.toml lacks: {sorted(unknown)}"


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_the_page_runs_in_a_venv_of_its_install_line_only(page: str) -> None:
    """Every python and console block of the page passes with the page's venv's Python,
    which holds only the page's install line."""
    path = ROOT / "docs" / page
    venv = docs_envs.venv_of(path)
    current = docs_envs.is_current(path, docs_envs.read_stamp(venv))
    require(
        current,
        f"{venv} is missing or not built from the page's install line and "
        "the lock: run python scripts/docs_envs.py --uv .venv-uv/bin/uv --python python3",
    )
    done = subprocess.run(
        [str(docs_envs.python_of(venv)), str(RUNNER), str(path)],
        cwd=ROOT,
        env=_without_this_venv(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=PAGE_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"docs/{page} in {venv.name}'s venv:\n{done.stdout[-8000:]}"
