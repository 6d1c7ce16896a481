"""Argument events name their call and say whether the preview changed; the assembler has a
preview-only mode; ``"openai"`` names the chat format."""

from __future__ import annotations

import copy
import itertools
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import toolwire
from toolwire import StreamAssembler, ToolCallArguments, ToolCallStarted, UsageError

_keys = st.text("abcxyz", min_size=1, max_size=4)
_scalars = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.text(max_size=12)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=10,
)
documents = st.dictionaries(_keys, _values, min_size=1, max_size=4)


def _chunks(fragments: list[str], name: str = "add") -> list[dict[str, Any]]:
    """OpenAI chat chunks carrying ``fragments`` as one call's arguments, then the finish."""
    out = []
    for i, text in enumerate(fragments):
        call: dict[str, Any] = {"index": 0, "function": {"arguments": text}}
        if i == 0:
            call.update(id="call_1", function={"name": name, "arguments": text})
        out.append({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    out.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return out


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


def _previews(asm: StreamAssembler, chunks: list[dict[str, Any]]) -> list[tuple[bool, Any]]:
    """(preview_changed, a copy of the preview) for every ToolCallArguments event."""
    seen = []
    for chunk in chunks:
        for ev in asm.feed(chunk):
            if isinstance(ev, ToolCallArguments):
                seen.append((ev.preview_changed, copy.deepcopy(ev.preview)))
    return seen


def test_argument_events_carry_the_call_id_and_name() -> None:
    """Every ToolCallArguments names its call as its ToolCallStarted did."""
    asm = StreamAssembler(format="openai-chat")
    events = [ev for chunk in _chunks(['{"a": 1', ', "b": 2}']) for ev in asm.feed(chunk)]
    started = [ev for ev in events if isinstance(ev, ToolCallStarted)]
    args = [ev for ev in events if isinstance(ev, ToolCallArguments)]
    assert [(ev.id, ev.name) for ev in started] == [("call_1", "add")]
    assert [(ev.id, ev.name) for ev in args] == [("call_1", "add")] * 2


def test_fragments_before_the_name_carry_it_once_it_is_known() -> None:
    """A call whose name arrives after its first fragments: those fragments come after its
    ToolCallStarted, carrying the name and the announced id."""
    asm = StreamAssembler(format="openai-chat")
    first = {"index": 0, "id": "call_9", "function": {"arguments": '{"a": '}}
    named = {"index": 0, "function": {"name": "add", "arguments": "1}"}}
    events = []
    for call in (first, named):
        events += asm.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assert isinstance(events[0], ToolCallStarted)
    args = [ev for ev in events if isinstance(ev, ToolCallArguments)]
    assert [(ev.id, ev.name, ev.delta) for ev in args] == [
        ("call_9", "add", '{"a": '),
        ("call_9", "add", "1}"),
    ]


def test_synthesised_ids_are_repeated_on_each_fragment() -> None:
    """Without a provider id the synthesised id of ToolCallStarted is on every fragment."""
    asm = StreamAssembler(format="ollama")
    line = {"model": "m", "done": False, "message": {"role": "assistant", "content": ""}}
    call = {"function": {"name": "add", "arguments": {"a": 1}}}
    events = asm.feed({**line, "message": {**line["message"], "tool_calls": [call]}})
    started = next(ev for ev in events if isinstance(ev, ToolCallStarted))
    args = [ev for ev in events if isinstance(ev, ToolCallArguments)]
    assert args and all(ev.id == started.id and ev.name == "add" for ev in args)


@given(documents, st.lists(st.integers(0, 10**4), max_size=12))
def test_preview_changed_is_exact_with_json_events(doc: dict[str, Any], cuts: list[int]) -> None:
    """With JSON events, preview_changed is True exactly when the preview differs from the
    previous fragment's (keys are unique here), whatever the split."""
    text = json.dumps(doc)
    seen = _previews(StreamAssembler(format="openai-chat"), _chunks(_split(text, cuts)))
    previous: Any = toolwire.MISSING
    for changed, preview in seen:
        assert changed == (preview != previous), (changed, previous, preview)
        previous = preview
    assert previous == doc


@given(documents, st.lists(st.integers(0, 10**4), max_size=12))
def test_preview_only_mode_never_reports_a_change_that_did_not_happen(
    doc: dict[str, Any], cuts: list[int]
) -> None:
    """Without JSON events, preview_changed False still guarantees an unchanged preview;
    previews, events and the final arguments are those of the default mode."""
    fragments = _split(json.dumps(doc), cuts)
    quiet = StreamAssembler(format="openai-chat", json_events=False)
    loud = StreamAssembler(format="openai-chat")
    seen = _previews(quiet, _chunks(fragments))
    assert [p for _, p in seen] == [p for _, p in _previews(loud, _chunks(fragments))]
    previous: Any = toolwire.MISSING
    for changed, preview in seen:
        if not changed:
            assert preview == previous
        previous = preview
    assert quiet.close().tool_calls == loud.close().tool_calls


def test_preview_only_mode_emits_no_json_events() -> None:
    """StreamAssembler(json_events=False) hands out argument events with empty json_events."""
    asm = StreamAssembler(format="openai-chat", json_events=False)
    events = [ev for chunk in _chunks(['{"a": [1, ', "2]}"]) for ev in asm.feed(chunk)]
    args = [ev for ev in events if isinstance(ev, ToolCallArguments)]
    assert [ev.json_events for ev in args] == [(), ()]
    assert args[-1].preview == {"a": [1, 2]}


def test_json_events_must_be_a_bool() -> None:
    """A json_events setting that is not a bool is a UsageError."""
    with pytest.raises(UsageError):
        StreamAssembler(json_events="no")  # type: ignore[arg-type]


def test_openai_is_an_alias_of_openai_chat() -> None:
    """format="openai" reads OpenAI chat chunks and reports the canonical name."""
    asm = StreamAssembler(format="openai")
    for chunk in _chunks(['{"a": 1}']):
        asm.feed(chunk)
    response = asm.close()
    assert asm.format == response.format == "openai-chat"
    assert response.tool_calls[0].arguments == {"a": 1}


def test_one_read_shares_its_last_preview_and_one_feed_each_has_its_own() -> None:
    """As the docs say: the events of one ``feed_bytes`` (one network read) show that
    read's last preview, their deltas their own; fed one payload at a time, each event's
    preview read before the next feed is its own."""
    chunks = _chunks(['{"city": "Ly', 'on", "days', '": 3}'])
    body = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
    asm = StreamAssembler(format="openai-chat")
    batch = [ev for ev in asm.feed_bytes(body) if isinstance(ev, ToolCallArguments)]
    assert [ev.delta for ev in batch] == ['{"city": "Ly', 'on", "days', '": 3}']
    assert [ev.preview for ev in batch] == [{"city": "Lyon", "days": 3}] * 3
    one_by_one = StreamAssembler(format="openai-chat")
    assert [preview for _changed, preview in _previews(one_by_one, chunks)] == [
        {"city": "Ly"},
        {"city": "Lyon"},
        {"city": "Lyon", "days": 3},
    ]


def test_argument_events_are_immutable_values_built_by_their_constructor() -> None:
    """A fed ToolCallArguments equals, hashes and prints like one built by its constructor
    from the same fields (the preview callables aside), and refuses assignment."""
    import dataclasses

    asm = StreamAssembler(format="openai-chat")
    events = [e for chunk in _chunks(['{"a":', ' "xy"}']) for e in asm.feed(chunk)]
    fed = next(ev for ev in events if isinstance(ev, ToolCallArguments))
    built = ToolCallArguments(
        key=fed.key,
        delta=fed.delta,
        json_events=fed.json_events,
        _preview=lambda: None,
        id=fed.id,
        name=fed.name,
        preview_changed=fed.preview_changed,
    )
    assert fed == built and hash(fed) == hash(built) and repr(fed) == repr(built)
    fields = (fed.key, fed.delta, fed.json_events, print, fed.id, fed.name, fed.preview_changed)
    assert ToolCallArguments(*fields) == built  # positionally too, in the same order
    assert repr(fed).startswith("ToolCallArguments(key=0, delta='{\"a\":', json_events=(")
    assert fed != ToolCallArguments(key=fed.key, delta="x", json_events=(), _preview=print)
    assert fed.preview == {"a": "xy"} and built.preview is None
    for name in ("key", "delta", "json_events", "id", "name", "preview_changed"):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(fed, name, None)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(fed, name)
    assert not hasattr(fed, "__dict__")
