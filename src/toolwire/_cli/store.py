"""``toolwire store``: list, show, resolve and purge the records of an idempotency store.

``resolve`` settles only an ``unknown`` record (the store checks again, atomically).
Exit status: 0 done, 1 not found or refused, 2 unusable arguments, 4 the store failed,
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._errors import SettingsError, StoreError
from ..stores import AdminStore, Record
from .json_documents import dumps
from .store_view import plain_details, plain_table, rich_details, rich_table
from .subcommand import (
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_STORE_FAILED,
    EXIT_USAGE,
    add_subcommand,
    fail,
    run_alone,
    tolerant_output,
)

__all__ = ["add_parser", "main", "result_text", "run"]

_EPILOG = """\
exit status: 0 done; 1 not found, or refused (resolve touches only unknown records);
2 unusable arguments; 4 the store failed (cannot connect, an operation failed);
130 interrupted.
"""


class _Refused(Exception):
    """The store answered no (absent key, a record that is not unknown): exit 1."""


class _Unusable(Exception):
    """Arguments that cannot be used: exit 2."""


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= value <= 100_000:
        raise argparse.ArgumentTypeError(f"must be between 1 and 100000, got {value}")
    return value


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``toolwire store`` and its actions on the ``toolwire`` command's
    subparsers."""
    parser = add_subcommand(
        commands,
        "store",
        run,
        help="list, show, resolve (unknown calls) and purge idempotency-store records",
        description=(
            "See and settle the records of an idempotency store: SQLite (--db),\n"
            "PostgreSQL (--dsn) or Redis (--url). Each action takes the store options;\n"
            "see toolwire store ACTION --help."
        ),
        epilog=_EPILOG,
    )
    where = argparse.ArgumentParser(add_help=False)
    backend = where.add_mutually_exclusive_group(required=True)
    backend.add_argument("--db", metavar="PATH", help="the SQLite store's file (must exist)")
    backend.add_argument("--dsn", metavar="DSN", help="PostgreSQL connection string or URL")
    backend.add_argument("--url", metavar="URL", help="Redis URL (redis://, rediss://, unix://)")
    where.add_argument("--table", help="PostgreSQL table (default toolwire_calls)")
    where.add_argument("--prefix", help="Redis key prefix (default toolwire:)")
    where.add_argument(
        "--timeout",
        type=_positive,
        default=10.0,
        metavar="SECONDS",
        help="how long to wait for PostgreSQL or Redis (default 10)",
    )
    where.add_argument("--json", action="store_true", help="machine-readable output")

    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list", parents=[where], help="records by status and age, newest first"
    )
    listing.add_argument(
        "--status", choices=("in_progress", "completed", "failed", "unknown"), default=None
    )
    listing.add_argument("--limit", type=_limit, default=50, help="at most this many (50)")
    order = listing.add_mutually_exclusive_group()
    order.add_argument("--newest", dest="oldest", action="store_false", help="newest first")
    order.add_argument("--oldest", dest="oldest", action="store_true", help="oldest first")
    listing.set_defaults(oldest=False)  # --newest's store_false would default to True

    show = actions.add_parser("show", parents=[where], help="every field of one record")
    show.add_argument("key", metavar="KEY")

    resolve = actions.add_parser(
        "resolve",
        parents=[where],
        help="settle an unknown call by hand, after checking the outside system",
    )
    resolve.add_argument("key", metavar="KEY")
    verdict = resolve.add_mutually_exclusive_group(required=True)
    verdict.add_argument(
        "--completed",
        metavar="VALUE",
        help="the tool's effect happened; VALUE (JSON) is the result later runs replay",
    )
    verdict.add_argument(
        "--failed", metavar="MESSAGE", help="the effect did not happen; later runs get MESSAGE"
    )

    actions.add_parser("purge", parents=[where], help="delete the records past their expiry")


# ------------------------------------------------------------------------------ opening


def _open(args: argparse.Namespace) -> AdminStore:
    """The store the arguments name; :class:`_Unusable` for arguments that cannot be."""
    if args.db is not None:
        _only(args, "--db", table=False, prefix=False)
        if not Path(args.db).is_file():
            raise _Unusable(f"no SQLite store at {args.db} (no such file)")
        from ..stores.sqlite import SQLiteStore

        return SQLiteStore(args.db)
    if args.dsn is not None:
        _only(args, "--dsn", table=True, prefix=False)
        # psycopg_pool logs each failed connection attempt; the command reports the
        # failure once, on one line, so those records stop at this handler.
        logging.getLogger("psycopg").addHandler(logging.NullHandler())
        try:
            from ..stores.postgres import PostgresStore
        except ImportError:
            raise _Unusable("--dsn needs psycopg: pip install 'toolwire[postgres]'") from None
        extra: dict[str, Any] = {"table": args.table} if args.table is not None else {}
        return PostgresStore(args.dsn, connect_timeout=args.timeout, **extra)
    _only(args, "--url", table=False, prefix=True)
    try:
        from ..stores.redis import RedisStore
    except ImportError:
        raise _Unusable("--url needs redis: pip install 'toolwire[redis]'") from None
    extra = {"prefix": args.prefix} if args.prefix is not None else {}
    return RedisStore(args.url, socket_timeout=args.timeout, **extra)


def _only(args: argparse.Namespace, backend: str, *, table: bool, prefix: bool) -> None:
    if args.table is not None and not table:
        raise _Unusable(f"--table is for PostgreSQL (--dsn), not {backend}")
    if args.prefix is not None and not prefix:
        raise _Unusable(f"--prefix is for Redis (--url), not {backend}")


# ------------------------------------------------------------------------------ actions


def result_text(value: str) -> str:
    """VALUE of ``--completed`` as the executor stores a tool's result: compact JSON with
    sorted keys and non-ASCII kept; :class:`_Unusable` when it is not JSON."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        parsed = json.loads(value, parse_constant=refuse)
    except (ValueError, RecursionError) as exc:
        message = f"--completed VALUE must be JSON ({exc}); quote a string: '\"done\"'"
        raise _Unusable(message) from None
    return json.dumps(parsed, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _console() -> Any:
    """A rich console when stdout is a terminal and rich is installed, else ``None``."""
    if not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:
        return None
    return Console(highlight=False)


def _emit(args: argparse.Namespace, document: Any, plain: str, fancy: Any = None) -> None:
    """Write ``document`` as JSON with ``--json``; else ``fancy`` (a rich renderable) on a
    terminal, or the ``plain`` text."""
    if args.json:
        sys.stdout.write(dumps(document) + "\n")
    else:
        console = _console() if fancy is not None else None
        if console is not None:
            console.print(fancy)
        else:
            sys.stdout.write(plain + "\n")
    sys.stdout.flush()


def _list(store: AdminStore, args: argparse.Namespace) -> int:
    records = store.records(status=args.status, newest_first=not args.oldest, limit=args.limit)
    now = time.time()
    _emit(args, records, plain_table(records, now), rich_table(records, now))
    return EXIT_OK


def _get(store: AdminStore, key: str) -> Record:
    record = store.get(key)
    if record is None:
        raise _Refused(f"no record for key {key}")
    return record


def _show(store: AdminStore, args: argparse.Namespace) -> int:
    record = _get(store, args.key)
    now = time.time()
    _emit(args, record, plain_details(record, now), rich_details(record, now))
    return EXIT_OK


def _resolve(store: AdminStore, args: argparse.Namespace) -> int:
    result = result_text(args.completed) if args.completed is not None else None
    record = _get(store, args.key)
    if record.status != "unknown":
        raise _Refused(
            f"refused: record {args.key} is {record.status}, not unknown; only a call whose "
            "outcome is in doubt can be settled by hand"
        )
    if result is not None:
        done = store.resolve(args.key, status="completed", result=result)
    else:
        done = store.resolve(args.key, status="failed", error=args.failed)
    if not done:  # it changed between the look and the write
        now_status = (store.get(args.key) or record).status
        raise _Refused(f"refused: record {args.key} changed meanwhile and is now {now_status}")
    settled = _get(store, args.key)
    now = time.time()
    _emit(
        args,
        {"resolved": True, "record": settled},
        f"resolved {args.key} as {settled.status}\n{plain_details(settled, now)}",
        rich_details(settled, now),
    )
    return EXIT_OK


def _purge(store: AdminStore, args: argparse.Namespace) -> int:
    purged = store.purge()
    noun = "record" if purged == 1 else "records"
    _emit(args, {"purged": purged}, f"purged {purged} expired {noun}")
    return EXIT_OK


_ACTIONS = {"list": _list, "show": _show, "resolve": _resolve, "purge": _purge}


def run(args: argparse.Namespace) -> int:
    """Perform ``args.action`` on the store the arguments name; return the exit status."""
    tolerant_output(sys.stdout)
    try:
        if args.action == "resolve" and args.completed is not None:
            result_text(args.completed)  # refuse a bad VALUE before touching the store
        store = _open(args)
        try:
            return _ACTIONS[args.action](store, args)
        finally:
            store.close()
    except _Refused as exc:
        return fail("store", str(exc), EXIT_REFUSED)
    except (_Unusable, SettingsError) as exc:
        return fail("store", str(exc), EXIT_USAGE)
    except StoreError as exc:
        return fail("store", f"the store failed: {exc}", EXIT_STORE_FAILED)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolwire._cli.store ACTION [options]``: the subcommand on its own."""
    return run_alone("store", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
