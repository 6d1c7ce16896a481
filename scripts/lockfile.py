"""The locked environments: stamp a lock with the dependency tables it was made from, and
check that a venv holds exactly what its lock names.

``make lock`` compiles ``locks/*.txt`` from ``pyproject.toml`` with uv, then runs
``stamp`` on each. ``make test`` (and ``test-pythons``, ``bench``) syncs its venv from its
lock, then runs ``check``: it fails when

* ``pyproject.toml``'s dependency tables changed since the lock was made (run ``make lock``);
* a distribution the lock names for this Python is missing or at another version;
* the venv holds a distribution the lock does not name (``toolwire`` itself aside).

It runs with the venv's own Python after the sync: every lock holds pytest, so ``packaging``
(its dependency) is there to evaluate the lock's environment markers.

Usage::

    python scripts/lockfile.py stamp locks/dev.txt
    python scripts/lockfile.py check locks/dev.txt
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = "# pyproject dependencies sha256: "
# distributions a venv may hold besides the lock: the project itself, and what venv puts in
UNLOCKED = {"toolwire", "pip", "setuptools", "wheel"}

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the 3.10 venv has tomli from the testing extra
    import tomli as tomllib


def dependency_digest(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """SHA-256 of the tables a lock is made from: requires-python, the dependencies, the
    extras and the dependency groups (formatting and the tool settings do not count)."""
    data = tomllib.loads(pyproject.read_text("utf-8"))
    project = data.get("project", {})
    tables = {
        "requires-python": project.get("requires-python"),
        "dependencies": project.get("dependencies", []),
        "optional-dependencies": project.get("optional-dependencies", {}),
        "dependency-groups": data.get("dependency-groups", {}),
    }
    return hashlib.sha256(json.dumps(tables, sort_keys=True).encode()).hexdigest()


def stamp(lock: Path) -> None:
    """Write (or rewrite) the digest line at the top of ``lock``."""
    lines = [line for line in lock.read_text("utf-8").splitlines() if not line.startswith(STAMP)]
    lock.write_text("\n".join([STAMP + dependency_digest(), *lines]) + "\n", "utf-8")


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(lock: Path) -> dict[str, str]:
    """The distributions ``lock`` names for this interpreter, with their versions."""
    from packaging.markers import Marker  # in every lock (pytest's); not needed to stamp

    pins: dict[str, str] = {}
    for raw in lock.read_text("utf-8").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-")):
            continue
        requirement, _, marker = line.partition(";")
        name, _, version = requirement.partition("==")
        if not version:
            raise ValueError(f"{lock}: a line that pins no version: {raw!r}")
        if marker.strip() and not Marker(marker).evaluate():
            continue
        pins[_normalise(name.split("[")[0])] = version.strip()
    return pins


def problems(lock: Path) -> list[str]:
    """What differs between this venv and ``lock``; empty when they match."""
    found: list[str] = []
    text = lock.read_text("utf-8")
    digest = dependency_digest()
    if STAMP + digest not in text:
        found.append(
            f"pyproject.toml's dependencies changed since {lock.name} was made: run `make lock`"
        )
    pins = locked(lock)
    installed = {
        _normalise(dist.metadata["Name"]): dist.version
        for dist in importlib.metadata.distributions()
    }
    for name, version in sorted(pins.items()):
        have = installed.get(name)
        if have is None:
            found.append(f"missing: {name}=={version}")
        elif have != version:
            found.append(f"{name}: installed {have}, the lock names {version}")
    for name in sorted(set(installed) - set(pins) - UNLOCKED):
        found.append(f"not in the lock: {name}=={installed[name]}")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in {"stamp", "check"}:
        print(__doc__, file=sys.stderr)
        return 2
    lock = Path(argv[1])
    if argv[0] == "stamp":
        stamp(lock)
        return 0
    found = problems(lock)
    for line in found:
        print(f"{lock}: {line}", file=sys.stderr)
    if not found:
        print(f"{lock}: this venv holds exactly what the lock names ({len(locked(lock))})")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
