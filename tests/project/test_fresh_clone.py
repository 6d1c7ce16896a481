"""A fresh clone without ``../shared``: the tests that read the corpus skip, and under
``CI=true`` they fail instead, so a green CI still means the corpus was read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TESTS = Path(__file__).resolve().parents[1]


def _corpus_readers() -> list[str]:
    """Every test module that mentions the corpus (this one excepted)."""
    return sorted(
        str(path)
        for path in TESTS.glob("**/test_*.py")
        if path.name != Path(__file__).name and "corpus" in path.read_text("utf-8")
    )


def _run(files: list[str], *, ci: bool, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["TOOLWIRE_CORPUS"] = str(tmp_path / "no-shared" / "corpus")
    env["TOOLWIRE_JSONSCHEMA_SUITE"] = str(tmp_path / "no-shared" / "jsonschema-suite")
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *files],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_corpus_tests_skip_on_a_clone_without_shared(tmp_path: Path) -> None:
    """Without ``../shared`` every corpus-reading module passes, its corpus tests skipped."""
    result = _run(_corpus_readers(), ci=False, tmp_path=tmp_path)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "skipped" in result.stdout


def test_corpus_tests_fail_under_ci_without_shared(tmp_path: Path) -> None:
    """Under ``CI=true`` a missing corpus is a failure, never a silent skip."""
    result = _run([str(TESTS / "core" / "test_corpus.py")], ci=True, tmp_path=tmp_path)
    assert result.returncode != 0
    assert "CI=true and" in result.stdout
