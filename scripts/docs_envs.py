"""One venv per documentation page, holding only what the page says to install, so that
``tests/project/test_docs_install.py`` can run each page as a new user would.

Each page of ``docs/`` that has runnable blocks names its install in one line of a shown
``sh`` block, ``pip install "toolwire[extra,...]" package ...`` (``docs/README.md``). For
each such page this builds ``.venv-docs/<page stem>/``::

    <uv> venv --python <python> .venv-docs/<stem>
    <uv> pip install -c locks/dev.txt -e ".[extra,...]" package ...

``toolwire[...]`` becomes this checkout, installed **editable**: the venv then runs the
checkout's current code, so an edit of ``src/`` needs no reinstall and a venv can never
test a stale copy; what the venv is checked for is its dependencies, and those come from
the install line alone. ``-c locks/dev.txt`` pins every distribution to the version the
rest of the suite tests.

A venv is rebuilt from nothing (so a package dropped from a line leaves it too) only when
its stamp (``.venv-docs/<stem>/docs-install.json``: the install line, the lock's digest,
the Python asked for) differs; the stamp is written last, so a failed install is retried
on the next run. Venvs of pages that no longer run code are removed. Everything is
downloaded here, before pytest runs: the tests themselves download nothing.

Usage (standard library only; ``make test`` runs it with the dev venv's Python)::

    python scripts/docs_envs.py --uv .venv-uv/bin/uv --python python3 [PAGE_STEM ...]

Exit status: 0 every venv is current, 1 a page has no single install line or an install
failed.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LOCK = ROOT / "locks" / "dev.txt"
# TOOLWIRE_DOCS_VENVS moves them (the tests point it at an empty folder to check that a
# missing venv skips the page, or fails it under CI=true)
VENVS = Path(os.environ.get("TOOLWIRE_DOCS_VENVS", ROOT / ".venv-docs"))
STAMP = "docs-install.json"


def _page_runner() -> ModuleType:
    """``docs/page_runner.py``, which reads pages (loaded by path: ``docs`` need not be
    importable from the Python running this script)."""
    if "page_runner" in sys.modules:
        return sys.modules["page_runner"]
    spec = importlib.util.spec_from_file_location("page_runner", DOCS / "page_runner.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["page_runner"] = module  # dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


page_runner = _page_runner()


def runnable_pages() -> list[Path]:
    """The pages of ``docs/`` with at least one block that runs."""
    return [
        page
        for page in sorted(DOCS.glob("*.md"))
        if any(b.language in page_runner.RUNNABLE for b in page_runner.blocks(page.read_text()))
    ]


def install_line(page: Path) -> str:
    """The page's one install line; :class:`ValueError` when it has none or several."""
    lines = page_runner.install_lines(page.read_text("utf-8"))
    if len(lines) != 1:
        raise ValueError(
            f"docs/{page.name} has {len(lines)} install lines in its sh blocks, not one: "
            'pip install "toolwire[extra,...]" package ...'
        )
    return str(lines[0])


def install_arguments(line: str) -> list[str]:
    """What ``uv pip install`` gets for an install line: the checkout, editable, with the
    line's extras, then the line's other requirements."""
    extras, others = page_runner.install_words(line)
    checkout = f".[{','.join(extras)}]" if extras else "."
    return ["-e", checkout, *others]


def venv_of(page: Path) -> Path:
    """Where the page's venv lives."""
    return VENVS / page.stem


def python_of(venv: Path) -> Path:
    """The venv's Python."""
    return venv / "bin" / "python"


def stamp_for(page: Path, python: str) -> dict[str, Any]:
    """What a current venv of ``page`` was built from."""
    return {
        "install": install_line(page),
        "lock_sha256": hashlib.sha256(LOCK.read_bytes()).hexdigest(),
        "python": python,
        "toolwire": "editable",
    }


def read_stamp(venv: Path) -> dict[str, Any] | None:
    """The stamp a venv was built with, or ``None`` (absent, unreadable)."""
    try:
        stamp = json.loads((venv / STAMP).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def is_current(page: Path, stamp: dict[str, Any] | None, python: str | None = None) -> bool:
    """Whether ``stamp`` matches the page's install line and the lock today (and the
    Python asked for, when ``python`` is given)."""
    if stamp is None or not python_of(venv_of(page)).exists():
        return False
    expected = stamp_for(page, python if python is not None else stamp.get("python", ""))
    return stamp == expected


def build(page: Path, *, uv: str, python: str) -> None:
    """Make the page's venv afresh and install its line into it."""
    venv = venv_of(page)
    shutil.rmtree(venv, ignore_errors=True)
    stamp = stamp_for(page, python)
    subprocess.run([uv, "venv", "--quiet", "--python", python, str(venv)], cwd=ROOT, check=True)
    subprocess.run(
        [
            uv,
            "pip",
            "install",
            "--quiet",
            "--python",
            str(python_of(venv)),
            "-c",
            str(LOCK),
            *install_arguments(stamp["install"]),
        ],
        cwd=ROOT,
        check=True,
    )
    (venv / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", "utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    """Build or keep each page's venv; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--uv", required=True, help="the uv to run (.venv-uv/bin/uv)")
    parser.add_argument("--python", default="python3", help="the Python of each venv")
    parser.add_argument("pages", nargs="*", metavar="PAGE_STEM", help="only these pages")
    args = parser.parse_args(argv)
    pages = runnable_pages()
    if args.pages:
        unknown = set(args.pages) - {page.stem for page in pages}
        if unknown:
            parser.error(f"no runnable page named {', '.join(sorted(unknown))}")
        pages = [page for page in pages if page.stem in args.pages]
    else:  # a page that no longer runs code leaves no venv behind
        kept = {page.stem for page in pages}
        for venv in sorted(VENVS.glob("*")) if VENVS.is_dir() else []:
            if venv.is_dir() and venv.name not in kept:
                shutil.rmtree(venv)
    failed = []
    for page in pages:
        try:
            if is_current(page, read_stamp(venv_of(page)), args.python):
                print(f"docs/{page.name}: .venv-docs/{page.stem} is current")
                continue
            print(f"docs/{page.name}: building .venv-docs/{page.stem}: {install_line(page)}")
            build(page, uv=args.uv, python=args.python)
        except (ValueError, subprocess.CalledProcessError) as exc:
            print(f"docs/{page.name}: {exc}", file=sys.stderr)
            failed.append(page.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
