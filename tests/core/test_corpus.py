"""Conformance: all 51 recorded streams of ../shared/corpus give the results in
expected.json (read at test time, never copied), fed as payloads and as raw bytes split
anywhere, with identical events whatever the split."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from adapter_support import GeneralPathAssembler
from conftest import CORPUS_DIR, corpus_available, require
from corpus_support import (
    EXPECTED,
    FORMATS,
    NAMES,
    check_expected,
    outcome_key,
    run_bytes,
    run_payloads,
    stream_bytes,
    stream_payloads,
)
from toolwire import StreamAssembler, StreamError


def test_corpus_has_every_stream(corpus_dir: Path) -> None:
    """The corpus holds the 51 recordings that expected.json describes."""
    assert len(NAMES) == 51
    for name in NAMES:
        assert (corpus_dir / "streams" / name).is_file()


@pytest.mark.parametrize("name", NAMES)
def test_payloads_give_expected_result(corpus_dir: Path, name: str) -> None:
    """Each stream fed payload by payload (format auto-detected) gives its expected result."""
    _, outcome = run_payloads(name, stream_payloads(name))
    check_expected(name, outcome)


@pytest.mark.parametrize("name", NAMES)
def test_explicit_format_equals_auto(corpus_dir: Path, name: str) -> None:
    """Naming the format gives the same events and result as detecting it."""
    payloads = stream_payloads(name)
    fmt = FORMATS[EXPECTED[name]["api_format"]]
    auto = run_payloads(name, payloads)
    named = run_payloads(name, payloads, fmt)
    assert auto[0] == named[0]
    assert outcome_key(auto[1]) == outcome_key(named[1])


@pytest.mark.parametrize("name", NAMES)
def test_json_strings_equal_dicts(corpus_dir: Path, name: str) -> None:
    """Feeding each payload as its JSON text gives the same events as feeding the dict."""
    payloads = stream_payloads(name)
    as_text = [(e, p if p == "[DONE]" else json.dumps(p)) for e, p in payloads]
    a, b = run_payloads(name, payloads), run_payloads(name, as_text)
    assert a[0] == b[0]
    assert outcome_key(a[1]) == outcome_key(b[1])


@pytest.mark.parametrize("name", NAMES)
def test_bytes_whole_and_byte_by_byte(corpus_dir: Path, name: str) -> None:
    """Raw bytes fed whole and one byte at a time give the payload path's events and result."""
    data = stream_bytes(name)
    ref_events, ref = run_payloads(name, stream_payloads(name))
    check_expected(name, ref)
    whole = run_bytes(data, [])
    single = run_bytes(data, list(range(1, len(data))))
    assert whole[0] == ref_events
    assert single[0] == ref_events
    assert outcome_key(whole[1]) == outcome_key(ref) == outcome_key(single[1])


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_bytes_at_random_splits(name: str, data: st.DataObject) -> None:
    """Raw bytes split at Hypothesis-chosen offsets give the same events and result."""
    require(corpus_available(), f"the recorded corpus is not at {CORPUS_DIR}")
    body = stream_bytes(name)
    cuts = data.draw(st.lists(st.integers(0, len(body)), max_size=40))
    ref_events, ref = run_payloads(name, stream_payloads(name))
    events, outcome = run_bytes(body, cuts)
    assert events == ref_events
    assert outcome_key(outcome) == outcome_key(ref)


@pytest.mark.parametrize("name", NAMES)
def test_previews_grow_monotonically_to_the_final_arguments(corpus_dir: Path, name: str) -> None:
    """Each call's preview, read at every fragment, only extends and ends at its arguments."""
    asm = StreamAssembler()
    last: dict[int, Any] = {}
    try:
        for event, payload in stream_payloads(name):
            for ev in asm.feed(payload, event=event):
                if isinstance(ev, toolwire.ToolCallArguments):
                    preview = ev.preview
                    if ev.key in last:
                        assert _is_prefix(last[ev.key], preview)
                    last[ev.key] = preview
        response = asm.close()
    except StreamError:
        return
    for call in response.tool_calls:
        if call.index in last:
            assert _is_prefix(last[call.index], call.arguments)
            assert last[call.index] == call.arguments


def _is_prefix(old: Any, new: Any) -> bool:
    """API.md §1's prefix order between two previews."""
    if old is toolwire.MISSING:
        return True
    if type(old) is not type(new):
        return False
    if isinstance(old, str):
        return new.startswith(old)
    if isinstance(old, list):
        return len(old) <= len(new) and all(
            _is_prefix(a, b) for a, b in zip(old, new, strict=False)
        )
    if isinstance(old, dict):
        return all(k in new and _is_prefix(v, new[k]) for k, v in old.items())
    return bool(old == new)


@pytest.mark.parametrize("name", NAMES)
def test_fast_paths_change_nothing(corpus_dir: Path, name: str) -> None:
    """With the fragment fast paths switched off, every stream gives the same events."""
    payloads = stream_payloads(name)
    fast = run_payloads(name, payloads)
    slow = run_payloads(name, payloads, make=GeneralPathAssembler)
    assert fast[0] == slow[0]
    assert outcome_key(fast[1]) == outcome_key(slow[1])
