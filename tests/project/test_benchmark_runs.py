"""``python -m benchmarks --runs N`` merges the runs' tables: every figure becomes its
min–max range, text that differs is kept from every run, identical lines stay as they are."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

RUNS = Path(__file__).resolve().parents[2] / "benchmarks" / "runs.py"


@pytest.fixture(scope="module")
def runs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("benchmark_runs", RUNS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_figures_of_one_unit_become_ranges(runs: ModuleType) -> None:
    """Times, ratios and percentages in one unit: ``low–high`` with the unit once."""
    merged = runs.merge_lines(
        [
            "| **toolwire events** | 10.4 µs | 4.61 ms | mean 19% | 4.1× |",
            "| **toolwire events** | 11.9 µs | 4.70 ms | mean 21% | 3.9× |",
            "| **toolwire events** | 10.1 µs | 4.65 ms | mean 20% | 4.0× |",
        ]
    )
    assert (
        merged == "| **toolwire events** | 10.1–11.9 µs | 4.61–4.70 ms | mean 19–21% | 3.9–4.1× |"
    )


def test_times_in_different_units_are_ordered_by_their_value(runs: ModuleType) -> None:
    """``999.2 µs`` is less than ``1.40 ms``: each end keeps its own unit."""
    merged = runs.merge_lines(["| a | 1.40 ms |", "| a | 999.2 µs |", "| a | 1.36 ms |"])
    assert merged == "| a | 999.2 µs–1.40 ms |"


def test_thousands_separators_and_approximations_are_read(runs: ModuleType) -> None:
    """``≈1,224.1×`` is more than ``≈758.6×``; the ``≈`` stays in front."""
    merged = runs.merge_lines(["| ≈39.10 s (≈1,224.1×) |", "| ≈20.10 s (≈758.6×) |"])
    assert merged == "| ≈20.10–39.10 s (≈758.6–1,224.1×) |"


def test_labels_that_every_run_prints_alike_stay(runs: ModuleType) -> None:
    """Figures that are equal in every run (sizes, counts in labels) are not ranges."""
    merged = runs.merge_lines(
        [
            "| 46 KB, 5,366 deltas · OpenAI chat | 14.3 ms |",
            "| 46 KB, 5,366 deltas · OpenAI chat | 15.0 ms |",
        ]
    )
    assert merged == "| 46 KB, 5,366 deltas · OpenAI chat | 14.3–15.0 ms |"


def test_words_that_differ_are_shown_from_every_run(runs: ModuleType) -> None:
    """A verdict that changes between runs shows both (``met/missed``), never one of them."""
    merged = runs.merge_lines(["| escapes | 2.21× | missed |", "| escapes | 1.90× | met |"])
    assert merged == "| escapes | 1.90–2.21× | missed/met |"


def test_outputs_merge_line_by_line(runs: ModuleType) -> None:
    """Whole outputs merge line by line; a line only the longest run printed is kept."""
    first = "# table\n| x | 1.0 ms |\n"
    second = "# table\n| x | 2.0 ms |\nextra line\n"
    assert runs.merge_outputs([first, second]) == "# table\n| x | 1.0–2.0 ms |\nextra line\n"
