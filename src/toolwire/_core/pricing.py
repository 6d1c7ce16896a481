"""Price tables: what a response's usage cost, from prices the application gives.

Strategy. toolwire ships no prices: they change without notice, differ by region, tier,
batch and contract, and a stale built-in table would miscount silently. The application
writes its own table (or loads it from its own configuration), per model and per million
tokens, the unit every provider publishes::

    prices = toolwire.Prices({
        "gpt-4o": toolwire.ModelPrice(input=2.5, output=10, cache_read=1.25),
        "claude-sonnet-4": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
        "*/llama-3.3-70b*": toolwire.ModelPrice(input=0.6, output=0.6),
    })

A model name (as the provider reported it in the response) finds its entry in this order:

1. the key equal to it;
2. the longest key it extends by a snapshot suffix: a date or version
   (``gpt-4o-2024-08-06``, ``claude-sonnet-4-20250514``, ``gpt-4-0613``,
   ``claude-3-5-sonnet-latest``, ``anthropic.claude-3-5-sonnet-20240620-v1:0``), never
   another model's name (``gpt-4o`` does not price ``gpt-4o-mini``);
3. the first key, in the table's order, that is a glob pattern (``*``, ``?``, ``[...]``,
   :func:`fnmatch.fnmatchcase`) matching it: put specific patterns first.

A model that matches nothing is not priced (``usage.cost`` stays ``None``, and
``UsageLedger.unpriced`` counts it): a wrong price is worse than none.

What a response costs (:meth:`Prices.cost`): the uncached input tokens at ``input``,
prompt-cache reads at ``cache_read`` and writes at ``cache_write`` (each at ``input`` when
the entry has none), and every generated token, reasoning included, at ``output``. The
counts are read the same way for every provider (:attr:`Usage.uncached_input_tokens`,
:attr:`Usage.all_output_tokens`), whichever way the provider reports its cache and its
reasoning. Not modelled: tiered prices (above 200k tokens of context), batch and priority
tiers, audio and image tokens: give the price that applies to your traffic.

Lookups are remembered per model name (at most 1,024), so pricing is O(1) per response.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import PriceTableError
from .response import Cost, Usage

__all__ = ["ModelPrice", "Prices"]

_PER = 1_000_000  # prices are per million tokens
_SNAPSHOT = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|\d{4}|\d{6}|\d{8}|latest)(?:-v\d+(?::\d+)?)?")
_GLOB = re.compile(r"[*?\[]")
_MAX_REMEMBERED = 1024
_PER_SEARCHES = 1_000  # web searches are priced per thousand requests
_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "web_search")


def _price(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PriceTableError(f"{what} must be a number (per million tokens), not {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise PriceTableError(f"{what} must be a finite number >= 0, not {value!r}")
    return number


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelPrice:
    """One model's prices per million tokens.

    ``input``: uncached prompt tokens; ``output``: generated tokens, reasoning included;
    ``cache_read``: prompt tokens read from the provider's cache (``None``: at ``input``);
    ``cache_write``: prompt tokens written to it (Anthropic's cache creation; ``None``: at
    ``input``); ``cache_write_1h``: those written to the 1-hour cache
    (:attr:`Usage.cache_write_1h_tokens`; ``None``: at ``cache_write``); ``web_search``:
    per 1,000 server-side web searches (:attr:`Usage.web_search_requests`), the unit
    providers publish it in (``None``: searches are not priced, and a cost that has some
    lists them in :attr:`Cost.missing`). Negative, infinite or non-numeric prices raise
    :class:`PriceTableError`.
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    cache_write_1h: float | None = None
    web_search: float | None = None

    def __post_init__(self) -> None:
        for name in _FIELDS:
            value = getattr(self, name)
            if value is None and name not in ("input", "output"):
                continue
            object.__setattr__(self, name, _price(value, f"ModelPrice.{name}"))


def _entry(key: object, value: object) -> ModelPrice:
    if isinstance(value, ModelPrice):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - set(_FIELDS)
        if unknown:
            raise PriceTableError(
                f"price of {key!r}: unknown fields {sorted(map(str, unknown))}; a price has "
                "input, output, cache_read, cache_write and cache_write_1h (per million "
                "tokens) and web_search (per 1,000 searches)"
            )
        missing = {"input", "output"} - set(value)
        if missing:
            raise PriceTableError(f"price of {key!r} lacks {', '.join(sorted(missing))}")
        return ModelPrice(**value)
    raise PriceTableError(
        f"price of {key!r} must be a ModelPrice or a mapping of prices, not {type(value).__name__}"
    )


class Prices:
    """A price table: model name (or pattern) to :class:`ModelPrice`, per million tokens.

    ``table`` maps model names to ``ModelPrice`` objects or to mappings with the same
    fields (as loaded from JSON or TOML); ``currency`` names the unit of every price
    (default ``"USD"``). Matching: an exact name, then the longest name the model extends
    by a date or version suffix, then glob patterns in the table's order (see
    ``toolwire._core.pricing``). Bad tables raise :class:`PriceTableError`. toolwire ships no
    prices: they would go stale.
    """

    __slots__ = ("_exact", "_lock", "_patterns", "_remembered", "currency")

    def __init__(
        self, table: Mapping[str, ModelPrice | Mapping[str, float]], *, currency: str = "USD"
    ) -> None:
        if not isinstance(table, Mapping):
            raise PriceTableError(
                f"Prices takes a mapping of model names to prices, not {type(table).__name__}"
            )
        if not isinstance(currency, str) or not currency:
            raise PriceTableError(f"currency must be a non-empty str, not {currency!r}")
        self.currency = currency
        """The unit of every price in the table (``"USD"`` by default)."""
        self._exact: dict[str, ModelPrice] = {}
        self._patterns: list[tuple[str, ModelPrice]] = []
        for key, value in table.items():
            if not isinstance(key, str) or not key:
                raise PriceTableError(f"a model name must be a non-empty str, not {key!r}")
            price = _entry(key, value)
            if _GLOB.search(key):
                self._patterns.append((key, price))
            else:
                self._exact[key] = price
        self._remembered: dict[str, tuple[str, ModelPrice] | None] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Prices({len(self._exact) + len(self._patterns)} models, {self.currency})"

    def match(self, model: str | None) -> tuple[str, ModelPrice] | None:
        """The table entry ``(key, price)`` for ``model``, or ``None`` when none applies."""
        if not model or not isinstance(model, str):
            return None
        remembered = self._remembered
        if model in remembered:
            return remembered[model]
        found = self._find(model)
        with self._lock:
            if len(remembered) >= _MAX_REMEMBERED:
                remembered.clear()
            remembered[model] = found
        return found

    def _find(self, model: str) -> tuple[str, ModelPrice] | None:
        price = self._exact.get(model)
        if price is not None:
            return model, price
        best: str | None = None
        for key in self._exact:
            if (
                len(model) > len(key)
                and model.startswith(key)
                and (best is None or len(key) > len(best))
                and _SNAPSHOT.fullmatch(model, len(key))
            ):
                best = key
        if best is not None:
            return best, self._exact[best]
        for key, price in self._patterns:
            if fnmatch.fnmatchcase(model, key):
                return key, price
        return None

    def cost(self, usage: Usage, model: str | None = None) -> Cost | None:
        """What ``usage`` cost for ``model`` (default: none; a ``Response``'s or
        ``Partial``'s ``model`` is what to pass), or ``None`` when the table does not
        know the model. Counts the usage lacks are listed in ``Cost.missing``."""
        if not isinstance(usage, Usage):
            raise PriceTableError(f"cost() takes a toolwire.Usage, not {type(usage).__name__}")
        found = self.match(model)
        if found is None:
            return None
        key, price = found
        missing: list[str] = []
        uncached = usage.uncached_input_tokens
        if uncached is None:
            missing.append("input_tokens")
            uncached = 0
        output = usage.all_output_tokens
        if output is None:
            missing.append("output_tokens")
            output = 0
        read = usage.cache_read_tokens or 0
        write = usage.cache_write_tokens or 0
        write_1h = min(write, usage.cache_write_1h_tokens or 0)
        cache_read = price.input if price.cache_read is None else price.cache_read
        cache_write = price.input if price.cache_write is None else price.cache_write
        cache_write_1h = cache_write if price.cache_write_1h is None else price.cache_write_1h
        searches = usage.web_search_requests or 0
        if searches and price.web_search is None:
            missing.append("web_search_requests")
        search_price = price.web_search or 0.0
        parts = (
            uncached * price.input / _PER,
            output * price.output / _PER,
            read * cache_read / _PER,
            math.fsum(((write - write_1h) * cache_write / _PER, write_1h * cache_write_1h / _PER)),
            searches * search_price / _PER_SEARCHES,
        )
        return Cost(
            input=parts[0],
            output=parts[1],
            cache_read=parts[2],
            cache_write=parts[3],
            web_search=parts[4],
            total=math.fsum(parts),
            currency=self.currency,
            model=key,
            estimated=usage.estimated,
            missing=tuple(missing),
        )

    def priced(self, usage: Usage, model: str | None = None) -> Usage:
        """``usage`` with its :attr:`Usage.cost` set for ``model`` (unchanged when the
        table does not know the model)."""
        cost = self.cost(usage, model)
        if cost is None:
            return usage
        return dataclasses.replace(usage, cost=cost)


def check_prices(prices: Any) -> Prices | None:
    """``prices`` if it is a :class:`Prices` or ``None``; a :class:`PriceTableError`
    naming the fix otherwise (a bare dict is the usual mistake)."""
    if prices is None or isinstance(prices, Prices):
        return prices
    raise PriceTableError(
        f"prices= takes a toolwire.Prices, not {type(prices).__name__} "
        "(wrap a dict as toolwire.Prices({...}))"
    )
