"""``SQLiteStore``'s connection pool: connections never outlive their store unclosed."""

from __future__ import annotations

import gc
import sqlite3
from pathlib import Path

import pytest

from toolwire import SQLiteStore, StoreError


def test_a_store_dropped_without_close_closes_its_pooled_connections(tmp_path: Path) -> None:
    """A store that is collected without ``close()`` closes its idle connections (no
    ``ResourceWarning`` on Python 3.13, no file handle left open)."""
    store = SQLiteStore(tmp_path / "calls.db")
    list(store.records())
    pooled = list(store._idle)
    assert pooled
    del store
    gc.collect()
    for db in pooled:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")


def test_close_closes_the_pool_and_later_operations_raise(tmp_path: Path) -> None:
    """``close()`` closes every idle connection, and the store refuses work afterwards."""
    store = SQLiteStore(tmp_path / "calls.db")
    list(store.records())
    pooled = list(store._idle)
    store.close()
    for db in pooled:
        with pytest.raises(sqlite3.ProgrammingError):
            db.execute("SELECT 1")
    with pytest.raises(StoreError, match="closed"):
        list(store.records())
