"""The documentation's own scripts, loaded by path for the tests of ``tests/project``:
``docs/page_runner.py`` and ``scripts/docs_envs.py`` run with the standard library alone,
from any Python, so neither ``docs`` nor ``scripts`` needs to be importable."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["ROOT", "docs_envs", "page_runner"]


def _load(name: str, path: Path) -> ModuleType:
    """The module at ``path``, once per test session, under ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


page_runner = _load("page_runner", ROOT / "docs" / "page_runner.py")
docs_envs = _load("docs_envs", ROOT / "scripts" / "docs_envs.py")
