"""Stores for idempotent execution: one small Protocol, four backends.

``MemoryStore`` and ``SQLiteStore`` are here; ``toolwire.stores.redis.RedisStore`` and
``toolwire.stores.postgres.PostgresStore`` live in their own modules so that ``redis`` and
``psycopg`` are imported only when used (extras ``toolwire[redis]``, ``toolwire[postgres]``).
``Store``/``AsyncStore`` are what the executor needs; every toolwire store is also an
``AdminStore``/``AsyncAdminStore`` (listing records, settling ``unknown`` calls by hand).
"""

from ._clock import ClockReading
from ._protocol import (
    LEASE_LOST,
    AdminStore,
    AsyncAdminStore,
    AsyncStore,
    Claim,
    FinalStatus,
    Record,
    ResolvedStatus,
    Status,
    Store,
)

__all__ = [
    "LEASE_LOST",
    "AdminStore",
    "AsyncAdminStore",
    "AsyncStore",
    "Claim",
    "ClockReading",
    "FinalStatus",
    "Record",
    "ResolvedStatus",
    "Status",
    "Store",
]
