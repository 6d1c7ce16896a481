"""Price tables, costs read the same way for every provider, and the ledger that sums a
conversation's turns, aborted ones included."""

from __future__ import annotations

import functools
import inspect
import itertools
import json
import math
import subprocess
import sys
import threading
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import SettingsError, StreamAssembler, Usage
from toolwire._core.assembler import Assembler
from toolwire.accounting import ModelPrice, Prices, UsageLedger

PRICES = Prices(
    {
        "gpt-4o": ModelPrice(input=2.5, output=10, cache_read=1.25),
        "gpt-4o-mini": ModelPrice(input=0.15, output=0.6),
        "claude-sonnet-4": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
        "gemini-2.5-flash": ModelPrice(input=0.3, output=2.5),
        "*/llama-3.3-70b*": ModelPrice(input=0.6, output=0.6),
        "*llama*": ModelPrice(input=9, output=9),
    }
)


@pytest.fixture(autouse=True)
def heuristic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count estimates with the heuristic whatever tiktoken cache this machine has."""
    monkeypatch.setattr("toolwire.accounting.token_counting._tiktoken_counter", lambda model: None)
    monkeypatch.setattr("toolwire.accounting.token_counting._counters", {})


# ------------------------------------------------------------------------- matching


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("claude-sonnet-4-20250514", "claude-sonnet-4"),
        ("claude-sonnet-4-latest", "claude-sonnet-4"),
        ("claude-sonnet-4@20250514", "claude-sonnet-4"),
        ("groq/llama-3.3-70b-versatile", "*/llama-3.3-70b*"),
        ("llama3.2:3b", "*llama*"),
        ("gpt-4o-audio-preview", None),
        ("gpt-4", None),
        ("claude-sonnet-4-5", None),
        ("", None),
        (None, None),
    ],
)
def test_models_match_exactly_by_snapshot_or_by_pattern(model: str | None, key: str | None) -> None:
    """Exact names, then date/version snapshots of a name, then patterns in order."""
    found = PRICES.match(model)
    assert (found[0] if found else None) == key


def test_a_name_never_prices_another_model_that_extends_it() -> None:
    """``gpt-4o`` alone prices snapshots of gpt-4o, never ``gpt-4o-mini``."""
    alone = Prices({"gpt-4o": ModelPrice(input=2.5, output=10)})
    assert alone.match("gpt-4o-mini") is None
    assert alone.match("gpt-4o-2024-11-20") is not None
    assert alone.match("gpt-4o-0613") is not None
    assert alone.match("anthropic.gpt-4o") is None


def test_bedrock_ids_match_by_their_version_suffix() -> None:
    """Bedrock's ``...-20240620-v1:0`` is a snapshot of the name before it."""
    table = Prices({"anthropic.claude-3-5-sonnet": ModelPrice(input=3, output=15)})
    assert table.match("anthropic.claude-3-5-sonnet-20240620-v1:0") is not None


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"m": ModelPrice(input=1, output=1)}, None),
        ({"": ModelPrice(input=1, output=1)}, "non-empty"),
        ({"m": {"input": 1}}, "lacks output"),
        ({"m": {"input": 1, "output": 1, "extra": 2}}, "unknown fields"),
        ({"m": 3.0}, "ModelPrice or a mapping"),
        ({"m": {"input": -1, "output": 1}}, ">= 0"),
        ({"m": {"input": float("nan"), "output": 1}}, ">= 0"),
        ({"m": {"input": True, "output": 1}}, "must be a number"),
        ({"m": {"input": "1", "output": 1}}, "must be a number"),
    ],
)
def test_bad_tables_raise_settings_errors(table: dict[str, Any], fragment: str | None) -> None:
    """A table toolwire cannot use raises SettingsError (a UsageError), saying why."""
    if fragment is None:
        Prices(table)
        return
    with pytest.raises(SettingsError, match=fragment) as info:
        Prices(table)
    assert isinstance(info.value, toolwire.UsageError) and isinstance(info.value, ValueError)


def test_prices_arguments_are_checked() -> None:
    """A dict where a Prices is expected, a non-mapping table or a bad currency raise."""
    with pytest.raises(SettingsError, match="wrap a dict"):
        StreamAssembler(prices={"gpt-4o": ModelPrice(input=1, output=1)})  # type: ignore[arg-type]
    with pytest.raises(SettingsError):
        Prices([("m", ModelPrice(input=1, output=1))])  # type: ignore[arg-type]
    with pytest.raises(SettingsError):
        Prices({}, currency="")
    with pytest.raises(SettingsError):
        PRICES.cost({"input_tokens": 1})  # type: ignore[arg-type]
    assert repr(PRICES) == "Prices(6 models, USD)"


# ------------------------------------------------------------------------------ cost


def test_cost_prices_uncached_input_cache_and_output() -> None:
    """OpenAI counts cached tokens inside the input: they are priced once, at cache_read."""
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=400_000)
    cost = PRICES.cost(usage, "gpt-4o-2024-08-06")
    assert cost is not None
    assert (cost.input, cost.cache_read, cost.output) == (1.5, 0.5, 1.0)
    assert cost.total == 3.0 and cost.currency == "USD" and cost.model == "gpt-4o"
    assert not cost.estimated and cost.missing == ()


def test_anthropic_and_openai_readings_of_the_same_traffic_cost_the_same() -> None:
    """Anthropic leaves the cache out of input_tokens; the cost reads both the same way."""
    table = Prices({"m": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75)})
    openai_like = Usage(
        input_tokens=1000, output_tokens=50, cache_read_tokens=600, cache_write_tokens=100
    )
    anthropic = Usage(
        input_tokens=300,
        output_tokens=50,
        cache_read_tokens=600,
        cache_write_tokens=100,
        format="anthropic",
    )
    assert openai_like.all_input_tokens == anthropic.all_input_tokens == 1000
    assert openai_like.uncached_input_tokens == anthropic.uncached_input_tokens == 300
    assert table.cost(openai_like, "m") == table.cost(anthropic, "m")


def test_reasoning_counted_apart_is_priced_as_output() -> None:
    """Gemini's thoughts and xAI's reasoning (told by its total) are output to pay for."""
    gemini = Usage(input_tokens=10, output_tokens=5, reasoning_tokens=20, format="gemini")
    xai = Usage(
        input_tokens=291,
        output_tokens=26,
        total_tokens=513,
        reasoning_tokens=196,
        cache_read_tokens=290,
        format="openai-chat",
    )
    openai = Usage(input_tokens=10, output_tokens=25, total_tokens=35, reasoning_tokens=20)
    assert gemini.all_output_tokens == 25
    assert xai.all_output_tokens == 222 and xai.all_input_tokens == 291
    assert openai.all_output_tokens == 25


def test_a_bedrock_total_tells_how_its_cache_is_counted() -> None:
    """A total that includes the cache besides the input means the input left it out."""
    apart = Usage(input_tokens=10, output_tokens=5, total_tokens=115, cache_read_tokens=100)
    inside = Usage(input_tokens=110, output_tokens=5, total_tokens=115, cache_read_tokens=100)
    assert apart.all_input_tokens == inside.all_input_tokens == 110


def test_missing_counts_are_named_and_the_cost_is_a_lower_bound() -> None:
    """Without reported input the cost covers the output only and says what is missing."""
    usage = Usage(output_tokens=1_000_000, estimated=True, estimated_tokens=1_000_000)
    cost = PRICES.cost(usage, "gpt-4o")
    assert cost is not None and cost.total == 10.0
    assert cost.missing == ("input_tokens",) and cost.estimated
    assert PRICES.cost(usage, "unknown-model") is None
    assert PRICES.priced(usage, "unknown-model") is usage


@given(
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
)
def test_cost_is_non_negative_and_adds_up(inputs: int, output: int, read: int, write: int) -> None:
    """Every part is >= 0 and the total is their sum, whatever the counts."""
    usage = Usage(
        input_tokens=inputs,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        format="anthropic",
    )
    cost = PRICES.cost(usage, "claude-sonnet-4")
    assert cost is not None
    parts = (cost.input, cost.output, cost.cache_read, cost.cache_write)
    assert all(p >= 0 for p in parts)
    assert math.isclose(cost.total, math.fsum(parts))


# ------------------------------------------------------------- priced by the assembler


def _openai_stream(report: bool) -> StreamAssembler:
    asm = StreamAssembler(prices=PRICES)
    asm.feed({"id": "c", "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {}}]})
    asm.feed({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hello there"}}]})
    if report:
        asm.feed(
            {
                "id": "c",
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            }
        )
        asm.feed(
            {"id": "c", "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 2}}
        )
    return asm


def test_the_assembler_prices_a_finished_response() -> None:
    """``StreamAssembler(prices=...)`` sets the response's usage.cost."""
    usage = _openai_stream(report=True).close().usage
    assert usage is not None and usage.cost is not None
    assert usage.cost.model == "gpt-4o" and usage.cost.total == pytest.approx(0.00252)


def test_the_assembler_prices_an_aborted_stream_from_its_estimate() -> None:
    """A cut stream's partial is priced from the estimated output, flagged as such."""
    with pytest.raises(toolwire.StreamAborted) as info:
        _openai_stream(report=False).close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None and usage.cost is not None
    assert usage.cost.estimated and usage.cost.missing == ("input_tokens",)
    assert usage.cost.total == pytest.approx(usage.output_tokens * 10 / 1e6)  # type: ignore[operator]
    assert ", cost >= " in str(info.value)


# ------------------------------------------------------ priced above the core assembler

_CHAT_TURN: list[dict[str, Any]] = [
    {"id": "c", "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"content": "Hello there, "}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {"content": "how can I help?"}}]},
    {"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    {"id": "c", "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 7}},
]


def _usage_of(asm: StreamAssembler, body: bytes, cuts: list[int]) -> Usage:
    """The usage of the response, or of the error's partial, of ``body`` fed to ``asm``
    in the pieces between ``cuts``."""
    points = sorted({0, len(body), *(min(c, len(body)) for c in cuts)})
    try:
        for a, b in itertools.pairwise(points):
            asm.feed_bytes(body[a:b])
        usage = asm.close().usage
    except toolwire.StreamError as exc:
        assert exc.partial is not None
        usage = exc.partial.usage
    assert usage is not None
    return usage


def _check_priced_at(cuts: list[int]) -> None:
    """A finished and a cut turn fed in the pieces between ``cuts``: priced, the usage is
    the unpriced one with its cost, the table's cost of that usage."""
    for payloads in (_CHAT_TURN, _CHAT_TURN[:3]):
        body = b"".join(f"data: {json.dumps(p)}\n\n".encode() for p in payloads)
        plain = _usage_of(StreamAssembler(), body, cuts)
        priced = _usage_of(StreamAssembler(prices=PRICES), body, cuts)
        assert plain.cost is None and priced.cost is not None
        assert priced == replace(plain, cost=PRICES.cost(plain, "gpt-4o-2024-08-06"))
        assert priced.cost.estimated == (payloads is not _CHAT_TURN)


def test_costs_are_the_same_fed_whole_and_byte_by_byte() -> None:
    """Fed whole or byte by byte, a finished and a cut stream cost what the table says of
    their usage, and nothing else of the usage changes."""
    _check_priced_at([])
    _check_priced_at(list(range(2_000)))


@settings(max_examples=50)
@given(cuts=st.lists(st.integers(0, 600), max_size=8))
def test_costs_are_the_same_at_any_split(cuts: list[int]) -> None:
    """At any byte splits, the cost is the table's cost of the unpriced usage."""
    _check_priced_at(cuts)


def test_the_core_assembler_takes_no_prices_and_the_stream_assembler_keeps_them() -> None:
    """Pricing is above the core: ``Assembler`` has no ``prices=``, ``StreamAssembler``
    still takes it (default ``None``)."""
    assert "prices" not in inspect.signature(Assembler).parameters
    assert inspect.signature(StreamAssembler).parameters["prices"].default is None


def test_an_error_raised_while_feeding_carries_a_priced_partial() -> None:
    """A limit hit inside ``feed`` raises with a priced, estimated partial; ``close()``
    raises the same error with the same partial."""
    asm = StreamAssembler(prices=PRICES, max_tool_calls=1)
    asm.feed(_CHAT_TURN[0])
    calls = [
        {"index": i, "id": f"call_{i}", "function": {"name": "f", "arguments": "{}"}}
        for i in range(2)
    ]
    with pytest.raises(toolwire.StreamLimitExceeded) as info:
        asm.feed({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": calls}}]})
    partial = info.value.partial
    assert partial is not None and partial.usage is not None
    assert partial.usage.cost is not None and partial.usage.cost.estimated
    with pytest.raises(toolwire.StreamLimitExceeded) as again:
        asm.close()
    assert again.value is info.value and again.value.partial is partial


def test_a_priced_response_is_priced_once_and_keeps_its_structured_output() -> None:
    """With ``prices=`` and ``output=``, the response has both its cost and its output,
    and every ``close()`` returns that same response."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    asm = StreamAssembler(prices=PRICES, output=schema)
    asm.feed(_CHAT_TURN[0])
    asm.feed({"id": "c", "choices": [{"index": 0, "delta": {"content": '{"a": 1}'}}]})
    for payload in _CHAT_TURN[3:]:
        asm.feed(payload)
    response = asm.close()
    assert response.output == {"a": 1}
    assert response.usage is not None and response.usage.cost is not None
    assert response.usage.cost.total == pytest.approx((1000 * 2.5 + 7 * 10) / 1e6)
    assert asm.close() is response


def test_stream_prices_a_cut_stream() -> None:
    """``toolwire.stream(..., prices=...)`` sets the cost of a cut stream's partial."""
    with (
        pytest.raises(toolwire.StreamAborted) as info,
        toolwire.stream(_CHAT_TURN[:3], prices=PRICES) as handle,
    ):
        for _ in handle:
            pass
    partial = info.value.partial
    assert partial is not None and partial.usage is not None
    assert partial.usage.cost is not None and partial.usage.cost.model == "gpt-4o"


# ---------------------------------------------------------------------------- ledger


@dataclass
class Turn:
    """What run_turn returns, as far as the ledger reads it."""

    response: Any
    usage: Usage | None
    aborted: bool = False


def test_the_ledger_sums_completed_and_aborted_turns() -> None:
    """Responses, errors, partials, usages and turns all count; the sums are normalised."""
    ledger = UsageLedger(PRICES)
    done = _openai_stream(report=True).close()
    with pytest.raises(toolwire.StreamAborted) as info:
        _openai_stream(report=False).close()
    ledger.add(done)
    ledger.add(info.value)
    ledger.add(
        Usage(input_tokens=300, output_tokens=50, cache_read_tokens=700, format="anthropic"),
        model="claude-sonnet-4-20250514",
    )
    ledger.add(Turn(response=done, usage=done.usage))
    ledger.add(Turn(response=None, usage=Usage(input_tokens=5, output_tokens=5), aborted=True))
    assert (ledger.turns, ledger.aborted, ledger.estimated, ledger.unknown_input) == (5, 2, 1, 1)
    assert ledger.unpriced == 1  # the last turn named no model
    total = ledger.total
    assert total.input_tokens == 1000 + 1000 + 1000 + 5
    estimated = info.value.partial.usage.estimated_tokens  # type: ignore[union-attr]
    assert total.output_tokens == 2 + estimated + 50 + 2 + 5
    assert total.cache_read_tokens == 700 and total.estimated
    assert ledger.estimated_tokens == estimated
    assert ledger.estimated_share == pytest.approx(estimated / total.output_tokens)
    assert ledger.cost == pytest.approx(total.cost.total)  # type: ignore[union-attr]
    assert total.cost is not None and "claude-sonnet-4" in total.cost.model
    assert total.cost.missing == ("input_tokens",)
    assert "turns=5" in repr(ledger)


def test_an_empty_ledger_has_no_cost_and_no_counts() -> None:
    """Nothing recorded: zero turns, no cost, every count None."""
    ledger = UsageLedger()
    assert ledger.cost is None and ledger.estimated_share == 0.0
    assert ledger.total == Usage()


def test_the_ledger_keeps_a_stream_s_own_price_and_one_currency() -> None:
    """A usage priced already is summed as it is; two currencies in one ledger raise."""
    ledger = UsageLedger()
    euro = Prices({"gpt-4o": ModelPrice(input=2, output=8)}, currency="EUR")
    ledger.add(euro.priced(Usage(input_tokens=10**6, output_tokens=0), "gpt-4o"))
    assert ledger.cost == 2.0 and ledger.total.cost.currency == "EUR"  # type: ignore[union-attr]
    with pytest.raises(SettingsError, match="one currency"):
        ledger.add(PRICES.priced(Usage(input_tokens=1, output_tokens=1), "gpt-4o"))


def test_the_ledger_refuses_what_is_not_a_turn() -> None:
    """Anything without usage raises UsageError naming what it takes."""
    with pytest.raises(toolwire.UsageError, match="takes a Response"):
        UsageLedger().add(42)


def test_a_ledger_shared_by_threads_loses_nothing() -> None:
    """Eight threads adding 500 turns each: every token is counted once."""
    ledger = UsageLedger(PRICES)

    def work() -> None:
        for _ in range(500):
            ledger.add(Usage(input_tokens=2, output_tokens=3), model="gpt-4o")

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert ledger.turns == 4000
    assert (ledger.total.input_tokens, ledger.total.output_tokens) == (8000, 12000)
    assert ledger.cost == pytest.approx(4000 * (2 * 2.5 + 3 * 10) / 1e6)


# ---------------------------------------------------------- genai-prices' bundled data

AT = datetime(2026, 1, 15, 12, tzinfo=timezone.utc)
# genai-prices needs Python 3.11 (the extra and the test group install it there only)
needs_genai_prices = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="genai-prices needs Python 3.11"
)


@functools.cache
def _bundled() -> Prices:
    """A table of genai-prices' data, priced as at ``AT``."""
    return Prices.from_genai_prices(at=AT)


@needs_genai_prices
@settings(max_examples=60)
@given(
    model=st.sampled_from(
        [
            "gpt-4o-2024-08-06",
            "o3",
            "claude-sonnet-4-20250514",
            "gemini-2.5-pro",  # tiered above 200k prompt tokens
            "deepseek-chat",  # prices that change with the date
            "gpt-4o-mini",
        ]
    ),
    uncached=st.integers(0, 400_000),
    read=st.integers(0, 100_000),
    write=st.integers(0, 5_000),
    output=st.integers(0, 50_000),
)
def test_genai_prices_cost_what_the_package_itself_computes(
    model: str, uncached: int, read: int, write: int, output: int
) -> None:
    """A model toolwire's table lacks is priced from genai-prices' data to the same total
    as genai_prices.calc_price, tiers and dated prices included."""
    import genai_prices

    usage = Usage(
        input_tokens=uncached,
        output_tokens=output,
        cache_read_tokens=read,
        cache_write_tokens=write,
        format="anthropic",  # input counted apart from the cache
    )
    cost = _bundled().cost(usage, model)
    theirs = genai_prices.calc_price(
        genai_prices.Usage(
            input_tokens=uncached + read + write,
            output_tokens=output,
            cache_read_tokens=read,
            cache_write_tokens=write,
        ),
        model,
        genai_request_timestamp=AT,
    )
    assert cost is not None and cost.currency == "USD" and "/" in cost.model
    assert cost.total == pytest.approx(float(theirs.total_price), rel=1e-9, abs=1e-12)


@needs_genai_prices
def test_own_entries_win_and_models_genai_prices_lacks_stay_unpriced() -> None:
    """The application's entries win over the package's; a provider can be pinned; a model
    neither knows is not priced, and the ledger counts it as unpriced."""
    prices = Prices.from_genai_prices({"gpt-4o": ModelPrice(input=1, output=1)}, at=AT)
    assert prices.match("gpt-4o-2024-08-06") == ("gpt-4o", ModelPrice(input=1, output=1))
    key, price = prices.match("claude-sonnet-4-20250514")  # type: ignore[misc]
    assert key == "anthropic/claude-sonnet-4-0" and price.input == 3 and price.cache_write == 3.75
    assert prices.match("my-own-finetune") is None
    assert Prices.from_genai_prices(provider="azure").match("gpt-4o")[0] == "azure/gpt-4o"  # type: ignore[index]
    ledger = UsageLedger(prices)
    ledger.add(Usage(input_tokens=1, output_tokens=1), model="my-own-finetune")
    assert ledger.unpriced == 1
    assert "genai-prices" in repr(prices)


@needs_genai_prices
def test_an_aborted_stream_is_priced_from_genai_prices() -> None:
    """A cut stream's partial is priced from the bundled data and its estimated output."""
    asm = StreamAssembler(prices=_bundled())
    asm.feed({"id": "c", "model": "gpt-4o-2024-08-06", "choices": [{"index": 0, "delta": {}}]})
    asm.feed({"id": "c", "choices": [{"index": 0, "delta": {"content": "Hello there"}}]})
    with pytest.raises(toolwire.StreamAborted) as info:
        asm.close()
    usage = info.value.partial.usage  # type: ignore[union-attr]
    assert usage is not None and usage.cost is not None
    assert usage.cost.model == "openai/gpt-4o" and usage.cost.estimated
    assert usage.cost.missing == ("input_tokens",)
    assert usage.cost.total == pytest.approx(usage.output_tokens * 10 / 1e6)  # type: ignore[operator]


@needs_genai_prices
def test_genai_prices_are_read_offline_and_only_when_asked_for() -> None:
    """``import toolwire`` and an own table never import genai-prices; the bundled data
    is read with every socket refused, so nothing is fetched at run time."""
    script = """
import socket, sys
import toolwire
own = toolwire.accounting.Prices({"m": {"input": 1, "output": 1}})
own.cost(toolwire.Usage(input_tokens=1), "m")
assert "genai_prices" not in sys.modules
def refuse(*args, **kwargs):
    raise AssertionError("a connection was attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
prices = toolwire.accounting.Prices.from_genai_prices()
usage = toolwire.Usage(input_tokens=10**6, output_tokens=0)
assert prices.cost(usage, "gpt-4o").total > 0
assert prices.cost(usage, "claude-sonnet-4-20250514").total > 0
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_from_genai_prices_refuses_what_cannot_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unknown provider, a naive datetime, or the package missing raise
    SettingsError, the last naming the extra to install."""
    if sys.version_info >= (3, 11):
        with pytest.raises(SettingsError, match="no provider 'nowhere'"):
            Prices.from_genai_prices(provider="nowhere")
    with pytest.raises(SettingsError, match="timezone-aware"):
        Prices.from_genai_prices(at=datetime(2026, 1, 1))
    monkeypatch.setitem(sys.modules, "genai_prices.data_snapshot", None)
    with pytest.raises(SettingsError, match=r"toolwire\[prices\]"):
        Prices.from_genai_prices()


# --------------------------------------------------- 1-hour cache writes, web searches


def _claude() -> ModelPrice:
    """Claude's prices with a 1-hour cache write price and a web search fee."""
    return ModelPrice(
        input=3, output=15, cache_read=0.3, cache_write=3.75, cache_write_1h=6, web_search=10
    )


def test_one_hour_cache_writes_and_web_searches_are_priced_apart() -> None:
    """The 1-hour writes cost cache_write_1h, the rest cache_write; searches per 1,000."""
    usage = Usage(
        input_tokens=50,
        output_tokens=120,
        cache_write_tokens=3000,
        cache_write_1h_tokens=2000,
        web_search_requests=2,
        format="anthropic",
    )
    cost = Prices({"claude-sonnet-4": _claude()}).cost(usage, "claude-sonnet-4-20250514")
    assert cost is not None
    assert cost.cache_write == pytest.approx((1000 * 3.75 + 2000 * 6) / 1e6)
    assert cost.web_search == pytest.approx(2 * 10 / 1000)
    assert cost.input == pytest.approx(50 * 3 / 1e6)
    parts = (cost.input, cost.output, cost.cache_read, cost.cache_write, cost.web_search)
    assert cost.total == pytest.approx(sum(parts)) and cost.missing == ()


def test_prices_without_the_new_fields_read_as_before() -> None:
    """No cache_write_1h: every write at cache_write; no web_search: searches are missing."""
    table = Prices({"m": {"input": 3, "output": 15, "cache_write": 3.75}})
    usage = Usage(
        input_tokens=0, output_tokens=0, cache_write_tokens=3000, cache_write_1h_tokens=2000,
        web_search_requests=2, format="anthropic",
    )  # fmt: skip
    cost = table.cost(usage, "m")
    assert cost is not None
    assert cost.cache_write == pytest.approx(3000 * 3.75 / 1e6) and cost.web_search == 0
    assert cost.missing == ("web_search_requests",)
    with_them = Prices({"m": {"input": 3, "output": 15, "cache_write_1h": 6, "web_search": 10}})
    assert with_them.cost(usage, "m") is not None


def test_a_streamed_anthropic_turn_and_the_ledger_price_searches_and_1h_writes() -> None:
    """Through the assembler and the ledger, the 1-hour writes and the searches are paid."""
    from usage_turns_support import ANTHROPIC_SEARCH_TURN

    asm = StreamAssembler(prices=Prices({"claude-sonnet-4": _claude()}))
    for payload in ANTHROPIC_SEARCH_TURN:
        asm.feed(payload)
    response = asm.close()
    cost = response.usage.cost  # type: ignore[union-attr]
    assert cost is not None and cost.web_search == pytest.approx(0.02)
    assert cost.cache_write == pytest.approx((1000 * 3.75 + 2000 * 6) / 1e6)
    ledger = UsageLedger()
    ledger.add(response)
    ledger.add(response)
    total = ledger.total
    assert (total.web_search_requests, total.cache_write_1h_tokens) == (4, 4000)
    assert total.cost is not None and total.cost.web_search == pytest.approx(0.04)
    assert ledger.cost == pytest.approx(2 * cost.total)
