"""``scripts/docs_envs.py``, which builds a venv per docs page from the page's install line:
what it installs, when a venv counts as current, and what the page runs do without one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from docs_support import ROOT, docs_envs

INSTALL_TEST = ROOT / "tests" / "project" / "test_docs_install.py"


def test_install_words_become_the_checkout_with_its_extras() -> None:
    """``toolwire[...]`` becomes this checkout (editable) with the same extras; the other
    words are passed on as they are."""
    arguments = docs_envs.install_arguments
    assert arguments('pip install "toolwire[a,b]" openai x>=1') == [
        "-e",
        ".[a,b]",
        "openai",
        "x>=1",
    ]
    assert arguments('pip install "toolwire"') == ["-e", "."]
    with pytest.raises(ValueError):
        arguments("pip install openai")


@pytest.mark.slow
@pytest.mark.parametrize("ci", [False, True], ids=["local", "ci"])
def test_a_missing_venv_skips_the_page_and_fails_under_ci(tmp_path: Path, ci: bool) -> None:
    """Without its venv a page's run is skipped with the command to build it; under
    ``CI=true`` it fails instead, so a green CI means every page ran."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["TOOLWIRE_DOCS_VENVS"] = str(tmp_path / "no-venvs")
    if ci:
        env["CI"] = "true"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(INSTALL_TEST),
         "-k", "test_the_page_runs_in_a_venv_of_its_install_line_only and concepts"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert "scripts/docs_envs.py" in done.stdout, done.stdout[-3000:]
    if ci:
        assert done.returncode != 0 and "CI=true and" in done.stdout
    else:
        assert done.returncode == 0 and "1 skipped" in done.stdout


def test_a_venv_is_current_only_for_its_line_lock_and_python(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A venv whose stamp names another install line, lock or Python is rebuilt; one
    without its Python or its stamp too."""
    monkeypatch.setattr(docs_envs, "VENVS", tmp_path)
    page = ROOT / "docs" / "concepts.md"
    venv = docs_envs.venv_of(page)
    (venv / "bin").mkdir(parents=True)
    assert not docs_envs.is_current(page, docs_envs.read_stamp(venv), "python3")
    stamp = docs_envs.stamp_for(page, "python3")
    (venv / docs_envs.STAMP).write_text(json.dumps(stamp))
    assert not docs_envs.is_current(page, docs_envs.read_stamp(venv), "python3")  # no python
    (venv / "bin" / "python").touch()
    assert docs_envs.is_current(page, docs_envs.read_stamp(venv), "python3")
    assert docs_envs.is_current(page, docs_envs.read_stamp(venv))  # whatever Python it had
    assert not docs_envs.is_current(page, docs_envs.read_stamp(venv), "python3.12")
    for field, value in [("install", 'pip install "toolwire[cli]"'), ("lock_sha256", "0" * 64)]:
        (venv / docs_envs.STAMP).write_text(json.dumps({**stamp, field: value}))
        assert not docs_envs.is_current(page, docs_envs.read_stamp(venv))
    (venv / docs_envs.STAMP).write_text("{not json")
    assert docs_envs.read_stamp(venv) is None


def test_a_page_without_one_install_line_is_refused(tmp_path: Path) -> None:
    """A page with no install line, or two, has no venv: the script says which."""
    for text in [
        "```python\npass\n```\n",
        '```sh\npip install "toolwire"\npip install "toolwire[cli]"\n```\n',
    ]:
        page = tmp_path / "page.md"
        page.write_text(text)
        with pytest.raises(ValueError, match="install lines"):
            docs_envs.install_line(page)
