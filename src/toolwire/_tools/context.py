"""The context a tool function may ask for: ``ctx: toolwire.ToolContext``.

A leaf module, so the toolbox and the executor use it without importing each other.
``deadline`` is absolute on ``time.monotonic()``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

__all__ = ["ToolContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """Injected into a tool that declares a ``ctx: ToolContext`` parameter (never in its schema).

    Forward ``idempotency_key`` to downstream services that honour one (Stripe-style
    ``Idempotency-Key``) to make side effects effectively once; ``deadline`` is absolute,
    on the ``time.monotonic()`` clock (``None``: no timeout).
    """

    idempotency_key: str
    deadline: float | None
    call_id: str
    tool_name: str
    scope: str

    def remaining(self, now: float | None = None) -> float | None:
        """Seconds left until ``deadline`` (never negative), ``None`` without a deadline.

        ``now`` defaults to ``time.monotonic()``.
        """
        if self.deadline is None:
            return None
        current = time.monotonic() if now is None else now
        return max(0.0, self.deadline - current)
