"""``python -m benchmarks [SUITE ...] [--quick] [--runs N]`` (``make bench``): every
benchmark, with ratios against the competitors measured in the same run. Options such as
``--quick`` are left in ``sys.argv`` for the suites to read. ``--runs N`` runs each suite N
times in fresh processes and prints its figures as min–max ranges, with the load average
(``make bench BENCH_ARGS="--runs 3"``; see ``benchmarks/runs.py``)."""

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
    argv = sys.argv[1:]
    runs = 1
    for i, arg in enumerate(argv):
        if arg == "--runs" and i + 1 < len(argv):
            runs = int(argv[i + 1])
            del argv[i : i + 2]
            break
        if arg.startswith("--runs="):
            runs = int(arg.partition("=")[2])
            del argv[i]
            break
    sys.argv[1:] = argv  # the suites read their options from sys.argv
    chosen = [arg for arg in argv if not arg.startswith("-")] or SUITES
    if runs > 1:
        from benchmarks.runs import run_suites

        options = [arg for arg in argv if arg.startswith("-")]
        return run_suites([n if "." in n else f"benchmarks.{n}" for n in chosen], options, runs)
    for name in chosen:
        module = importlib.import_module(name if "." in name else f"benchmarks.{name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
