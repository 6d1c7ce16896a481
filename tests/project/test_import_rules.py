"""The import rules between the package's rooms are enforced: ``lint-imports`` (the
``[tool.importlinter]`` contracts ``make lint`` checks) refuses a planted import of a higher
room, of an I/O module in the core, of a format's package outside ``_providers`` and
``testing``, and of one format by another (readers and the simulator's encoders alike); and
no module inside the package imports the root ``toolwire`` package itself."""

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
SANS_IO = "The core and the providers import no clock, file, thread or validator"
FORMATS_STAY = "Only _providers and testing import a format's package"
FORMATS_APART = "Formats do not import each other"
ENCODERS_APART = "The simulator's encoders and checks do not import each other"
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


def _said(result: subprocess.CompletedProcess[str]) -> str:
    """The report with its wrapping undone (lint-imports wraps long lines)."""
    return " ".join(result.stdout.split())


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
    for contract in (CONTRACT, SANS_IO, FLOWS, FORMATS_STAY, FORMATS_APART, ENCODERS_APART):
        assert f"{contract} KEPT" in result.stdout


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


def test_a_core_module_importing_os_breaks_the_sans_io_contract(
    tools: None, tmp_path: Path
) -> None:
    """An ``import os`` planted in ``_core/framing.py`` fails ``lint-imports`` on the
    sans-IO contract, which names the offending import (the layers contract still holds)."""
    copy = _copy(tmp_path)
    _plant(copy, "_core/framing.py", "import os as _planted  # noqa")
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{SANS_IO} BROKEN" in result.stdout
    assert f"{CONTRACT} KEPT" in result.stdout
    assert "toolwire._core is not allowed to import os" in result.stdout
    assert "toolwire._core.framing -> os" in result.stdout


def test_a_room_importing_a_format_package_breaks_the_contract(tools: None, tmp_path: Path) -> None:
    """A format's package imported by another room (``_tools`` reading Responses' custom
    input from ``_providers.openai_responses`` instead of its Provider) fails
    ``lint-imports``; the layers alone allowed it (``_providers`` is below ``_tools``)."""
    copy = _copy(tmp_path)
    _plant(
        copy,
        "_tools/toolbox.py",
        "from .._providers.openai_responses import custom_input as _planted  # noqa",
    )
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{FORMATS_STAY} BROKEN" in _said(result)
    assert f"{CONTRACT} KEPT" in _said(result)
    assert "toolwire._tools.toolbox -> toolwire._providers.openai_responses" in _said(result)


def test_a_room_importing_a_simulator_encoder_breaks_the_contract(
    tools: None, tmp_path: Path
) -> None:
    """A simulator encoder imported directly by another room (the CLI) fails
    ``lint-imports``: formats are named in ``_providers`` and ``testing`` only."""
    copy = _copy(tmp_path)
    _plant(copy, "_cli/main.py", "from ..testing._encoders import gemini as _planted  # noqa")
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{FORMATS_STAY} BROKEN" in _said(result)
    assert "toolwire._cli.main -> toolwire.testing._encoders.gemini" in _said(result)


def test_a_format_importing_another_breaks_independence(tools: None, tmp_path: Path) -> None:
    """Cohere's package importing OpenAI chat's (instead of a shared module) fails
    ``lint-imports``, naming both formats."""
    copy = _copy(tmp_path)
    _plant(
        copy, "_providers/cohere/__init__.py", "from ..openai_chat import PROVIDER as _x  # noqa"
    )
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{FORMATS_APART} BROKEN" in _said(result)
    assert (
        "toolwire._providers.cohere is not allowed to import toolwire._providers.openai_chat"
        in _said(result)
    )


def test_an_encoder_importing_another_breaks_independence(tools: None, tmp_path: Path) -> None:
    """The simulator's Responses encoder importing the chat encoder (what it did for the
    call ids and error reply, now in ``_encoders/_openai_shapes.py``) fails
    ``lint-imports``."""
    copy = _copy(tmp_path)
    _plant(
        copy,
        "testing/_encoders/openai_responses.py",
        "from .openai_chat import OpenAIChatEncoder as _planted  # noqa",
    )
    result = _lint_imports(copy)
    assert result.returncode != 0
    assert f"{ENCODERS_APART} BROKEN" in _said(result)
    assert (
        "toolwire.testing._encoders.openai_responses is not allowed to import "
        "toolwire.testing._encoders.openai_chat"
    ) in _said(result)


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
