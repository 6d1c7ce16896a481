"""The locked environments (``locks/*.txt``, ``make lock``): each lock is current with
``pyproject.toml``, satisfies every range it declares, and the check ``make test`` runs
catches a venv that drifted from it; the README names the competitor versions the lock pins;
``make compare-latest`` reports a changed claim."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

tomllib = pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")

ROOT = Path(__file__).resolve().parents[2]
LOCKS = ROOT / "locks"
# the lock each environment is synced from, and the groups it was compiled with
COMPILED = {"dev.txt": ("dev",), "test.txt": ("test",), "bench.txt": ("test", "bench")}
# the lowest Python each lock was resolved for (make lock's --python-version)
LOWEST = {"dev.txt": (3, 11), "test.txt": (3, 10), "bench.txt": (3, 11)}


def _script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lockfile = _script("lockfile")


def _group(groups: dict[str, list[object]], name: str) -> list[str]:
    """A dependency group's requirements, included groups resolved."""
    found: list[str] = []
    for entry in groups[name]:
        if isinstance(entry, dict):
            found += _group(groups, str(entry["include-group"]))
        else:
            found.append(str(entry))
    return found


@pytest.mark.parametrize("lock", sorted(COMPILED))
def test_each_lock_is_stamped_with_the_current_dependency_tables(lock: str) -> None:
    """A lock carries the digest of pyproject.toml's dependency tables: a dependency change
    without ``make lock`` fails here (and in ``make test``'s check)."""
    assert lockfile.STAMP + lockfile.dependency_digest() in (LOCKS / lock).read_text("utf-8")


@pytest.mark.parametrize("lock", sorted(COMPILED))
def test_each_lock_satisfies_every_range_pyproject_declares(lock: str) -> None:
    """Every requirement of the project, its extras and the lock's groups that applies to
    this Python is pinned in the lock at a version inside its declared range."""
    if sys.version_info[:2] < LOWEST[lock]:
        pytest.skip(f"{lock} is resolved for Python {LOWEST[lock]} and later only")
    data = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    project = data["project"]
    wanted = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        wanted += [r for r in extra if not r.startswith("toolwire[")]
    for group in COMPILED[lock]:
        wanted += _group(data["dependency-groups"], group)
    pins = lockfile.locked(LOCKS / lock)
    for text in wanted:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = lockfile._normalise(requirement.name)
        assert name in pins, f"{lock} pins no {name} ({text})"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{lock} pins {name}=={pins[name]}, outside {text}"
        )


def test_the_check_reports_a_missing_a_drifted_and_an_unlocked_distribution(
    tmp_path: Path,
) -> None:
    """Against a lock that pins this venv exactly, less one distribution, plus one that is
    not installed, and with another at a different version, the check names all three."""
    installed = {
        lockfile._normalise(d.metadata["Name"]): d.version
        for d in importlib.metadata.distributions()
    }
    installed = {k: v for k, v in installed.items() if k not in lockfile.UNLOCKED}
    assert {"pytest", "hypothesis"} <= set(installed)
    lines = [lockfile.STAMP + lockfile.dependency_digest()]
    for name, version in sorted(installed.items()):
        if name == "hypothesis":
            continue  # installed, not locked
        lines.append(f"{name}=={'0.0.1' if name == 'pytest' else version}")
    lines.append("no-such-distribution==1.0 ; python_version >= '3'")
    lines.append("never-here==2.0 ; sys_platform == 'nowhere'")  # not for this platform
    lock = tmp_path / "lock.txt"
    lock.write_text("\n".join(lines) + "\n")
    found = lockfile.problems(lock)
    assert sorted(found) == sorted(
        [
            "missing: no-such-distribution==1.0",
            f"pytest: installed {installed['pytest']}, the lock names 0.0.1",
            f"not in the lock: hypothesis=={installed['hypothesis']}",
        ]
    )


def test_the_check_reports_a_stale_lock(tmp_path: Path) -> None:
    """A lock stamped from other dependency tables is reported, with the command to run."""
    lock = tmp_path / "lock.txt"
    lock.write_text(lockfile.STAMP + "0" * 64 + "\n")
    assert any("run `make lock`" in line for line in lockfile.problems(lock))


def test_the_venv_running_the_suite_matches_its_lock() -> None:
    """The venv running this suite holds exactly what its lock names (dev on the main
    Python, where the compare group is installed; test elsewhere)."""
    main_python = importlib.util.find_spec("litellm") is not None
    lock = LOCKS / ("dev.txt" if main_python else "test.txt")
    if not (Path(sys.prefix) / "pyvenv.cfg").exists():
        pytest.skip("not running in a venv")
    assert lockfile.problems(lock) == []


def test_the_readme_names_the_competitor_versions_the_lock_pins() -> None:
    """The comparison table's versions are the ones ``locks/dev.txt`` pins (major.minor),
    so the README says what was tested."""
    compare_latest = _script("compare_latest")
    pins = compare_latest.locked_versions()
    assert set(pins) == set(compare_latest.COMPETITORS)
    readme = (ROOT / "README.md").read_text("utf-8")
    tested = re.search(r"\(tested: ([^)]*)\)", readme)
    assert tested is not None
    named = dict(re.findall(r"([a-z][a-z-]+) (\d+\.\d+)", tested.group(1)))
    assert named == {name: ".".join(v.split(".")[:2]) for name, v in pins.items()}


def test_compare_latest_prints_the_claim_a_failing_test_makes(tmp_path: Path) -> None:
    """The collector of ``make compare-latest`` keeps a failed test's docstring (the claim)
    and its failure, and counts the claims that held."""
    (tmp_path / "test_claims.py").write_text(
        textwrap.dedent(
            '''
            def test_holds():
                """A claim that still holds."""

            def test_changed():
                """The SDK hands out a cut call as final."""
                assert 1 == 2, "it raises now"
            '''
        )
    )
    script = str(ROOT / "scripts" / "compare_latest.py")
    program = textwrap.dedent(
        f"""
        import importlib.util, sys, pytest
        spec = importlib.util.spec_from_file_location("c", {script!r})
        module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
        collector = module.ClaimCollector()
        pytest.main(["-q", "-p", "no:cacheprovider", {str(tmp_path)!r}], plugins=[collector])
        print("HELD", collector.held)
        for nodeid, claim, failure in collector.changed:
            print("CHANGED", claim, "|", failure)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert "HELD 1" in done.stdout, done.stdout + done.stderr
    assert "CHANGED The SDK hands out a cut call as final. | AssertionError: it raises now" in (
        done.stdout
    )


def test_markers_in_the_locks_are_ones_packaging_evaluates() -> None:
    """Every environment marker uv wrote parses, so the check never misreads a line."""
    for lock in COMPILED:
        for line in (LOCKS / lock).read_text("utf-8").splitlines():
            if ";" in line and not line.lstrip().startswith("#"):
                Marker(line.split(";", 1)[1].split(" #")[0]).evaluate()
