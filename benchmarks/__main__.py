"""``python -m benchmarks [SUITE ...] [--quick]`` (``make bench``): every benchmark, with
ratios against the competitors measured in the same run. Options such as ``--quick`` are
left in ``sys.argv`` for the suites to read."""

from __future__ import annotations

import importlib
import sys

SUITES = [
    "benchmarks.partial_json",
    "benchmarks.structured",
    "benchmarks.assembly",
    "benchmarks.framing",
    "benchmarks.validation",
    "benchmarks.stores",
    "benchmarks.executor",
    "benchmarks.usage",
]


def main() -> int:
    """Run the chosen suites (all by default) one after the other."""
    chosen = [arg for arg in sys.argv[1:] if not arg.startswith("-")] or SUITES
    for name in chosen:
        module = importlib.import_module(name if "." in name else f"benchmarks.{name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
