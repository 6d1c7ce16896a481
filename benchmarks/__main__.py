"""``python -m benchmarks`` (``make bench``): every benchmark, ratios measured in one run."""

from __future__ import annotations

import importlib
import sys

SUITES = ["benchmarks.partial_json", "benchmarks.assembly"]


def main() -> int:
    chosen = sys.argv[1:] or SUITES
    for name in chosen:
        module = importlib.import_module(name if "." in name else f"benchmarks.{name}")
        module.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
