"""``UsageLedger``: usage and cost summed over the turns of a conversation, aborted ones too.

Thread-safe; O(1) per turn and O(1) memory.
"""

from __future__ import annotations

import math
import threading
from typing import Any

from .._core.response import Cost, Partial, Response, Usage
from .._errors import SettingsError, StreamError, UsageError
from .pricing import Prices, check_prices

__all__ = ["UsageLedger"]


class UsageLedger:
    """Usage and cost summed over the turns of a conversation, aborted turns included.

    ``prices``: a :class:`~toolwire.accounting.Prices` table to price turns whose usage has
    no cost yet (default none). ``add(item)`` records one turn; the totals are read at any time:

    - :attr:`total`: a :class:`~toolwire.Usage` of the sums, read the same way for every
      provider (``input_tokens`` includes cached tokens, ``output_tokens`` reasoning),
      ``estimated`` when any turn's was, with the summed
      :class:`~toolwire.accounting.Cost`;
    - :attr:`cost`: the summed cost (``None`` when no turn was priced);
    - :attr:`turns`, :attr:`aborted` (turns that ended in a ``StreamError``),
      :attr:`estimated` (turns with an estimated count), :attr:`unknown_input` (turns
      whose input tokens were never reported: their input is not in the totals, and the
      cost is a lower bound), :attr:`unpriced` (turns the table had no price for);
    - :attr:`estimated_tokens` and :attr:`estimated_share`: how many output tokens, and
      what share of them, are toolwire's estimate rather than the provider's report.
    """

    def __init__(self, prices: Prices | None = None) -> None:
        self.prices = check_prices(prices)
        """The price table for turns not priced yet (``None``: none)."""
        self._lock = threading.Lock()
        self._counts = {
            "input": 0,
            "output": 0,
            "cache_read": 0,
            "cache_write": 0,
            "reasoning": 0,
            "cache_write_1h": 0,
            "web_search_requests": 0,
        }
        self._seen = {name: False for name in self._counts}
        self._fields: set[str] = set()
        # input, output, cache read, cache write, web search
        self._cost: list[float] = [0.0, 0.0, 0.0, 0.0, 0.0]
        self._currency: str | None = None
        self._models: set[str] = set()
        self._cost_estimated = False
        self._cost_missing: set[str] = set()
        self.turns = 0
        """Turns recorded."""
        self.aborted = 0
        """Turns that ended in a ``StreamError`` (cut, timed out, token limit, filtered,
        provider error...): their usage is what arrived, estimated where unreported."""
        self.estimated = 0
        """Turns with at least one estimated count."""
        self.estimated_tokens = 0
        """Output tokens (reasoning included) that are estimates, over all turns."""
        self.unknown_input = 0
        """Turns whose input tokens were never reported (not in :attr:`total`)."""
        self.unpriced = 0
        """Turns that the price table (or the stream's) could not price."""

    def __repr__(self) -> str:
        return (
            f"UsageLedger(turns={self.turns}, aborted={self.aborted}, "
            f"estimated={self.estimated}, cost={self.cost!r})"
        )

    # ------------------------------------------------------------------ recording

    def add(self, item: Any, *, model: str | None = None, aborted: bool | None = None) -> Usage:
        """Record one turn; return its usage as recorded (priced where possible).

        ``item`` is a ``Response``, a ``StreamError`` (its ``partial`` is recorded, and the
        turn counts as aborted), a ``Partial`` (aborted), a ``Usage``, or an object with a
        ``usage`` attribute (``run_turn``'s ``Turn``; its ``response`` gives the model, and
        an ``aborted`` attribute that is true marks it aborted). ``model`` overrides the
        model used for pricing (a bare ``Usage`` has none); ``aborted`` overrides whether
        the turn counts as aborted. Anything else raises :class:`UsageError`.
        """
        usage, found_model, was_aborted = _unpack(item)
        if aborted is not None:
            was_aborted = bool(aborted)
        name = model if model is not None else found_model
        if usage is None:
            usage = Usage(raw={})  # a turn that reported nothing and had nothing estimated
        if usage.cost is None and self.prices is not None:
            usage = self.prices.priced(usage, name)
        priceable = self.prices is not None or usage.cost is not None
        self._record(usage, was_aborted, priceable=priceable)
        return usage

    def _record(self, usage: Usage, aborted: bool, *, priceable: bool) -> None:
        values = {
            "input": usage.all_input_tokens,
            "output": usage.all_output_tokens,
            "cache_read": usage.cache_read_tokens,
            "cache_write": usage.cache_write_tokens,
            "reasoning": usage.reasoning_tokens,
            "cache_write_1h": usage.cache_write_1h_tokens,
            "web_search_requests": usage.web_search_requests,
        }
        cost = usage.cost
        with self._lock:
            if cost is not None:
                self._take_currency(cost)
            self.turns += 1
            self.aborted += aborted
            for key, value in values.items():
                if value is not None:
                    self._counts[key] += value
                    self._seen[key] = True
            if usage.input_tokens is None:
                self.unknown_input += 1
            if usage.estimated:
                self.estimated += 1
                self.estimated_tokens += usage.estimated_tokens
                self._fields.update(usage.estimated_fields)
            if cost is not None:
                self._add_cost(cost)
            elif priceable:
                self.unpriced += 1

    def _take_currency(self, cost: Cost) -> None:
        """Sum in ``cost``'s currency; a ledger holds one (under the lock)."""
        if self._currency is not None and cost.currency != self._currency:
            raise SettingsError(
                f"this ledger sums {self._currency} and was given a cost in "
                f"{cost.currency}: use one currency per ledger"
            )
        self._currency = cost.currency

    def _add_cost(self, cost: Cost) -> None:
        """Add ``cost``'s parts, model and gaps to the sums (under the lock)."""
        for i, part in enumerate(
            (cost.input, cost.output, cost.cache_read, cost.cache_write, cost.web_search)
        ):
            self._cost[i] += part
        self._models.add(cost.model)
        self._cost_estimated |= cost.estimated
        self._cost_missing.update(cost.missing)

    # ------------------------------------------------------------------- reading

    @property
    def total(self) -> Usage:
        """The sums as a :class:`~toolwire.Usage` (``format`` ``None``: the counts are
        normalised, cached input and reasoning included); a count no turn reported is
        ``None``."""
        with self._lock:
            counts, seen = dict(self._counts), dict(self._seen)
            fields = tuple(sorted(self._fields))
            estimated_tokens = self.estimated_tokens
            cost = self._total_cost()

        def get(key: str) -> int | None:
            return counts[key] if seen[key] else None

        inputs, outputs = get("input"), get("output")
        total = None if inputs is None and outputs is None else (inputs or 0) + (outputs or 0)
        return Usage(
            input_tokens=inputs,
            output_tokens=outputs,
            total_tokens=total,
            cache_read_tokens=get("cache_read"),
            cache_write_tokens=get("cache_write"),
            reasoning_tokens=get("reasoning"),
            cache_write_1h_tokens=get("cache_write_1h"),
            web_search_requests=get("web_search_requests"),
            raw={},
            estimated=bool(fields),
            estimated_fields=fields,
            estimated_tokens=estimated_tokens,
            estimate_method=None,
            cost=cost,
        )

    def _total_cost(self) -> Cost | None:
        if self._currency is None:
            return None
        models = sorted(self._models)
        return Cost(
            input=self._cost[0],
            output=self._cost[1],
            cache_read=self._cost[2],
            cache_write=self._cost[3],
            web_search=self._cost[4],
            total=math.fsum(self._cost),
            currency=self._currency,
            model=models[0] if len(models) == 1 else ", ".join(models),
            estimated=self._cost_estimated,
            missing=tuple(sorted(self._cost_missing)),
        )

    @property
    def cost(self) -> float | None:
        """The summed cost in the table's currency (``None`` when no turn was priced). A
        lower bound when some turn's input was never reported (see :attr:`total`'s
        ``cost.missing``)."""
        with self._lock:
            return None if self._currency is None else math.fsum(self._cost)

    @property
    def estimated_share(self) -> float:
        """The share (0.0 to 1.0) of the output tokens that are estimates."""
        with self._lock:
            output = self._counts["output"]
            return self.estimated_tokens / output if output else 0.0


def _unpack(item: Any) -> tuple[Usage | None, str | None, bool]:
    """``(usage, model, aborted)`` of something a turn ended with."""
    if isinstance(item, Usage):
        return item, None, False
    if isinstance(item, Response):
        return item.usage, item.model, False
    if isinstance(item, StreamError):
        partial = item.partial
        if partial is None:
            return None, None, True
        return partial.usage, partial.model, True
    if isinstance(item, Partial):
        return item.usage, item.model, True
    usage = getattr(item, "usage", None)
    if isinstance(usage, Usage) or (usage is None and hasattr(item, "usage")):
        return usage, _turn_model(item), bool(getattr(item, "aborted", False))
    raise UsageError(
        "UsageLedger.add() takes a Response, a StreamError, a Partial, a Usage or a turn "
        f"with a usage attribute, not {type(item).__name__}"
    )


def _turn_model(turn: Any) -> str | None:
    """The model of a turn result: its response's, else its own ``model``."""
    response = getattr(turn, "response", None)
    model = getattr(response, "model", None) if response is not None else None
    if model is None:
        model = getattr(turn, "model", None)
    return model if isinstance(model, str) else None
