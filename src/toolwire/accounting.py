"""Usage accounting: price tables, costs, a conversation's ledger and token estimates.

``from toolwire.accounting import Prices, ModelPrice, UsageLedger``. ``Usage`` itself (what a
response reports) stays in ``toolwire``.
"""

from __future__ import annotations

from ._core.ledger import UsageLedger
from ._core.pricing import ModelPrice, Prices
from ._core.response import Cost
from ._core.usage_estimate import estimate_tokens

__all__ = ["Cost", "ModelPrice", "Prices", "UsageLedger", "estimate_tokens"]
