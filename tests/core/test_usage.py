"""Usage on every exit: reported counts kept, the output no report covered estimated and
flagged, the token estimator, and the StreamError message that says so."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import StreamAssembler, Usage, UsageReported
from toolwire._core.assembler import Assembler
from toolwire._core.usage_estimate import CALL_OVERHEAD, estimate_output, heuristic_tokens
from toolwire._providers import FORMATS
from usage_turns_support import ANTHROPIC_SEARCH_TURN

# ------------------------------------------------------------------------- helpers


def chat(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    """One OpenAI chat chunk."""
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4o-2024-08-06",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


def call(args: str, name: str | None = "write_file", index: int = 0) -> dict[str, Any]:
    """A tool-call delta (the id and name on the first fragment only)."""
    entry: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if name is not None:
        entry["id"] = f"call_{index}"
        entry["function"]["name"] = name
    return {"tool_calls": [entry]}


def anthropic_start(input_tokens: int = 450, output_tokens: int = 1) -> dict[str, Any]:
    """Anthropic's message_start with its up-front usage."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    return {
        "type": "message_start",
        "message": {"id": "msg_1", "model": "claude-sonnet-4-20250514", "usage": usage},
    }


def anthropic_text(text: str) -> list[dict[str, Any]]:
    """A text block with one delta."""
    return [
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
    ]


@pytest.fixture(autouse=True)
def heuristic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count with the heuristic whatever tiktoken cache this machine has, so the figures
    below are the same everywhere."""
    monkeypatch.setattr("toolwire.accounting.token_counting._tiktoken_counter", lambda model: None)
    monkeypatch.setattr("toolwire.accounting.token_counting._counters", {})


# ------------------------------------------------------------------- the estimator


def test_the_heuristic_counts_words_numbers_and_punctuation() -> None:
    """Short words, digit groups and punctuation runs are about one token each."""
    assert heuristic_tokens("") == 0
    assert heuristic_tokens("hello world") == 2
    assert heuristic_tokens('{"location": "Paris"}') == 6  # {"  location  ":  "  Paris  "}
    assert heuristic_tokens("1234567") == 3  # 123 456 7
    assert heuristic_tokens("Internationalization") == 3  # 8 + 8 + 4 letters


def test_the_heuristic_counts_scripts_differently() -> None:
    """A CJK character is about a token; Cyrillic costs about one token per three letters."""
    assert heuristic_tokens("東京都の天気") == 6
    assert heuristic_tokens("Привет") == 2


@given(st.text(max_size=300))
def test_the_heuristic_never_exceeds_the_characters(text: str) -> None:
    """No text counts more tokens than it has characters."""
    assert 0 <= heuristic_tokens(text) <= len(text)


def test_huge_texts_are_sampled_deterministically_and_close_to_exact() -> None:
    """Above 8,192 characters the count comes from windows, within 5% of the exact one."""
    import toolwire._core.usage_estimate as estimate

    text = ('{"path": "src/app.py", "content": "def main():\\n    return 42\\n"}, ' * 6000)[
        :400_000
    ]
    sampled = heuristic_tokens(text)
    exact = len(estimate._PIECES.findall(text))
    assert sampled == heuristic_tokens(text)
    assert abs(sampled - exact) / exact < 0.05


def test_an_output_estimate_charges_each_call_its_framing() -> None:
    """Each new call costs its format's overhead, parallel calls the wrapper once."""
    per_call, parallel = CALL_OVERHEAD["openai-chat"]
    one = estimate_output(
        format="openai-chat",
        model=None,
        text="",
        reasoning="",
        new_calls=[("f", "{}")],
        more_arguments=[],
        calls_in_response=1,
    )
    two = estimate_output(
        format="openai-chat",
        model=None,
        text="",
        reasoning="",
        new_calls=[("f", "{}"), ("f", "{}")],
        more_arguments=[],
        calls_in_response=2,
    )
    assert one.output == per_call + 2 and one.method == "heuristic"
    assert two.output == 2 * one.output + parallel


def test_gemini_reasoning_is_estimated_apart_from_the_output() -> None:
    """Where the format counts reasoning apart (Gemini), estimated reasoning stays apart."""
    gemini = estimate_output(
        format="gemini",
        model=None,
        text="hi",
        reasoning="thinking hard",
        new_calls=[],
        more_arguments=[],
        calls_in_response=0,
    )
    chat_ = estimate_output(
        format="openai-chat",
        model=None,
        text="hi",
        reasoning="thinking hard",
        new_calls=[],
        more_arguments=[],
        calls_in_response=0,
    )
    assert (gemini.output, gemini.reasoning) == (1, 2)
    assert (chat_.output, chat_.reasoning) == (3, 0)


# ------------------------------------------------------------- usage in the assembler


def test_a_response_without_usage_gets_an_estimate_flagged() -> None:
    """A stream that never reported usage finishes with an estimated output count."""
    asm = StreamAssembler()
    asm.feed(chat({"content": "Writing it."}))
    asm.feed(chat(call('{"path": "a.py"}')))
    asm.feed(chat({}, finish="tool_calls"))
    usage = asm.close().usage
    assert usage is not None and usage.estimated
    assert usage.input_tokens is None and usage.total_tokens is None
    assert usage.estimated_fields == ("output_tokens",)
    assert usage.output_tokens == usage.estimated_tokens > CALL_OVERHEAD["openai-chat"][0]
    assert usage.estimate_method == "heuristic" and usage.format == "openai-chat"


def test_the_core_counts_with_the_counter_it_is_handed() -> None:
    """The core ``Assembler`` asks the ``counter_for`` it was handed for the stream's
    model and names its method; fed whole and byte by byte, the same estimate."""
    payloads = [
        chat({"content": "Writing it."}),
        chat(call('{"path": "a.py"}')),
        chat({}, finish="tool_calls"),
    ]
    body = _sse(payloads)
    per_call, _ = CALL_OVERHEAD["openai-chat"]
    expected = len("Writing it.") + per_call + len("write_file") + len('{"path": "a.py"}')
    asked: list[str | None] = []

    def chars(model: str | None) -> tuple[Callable[[str], int], str]:
        asked.append(model)
        return len, "chars"

    for pieces in ([body], [body[i : i + 1] for i in range(len(body))]):
        asm = Assembler(formats=FORMATS, counter_for=chars)
        for piece in pieces:
            asm.feed_bytes(piece)
        usage = asm.close().usage
        assert usage is not None and usage.estimated
        assert (usage.output_tokens, usage.estimate_method) == (expected, "chars")
    assert asked == ["gpt-4o-2024-08-06"] * 2


def test_a_final_report_after_the_content_is_not_estimated() -> None:
    """Usage reported after all the content is the provider's, unflagged and unchanged."""
    asm = StreamAssembler()
    asm.feed(chat({"content": "Hello"}, finish="stop"))
    report = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
    asm.feed({"id": "chatcmpl-1", "choices": [], "usage": report})
    usage = asm.close().usage
    assert usage is not None and not usage.estimated and usage.estimated_tokens == 0
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (9, 2, 11)
    assert usage.estimate_method is None and dict(usage.raw) == report


def test_a_running_count_is_extended_by_the_content_after_it() -> None:
    """Anthropic's up-front output count stays, and the text after it is added, flagged."""
    asm = StreamAssembler()
    asm.feed(anthropic_start(450, 1))
    for payload in anthropic_text("The quarterly report is attached below."):
        asm.feed(payload)
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    partial = info.value.partial
    assert partial is not None and partial.usage is not None
    usage = partial.usage
    assert usage.input_tokens == 450 and usage.raw["input_tokens"] == 450
    assert usage.output_tokens == 1 + usage.estimated_tokens
    assert usage.estimated_tokens == heuristic_tokens("The quarterly report is attached below.")
    assert usage.estimated and usage.estimated_fields == ("output_tokens",)


def test_content_in_the_same_payload_as_a_running_count_is_covered_by_it() -> None:
    """A chunk's own text is in the count it carries (Gemini, vLLM): nothing is estimated."""
    asm = StreamAssembler(format="gemini")
    for i, text in enumerate(["The answer ", "is 42."]):
        asm.feed(
            {
                "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}}],
                "usageMetadata": {"promptTokenCount": 5, "candidatesTokenCount": 2 + 2 * i},
                "modelVersion": "gemini-2.5-flash",
            }
        )
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None and not usage.estimated
    assert (usage.input_tokens, usage.output_tokens) == (5, 4)


def test_calls_begun_before_a_report_are_charged_only_their_new_arguments() -> None:
    """A call open at the last report costs only the argument text that arrived since."""
    asm = StreamAssembler()
    asm.feed(chat(call('{"path": ')))
    asm.feed({"id": "chatcmpl-1", "choices": [], "usage": {"completion_tokens": 10}})
    asm.feed(chat(call('"notes.md"}', name=None)))
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None
    assert usage.estimated_tokens == heuristic_tokens('"notes.md"}')
    assert usage.output_tokens == 10 + usage.estimated_tokens


def test_a_reported_total_is_extended_and_flagged_too() -> None:
    """A reported total grows by the estimate, and says so."""
    asm = StreamAssembler()
    report = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    asm.feed({"id": "chatcmpl-1", "choices": [], "usage": report})
    asm.feed(chat({"content": "Hello there"}))
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None and usage.estimated_fields == ("output_tokens", "total_tokens")
    assert usage.total_tokens == 10 + usage.estimated_tokens


def test_usage_reported_events_carry_reports_only() -> None:
    """UsageReported events show what the provider said; estimates appear only at the end."""
    asm = StreamAssembler()
    asm.feed(anthropic_start(450, 1))
    events = [e for p in anthropic_text("Hello") for e in asm.feed(p)]
    assert not [e for e in events if isinstance(e, UsageReported)]
    assert asm.partial().usage is not None and asm.partial().usage.estimated  # type: ignore[union-attr]


def test_an_empty_stream_still_carries_usage() -> None:
    """A stream cut before any content reports zero estimated output, input unknown."""
    with pytest.raises(toolwire.StreamAborted) as info:
        StreamAssembler().close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage == Usage(
        output_tokens=0,
        estimated=True,
        estimated_fields=("output_tokens",),
        estimate_method="heuristic",
    )


def test_a_report_repeating_every_key_is_kept_without_a_copy() -> None:
    """Successive full reports do not copy the merged raw dict; partial reports merge."""
    asm = StreamAssembler()
    (first,) = asm.feed({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}})
    (second,) = asm.feed({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2}})
    (third,) = asm.feed({"choices": [], "usage": {"completion_tokens": 3}})
    assert first.usage.raw is not second.usage.raw  # type: ignore[attr-defined]
    assert dict(second.usage.raw) == {"prompt_tokens": 1, "completion_tokens": 2}  # type: ignore[attr-defined]
    assert dict(third.usage.raw) == {"prompt_tokens": 1, "completion_tokens": 3}  # type: ignore[attr-defined]
    (fourth,) = asm.feed({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 4}})
    assert fourth.usage.raw["completion_tokens"] == 4  # type: ignore[attr-defined]
    assert third.usage.raw["completion_tokens"] == 3  # type: ignore[attr-defined]


# ------------------------------------------------------------------ the properties


_PIECES = st.lists(
    st.sampled_from(
        [
            ("text", "Hello "),
            ("text", "東京 "),
            ("args", '{"a": '),
            ("args", '"x"}'),
            ("usage", 3),
            ("usage", 7),
        ]
    ),
    max_size=12,
)


@given(_PIECES)
def test_estimates_never_override_reported_counts(pieces: list[tuple[str, Any]]) -> None:
    """Whatever the order of content and reports, the output is the last reported count
    plus the estimate of the content after it, and the input stays as reported."""
    asm = StreamAssembler(format="openai-chat")
    last: int | None = None
    opened = False
    for kind, value in pieces:
        if kind == "text":
            asm.feed(chat({"content": value}))
        elif kind == "args":
            asm.feed(chat(call(value, name=None if opened else "f")))
            opened = True
        else:
            asm.feed({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": value}})
            last = value
    partial = asm.partial()
    usage = partial.usage
    assert usage is not None
    if last is not None:
        assert usage.input_tokens == 5
        assert usage.output_tokens is not None and usage.output_tokens >= last
        assert usage.output_tokens - usage.estimated_tokens == last
    else:
        assert usage.input_tokens is None
        assert usage.output_tokens == usage.estimated_tokens
    assert usage.estimated == bool(usage.estimated_fields)


# ---------------------------------------------------------------- the error message


def test_an_aborted_stream_s_message_gives_its_usage_and_says_the_meter_runs() -> None:
    """A cut stream's message gives the usage so far and warns that the meter runs on."""
    asm = StreamAssembler()
    asm.feed(anthropic_start(450, 1))
    for payload in anthropic_text("Hello there"):
        asm.feed(payload)
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    text = str(info.value)
    assert text.startswith("the stream ended without its terminal event (usage so far:")
    assert "input 450, output ~" in text and "estimated" in text
    assert "closing a stream does not stop the provider's meter" in text
    assert repr(info.value).startswith("StreamAborted('the stream ended")


def test_a_token_limit_message_gives_the_usage_without_the_meter_warning() -> None:
    """A stream the provider ended itself reports its usage, with no meter warning."""
    asm = StreamAssembler()
    asm.feed(chat({"content": "Hel"}, finish="length"))
    asm.feed({"choices": [], "usage": {"prompt_tokens": 4, "completion_tokens": 1}})
    with pytest.raises(toolwire.TokenLimitExceeded) as info:
        asm.close()
    assert str(info.value).endswith("(usage so far: input 4, output 1)")


# ------------------------------------------------------ provider counts beyond tokens

# A Gemini response that used a built-in tool (usageMetadata as the API reference shows it).
GEMINI_TOOL_TURN: list[dict[str, Any]] = [
    {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "Sunny"}]}, "index": 0}],
        "modelVersion": "gemini-2.5-flash",
    },
    {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "."}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {
            "promptTokenCount": 120,
            "toolUsePromptTokenCount": 80,
            "candidatesTokenCount": 30,
            "thoughtsTokenCount": 10,
            "totalTokenCount": 240,
        },
        "modelVersion": "gemini-2.5-flash",
    },
]


def _sse(payloads: list[dict[str, Any]]) -> bytes:
    return b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads)


def _usage_fed(payloads: list[dict[str, Any]], cuts: list[int] | None) -> Usage:
    """The usage of ``payloads`` fed as dicts (``cuts`` ``None``) or as an SSE body cut at
    ``cuts``."""
    asm = StreamAssembler()
    if cuts is None:
        for payload in payloads:
            asm.feed(payload)
    else:
        body = _sse(payloads)
        points = sorted({0, len(body), *(min(c, len(body)) for c in cuts)})
        for a, b in itertools.pairwise(points):
            asm.feed_bytes(body[a:b])
        asm.feed_eof()
    usage = asm.close().usage
    assert usage is not None
    return usage


def _every_way(payloads: list[dict[str, Any]]) -> list[Usage]:
    length = len(_sse(payloads))
    return [_usage_fed(payloads, cuts) for cuts in (None, [], list(range(length)))]


def test_anthropic_one_hour_cache_writes_and_web_searches_reach_the_usage() -> None:
    """The 1-hour cache writes and the web searches survive the stream's merge, fed whole
    and byte by byte."""
    for usage in _every_way(ANTHROPIC_SEARCH_TURN):
        assert (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (3000, 2000)
        assert usage.web_search_requests == 2
        assert (usage.input_tokens, usage.output_tokens) == (50, 120)
        assert usage.all_input_tokens == 3050


def test_gemini_tool_use_prompt_tokens_are_input() -> None:
    """toolUsePromptTokenCount counts as input, so input + output is the reported total."""
    for usage in _every_way(GEMINI_TOOL_TURN):
        assert (usage.input_tokens, usage.all_input_tokens) == (200, 200)
        assert usage.all_output_tokens == 40
        assert usage.all_input_tokens + usage.all_output_tokens == usage.total_tokens == 240


@settings(max_examples=50)
@given(cuts=st.lists(st.integers(0, 2000), max_size=8))
def test_provider_counts_are_the_same_at_any_split(cuts: list[int]) -> None:
    """Whatever the byte splits, the extra counts are the same."""
    anthropic = _usage_fed(ANTHROPIC_SEARCH_TURN, cuts)
    assert (anthropic.cache_write_1h_tokens, anthropic.web_search_requests) == (2000, 2)
    assert _usage_fed(GEMINI_TOOL_TURN, cuts).input_tokens == 200


def test_a_usage_built_by_hand_keeps_its_own_counts() -> None:
    """Counts given to Usage win over its raw report; a raw report fills the missing ones."""
    raw = {"cache_creation": {"ephemeral_1h_input_tokens": 9}, "server_tool_use": {}}
    assert Usage(cache_write_1h_tokens=4, raw=raw).cache_write_1h_tokens == 4
    filled = Usage(raw=raw)
    assert (filled.cache_write_1h_tokens, filled.web_search_requests) == (9, None)
