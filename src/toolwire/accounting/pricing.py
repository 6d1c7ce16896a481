"""Price tables: what a response's usage cost, from prices the application gives.

toolwire ships no prices (``Prices.from_genai_prices`` reads the bundled data of the
``genai-prices`` package, extra ``toolwire[prices]``). A model is priced by its exact
key, then a snapshot suffix of a key, then the first matching glob; a model that matches
nothing is not priced. O(1) per response.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .._core.response import Cost, Usage
from .._errors import SettingsError

if TYPE_CHECKING:
    from genai_prices.types import ModelInfo, TieredPrices

__all__ = ["ModelPrice", "Prices"]

_PER = 1_000_000  # prices are per million tokens
_SNAPSHOT = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|\d{4}|\d{6}|\d{8}|latest)(?:-v\d+(?::\d+)?)?")
_GLOB = re.compile(r"[*?\[]")
_MAX_REMEMBERED = 1024
_PER_SEARCHES = 1_000  # web searches are priced per thousand requests
_FIELDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h", "web_search")


def _price(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{what} must be a number (per million tokens), not {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0:
        raise SettingsError(f"{what} must be a finite number >= 0, not {value!r}")
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
    :class:`SettingsError`.
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
            raise SettingsError(
                f"price of {key!r}: unknown fields {sorted(map(str, unknown))}; a price has "
                "input, output, cache_read, cache_write and cache_write_1h (per million "
                "tokens) and web_search (per 1,000 searches)"
            )
        missing = {"input", "output"} - set(value)
        if missing:
            raise SettingsError(f"price of {key!r} lacks {', '.join(sorted(missing))}")
        return ModelPrice(**value)
    raise SettingsError(
        f"price of {key!r} must be a ModelPrice or a mapping of prices, not {type(value).__name__}"
    )


_GENAI_FIELDS = (
    ("input", ("input_mtok",)),
    ("output", ("output_mtok",)),
    ("cache_read", ("cache_read_mtok",)),
    ("cache_write", ("cache_write_mtok", "cache_write_5m_mtok")),  # Anthropic's 5-minute cache
)


class _BundledModel:
    """A model of genai-prices' bundled data: its price when a usage is priced, at the
    request's time (or ``at``) and at the tier the usage's input reaches."""

    __slots__ = ("_at", "_flat", "_info")

    def __init__(self, info: ModelInfo, at: datetime | None) -> None:
        self._info = info
        self._at = at
        self._flat: dict[int, ModelPrice | None] = {}  # per price set without tiers

    def price(self, input_tokens: int | None) -> ModelPrice | None:
        """The :class:`ModelPrice` for a usage of ``input_tokens`` prompt tokens in all
        (``None``: unknown, the base tier), or ``None`` when the data lacks an input or an
        output price per token (audio, images, embeddings: not priced here)."""
        from genai_prices.types import TieredPrices

        found = self._info.get_prices(self._at or datetime.now(timezone.utc))
        if id(found) in self._flat:
            return self._flat[id(found)]
        fields: dict[str, float] = {}
        tiered = False
        for name, keys in _GENAI_FIELDS:
            value = next((v for k in keys if (v := getattr(found, k, None)) is not None), None)
            if isinstance(value, TieredPrices):
                tiered = True
                value = _tier_price(value, input_tokens or 0)
            if value is not None:
                fields[name] = float(value)
        price = ModelPrice(**fields) if "input" in fields and "output" in fields else None
        if not tiered:
            self._flat[id(found)] = price  # ``found`` lives in the data: its id is stable
        return price


def _tier_price(prices: TieredPrices, input_tokens: int) -> Any:
    """genai-prices' rule: the price of the highest tier the input passes, else the base."""
    for tier in reversed(prices.tiers):
        if input_tokens > tier.start:
            return tier.price
    return prices.base


class _BundledPrices:
    """Lookups in genai-prices' bundled data, for the models an own table lacks."""

    __slots__ = ("_at", "_provider")

    def __init__(self, provider: str | None, at: datetime | None) -> None:
        self._provider = provider
        self._at = at

    def find(self, model: str) -> tuple[str, _BundledModel] | None:
        from genai_prices.data_snapshot import get_snapshot

        try:
            found, info = get_snapshot().find_provider_model(model, None, self._provider, None)
        except LookupError:
            return None
        return f"{found.id}/{info.id}", _BundledModel(info, self._at)


_Entry = ModelPrice | _BundledModel


class Prices:
    """A price table: model name (or pattern) to :class:`ModelPrice`, per million tokens.

    ``table`` maps model names to ``ModelPrice`` objects or to mappings with the same
    fields (as loaded from JSON or TOML); ``currency`` names the unit of every price
    (default ``"USD"``). Matching: an exact name, then the longest name the model extends
    by a date or version suffix, then glob patterns in the table's order (see
    docs/usage-and-cost.md). Bad tables raise :class:`SettingsError`. toolwire ships no
    prices: they would go stale; :meth:`from_genai_prices` looks them up in the
    maintained ``genai-prices`` package instead.
    """

    __slots__ = ("_bundled", "_exact", "_lock", "_patterns", "_remembered", "currency")

    def __init__(
        self, table: Mapping[str, ModelPrice | Mapping[str, float]], *, currency: str = "USD"
    ) -> None:
        if not isinstance(table, Mapping):
            raise SettingsError(
                f"Prices takes a mapping of model names to prices, not {type(table).__name__}"
            )
        if not isinstance(currency, str) or not currency:
            raise SettingsError(f"currency must be a non-empty str, not {currency!r}")
        self.currency = currency
        """The unit of every price in the table (``"USD"`` by default)."""
        self._exact: dict[str, ModelPrice] = {}
        self._patterns: list[tuple[str, ModelPrice]] = []
        for key, value in table.items():
            if not isinstance(key, str) or not key:
                raise SettingsError(f"a model name must be a non-empty str, not {key!r}")
            price = _entry(key, value)
            if _GLOB.search(key):
                self._patterns.append((key, price))
            else:
                self._exact[key] = price
        self._remembered: dict[str, tuple[str, _Entry] | None] = {}
        self._lock = threading.Lock()
        self._bundled: _BundledPrices | None = None

    @classmethod
    def from_genai_prices(
        cls,
        table: Mapping[str, ModelPrice | Mapping[str, float]] | None = None,
        *,
        provider: str | None = None,
        at: datetime | None = None,
    ) -> Prices:
        """A table of the prices in the ``genai-prices`` package (extra
        ``toolwire[prices]``), in USD, for every model it knows, behind ``table``.

        ``table`` (optional, matched as by ``Prices(table)``) wins over the package: your
        contract's prices, models it lacks. ``provider`` is a genai-prices provider id
        (``"openai"``, ``"anthropic"``, ``"google"``, ``"aws"``, ``"azure"``,
        ``"openrouter"``, ``"groq"``...) to look models up in; ``None``: the provider is
        guessed from the model name, as genai-prices does. ``at`` (a timezone-aware
        datetime) prices as at that time; ``None``: at the time each usage is priced.

        Only the data installed with the package is read: toolwire never fetches
        updates (upgrade the package to update them). Tiered prices (Gemini above 200k
        prompt tokens) apply the tier the usage's input reaches; the standard service
        tier is priced; a model whose data has no input or output price per token is not
        priced. ``Cost.model`` reads ``provider/model`` (``"anthropic/claude-sonnet-4-0"``).
        Without the package, or for an unknown ``provider``, :class:`SettingsError`.
        """
        _check_genai_options(provider, at)
        try:
            from genai_prices.data_snapshot import find_provider_by_id, get_snapshot
        except ImportError:
            raise SettingsError(
                "Prices.from_genai_prices() needs the genai-prices package (Python 3.11 or "
                "later): pip install 'toolwire[prices]'"
            ) from None
        if provider is not None and find_provider_by_id(get_snapshot().providers, provider) is None:
            known = ", ".join(sorted(p.id for p in get_snapshot().providers)[:60])
            raise SettingsError(f"genai-prices knows no provider {provider!r}; it knows {known}")
        prices = cls({} if table is None else table)
        prices._bundled = _BundledPrices(provider, at)
        return prices

    def __repr__(self) -> str:
        also = " + genai-prices" if self._bundled is not None else ""
        return f"Prices({len(self._exact) + len(self._patterns)} models{also}, {self.currency})"

    def match(self, model: str | None) -> tuple[str, ModelPrice] | None:
        """The table entry ``(key, price)`` for ``model``, or ``None`` when none applies
        (for a genai-prices model, its price now, at its base tier)."""
        found = self._lookup(model)
        if found is None:
            return None
        key, entry = found
        if isinstance(entry, ModelPrice):
            return key, entry
        price = entry.price(None)
        return None if price is None else (key, price)

    def _lookup(self, model: str | None) -> tuple[str, _Entry] | None:
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

    def _find(self, model: str) -> tuple[str, _Entry] | None:
        price = self._exact.get(model)
        if price is not None:
            return model, price
        best = self._longest_versioned(model)
        if best is not None:
            return best, self._exact[best]
        for key, price in self._patterns:
            if fnmatch.fnmatchcase(model, key):
                return key, price
        return None if self._bundled is None else self._bundled.find(model)

    def _longest_versioned(self, model: str) -> str | None:
        """The longest exact name that ``model`` extends by a date or version suffix."""
        best: str | None = None
        for key in self._exact:
            if (
                len(model) > len(key)
                and model.startswith(key)
                and (best is None or len(key) > len(best))
                and _SNAPSHOT.fullmatch(model, len(key))
            ):
                best = key
        return best

    def cost(self, usage: Usage, model: str | None = None) -> Cost | None:
        """What ``usage`` cost for ``model`` (default: none; a ``Response``'s or
        ``Partial``'s ``model`` is what to pass), or ``None`` when the table does not
        know the model. Counts the usage lacks are listed in ``Cost.missing``."""
        if not isinstance(usage, Usage):
            raise SettingsError(f"cost() takes a toolwire.Usage, not {type(usage).__name__}")
        found = self._lookup(model)
        if found is None:
            return None
        key, entry = found
        price = entry if isinstance(entry, ModelPrice) else entry.price(usage.all_input_tokens)
        if price is None:
            return None
        missing: list[str] = []
        uncached = _counted(usage.uncached_input_tokens, "input_tokens", missing)
        output = _counted(usage.all_output_tokens, "output_tokens", missing)
        searches = usage.web_search_requests or 0
        if searches and price.web_search is None:
            missing.append("web_search_requests")
        parts = (
            uncached * price.input / _PER,
            output * price.output / _PER,
            *_cache_costs(usage, price),
            searches * (price.web_search or 0.0) / _PER_SEARCHES,
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


def _counted(tokens: int | None, name: str, missing: list[str]) -> int:
    """``tokens``, or 0 with ``name`` added to ``missing`` when the usage lacks the count."""
    if tokens is None:
        missing.append(name)
        return 0
    return tokens


def _cache_costs(usage: Usage, price: ModelPrice) -> tuple[float, float]:
    """What the cache reads and the cache writes (5-minute and 1-hour) of ``usage`` cost;
    a cache price the table lacks is the input price."""
    read = usage.cache_read_tokens or 0
    write = usage.cache_write_tokens or 0
    write_1h = min(write, usage.cache_write_1h_tokens or 0)
    cache_read = price.input if price.cache_read is None else price.cache_read
    cache_write = price.input if price.cache_write is None else price.cache_write
    cache_write_1h = cache_write if price.cache_write_1h is None else price.cache_write_1h
    return (
        read * cache_read / _PER,
        math.fsum(((write - write_1h) * cache_write / _PER, write_1h * cache_write_1h / _PER)),
    )


def _check_genai_options(provider: Any, at: Any) -> None:
    if provider is not None and (not isinstance(provider, str) or not provider):
        raise SettingsError(f"provider must be a non-empty str or None, not {provider!r}")
    if at is not None and (not isinstance(at, datetime) or at.tzinfo is None):
        raise SettingsError(f"at must be a timezone-aware datetime or None, not {at!r}")


def check_prices(prices: Any) -> Prices | None:
    """``prices`` if it is a :class:`Prices` or ``None``; a :class:`SettingsError`
    naming the fix otherwise (a bare dict is the usual mistake)."""
    if prices is None or isinstance(prices, Prices):
        return prices
    raise SettingsError(
        f"prices= takes a toolwire.accounting.Prices, not {type(prices).__name__} "
        "(wrap a dict as toolwire.accounting.Prices({...}))"
    )
