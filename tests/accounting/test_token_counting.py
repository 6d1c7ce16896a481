"""Token counting in ``toolwire.accounting``: tiktoken where it knows the model and has the
encoding offline (never a download), the core's heuristic otherwise, and the counter that
``StreamAssembler`` hands the core for its estimates."""

from __future__ import annotations

import itertools
import json
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import StreamAssembler
from toolwire._core.assembler import Assembler
from toolwire._core.usage_estimate import heuristic_tokens
from toolwire._providers import FORMATS
from toolwire.accounting.token_counting import counter_for


@pytest.fixture(autouse=True)
def heuristic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count with the heuristic whatever tiktoken cache this machine has (a test that
    wants the real lookup undoes this)."""
    monkeypatch.setattr("toolwire.accounting.token_counting._tiktoken_counter", lambda model: None)
    monkeypatch.setattr("toolwire.accounting.token_counting._counters", {})


def test_estimate_tokens_is_public_and_refuses_what_is_not_text() -> None:
    """``toolwire.accounting.estimate_tokens`` counts a string, raises UsageError for
    anything else."""
    assert toolwire.accounting.estimate_tokens("hello world", model="gpt-4o") == 2
    assert toolwire.accounting.estimate_tokens("") == 0
    with pytest.raises(toolwire.UsageError):
        toolwire.accounting.estimate_tokens(b"bytes")  # type: ignore[arg-type]


# ----------------------------------------------------------------------- tiktoken


def test_tiktoken_is_used_when_its_encoding_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """An encoding already loaded in tiktoken counts a model it maps to, named as such."""
    pytest.importorskip("tiktoken")
    import tiktoken
    import tiktoken.registry

    monkeypatch.undo()  # the real tiktoken lookup, not the fixture's stand-in
    import toolwire.accounting.token_counting as counting

    # a byte-level encoding built in memory (one token per byte): no file, no network
    ranks = {bytes([i]): i for i in range(256)}
    encoding = tiktoken.Encoding(
        name="o200k_base", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "o200k_base", encoding)
    monkeypatch.setattr(counting, "_counters", {})
    count, method = counter_for("gpt-4o-2024-08-06")
    assert method == "tiktoken:o200k_base"
    assert count("héllo") == len("héllo".encode())
    assert toolwire.accounting.estimate_tokens("héllo", model="gpt-4o") == 6


def test_tiktoken_without_its_encoding_offline_falls_back_without_network(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """With an empty tiktoken cache the heuristic counts, and no download is attempted."""
    pytest.importorskip("tiktoken")
    import tiktoken.load
    import tiktoken.registry

    monkeypatch.undo()
    import toolwire.accounting.token_counting as counting

    def no_network(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("tiktoken tried to download an encoding")

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    for name in ("o200k_base", "cl100k_base"):
        if name in tiktoken.registry.ENCODINGS:
            monkeypatch.delitem(tiktoken.registry.ENCODINGS, name)
    monkeypatch.setattr(counting, "_counters", {})
    assert counter_for("gpt-4o")[1] == "heuristic"
    assert counter_for("claude-sonnet-4")[1] == "heuristic"  # not a model tiktoken knows


def test_without_tiktoken_installed_the_heuristic_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    """When tiktoken cannot be imported the heuristic counts every model."""
    monkeypatch.undo()
    import toolwire.accounting.token_counting as counting

    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import raises ImportError
    monkeypatch.setattr(counting, "_counters", {})
    assert counter_for("gpt-4o")[1] == "heuristic"


# ------------------------------------------------- the counter the core is handed


def _byte_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's ``o200k_base`` as an in-memory byte-level encoding (one token per byte),
    with the real lookup in place of the fixture's stand-in: no file, no network."""
    pytest.importorskip("tiktoken")
    import tiktoken
    import tiktoken.registry

    monkeypatch.undo()
    ranks = {bytes([i]): i for i in range(256)}
    encoding = tiktoken.Encoding(
        name="o200k_base", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )
    monkeypatch.setitem(tiktoken.registry.ENCODINGS, "o200k_base", encoding)
    monkeypatch.setattr("toolwire.accounting.token_counting._counters", {})


# a cut OpenAI chat stream of gpt-4o: its output is estimated at close()
_CUT = b"".join(
    f"data: {json.dumps(p)}\n\n".encode()
    for p in [
        {"id": "c", "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {}}]},
        {"id": "c", "choices": [{"index": 0, "delta": {"content": "Grüße aus Köln"}}]},
    ]
)


def _estimate(asm: Assembler, cuts: list[int]) -> tuple[int | None, str | None]:
    """The estimated output tokens and method of ``_CUT`` fed to ``asm`` between ``cuts``."""
    points = sorted({0, len(_CUT), *(min(c, len(_CUT)) for c in cuts)})
    for a, b in itertools.pairwise(points):
        asm.feed_bytes(_CUT[a:b])
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None and usage.estimated
    return usage.output_tokens, usage.estimate_method


def _check_counters_at(cuts: list[int]) -> None:
    """``StreamAssembler`` counts with tiktoken's byte encoding; the core ``Assembler``,
    never handed a counter, with the heuristic."""
    text = "Grüße aus Köln"
    assert _estimate(StreamAssembler(), cuts) == (len(text.encode()), "tiktoken:o200k_base")
    assert _estimate(Assembler(formats=FORMATS), cuts) == (heuristic_tokens(text), "heuristic")


def test_the_stream_assembler_counts_with_tiktoken_and_the_core_never_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fed whole and byte by byte, the estimate of a cut stream is tiktoken's through
    ``StreamAssembler`` and the heuristic through the bare core."""
    _byte_encoding(monkeypatch)
    _check_counters_at([])
    _check_counters_at(list(range(len(_CUT))))


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, 300), max_size=8))
def test_the_counters_are_the_same_at_any_split(
    monkeypatch: pytest.MonkeyPatch, cuts: list[int]
) -> None:
    """At any byte splits, the same counter and the same count."""
    _byte_encoding(monkeypatch)
    _check_counters_at(cuts)
