"""The checked requests every store serves, so that all backends accept and refuse exactly the
same calls; checks raise :class:`~toolwire.SettingsError` before any read or write.

Also the start-up self-test, as a flow of requests (:func:`probe`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._errors import SettingsError, StoreError
from ._protocol import Claim, FinalStatus, Record, ResolvedStatus, Status

T = TypeVar("T")

MAX_SECONDS = 1e9  # about 31 years: longer leases or retentions are mistakes
MAX_LIMIT = 100_000  # records listed at once
_FINAL = ("completed", "failed", "unknown")
STATUSES = frozenset({"in_progress", "completed", "failed", "unknown"})


class Request(Generic[T]):
    """A checked request whose answer is a ``T``."""

    __slots__ = ()


@dataclass(slots=True)
class ClaimRequest(Request[Claim]):
    """The checked arguments of ``claim``."""

    key: str
    args_hash: str
    idempotency_key: str
    owner: str
    lease: float
    retention: float
    reclaim: bool
    scope: str | None = None
    turn: str | None = None
    tool_name: str | None = None
    call_id: str | None = None

    def identity(self) -> tuple[str | None, str | None, str | None, str | None]:
        """The call's identity fields: scope, turn, tool name and call id."""
        return self.scope, self.turn, self.tool_name, self.call_id


@dataclass(slots=True)
class HeartbeatRequest(Request[bool]):
    """The checked arguments of ``heartbeat``."""

    key: str
    owner: str
    fence: int
    lease: float


@dataclass(slots=True)
class FinishRequest(Request[bool]):
    """The checked arguments of ``finish``."""

    key: str
    owner: str
    fence: int
    status: FinalStatus
    result: str | None
    error: str | None


@dataclass(slots=True)
class ReleaseRequest(Request[bool]):
    """The checked arguments of ``release``."""

    key: str
    owner: str
    fence: int


@dataclass(slots=True)
class GetRequest(Request[Record | None]):
    """The checked argument of ``get``."""

    key: str


@dataclass(slots=True)
class RecordsRequest(Request[list[Record]]):
    """The checked arguments of ``records``."""

    status: Status | None
    newest_first: bool
    limit: int
    tool_name: str | None = None
    call_id: str | None = None
    scope: str | None = None
    idempotency_key: str | None = None
    since: float | None = None

    def matches(self, record: Record) -> bool:
        """Whether ``record`` passes every filter of this request."""
        return (
            self.status in (None, record.status)
            and self.tool_name in (None, record.tool_name)
            and self.call_id in (None, record.call_id)
            and self.scope in (None, record.scope)
            and self.idempotency_key in (None, record.idempotency_key)
            and (self.since is None or record.created_at >= self.since)
        )

    def filters(self) -> list[tuple[str, str | float]]:
        """The filters given, as (field, value): ``since`` as ``created_at`` (at least)."""
        given: list[tuple[str, str | float]] = [
            (name, value)
            for name, value in (
                ("status", self.status),
                ("tool_name", self.tool_name),
                ("call_id", self.call_id),
                ("scope", self.scope),
                ("idempotency_key", self.idempotency_key),
            )
            if value is not None
        ]
        if self.since is not None:
            given.append(("created_at", self.since))
        return given


@dataclass(slots=True)
class ResolveRequest(Request[bool]):
    """The checked arguments of ``resolve``."""

    key: str
    status: ResolvedStatus
    result: str | None
    error: str | None


@dataclass(slots=True)
class PurgeRequest(Request[int]):
    """``purge`` (no arguments)."""


# ----------------------------------------------------------------------------- checks


def identifier(name: str, value: object) -> str:
    """``value`` if it is a non-empty string encodable as UTF-8."""
    if isinstance(value, str) and value.isascii() and value:
        return value  # ASCII always encodes; isascii() is O(1) (a flag of the str object)
    if not isinstance(value, str) or not value:
        raise SettingsError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SettingsError(f"{name} is not valid Unicode text: {value!r}") from exc
    return value


def seconds(name: str, value: object) -> float:
    """``value`` as a positive finite number of seconds, at most ``MAX_SECONDS``."""
    if type(value) is float and 0.0 < value <= MAX_SECONDS:
        return value  # the common case; NaN and infinities fail the comparison
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{name} must be a number of seconds, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0 or number > MAX_SECONDS:
        raise SettingsError(f"{name} must be a positive finite number of seconds, got {value!r}")
    return number


def count(name: str, value: object, *, low: int, high: int) -> int:
    """``value`` as an ``int`` (not a ``bool``) from ``low`` to ``high``."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SettingsError(f"{name} must be an int from {low} to {high}, got {value!r}")
    return value


def fence_number(value: object) -> int:
    """``value`` as a fence: a positive ``int`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SettingsError(f"fence must be a positive int, got {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """``value`` if it is a ``bool``."""
    if not isinstance(value, bool):
        raise SettingsError(f"{name} must be a bool, got {value!r}")
    return value


def text_or_none(name: str, value: object) -> str | None:
    """A result or error: ``None`` or any string (kept exactly, surrogates included)."""
    if value is not None and not isinstance(value, str):
        raise SettingsError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def identity_label(value: str) -> str:
    """A call's identity field (scope, turn, tool name, call id) as every store can hold
    it: the text itself, with any lone surrogate (no UTF-8 column takes one) written as
    its ``\\udXXX`` escape and any NUL (no PostgreSQL text takes one) as ``\\x00``."""
    if "\x00" in value:
        value = value.replace("\x00", "\\x00")
    if value.isascii():
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")


def label_or_none(name: str, value: object) -> str | None:
    """``None``, or ``value`` (a string, possibly empty) as :func:`identity_label` writes it."""
    if type(value) is str and value.isascii() and "\x00" not in value:
        return value  # the common case
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{name} must be a string or None, got {type(value).__name__}")
    return identity_label(value)


def time_or_none(name: str, value: object) -> float | None:
    """``None``, or ``value`` as a finite number (a store time, in seconds)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SettingsError(f"{name} must be a number of seconds or None, got {value!r}")
    if not math.isfinite(value):
        raise SettingsError(f"{name} must be finite, got {value!r}")
    return float(value)


def final_status(value: object) -> FinalStatus:
    """``value`` if it is one of the final statuses."""
    for status in _FINAL:
        if value == status:
            return status  # type: ignore[return-value]  # one of the literals, checked
    raise SettingsError(f"status must be one of {list(_FINAL)}, got {value!r}")


def status_or_none(value: object) -> Status | None:
    """``value`` if it is ``None`` or one of the four statuses."""
    if value is None:
        return None
    if value == "in_progress":
        return "in_progress"
    return final_status(value)


# --------------------------------------------------------------------------- requests


def claim(
    key: object,
    args_hash: object,
    idempotency_key: object,
    owner: object,
    lease: object,
    retention: object,
    reclaim: object,
    scope: object,
    turn: object,
    tool_name: object,
    call_id: object,
) -> ClaimRequest:
    """The checked request of ``claim(key, ...)``, its arguments in the Protocol's order."""
    return ClaimRequest(
        identifier("key", key),
        identifier("args_hash", args_hash),
        identifier("idempotency_key", idempotency_key),
        identifier("owner", owner),
        seconds("lease", lease),
        seconds("retention", retention),
        flag("reclaim", reclaim),
        label_or_none("scope", scope),
        label_or_none("turn", turn),
        label_or_none("tool_name", tool_name),
        label_or_none("call_id", call_id),
    )


def heartbeat(key: object, owner: object, fence: object, lease: object) -> HeartbeatRequest:
    """The checked request of ``heartbeat(key, owner=, fence=, lease=)``."""
    return HeartbeatRequest(
        identifier("key", key),
        identifier("owner", owner),
        fence_number(fence),
        seconds("lease", lease),
    )


def finish(
    key: object, owner: object, fence: object, status: object, result: object, error: object
) -> FinishRequest:
    """The checked request of ``finish(key, owner=, fence=, status=, result=, error=)``."""
    return FinishRequest(
        identifier("key", key),
        identifier("owner", owner),
        fence_number(fence),
        final_status(status),
        text_or_none("result", result),
        text_or_none("error", error),
    )


def release(key: object, owner: object, fence: object) -> ReleaseRequest:
    """The checked request of ``release(key, owner=, fence=)``."""
    return ReleaseRequest(identifier("key", key), identifier("owner", owner), fence_number(fence))


def get(key: object) -> GetRequest:
    """The checked request of ``get(key)``."""
    return GetRequest(identifier("key", key))


def records(
    status: object,
    tool_name: object,
    call_id: object,
    scope: object,
    idempotency_key: object,
    since: object,
    newest_first: object,
    limit: object,
) -> RecordsRequest:
    """The checked request of ``records(...)``, its arguments in the Protocol's order."""
    return RecordsRequest(
        status=status_or_none(status),
        newest_first=flag("newest_first", newest_first),
        limit=count("limit", limit, low=1, high=MAX_LIMIT),
        tool_name=label_or_none("tool_name", tool_name),
        call_id=label_or_none("call_id", call_id),
        scope=label_or_none("scope", scope),
        idempotency_key=label_or_none("idempotency_key", idempotency_key),
        since=time_or_none("since", since),
    )


def resolve(key: object, status: object, result: object, error: object) -> ResolveRequest:
    """The checked request of ``resolve(key, status=, result=, error=)``: ``completed``
    needs a result (JSON text, replayed to later runs), ``failed`` an error message."""
    result = text_or_none("result", result)
    error = text_or_none("error", error)
    if status == "completed":
        if result is None:
            raise SettingsError("resolve(status='completed') needs the result's JSON text")
        return ResolveRequest(identifier("key", key), "completed", result, error)
    if status == "failed":
        if error is None:
            raise SettingsError("resolve(status='failed') needs an error message")
        return ResolveRequest(identifier("key", key), "failed", result, error)
    raise SettingsError(f"resolve status must be 'completed' or 'failed', got {status!r}")


# -------------------------------------------------------------------------- self-test


def probe(behind: str) -> Generator[Request[Any], Any, None]:
    """The start-up self-test as a flow of requests: claim one fresh key as two
    owners, expect exactly the first to win, expect a write with a stale fence to be
    refused, release the claim; raise :class:`StoreError` otherwise (fail closed)."""
    key = f"toolwire-self-test:{uuid.uuid4().hex}"
    claims: list[Claim] = []
    for owner in (f"{key}:a", f"{key}:b"):
        claims.append((yield ClaimRequest(key, "probe", key, owner, 60.0, 60.0, False)))
    first, second = claims
    stale = False
    if first.acquired:
        owner, fence_ = f"{key}:a", first.record.fence
        stale = yield FinishRequest(key, owner, fence_ + 1, "completed", "1", None)
        yield ReleaseRequest(key, owner, fence_)
    won_once = first.acquired and not second.acquired
    if won_once and second.record.owner == first.record.owner and not stale:
        return
    raise StoreError(
        "the store does not enforce conditional writes: claiming one probe key twice gave "
        f"acquired={first.acquired} then acquired={second.acquired}, a stale-fence write "
        f"was {'accepted' if stale else 'refused'}; refusing to run tools on it (check for "
        f"a proxy or a replica in front of {behind})"
    )
