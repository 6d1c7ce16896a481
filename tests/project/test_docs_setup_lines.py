"""Every docs page that runs code installs, in its one ``pip install "toolwire[...]"`` line,
each optional package its examples import (a fast check; ``test_docs_install.py`` runs
each page in a venv of that line alone)."""

from __future__ import annotations

import re
import sys

import pytest

from docs_support import ROOT, docs_envs, page_runner

tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

PAGES = [page.name for page in docs_envs.runnable_pages()]
# the distribution each imported module comes from, the longest prefix first (modules of
# the core dependencies and of the standard library need no setup line)
DISTRIBUTIONS = {
    "toolwire.stores.redis": "redis",
    "toolwire.stores.postgres": "psycopg",
    "toolwire.integrations.dbos": "dbos",
    "toolwire.integrations.temporal": "temporalio",
    # the simulator's server, which every page importing toolwire.testing starts
    "toolwire.testing": "uvicorn",
    "httpx": "httpx",
    "redis": "redis",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry": "opentelemetry-api",
    "pytest": "pytest",
    "openai": "openai",
    "anthropic": "anthropic",
    "google.genai": "google-genai",
    "rich": "rich",
    "mcp": "mcp",
    "dbos": "dbos",
    "temporalio": "temporalio",
    "genai_prices": "genai-prices",
    "tiktoken": "tiktoken",
}
_CORE = {"toolwire", "pydantic", "anyio", "rfc8785", "jsonschema_rs", "docstring_parser"}
_IMPORT = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_][\w.]*)", re.MULTILINE)
_RUN_MODULE = re.compile(r"\bpython -m ([A-Za-z_][\w.]*)")


def _name(requirement: str) -> str:
    return re.split(r"[<>=;\[ ]", requirement.strip(), maxsplit=1)[0].lower()


def _installed_by(line: str, extras: dict[str, list[str]]) -> set[str]:
    """The distribution names the install line brings, extras resolved (recursively)."""
    wanted, others = page_runner.install_words(line)
    found = {_name(word) for word in others}
    todo = [f"toolwire[{extra}]" for extra in wanted]
    while todo:
        match = re.fullmatch(r"toolwire\[([\w,-]+)\]", todo.pop())
        assert match is not None
        for extra in match.group(1).split(","):
            for requirement in extras[extra]:
                if requirement.startswith("toolwire["):
                    todo.append(requirement)
                else:
                    found.add(_name(requirement))
    return found


def _needed(modules: list[str]) -> set[str]:
    """The distributions that provide ``modules`` (those of the standard library and the
    core dependencies aside)."""
    needed = set()
    for module in modules:
        for prefix, dist in DISTRIBUTIONS.items():
            if module == prefix or module.startswith(prefix + "."):
                needed.add(dist)
                break
        else:
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top not in _CORE:
                raise AssertionError(f"no distribution known for the import {module!r}")
    return needed


def _modules(text: str) -> list[str]:
    """The modules a page's runnable blocks import (python files a block writes
    included) or run with ``python -m``."""
    found = []
    for block in page_runner.blocks(text):
        if block.language == "python":
            found += _IMPORT.findall(block.text)
        elif block.language == "console":
            found += _RUN_MODULE.findall(block.text)
    return found


def test_every_page_that_runs_code_is_checked() -> None:
    """The check covers the pages that run code, not a hand-kept list."""
    assert {"cli.md", "concepts.md", "durable-agents.md", "mcp.md", "providers.md"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_the_setup_lines_install_what_the_page_imports(page: str) -> None:
    """Every optional package the page's examples import is installed by the page's
    install line (extras resolved from pyproject.toml)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    text = (ROOT / "docs" / page).read_text("utf-8")
    [line] = page_runner.install_lines(text)
    missing = _needed(_modules(text)) - _installed_by(line, project["optional-dependencies"])
    assert not missing, f"docs/{page} imports {sorted(missing)} but installs no such thing"


def test_an_import_the_line_lacks_is_found() -> None:
    """The check sees an import the install line does not bring, through extras of
    extras too."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    extras = project["optional-dependencies"]
    page = '```sh\npip install "toolwire[demo]"\n```\n\n```python\nimport openai\nimport mcp\n```\n'
    [line] = page_runner.install_lines(page)
    assert _needed(_modules(page)) - _installed_by(line, extras) == {"mcp"}
    assert {"rich", "uvicorn", "openai"} <= _installed_by(line, extras)
