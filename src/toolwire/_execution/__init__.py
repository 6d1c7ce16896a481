"""Idempotent execution: the sans-IO decision core, its two drivers, workers, interrupts and
idempotency keys."""
