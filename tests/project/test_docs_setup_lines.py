"""Each docs page whose examples import an optional package names, in a ``pip install``
line, an extra or a package that installs it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("cli.md", "idempotency.md", "observability.md", "testing.md")
# the distribution each imported module comes from (modules of the core dependencies
# and of the standard library need no setup line)
DISTRIBUTIONS = {
    "toolwire.stores.redis": "redis",
    "toolwire.stores.postgres": "psycopg",
    "httpx": "httpx",
    "redis": "redis",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry": "opentelemetry-api",
    "pytest": "pytest",
    "openai": "openai",
    "anthropic": "anthropic",
    "google.genai": "google-genai",
    "rich": "rich",
}
_CORE = {"toolwire", "pydantic", "anyio", "rfc8785", "jsonschema_rs"}
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", re.MULTILINE)
_PIP = re.compile(r"pip install ([^`\n]+)")
_CODE = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def _name(requirement: str) -> str:
    return re.split(r"[<>=;\[ ]", requirement.strip(), maxsplit=1)[0].lower()


def _installed_by(words: list[str], extras: dict[str, list[str]]) -> set[str]:
    """The distribution names a ``pip install`` of ``words`` brings, extras resolved."""
    found: set[str] = set()
    todo = [w.strip("'\"") for w in words]
    while todo:
        word = todo.pop()
        match = re.fullmatch(r"toolwire\[([\w,-]+)\]", word)
        if match is None:
            found.add(_name(word))
            continue
        for extra in match.group(1).split(","):
            todo += extras[extra]
    return found


def _needed(text: str) -> set[str]:
    needed = set()
    for module in _IMPORT.findall(text):
        for prefix, dist in DISTRIBUTIONS.items():  # the longest prefix is listed first
            if module == prefix or module.startswith(prefix + "."):
                needed.add(dist)
                break
        else:
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in _CORE:
                raise AssertionError(f"no distribution known for the import {module!r}")
    return needed


@pytest.mark.parametrize("page", PAGES)
def test_the_setup_lines_install_what_the_page_imports(page: str) -> None:
    """Every optional package the page's examples import is installed by one of the
    page's ``pip install`` lines (extras resolved from pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    text = (ROOT / "docs" / page).read_text()
    installed: set[str] = set()
    for line in _PIP.findall(text):
        installed |= _installed_by(line.split(), extras)
    missing = _needed("\n".join(_CODE.findall(text))) - installed
    assert not missing, f"docs/{page} imports {sorted(missing)} but installs no such thing"
