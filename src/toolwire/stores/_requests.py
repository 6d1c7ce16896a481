"""The checked requests every store serves, so that all backends accept and refuse exactly the
same calls; checks raise :class:`~toolwire.SettingsError` before any read or write.

Also the start-up self-test, as a flow of requests (:func:`probe`).
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from .._errors import SettingsError, StoreError
from ._protocol import (
    Claim,
    ClaimOptions,
    FinalStatus,
    FinishOptions,
    HeartbeatOptions,
    Held,
    Record,
    RecordsOptions,
    ResolvedStatus,
    ResolveOptions,
    Status,
)

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


def fence(value: object) -> int:
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


def _options(
    operation: str,
    options: Mapping[str, object],
    required: frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> None:
    """Refuse missing or unexpected keyword arguments, as a Python signature would."""
    if options.keys() == required:
        return  # the common case, on the path of every call: one set comparison in C
    missing = sorted(required - options.keys())
    if missing:
        raise SettingsError(f"{operation}() is missing {', '.join(missing)}")
    unknown = sorted(options.keys() - required - optional)
    if unknown:
        raise SettingsError(f"{operation}() got unexpected arguments {', '.join(unknown)}")


# --------------------------------------------------------------------------- requests

# The keyword arguments of each operation, as the Protocol's signatures declare them
# (required; optional for records and resolve).
_CLAIM = ClaimOptions.__required_keys__
_CLAIM_IDENTITY = ClaimOptions.__optional_keys__
_CLAIM_ALL = _CLAIM | _CLAIM_IDENTITY
_HEARTBEAT = HeartbeatOptions.__required_keys__
_FINISH = FinishOptions.__required_keys__
_RELEASE = Held.__required_keys__
_RECORDS = RecordsOptions.__optional_keys__
_RESOLVE = ResolveOptions.__required_keys__
_RESOLVE_TEXTS = ResolveOptions.__optional_keys__


def claim(key: object, options: Mapping[str, object]) -> ClaimRequest:
    """The checked request of ``claim(key, **options)``."""
    keys = options.keys()
    if keys == _CLAIM:  # a caller that names no identity
        scope = turn = tool_name = call_id = None
    else:
        if keys != _CLAIM_ALL:  # not the executor's call: find what is wrong
            _options("claim", options, _CLAIM, _CLAIM_IDENTITY)
        get = options.get
        scope = label_or_none("scope", get("scope"))
        turn = label_or_none("turn", get("turn"))
        tool_name = label_or_none("tool_name", get("tool_name"))
        call_id = label_or_none("call_id", get("call_id"))
    return ClaimRequest(
        identifier("key", key),
        identifier("args_hash", options["args_hash"]),
        identifier("idempotency_key", options["idempotency_key"]),
        identifier("owner", options["owner"]),
        seconds("lease", options["lease"]),
        seconds("retention", options["retention"]),
        flag("reclaim", options["reclaim"]),
        scope,
        turn,
        tool_name,
        call_id,
    )


def _fenced(
    operation: str, key: object, options: Mapping[str, object], expected: frozenset[str]
) -> tuple[str, str, int]:
    """The checked key, owner and fence of a fenced operation (heartbeat, finish, release),
    once its arguments are those ``expected``."""
    if options.keys() != expected:  # not the common case: find what is wrong
        _options(operation, options, expected)
    return identifier("key", key), identifier("owner", options["owner"]), fence(options["fence"])


def heartbeat(key: object, options: Mapping[str, object]) -> HeartbeatRequest:
    """The checked request of ``heartbeat(key, **options)``."""
    fenced = _fenced("heartbeat", key, options, _HEARTBEAT)
    return HeartbeatRequest(*fenced, seconds("lease", options["lease"]))


def finish(key: object, options: Mapping[str, object]) -> FinishRequest:
    """The checked request of ``finish(key, **options)``."""
    fenced = _fenced("finish", key, options, _FINISH)
    return FinishRequest(
        *fenced,
        final_status(options["status"]),
        text_or_none("result", options["result"]),
        text_or_none("error", options["error"]),
    )


def release(key: object, options: Mapping[str, object]) -> ReleaseRequest:
    """The checked request of ``release(key, **options)``."""
    return ReleaseRequest(*_fenced("release", key, options, _RELEASE))


def get(key: object) -> GetRequest:
    """The checked request of ``get(key)``."""
    return GetRequest(identifier("key", key))


def records(options: Mapping[str, object]) -> RecordsRequest:
    """The checked request of ``records(**options)``."""
    _options("records", options, frozenset(), _RECORDS)
    get = options.get
    return RecordsRequest(
        status=status_or_none(get("status")),
        newest_first=flag("newest_first", get("newest_first", False)),
        limit=count("limit", get("limit", 100), low=1, high=MAX_LIMIT),
        tool_name=label_or_none("tool_name", get("tool_name")),
        call_id=label_or_none("call_id", get("call_id")),
        scope=label_or_none("scope", get("scope")),
        idempotency_key=label_or_none("idempotency_key", get("idempotency_key")),
        since=time_or_none("since", get("since")),
    )


def resolve(key: object, options: Mapping[str, object]) -> ResolveRequest:
    """The checked request of ``resolve(key, **options)``: ``completed`` needs a result
    (JSON text, replayed to later runs), ``failed`` an error message."""
    _options("resolve", options, _RESOLVE, _RESOLVE_TEXTS)
    status = options["status"]
    result = text_or_none("result", options.get("result"))
    error = text_or_none("error", options.get("error"))
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
