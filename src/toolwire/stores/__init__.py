"""Stores for idempotent execution: one small Protocol, four backends.

``MemoryStore`` and ``SQLiteStore`` are here; ``toolwire.stores.redis.RedisStore`` and
``toolwire.stores.postgres.PostgresStore`` live in their own modules so that ``redis`` and
``psycopg`` are imported only when used (extras ``toolwire[redis]``, ``toolwire[postgres]``).
"""

from ._protocol import AsyncStore, Claim, FinalStatus, Record, Status, Store

__all__ = ["AsyncStore", "Claim", "FinalStatus", "Record", "Status", "Store"]
