"""The parser on real recorded tool-call arguments (``../shared/corpus/expected.json``).

Every call whose ``arguments_raw`` is a non-empty string and ``arguments_valid_json`` is
true is fed whole, character by character and at random splits: ``close()`` must give the
recorded ``arguments`` and the previews must only grow. Skips without the corpus, fails
under ``CI=true``.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from test_partial_json import chunks_at, is_prefix

from conftest import load_expected, require
from toolwire import MISSING, PartialJSONParser

pytestmark = pytest.mark.corpus


def recorded_calls() -> list[tuple[str, str, Any]]:
    """(label, raw argument text, expected arguments) for every usable recorded call."""
    calls = []
    for name, entry in sorted(load_expected().items()):
        for i, call in enumerate(entry.get("tool_calls") or []):
            raw = call.get("arguments_raw")
            if isinstance(raw, str) and raw and call.get("arguments_valid_json"):
                calls.append((f"{name}#{i}", raw, call["arguments"]))
    return calls


def test_recorded_arguments_parse_to_expected_values_at_any_split() -> None:
    """Recorded argument strings, split anywhere, close to the recorded arguments."""
    calls = recorded_calls()
    require(bool(calls), "the recorded corpus (expected.json) is not available")
    rnd = random.Random(1234)
    for label, raw, expected in calls:
        splits = [[raw], list(raw)]
        for _ in range(20):
            cuts = [rnd.randrange(1, len(raw) + 1) for _ in range(rnd.randint(1, 12))]
            splits.append(chunks_at(raw, cuts))
        for pieces in splits:
            parser = PartialJSONParser()
            previous: Any = MISSING
            for piece in pieces:
                parser.feed(piece)
                snap = parser.snapshot()
                assert is_prefix(previous, snap), label
                previous = snap
            value = parser.close()
            assert value == expected, label
            assert is_prefix(previous, value), label
