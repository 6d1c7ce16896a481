"""Argument checks shared by every store, so that all backends accept and refuse exactly
the same calls: one Protocol, one set of rules, enforced before any read or write.

Every check raises :class:`~toolwire.StoreSettingsError` (a caller mistake, not an outage)
naming the argument and what it got.
Identifiers (keys, hashes, owners) are non-empty strings that encode as UTF-8 (no lone
surrogates: a PostgreSQL column or Redis key could not hold them faithfully); results and
errors are any text, stored byte for byte; durations are positive, finite and at most
``MAX_SECONDS``; fences are positive ints.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Awaitable, Callable

from .._errors import StoreError, StoreSettingsError
from ._protocol import Claim, FinalStatus

MAX_SECONDS = 1e9  # about 31 years: longer leases or retentions are mistakes
_FINAL = ("completed", "failed", "unknown")
STATUSES = frozenset({"in_progress", "completed", "failed", "unknown"})


def identifier(name: str, value: object) -> str:
    """``value`` if it is a non-empty string encodable as UTF-8."""
    if not isinstance(value, str) or not value:
        raise StoreSettingsError(f"{name} must be a non-empty string, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise StoreSettingsError(f"{name} is not valid Unicode text: {value!r}") from exc
    return value


def seconds(name: str, value: object) -> float:
    """``value`` as a positive finite number of seconds, at most ``MAX_SECONDS``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StoreSettingsError(f"{name} must be a number of seconds, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0 or number > MAX_SECONDS:
        raise StoreSettingsError(
            f"{name} must be a positive finite number of seconds, got {value!r}"
        )
    return number


def fence(value: object) -> int:
    """``value`` as a fence: a positive ``int`` (not a ``bool``)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StoreSettingsError(f"fence must be a positive int, got {value!r}")
    return value


def flag(name: str, value: object) -> bool:
    """``value`` if it is a ``bool``."""
    if not isinstance(value, bool):
        raise StoreSettingsError(f"{name} must be a bool, got {value!r}")
    return value


def text_or_none(name: str, value: object) -> str | None:
    """A result or error: ``None`` or any string (kept exactly, surrogates included)."""
    if value is not None and not isinstance(value, str):
        raise StoreSettingsError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def final_status(value: object) -> FinalStatus:
    """``value`` if it is one of the final statuses."""
    if value == "completed":
        return "completed"
    if value == "failed":
        return "failed"
    if value == "unknown":
        return "unknown"
    raise StoreSettingsError(f"status must be one of {list(_FINAL)}, got {value!r}")


def claim_arguments(
    key: object,
    args_hash: object,
    idempotency_key: object,
    owner: object,
    lease: object,
    retention: object,
    reclaim: object,
) -> None:
    """Check every argument of ``claim``."""
    identifier("key", key)
    identifier("args_hash", args_hash)
    identifier("idempotency_key", idempotency_key)
    identifier("owner", owner)
    seconds("lease", lease)
    seconds("retention", retention)
    flag("reclaim", reclaim)


def held_arguments(key: object, owner: object, fence_: object) -> None:
    """Check the identity arguments of a fenced write (heartbeat, finish, release)."""
    identifier("key", key)
    identifier("owner", owner)
    fence(fence_)


def finish_arguments(
    key: object, owner: object, fence_: object, status: object, result: object, error: object
) -> None:
    """Check every argument of ``finish``."""
    held_arguments(key, owner, fence_)
    final_status(status)
    text_or_none("result", result)
    text_or_none("error", error)


def probe_failure(first: Claim, second: Claim, behind: str) -> StoreError | None:
    """Why a start-up probe (one key claimed twice by one owner) shows that conditional
    writes are not enforced, or ``None`` when exactly the first claim won."""
    if first.acquired and not second.acquired and second.record.owner == first.record.owner:
        return None
    return StoreError(
        "the store does not enforce conditional writes: claiming one probe key twice gave "
        f"acquired={first.acquired} then acquired={second.acquired}; refusing to run tools "
        f"on it (check for a proxy or a replica in front of {behind})"
    )


ClaimFn = Callable[..., Claim]
ReleaseFn = Callable[..., object]


def _probe_claims(key: str) -> list[dict[str, object]]:
    """The two claims of one probe key by two owners."""
    return [
        {
            "args_hash": "probe",
            "idempotency_key": key,
            "owner": f"{key}:{suffix}",
            "lease": 60.0,
            "retention": 60.0,
            "reclaim": False,
        }
        for suffix in ("a", "b")
    ]


def self_test(claim: ClaimFn, release: ReleaseFn, behind: str) -> None:
    """The start-up probe (G10): claim one fresh key twice, expect exactly the first claim
    to win, release it, and raise :class:`StoreError` if the store let both (or neither)
    win. ``claim``/``release`` are the store's own operations."""
    key = f"toolwire-self-test:{uuid.uuid4().hex}"
    first, second = (claim(key, **arguments) for arguments in _probe_claims(key))
    if first.acquired:
        release(key, owner=first.record.owner or "", fence=first.record.fence)
    failure = probe_failure(first, second, behind)
    if failure is not None:
        raise failure


async def aself_test(
    claim: Callable[..., Awaitable[Claim]], release: Callable[..., Awaitable[object]], behind: str
) -> None:
    """:func:`self_test` for an asyncio store."""
    key = f"toolwire-self-test:{uuid.uuid4().hex}"
    first = await claim(key, **_probe_claims(key)[0])
    second = await claim(key, **_probe_claims(key)[1])
    if first.acquired:
        await release(key, owner=first.record.owner or "", fence=first.record.fence)
    failure = probe_failure(first, second, behind)
    if failure is not None:
        raise failure
