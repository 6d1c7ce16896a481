"""The output estimator against the providers' own counts on the recorded corpus: had the
usage never arrived, toolwire's estimate would be this close (generous bounds; the figures
are printed by ``python -m benchmarks usage``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from usage_support import estimator_rows, summarise

pytestmark = pytest.mark.corpus


@pytest.fixture(autouse=True)
def heuristic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Measure the heuristic, the counter every machine has (tiktoken needs its cache)."""
    monkeypatch.setattr("toolwire.accounting.token_counting._tiktoken_counter", lambda model: None)
    monkeypatch.setattr("toolwire.accounting.token_counting._counters", {})


def test_most_recordings_report_usage_to_compare_with(corpus_dir: Path) -> None:
    """At least 40 recordings of 7 wire formats report their output tokens."""
    rows = estimator_rows(corpus_dir)
    assert len(rows) >= 40
    assert len({row.format for row in rows}) >= 6
    assert {row.method for row in rows} == {"heuristic"}


def test_the_estimate_is_close_to_the_reported_output(corpus_dir: Path) -> None:
    """Over recordings without hidden reasoning: mean error under 30%, summed tokens within
    25%, each format's mean under 60%, every recording within a factor of 4."""
    rows = estimator_rows(corpus_dir)
    summary = summarise(rows)
    assert summary["all"].mean < 0.30, summary["all"]
    assert summary["all"].aggregate < 0.25, summary["all"]
    for fmt, figures in summary.items():
        assert figures.mean < 0.60, (fmt, figures)
    for row in rows:
        if not row.hidden_reasoning:
            assert 0.25 <= row.estimated / row.reported <= 4, row


def test_hidden_reasoning_is_what_the_estimate_misses(corpus_dir: Path) -> None:
    """Where the count includes reasoning the stream never showed, the estimate is low:
    it can only count what arrived (documented)."""
    hidden = [row for row in estimator_rows(corpus_dir) if row.hidden_reasoning]
    assert hidden
    assert all(row.estimated < row.reported for row in hidden)
