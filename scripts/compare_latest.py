"""Run the competitor tests on the newest releases and print each README claim that changed.

``make compare-latest`` installs toolwire with every dependency group at the newest releases
into ``.venv-latest`` (ignoring ``locks/``), then runs this file with that venv's Python. It
runs the ``compare``-marked tests (``tests/competitors``) in-process and prints:

* each competitor's version in ``locks/dev.txt`` (what the README's table was tested on)
  beside the one installed here;
* for every test that fails here, the claim it makes (its docstring) and what happened
  instead. A test that passes on the locked version and fails on a newer one is a claim the
  newer release changed: better or worse, the README's cell and the test must follow it,
  and the lock must be refreshed (``make lock``; CONTRIBUTING.md).

Exit status: 0 when every claim still holds, 1 when one changed, 2 when the run broke.
Not part of ``make test`` or CI: it depends on what was released today.
"""

from __future__ import annotations

import importlib.metadata
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPETITORS = (
    "openai",
    "anthropic",
    "langchain-core",
    "langchain-openai",
    "litellm",
    "pydantic-ai-slim",
)


def locked_versions(lock: Path = ROOT / "locks" / "dev.txt") -> dict[str, str]:
    """The version ``lock`` pins for each competitor."""
    pins = {}
    for line in lock.read_text("utf-8").splitlines():
        match = re.match(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if match and match.group(1).lower() in COMPETITORS:
            pins[match.group(1).lower()] = match.group(2)
    return pins


class ClaimCollector:
    """A pytest plugin that keeps each failed test's claim (docstring) and failure."""

    def __init__(self) -> None:
        self.changed: list[tuple[str, str, str]] = []
        self.held = 0

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: Any) -> Any:
        outcome = yield
        report = outcome.get_result()
        if report.when != "call" and not report.failed:
            return
        if report.passed:
            self.held += 1
        elif report.failed:
            claim = " ".join((getattr(item, "obj", None).__doc__ or item.name).split())
            if call.excinfo is not None:
                error = call.excinfo.value
                lines = str(error).strip().splitlines() or [""]
                failure = f"{type(error).__name__}: {lines[0]}"
            else:
                failure = report.longreprtext.strip().splitlines()[-1]
            self.changed.append((item.nodeid, claim, failure[:300]))


def main() -> int:
    locked = locked_versions()
    print("competitor          locked     newest")
    for name in COMPETITORS:
        try:
            newest = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            newest = "not installed"
        mark = "" if newest == locked.get(name) else "   <- newer"
        print(f"{name:<19} {locked.get(name, '-'):<10} {newest}{mark}")
    collector = ClaimCollector()
    status = pytest.main(
        ["-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-m", "compare", "tests/competitors"],
        plugins=[collector],
    )
    print()
    if not collector.changed:
        print(f"every claim holds on the newest releases ({collector.held} tests)")
        return 0 if status == 0 else 2
    print(f"{len(collector.changed)} claim(s) changed on the newest releases:")
    for nodeid, claim, failure in collector.changed:
        print(f"\n- {nodeid}")
        print(textwrap.indent(textwrap.fill("claim: " + claim, 96), "    "))
        print(textwrap.indent(textwrap.fill("now:   " + failure, 96), "    "))
    return 1


if __name__ == "__main__":
    sys.exit(main())
