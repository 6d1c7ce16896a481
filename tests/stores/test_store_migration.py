"""A table written by the previous version (no identity columns) is migrated in place when
opened: its rows stay readable and settleable, new rows carry the identity."""

from __future__ import annotations

import sqlite3
import time
import uuid
from pathlib import Path
from typing import Any

from servers import postgres_dsn
from toolwire import Executor, SQLiteStore, Toolbox
from toolwire.stores import AdminStore

__all__ = ["postgres_dsn"]  # fixtures used here

_OLD_COLUMNS = (
    "key, args_hash, idempotency_key, status, owner, fence, lease_expires_at, result, "
    "error, created_at, expires_at, retention"
)


def _old_rows(now: float) -> list[tuple[Any, ...]]:
    return [
        ("old-done", "h" * 64, "i1", "completed", None, 1, None, '"ok"', None, now - 60,
         now + 3600, 3600.0),
        ("old-doubt", "h" * 64, "i2", "unknown", None, 2, None, None, "lost", now - 30,
         now + 3600, 3600.0),
    ]  # fmt: skip


def _tools() -> Toolbox:
    tools = Toolbox()

    @tools.tool
    def pay(amount: int) -> str:
        """Pays."""
        return f"paid {amount}"

    return tools


def _check_migrated(store: AdminStore) -> None:
    from store_backends import one_call_response

    done = store.get("old-done")
    assert done is not None and (done.status, done.result) == ("completed", '"ok"')
    assert (done.tool_name, done.call_id, done.scope, done.turn, done.updated_at) == (None,) * 5
    assert store.resolve("old-doubt", status="failed", error="checked: not paid")
    doubt = store.get("old-doubt")
    assert doubt is not None and doubt.status == "failed" and doubt.updated_at is not None
    [outcome] = Executor(_tools(), store=store, scope="s-new").run(
        one_call_response("pay", {"amount": 1}, "call_new")
    )
    assert outcome.status == "completed"
    [new] = store.records(call_id="call_new")
    assert (new.tool_name, new.scope) == ("pay", "s-new")
    assert [r.key for r in store.records(tool_name="pay")] == [new.key]
    assert len(store.records()) == 3


def test_an_old_sqlite_file_is_migrated_in_place(tmp_path: Path) -> None:
    """A file with the previous schema and rows: opened, its rows read, new rows carry
    the identity, and a second open changes nothing."""
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE toolwire_calls (key TEXT PRIMARY KEY, args_hash TEXT NOT NULL,"
        " idempotency_key TEXT NOT NULL, status TEXT NOT NULL, owner TEXT,"
        " fence INTEGER NOT NULL, lease_expires_at REAL, result TEXT, error TEXT,"
        " created_at REAL NOT NULL, expires_at REAL NOT NULL, retention REAL)"
    )
    db.executemany(f"INSERT INTO toolwire_calls ({_OLD_COLUMNS}) VALUES ({', '.join('?' * 12)})",
                   _old_rows(time.time()))  # fmt: skip
    db.commit()
    db.close()
    store = SQLiteStore(path)
    try:
        _check_migrated(store)
    finally:
        store.close()
    again = SQLiteStore(path)
    try:
        assert len(again.records()) == 3
    finally:
        again.close()


def test_an_old_postgres_table_is_migrated_in_place(postgres_dsn: str) -> None:
    """A table with the previous schema and rows: opened, its rows read, new rows carry
    the identity."""
    import psycopg

    from toolwire.stores.postgres import PostgresStore

    table = f"old_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(
            f"CREATE TABLE {table} (key text PRIMARY KEY, args_hash text NOT NULL,"
            " idempotency_key text NOT NULL, status text NOT NULL, owner text,"
            " fence bigint NOT NULL, lease_expires_at double precision, result bytea,"
            " error bytea, created_at double precision NOT NULL,"
            " expires_at double precision NOT NULL,"
            " retention double precision NOT NULL DEFAULT 0)"
        )
        for row in _old_rows(time.time()):
            values = [v.encode() if i in (7, 8) and v is not None else v for i, v in enumerate(row)]
            conn.execute(
                f"INSERT INTO {table} ({_OLD_COLUMNS}) VALUES ({', '.join(['%s'] * 12)})",
                values,
            )
    store = PostgresStore(postgres_dsn, table=table)
    try:
        _check_migrated(store)
    finally:
        store.close()
