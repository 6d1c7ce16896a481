"""``toolwire store``: list, show, resolve and purge the records of an idempotency store;
approve or deny the calls awaiting approval.

``resolve`` settles only an ``unknown`` record, ``approve``/``deny`` only an awaiting call
(the store checks again, atomically).
Exit status: 0 done, 1 not found or refused, 2 unusable arguments, 4 the store failed,
130 interrupted.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
import math
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .._errors import ApprovalError, ArgumentsInvalid, StoreError, UsageError
from .._execution import approvals
from .._tools.jsonschema import compile_schema
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
exit status: 0 done; 1 not found, or refused (resolve touches only unknown records,
approve and deny only calls awaiting approval);
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


_AGE_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhd]?)")


def _since(text: str) -> float:
    """``--since``: an age before now, or an ISO 8601 time, as epoch seconds."""
    age = _AGE.fullmatch(text.strip())
    if age is not None:
        return time.time() - float(age[1]) * _AGE_UNITS[age[2] or "s"]
    try:
        moment = datetime.datetime.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not an age (90s, 15m, 2h, 3d) or an ISO 8601 time: {text!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return moment.timestamp()


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
        help="list, show, resolve (unknown calls), approve or deny, and purge store records",
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
    listing.add_argument("--status", choices=_STATUSES, default=None)
    listing.add_argument("--tool", metavar="NAME", help="only calls of this tool")
    listing.add_argument("--call-id", metavar="ID", help="only calls with this provider call id")
    listing.add_argument("--scope", metavar="SCOPE", help="only calls of this executor scope")
    listing.add_argument(
        "--since",
        type=_since,
        metavar="WHEN",
        help="only calls claimed since WHEN: an age (90s, 15m, 2h, 3d) or an ISO 8601 "
        "time (UTC when it names no offset)",
    )
    listing.add_argument("--limit", type=_limit, default=50, help="at most this many (50)")
    order = listing.add_mutually_exclusive_group()
    order.add_argument("--newest", dest="oldest", action="store_false", help="newest first")
    order.add_argument("--oldest", dest="oldest", action="store_true", help="oldest first")
    listing.set_defaults(oldest=False)  # --newest's store_false would default to True

    show = actions.add_parser("show", parents=[where], help="every field of one record")
    show.add_argument(
        "key",
        metavar="KEY",
        help="the record's key, the call's idempotency key (Outcome.idempotency_key, the "
        "log's key=) or the provider's call id",
    )

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

    approve = actions.add_parser(
        "approve", parents=[where], help="approve a call awaiting approval; the next run runs it"
    )
    approve.add_argument(
        "key", metavar="KEY", help="the call's key (as listed, or without approval/)"
    )
    approve.add_argument(
        "--arguments",
        metavar="JSON",
        help="run it with these arguments instead (a JSON object, checked against its schema)",
    )
    deny = actions.add_parser(
        "deny", parents=[where], help="deny a call awaiting approval; the model reads the reason"
    )
    deny.add_argument("key", metavar="KEY", help="the call's key (as listed, or without approval/)")
    deny.add_argument("--reason", required=True, metavar="TEXT", help="what the model is told")

    actions.add_parser("purge", parents=[where], help="delete the records past their expiry")


_RECORD_STATUSES = ("in_progress", "completed", "failed", "unknown")
_APPROVAL_STATUSES = ("awaiting_approval", "approved", "denied")
_STATUSES = (*_RECORD_STATUSES, *_APPROVAL_STATUSES)
_STORED_AS = {"awaiting_approval": "unknown", "approved": "completed", "denied": "failed"}


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


def _emit(
    args: argparse.Namespace,
    document: Any,
    plain: Callable[[], str],
    fancy: Callable[[], Any] | None = None,
) -> None:
    """Write ``document`` as JSON with ``--json``; else what ``fancy`` builds (a rich
    renderable) on a terminal with rich installed, or the ``plain`` text. The views are
    built only when shown: ``--json`` and plain output never import rich (an optional
    dependency, the ``cli`` extra)."""
    if args.json:
        sys.stdout.write(dumps(document) + "\n")
    else:
        console = _console() if fancy is not None else None
        if console is not None and fancy is not None:
            console.print(fancy())
        else:
            sys.stdout.write(plain() + "\n")
    sys.stdout.flush()


def _shown(record: Record) -> Record:
    """An approval record with the status it stands for (``awaiting_approval``...)."""
    if approvals.call_key(record.key) is None:
        return record
    return dataclasses.replace(record, status=approvals.view_status(record))  # type: ignore[arg-type]


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    """The ``records`` filters that ``list``'s options give (all but ``--status``)."""
    given = {
        "tool_name": args.tool,
        "call_id": args.call_id,
        "scope": args.scope,
        "since": args.since,
    }
    return {name: value for name, value in given.items() if value is not None}


def _list(store: AdminStore, args: argparse.Namespace) -> int:
    wanted = args.status
    stored = _STORED_AS.get(wanted, wanted)
    order: dict[str, Any] = {"newest_first": not args.oldest, "limit": args.limit}
    filters = _filters(args)
    found = store.records(status=stored, **order, **filters)
    records = [_shown(r) for r in found]
    if wanted is not None:
        if wanted == "awaiting_approval":  # also those being stored right now
            busy = store.records(status="in_progress", **order, **filters)
            records += [_shown(r) for r in busy if approvals.call_key(r.key) is not None]
            records.sort(key=lambda r: (r.created_at, r.key), reverse=not args.oldest)
        records = [r for r in records if r.status == wanted][: args.limit]
    now = time.time()
    _emit(args, records, lambda: plain_table(records, now), lambda: rich_table(records, now))
    return EXIT_OK


def _get(store: AdminStore, key: str) -> Record:
    record = store.get(key)
    if record is None:
        raise _Refused(f"no record for key {key}")
    return record


def _find(store: AdminStore, text: str) -> Record:
    """The one record ``text`` names: by store key, else by idempotency key (the call's
    own record before its approval record), else by provider call id."""
    record = store.get(text)
    if record is not None:
        return record
    by_key = store.records(idempotency_key=text, limit=10)
    if by_key:
        by_key.sort(key=lambda r: approvals.call_key(r.key) is not None)
        return by_key[0]
    by_call = [r for r in store.records(call_id=text, limit=10) if not _is_approval(r)]
    if len(by_call) == 1:
        return by_call[0]
    if by_call:
        keys = ", ".join(f"{r.key} (scope {r.scope}, tool {r.tool_name})" for r in by_call)
        raise _Refused(f"call id {text} names {len(by_call)} records: {keys}; show one by key")
    raise _Refused(f"no record for key, idempotency key or call id {text}")


def _is_approval(record: Record) -> bool:
    return approvals.call_key(record.key) is not None


def _show(store: AdminStore, args: argparse.Namespace) -> int:
    record = _find(store, args.key)
    now = time.time()
    _emit(args, record, lambda: plain_details(record, now), lambda: rich_details(record, now))
    return EXIT_OK


def _resolve(store: AdminStore, args: argparse.Namespace) -> int:
    result = result_text(args.completed) if args.completed is not None else None
    record = _get(store, args.key)
    if approvals.call_key(record.key) is not None:
        raise _Refused(
            f"refused: {args.key} is a call's approval; decide it with toolwire store approve "
            "or toolwire store deny"
        )
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
        lambda: f"resolved {args.key} as {settled.status}\n{plain_details(settled, now)}",
        lambda: rich_details(settled, now),
    )
    return EXIT_OK


def edited_arguments(text: str | None) -> dict[str, Any] | None:
    """``--arguments`` as a JSON object; :class:`_Unusable` when it is not one."""
    if text is None:
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _Unusable(f"--arguments must be a JSON object ({exc})") from None
    if not isinstance(value, dict):
        raise _Unusable(f"--arguments must be a JSON object, not {type(value).__name__}")
    return value


def _schema_check(name: str, parameters: Any, arguments: Any) -> dict[str, Any]:
    """Edited arguments checked against the schema stored with the call (the executor
    validates them again with the tool itself before it runs them)."""
    if not isinstance(parameters, dict):
        raise _Unusable(f"the call of {name!r} was stored without its schema: cannot check it")
    errors = compile_schema(parameters).errors(arguments)
    if errors:
        listing = "; ".join(str(error) for error in errors)
        raise ArgumentsInvalid(f"the arguments do not fit tool {name!r}: {listing}", tool=name)
    return dict(arguments)


def _decided(args: argparse.Namespace, verb: str, record: Record) -> int:
    shown = _shown(record)
    now = time.time()
    _emit(
        args,
        {verb: True, "record": shown},
        lambda: f"{verb} {args.key}\n{plain_details(shown, now)}",
        lambda: rich_details(shown, now),
    )
    return EXIT_OK


def _call_key(text: str) -> str:
    return approvals.call_key(text) or text


def _approve(store: AdminStore, args: argparse.Namespace) -> int:
    edit = edited_arguments(args.arguments)
    flow = approvals.approve(_call_key(args.key), edit, _schema_check)
    return _decided(args, "approved", approvals.run(store, flow))


def _deny(store: AdminStore, args: argparse.Namespace) -> int:
    flow = approvals.deny(_call_key(args.key), args.reason)
    return _decided(args, "denied", approvals.run(store, flow))


def _purge(store: AdminStore, args: argparse.Namespace) -> int:
    purged = store.purge()
    noun = "record" if purged == 1 else "records"
    _emit(args, {"purged": purged}, lambda: f"purged {purged} expired {noun}")
    return EXIT_OK


_ACTIONS = {
    "list": _list,
    "show": _show,
    "resolve": _resolve,
    "approve": _approve,
    "deny": _deny,
    "purge": _purge,
}


def run(args: argparse.Namespace) -> int:
    """Perform ``args.action`` on the store the arguments name; return the exit status."""
    tolerant_output(sys.stdout)
    try:
        if args.action == "resolve" and args.completed is not None:
            result_text(args.completed)  # refuse a bad VALUE before touching the store
        if args.action == "approve":
            edited_arguments(args.arguments)
        store = _open(args)
        try:
            return _ACTIONS[args.action](store, args)
        finally:
            store.close()
    except (_Refused, ApprovalError) as exc:
        return fail("store", str(exc), EXIT_REFUSED)
    except (_Unusable, UsageError, ArgumentsInvalid) as exc:
        return fail("store", str(exc), EXIT_USAGE)
    except StoreError as exc:
        return fail("store", f"the store failed: {exc}", EXIT_STORE_FAILED)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolwire._cli.store ACTION [options]``: the subcommand on its own."""
    return run_alone("store", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
