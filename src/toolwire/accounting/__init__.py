"""Usage accounting: price tables, costs, a conversation's ledger and token estimates.

``from toolwire.accounting import Prices, ModelPrice, UsageLedger``. ``Usage`` itself (what a
response reports) stays in ``toolwire``. Unlike the core, this room may read the clock, the
environment and files (genai-prices' data, tiktoken's cache).
"""

from __future__ import annotations

from .._core.response import Cost
from .ledger import UsageLedger
from .pricing import ModelPrice, Prices
from .token_counting import estimate_tokens

__all__ = ["Cost", "ModelPrice", "Prices", "UsageLedger", "estimate_tokens"]
