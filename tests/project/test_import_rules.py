"""The import rules between the package's rooms are enforced: ``lint-imports`` (the
``[tool.importlinter]`` contracts ``make lint`` checks) refuses a planted import of a higher
room, and no module inside the package imports the root ``toolwire`` package itself."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACT = "Lower rooms never import higher ones"
FLOWS = "The flows the drivers run import no I/O"

# the modules of the package under PYTHONPATH that import ``toolwire`` itself
_ROOT_IMPORTERS = """
import json, grimp
graph = grimp.build_graph("toolwire")
print(json.dumps(sorted(
    m for m in graph.modules
    if m != "toolwire" and "toolwire" in graph.find_modules_directly_imported_by(m)
)))
"""


@pytest.fixture(scope="module")
def tools() -> None:
    """import-linter and grimp (the lint group); the other Pythons' venvs go without."""
    pytest.importorskip("importlinter")
    pytest.importorskip("grimp")
    if not LINT_IMPORTS.is_file():
        pytest.skip(f"no lint-imports next to {sys.executable}")


def _copy(tmp_path: Path) -> Path:
    """A copy of ``src/toolwire`` and of ``pyproject.toml`` (which holds the contracts)."""
    shutil.copytree(
        REPO / "src" / "toolwire",
        tmp_path / "src" / "toolwire",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _plant(copy: Path, module: str, line: str) -> None:
    path = copy / "src" / "toolwire" / module
    path.write_text(path.read_text("utf-8") + f"\n{line}\n", "utf-8")


def _env(copy: Path) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(copy / "src"))


def _lint_imports(copy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=copy,
        env=_env(copy),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _root_importers(copy: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", _ROOT_IMPORTERS],
        cwd=copy,
        env=_env(copy),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found: list[str] = json.loads(done.stdout)
    return found


def test_contracts_hold_on_the_untouched_tree(tools: None, tmp_path: Path) -> None:
    """``lint-imports`` passes on an unchanged copy of the package."""
    result = _lint_imports(_copy(tmp_path))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert f"{CONTRACT} KEPT" in result.stdout
    assert f"{FLOWS} KEPT" in result.stdout


@pytest.mark.parametrize(
    "module",
    [
        "_execution/decisions.py",
        "_streaming/flow.py",
        "_streaming/deadlines.py",
        "stores/_requests.py",
    ],
)
def test_a_flow_importing_the_clock_breaks_the_contract(
    tools: None, tmp_path: Path, module: str
) -> None:
    """An ``import time`` planted in a flow the drivers run fails ``lint-imports``, which
    names the flows contract and the flow."""
    copy = _copy(tmp_path)
    _plant(copy, module, "import time as _planted  # noqa")
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{FLOWS} BROKEN" in result.stdout
    flow = "toolwire." + module.removesuffix(".py").replace("/", ".")
    assert f"{flow} is not allowed to import time" in result.stdout
    assert f"{CONTRACT} KEPT" in result.stdout


def test_a_flow_reaching_a_thread_through_its_imports_breaks_the_contract(
    tools: None, tmp_path: Path
) -> None:
    """An I/O import planted in a module a flow imports (the approvals the decision core
    reads) fails the flows contract too: indirect imports count."""
    copy = _copy(tmp_path)
    _plant(copy, "_execution/approvals.py", "import threading as _planted  # noqa")
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{FLOWS} BROKEN" in result.stdout
    assert "toolwire._execution.decisions is not allowed to import threading" in result.stdout
    assert "toolwire._execution.approvals -> threading" in result.stdout


def test_a_core_module_importing_the_turn_breaks_the_contract(tools: None, tmp_path: Path) -> None:
    """An import of ``_turn`` planted in ``_core/framing.py`` fails ``lint-imports``, which
    names the contract and the offending import."""
    copy = _copy(tmp_path)
    _plant(copy, "_core/framing.py", "from .._turn import run as _planted  # noqa")
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{CONTRACT} BROKEN" in result.stdout
    assert "toolwire._core is not allowed to import toolwire._turn" in result.stdout
    assert "toolwire._core.framing -> toolwire._turn.run" in result.stdout


def test_no_module_imports_the_root_package(tools: None) -> None:
    """No module of the package (``toolwire.__main__`` included) imports ``toolwire``
    itself: each imports the module that defines a name."""
    assert _root_importers(REPO) == []


def test_a_planted_import_of_the_root_package_is_found(tools: None, tmp_path: Path) -> None:
    """The root-import check sees ``import toolwire`` and ``from .. import X`` in a room."""
    copy = _copy(tmp_path)
    _plant(copy, "_output/shapes.py", "import toolwire as _planted  # noqa")
    _plant(copy, "stores/memory.py", "from .. import __version__ as _planted  # noqa")
    assert _root_importers(copy) == ["toolwire._output.shapes", "toolwire.stores.memory"]
