"""How ``toolwire store`` shows records: rich tables on a terminal, plain columns elsewhere.

A record written by an earlier version holds no tool name or call id: ``-`` stands for
them. Times are the store clock's; ages are measured against this machine's clock.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..stores import Record
from .subcommand import visible

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "COLUMNS",
    "details",
    "duration",
    "moment",
    "plain_details",
    "plain_table",
    "rich_details",
    "rich_table",
    "row",
]

COLUMNS = (
    "KEY",
    "STATUS",
    "TOOL",
    "CALL ID",
    "AGE",
    "EXPIRES",
    "FENCE",
    "OWNER",
    "IDEMPOTENCY KEY",
)

_STATUS_STYLE = {
    "in_progress": "yellow",
    "completed": "green",
    "failed": "red",
    "unknown": "bold magenta",
}


def duration(seconds: float) -> str:
    """A duration in the two largest units that matter: ``42s``, ``3m 10s``, ``2h 05m``,
    ``3d 04h``; negative durations are shown as ``0s``."""
    s = max(0, int(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


def moment(at: float | None, now: float) -> str:
    """A store time as UTC and relative to ``now``: ``2025-06-01 12:00:00Z (3m 10s ago)``."""
    if at is None:
        return "-"
    stamp = time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(at))
    relative = f"in {duration(at - now)}" if at > now else f"{duration(now - at)} ago"
    return f"{stamp} ({relative})"


def _expires(record: Record, now: float) -> str:
    if record.expires_at <= now:
        return f"expired {duration(now - record.expires_at)} ago"
    return f"in {duration(record.expires_at - now)}"


def row(record: Record, now: float) -> tuple[str, ...]:
    """The values of :data:`COLUMNS` for ``record``."""
    return (
        record.key,
        record.status,
        record.tool_name or "-",
        record.call_id or "-",
        duration(now - record.created_at),
        _expires(record, now),
        str(record.fence),
        record.owner or "-",
        record.idempotency_key,
    )


def details(record: Record, now: float) -> list[tuple[str, str]]:
    """Every field of ``record`` as ``(label, value)``; a result that is JSON is indented."""
    result = _shown_result(record.result)
    return [
        ("key", record.key),
        ("status", record.status),
        ("tool", record.tool_name or "-"),
        ("call id", record.call_id or "-"),
        ("scope", record.scope or "-"),
        ("turn", record.turn or "-"),
        ("idempotency key", record.idempotency_key),
        ("args hash", record.args_hash),
        ("owner", record.owner or "-"),
        ("fence", str(record.fence)),
        ("lease expires", _lease_text(record, now)),
        ("created", moment(record.created_at, now)),
        ("updated", moment(record.updated_at, now)),
        ("expires", moment(record.expires_at, now)),
        ("retention", "-" if record.retention is None else duration(record.retention)),
        ("result", "-" if result is None else result),
        ("error", record.error or "-"),
    ]


def _shown_result(result: str | None) -> str | None:
    """A stored result, indented when it is JSON (one that is not is shown as stored: the
    executor reports it unknown)."""
    if result is not None:
        with contextlib.suppress(ValueError):
            result = json.dumps(json.loads(result), indent=2, ensure_ascii=False)
    return result


def _lease_text(record: Record, now: float) -> str:
    """When the lease runs out, and what a run-out lease of a running call means."""
    lease = record.lease_expires_at
    lease_text = "-" if lease is None else moment(lease, now)
    if lease is not None and lease <= now and record.status == "in_progress":
        lease_text += "; ran out: the next claim of this call turns it unknown"
    return lease_text


def plain_table(records: Sequence[Record], now: float) -> str:
    """A header and one line per record, columns aligned, every value in full."""
    rows = [COLUMNS, *(tuple(_one_line(v) for v in row(r, now)) for r in records)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


def plain_details(record: Record, now: float) -> str:
    """One ``label: value`` line per field (a multi-line result indented beneath)."""
    lines = []
    for label, value in details(record, now):
        first, *rest = visible(value).split("\n")
        lines.append(f"{label + ':':<17}{first}")
        lines.extend(" " * 17 + more for more in rest)
    return "\n".join(lines)


def rich_table(records: Sequence[Record], now: float) -> Table:
    """The records as a rich table, statuses coloured, keys never wrapped, owners and
    idempotency keys cut to their first characters."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=f"{len(records)} records", title_justify="left")
    for name in COLUMNS:
        table.add_column(name, no_wrap=name in ("KEY", "STATUS", "AGE"), overflow="fold")
    for record in records:
        key, state, tool, call_id, age, expires, fence, owner, idempotency = row(record, now)
        status = Text(state, style=_STATUS_STYLE.get(record.status, ""))
        # the key stays whole (``show`` and ``resolve`` take it); the long hashes and
        # worker ids are cut, ``show`` has them in full
        shown = (tool, call_id, age, expires, fence, _short(owner))
        cells = [Text(_one_line(c)) for c in shown]
        table.add_row(Text(_one_line(key)), status, *cells, Text(_one_line(_short(idempotency))))
    return table


def _one_line(value: str) -> str:
    """A cell of one line that shows, never acts (values come from the store)."""
    return visible(value).replace("\n", "\\n")


def _short(value: str, keep: int = 12) -> str:
    return value if len(value) <= keep + 1 else value[:keep] + "…"


def rich_details(record: Record, now: float) -> Table:
    """Every field of ``record`` as a two-column rich grid."""
    from rich.table import Table
    from rich.text import Text

    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column(overflow="fold")
    for label, value in details(record, now):
        style = _STATUS_STYLE.get(value, "") if label == "status" else ""
        grid.add_row(label, Text(visible(value), style=style))
    return grid
