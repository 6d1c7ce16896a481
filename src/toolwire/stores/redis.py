"""Redis stores (redis-py): ``RedisStore`` (threads) and ``AsyncRedisStore`` (``redis.asyncio``).

Strategy. One Redis hash per call key (``<prefix><key>``, fields named like the
:class:`~toolwire.stores.Record` attributes). Every transition is one Lua script, and Redis
runs a script atomically, so each decision is a single arbitrated step on the server:

- ``claim`` reads the hash and, in the same script, inserts (no record, or one past its
  retention: fence 1 or old fence + 1), takes over an expired lease (``reclaim``: new
  owner, fence + 1), declares it ``unknown`` (fence + 1, no owner), or leaves it alone,
  and returns the resulting hash;
- ``heartbeat``, ``finish`` and ``release`` change the hash only if it is ``in_progress``,
  within its retention, and its ``owner`` and ``fence`` match: a fenced-out worker gets
  ``False`` and changes nothing;
- ``get`` returns nothing for a record past its retention; ``purge`` walks the prefix with
  ``SCAN`` and deletes, one script per batch, the hashes past their retention.

Time is the server's: every script reads ``redis.call('TIME')`` once and keeps times as
integer microseconds since the epoch (exact in Lua's doubles). Retention is the record's
``expires_at``; the hash also gets a ``PEXPIREAT`` of ``expires_at`` plus ``expire_grace``
seconds, so Redis deletes forgotten records by itself (``purge`` counts only those Redis has
not yet removed). ``result`` and ``error`` are stored as UTF-8 bytes with
``surrogatepass``: every Python string comes back byte-identical.

Not guaranteed — read this before deploying: the store is safe only on a **single Redis
primary without asynchronous fail-over**. Redis replicates asynchronously, so a fail-over
can lose an acknowledged claim and let a second worker run the same tool; there is no
Redlock here and none would fix that. Use PostgreSQL (or SQLite on one host) where that
matters.

Every driver failure or unexpected reply raises ``toolwire.StoreError`` with the cause
chained. The client does not retry on its own (redis-py would by default): a script whose
reply was lost may have run, and running it again would misreport, so the failure is
raised and the next operation reconnects. The start-up self-test (G10) claims a fresh
probe key twice and requires exactly one acquisition. Each operation is one round trip
and O(1) on the server; ``purge`` is O(number of keys under the prefix).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from types import TracebackType
from typing import Any, cast

try:
    import redis
    import redis.asyncio as aredis
    from redis.asyncio.retry import Retry as AsyncRetry
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - exercised in a subprocess test
    raise ImportError(
        "toolwire.stores.redis needs redis-py; install it with pip install 'toolwire[redis]'"
    ) from exc

from .._errors import StoreError, StoreSettingsError
from . import _checks as checks
from ._protocol import Claim, FinalStatus, Record, Status

__all__ = ["AsyncRedisStore", "RedisStore"]

_LEASE_LOST = "lease expired while in progress; the tool may have run"
_SCAN_BATCH = 500

# Shared by every script: effect replication, the server clock in microseconds, integer
# formatting that survives Lua's tostring (which would print 1.7e+15), and the
# owner/fence test.
_PRELUDE = """
if redis.replicate_commands then
  -- Redis < 5 replicates scripts verbatim and refuses writes after TIME unless the
  -- script asks for effect replication; Redis >= 5 always does it (this is a no-op).
  redis.replicate_commands()
end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function fmt(n)
  return string.format('%.0f', n)
end
local function held(k, now, owner, fence)
  local v = redis.call('HMGET', k, 'status', 'owner', 'fence', 'expires_at')
  return v[1] == 'in_progress' and v[2] == owner and v[3] ~= false
    and tonumber(v[3]) == tonumber(fence) and v[4] ~= false and tonumber(v[4]) > now
end
"""

_CLAIM = (
    _PRELUDE
    + """
local k = KEYS[1]
local args_hash, idem, owner = ARGV[1], ARGV[2], ARGV[3]
local lease, retention = tonumber(ARGV[4]), tonumber(ARGV[5])
local reclaim, grace, lost = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8]
local now = now_us()
local v = redis.call('HMGET', k, 'args_hash', 'status', 'fence', 'lease_expires_at',
  'expires_at')
local acquired = 0
if v[5] ~= false and tonumber(v[5]) > now then
  if v[1] == args_hash and v[2] == 'in_progress' and v[4] ~= false
      and tonumber(v[4]) <= now then
    local fence = fmt(tonumber(v[3]) + 1)
    if reclaim then
      local expires = math.max(tonumber(v[5]), now + retention)
      redis.call('HSET', k, 'idempotency_key', idem, 'status', 'in_progress',
        'owner', owner, 'fence', fence, 'lease_expires_at', fmt(now + lease),
        'expires_at', fmt(expires))
      redis.call('HDEL', k, 'result', 'error')
      redis.call('PEXPIREAT', k, fmt(math.floor(expires / 1000) + grace))
      acquired = 1
    else
      redis.call('HSET', k, 'status', 'unknown', 'fence', fence, 'error', lost)
      redis.call('HDEL', k, 'owner', 'lease_expires_at', 'result')
    end
  end
else
  local fence = 1
  if v[3] ~= false and tonumber(v[3]) ~= nil then
    fence = tonumber(v[3]) + 1
  end
  local expires = now + retention
  redis.call('DEL', k)
  redis.call('HSET', k, 'args_hash', args_hash, 'idempotency_key', idem,
    'status', 'in_progress', 'owner', owner, 'fence', fmt(fence),
    'lease_expires_at', fmt(now + lease), 'created_at', fmt(now), 'expires_at', fmt(expires))
  redis.call('PEXPIREAT', k, fmt(math.floor(expires / 1000) + grace))
  acquired = 1
end
return {acquired, redis.call('HGETALL', k)}
"""
)

_HEARTBEAT = (
    _PRELUDE
    + """
local now = now_us()
if not held(KEYS[1], now, ARGV[1], ARGV[2]) then
  return 0
end
redis.call('HSET', KEYS[1], 'lease_expires_at', fmt(now + tonumber(ARGV[3])))
return 1
"""
)

_FINISH = (
    _PRELUDE
    + """
local k = KEYS[1]
if not held(k, now_us(), ARGV[1], ARGV[2]) then
  return 0
end
redis.call('HSET', k, 'status', ARGV[3])
redis.call('HDEL', k, 'lease_expires_at')
if ARGV[4] == '1' then
  redis.call('HSET', k, 'result', ARGV[5])
else
  redis.call('HDEL', k, 'result')
end
if ARGV[6] == '1' then
  redis.call('HSET', k, 'error', ARGV[7])
else
  redis.call('HDEL', k, 'error')
end
return 1
"""
)

_RELEASE = (
    _PRELUDE
    + """
if not held(KEYS[1], now_us(), ARGV[1], ARGV[2]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
"""
)

_GET = (
    _PRELUDE
    + """
local x = redis.call('HGET', KEYS[1], 'expires_at')
if x == false or tonumber(x) == nil or tonumber(x) <= now_us() then
  return false
end
return redis.call('HGETALL', KEYS[1])
"""
)

_PURGE = (
    _PRELUDE
    + """
local now = now_us()
local n = 0
for _, k in ipairs(KEYS) do
  if redis.call('TYPE', k)['ok'] == 'hash' then
    local x = redis.call('HGET', k, 'expires_at')
    if x ~= false and tonumber(x) ~= nil and tonumber(x) <= now then
      redis.call('DEL', k)
      n = n + 1
    end
  end
end
return n
"""
)


# ------------------------------------------------------------------------- validation


def _utf8(name: str, value: object) -> bytes:
    """An identifier argument as strict UTF-8 bytes."""
    return checks.identifier(name, value).encode("utf-8")


def _micros(name: str, value: object) -> int:
    """A positive finite duration in seconds as whole microseconds (at least 1)."""
    return max(1, round(checks.seconds(name, value) * 1_000_000))


def _optional(name: str, value: object) -> tuple[bytes, bytes]:
    """A result or error as (present flag, exact bytes) for the finish script."""
    text = checks.text_or_none(name, value)
    if text is None:
        return b"0", b""
    return b"1", text.encode("utf-8", "surrogatepass")


def _claim_args(
    args_hash: object,
    idempotency_key: object,
    owner: object,
    lease: object,
    retention: object,
    reclaim: object,
    grace_ms: int,
) -> list[bytes | int]:
    flag = checks.flag("reclaim", reclaim)
    return [
        _utf8("args_hash", args_hash),
        _utf8("idempotency_key", idempotency_key),
        _utf8("owner", owner),
        _micros("lease", lease),
        _micros("retention", retention),
        b"1" if flag else b"0",
        grace_ms,
        _LEASE_LOST.encode(),
    ]


def _finish_args(
    owner: object, fence: object, status: object, result: object, error: object
) -> list[bytes | int]:
    final = checks.final_status(status)
    has_result, result_bytes = _optional("result", result)
    has_error, error_bytes = _optional("error", error)
    return [
        _utf8("owner", owner),
        checks.fence(fence),
        final.encode(),
        has_result,
        result_bytes,
        has_error,
        error_bytes,
    ]


def _prefix(value: object) -> str:
    if not isinstance(value, str):
        raise StoreSettingsError(f"prefix must be a string, got {type(value).__name__}")
    return value


def _scan_pattern(prefix: str) -> str:
    """A ``SCAN MATCH`` pattern for every key under ``prefix``, glob characters escaped."""
    return re.sub(r"([*?\[\]\\])", r"\\\1", prefix) + "*"


# ---------------------------------------------------------------------------- decoding


def _unexpected(reply: object) -> StoreError:
    return StoreError(f"unexpected reply from Redis: {reply!r:.200}")


def _field_text(fields: dict[bytes, bytes], name: str, reply: object) -> str:
    value = fields.get(name.encode())
    if value is None:
        raise _unexpected(reply)
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _unexpected(reply) from exc


def _field_time(fields: dict[bytes, bytes], name: str, reply: object) -> float | None:
    value = fields.get(name.encode())
    if value is None:
        return None
    try:
        return int(value) / 1_000_000
    except ValueError as exc:
        raise _unexpected(reply) from exc


def _record(key: str, reply: object) -> Record:
    """A flat ``HGETALL`` reply as a :class:`Record`; ``StoreError`` if malformed."""
    if not isinstance(reply, list) or len(reply) % 2 or not reply:
        raise _unexpected(reply)
    if not all(isinstance(item, bytes) for item in reply):
        raise _unexpected(reply)
    fields: dict[bytes, bytes] = dict(zip(reply[::2], reply[1::2], strict=True))
    status = _field_text(fields, "status", reply)
    if status not in checks.STATUSES:
        raise _unexpected(reply)
    state = cast(Status, status)  # checked against checks.STATUSES above
    owner = fields.get(b"owner")
    result = fields.get(b"result")
    error = fields.get(b"error")
    created_at = _field_time(fields, "created_at", reply)
    expires_at = _field_time(fields, "expires_at", reply)
    if created_at is None or expires_at is None:
        raise _unexpected(reply)
    try:
        fence = int(fields.get(b"fence", b""))
        owner_text = None if owner is None else owner.decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _unexpected(reply) from exc
    return Record(
        key=key,
        args_hash=_field_text(fields, "args_hash", reply),
        idempotency_key=_field_text(fields, "idempotency_key", reply),
        status=state,
        owner=owner_text,
        fence=fence,
        lease_expires_at=_field_time(fields, "lease_expires_at", reply),
        result=None if result is None else result.decode("utf-8", "surrogatepass"),
        error=None if error is None else error.decode("utf-8", "surrogatepass"),
        created_at=created_at,
        expires_at=expires_at,
    )


def _claim_result(key: str, reply: object) -> Claim:
    if not isinstance(reply, list) or len(reply) != 2 or reply[0] not in (0, 1):
        raise _unexpected(reply)
    return Claim(acquired=reply[0] == 1, record=_record(key, reply[1]))


def _flag(reply: object) -> bool:
    if reply not in (0, 1) or isinstance(reply, bool):
        raise _unexpected(reply)
    return reply == 1


def _count(reply: object) -> int:
    if isinstance(reply, bool) or not isinstance(reply, int) or reply < 0:
        raise _unexpected(reply)
    return reply


def _failed(exc: Exception) -> StoreError:
    return StoreError(f"Redis operation failed: {exc}")


# ------------------------------------------------------------------------------ sync


class RedisStore:
    """The :class:`~toolwire.stores.Store` Protocol on one Redis primary, thread-safe.

    ``url`` is a ``redis://`` / ``rediss://`` / ``unix://`` URL; keys are ``prefix`` plus
    the call key. Hashes are left for Redis to expire ``expire_grace`` seconds after their
    retention. ``socket_timeout`` bounds every network wait; ``client_kwargs`` go to
    ``redis.Redis.from_url``. With ``self_test`` (the default) the constructor checks that
    the server enforces the scripts' conditional writes and raises ``StoreError`` if not.

    Safe only on a single primary without asynchronous fail-over (see the module notes).
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolwire:",
        expire_grace: float = 60.0,
        socket_timeout: float = 10.0,
        self_test: bool = True,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(url, str):
            raise StoreSettingsError(f"url must be a string, got {type(url).__name__}")
        self._prefix = _prefix(prefix)
        self._grace_ms = _micros("expire_grace", expire_grace) // 1000
        timeout = _micros("socket_timeout", socket_timeout) / 1_000_000
        self._closed = False
        try:
            self._client = redis.Redis.from_url(
                url,
                **{
                    "socket_timeout": timeout,
                    "socket_connect_timeout": timeout,
                    # No silent re-sends: a script whose reply was lost may have run, and
                    # running it again would misreport (a finish that worked says False).
                    "retry": Retry(NoBackoff(), 0),
                    **(client_kwargs or {}),
                },
            )
        except Exception as exc:
            raise StoreError(f"cannot use Redis URL {url!r}: {exc}") from exc
        self._claim = self._client.register_script(_CLAIM)
        self._heartbeat = self._client.register_script(_HEARTBEAT)
        self._finish = self._client.register_script(_FINISH)
        self._release = self._client.register_script(_RELEASE)
        self._get = self._client.register_script(_GET)
        self._purge = self._client.register_script(_PURGE)
        if self_test:
            try:
                self._self_test()
            except BaseException:
                self.close()
                raise

    def _key(self, key: object) -> bytes:
        if self._closed:
            raise StoreError("the store is closed")
        return self._prefix.encode("utf-8", "surrogatepass") + _utf8("key", key)

    def _run(self, script: Any, keys: Sequence[bytes], args: Sequence[bytes | int]) -> object:
        try:
            reply: object = script(keys=keys, args=args)
        except Exception as exc:
            raise _failed(exc) from exc
        return reply

    def _self_test(self) -> None:
        checks.self_test(self.claim, self.release, "Redis")

    def claim(
        self,
        key: str,
        *,
        args_hash: str,
        idempotency_key: str,
        owner: str,
        lease: float,
        retention: float,
        reclaim: bool,
    ) -> Claim:
        """Atomically claim ``key`` for ``owner`` (see :meth:`toolwire.stores.Store.claim`)."""
        name = self._key(key)
        args = _claim_args(
            args_hash, idempotency_key, owner, lease, retention, reclaim, self._grace_ms
        )
        return _claim_result(key, self._run(self._claim, [name], args))

    def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` if ``owner``/``fence`` still hold the call."""
        name = self._key(key)
        args: list[bytes | int] = [
            _utf8("owner", owner),
            checks.fence(fence),
            _micros("lease", lease),
        ]
        return _flag(self._run(self._heartbeat, [name], args))

    def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: FinalStatus,
        result: str | None,
        error: str | None,
    ) -> bool:
        """Record the outcome if ``owner``/``fence`` still hold the call; ``False`` if not."""
        name = self._key(key)
        args = _finish_args(owner, fence, status, result, error)
        return _flag(self._run(self._finish, [name], args))

    def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim if ``owner``/``fence`` still hold it."""
        name = self._key(key)
        return _flag(self._run(self._release, [name], [_utf8("owner", owner), checks.fence(fence)]))

    def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` (also when past its retention)."""
        reply = self._run(self._get, [self._key(key)], [])
        return None if reply is None else _record(key, reply)

    def purge(self) -> int:
        """Delete every record past its retention that Redis has not expired yet; count them."""
        if self._closed:
            raise StoreError("the store is closed")
        total = 0
        batch: list[bytes] = []
        try:
            for name in self._client.scan_iter(
                match=_scan_pattern(self._prefix), count=_SCAN_BATCH
            ):
                batch.append(name)
                if len(batch) >= _SCAN_BATCH:
                    total += _count(self._run(self._purge, batch, []))
                    batch = []
        except StoreError:
            raise
        except Exception as exc:
            raise _failed(exc) from exc
        if batch:
            total += _count(self._run(self._purge, batch, []))
        return total

    def close(self) -> None:
        """Close the connection pool; later operations raise ``StoreError``."""
        self._closed = True
        client = getattr(self, "_client", None)
        if client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                client.close()

    def __enter__(self) -> RedisStore:
        """Use the store as a context manager that closes it on exit."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        self.close()


# ----------------------------------------------------------------------------- async


class AsyncRedisStore:
    """The :class:`~toolwire.stores.AsyncStore` Protocol on one Redis primary (asyncio).

    Same options and semantics as :class:`RedisStore`. The self-test runs on first use (or
    by ``await store.open()`` / ``async with``); use one store per event loop.
    """

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "toolwire:",
        expire_grace: float = 60.0,
        socket_timeout: float = 10.0,
        self_test: bool = True,
        client_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not isinstance(url, str):
            raise StoreSettingsError(f"url must be a string, got {type(url).__name__}")
        self._prefix = _prefix(prefix)
        self._grace_ms = _micros("expire_grace", expire_grace) // 1000
        timeout = _micros("socket_timeout", socket_timeout) / 1_000_000
        self._closed = False
        self._ready = not self_test
        try:
            self._client = aredis.Redis.from_url(
                url,
                **{
                    "socket_timeout": timeout,
                    "socket_connect_timeout": timeout,
                    # No silent re-sends (see RedisStore).
                    "retry": AsyncRetry(NoBackoff(), 0),
                    **(client_kwargs or {}),
                },
            )
        except Exception as exc:
            raise StoreError(f"cannot use Redis URL {url!r}: {exc}") from exc
        self._claim = self._client.register_script(_CLAIM)
        self._heartbeat = self._client.register_script(_HEARTBEAT)
        self._finish = self._client.register_script(_FINISH)
        self._release = self._client.register_script(_RELEASE)
        self._get = self._client.register_script(_GET)
        self._purge = self._client.register_script(_PURGE)

    async def open(self) -> None:
        """Run the start-up self-test now instead of on first use."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._ready:
            return
        await checks.aself_test(self._do_claim, self._release_unchecked, "Redis")
        self._ready = True

    async def _release_unchecked(self, key: str, *, owner: str, fence: int) -> bool:
        """``release`` without the open check (the self-test runs before the store is open)."""
        args: list[bytes | int] = [_utf8("owner", owner), checks.fence(fence)]
        return _flag(await self._run(self._release, [self._key(key)], args))

    async def _ensure_open(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if not self._ready:
            await self.open()

    def _key(self, key: object) -> bytes:
        if self._closed:
            raise StoreError("the store is closed")
        return self._prefix.encode("utf-8", "surrogatepass") + _utf8("key", key)

    async def _run(self, script: Any, keys: Sequence[bytes], args: Sequence[bytes | int]) -> object:
        try:
            reply: object = await script(keys=keys, args=args)
        except Exception as exc:
            raise _failed(exc) from exc
        return reply

    async def _do_claim(
        self,
        key: str,
        *,
        args_hash: str,
        idempotency_key: str,
        owner: str,
        lease: float,
        retention: float,
        reclaim: bool,
    ) -> Claim:
        name = self._key(key)
        args = _claim_args(
            args_hash, idempotency_key, owner, lease, retention, reclaim, self._grace_ms
        )
        return _claim_result(key, await self._run(self._claim, [name], args))

    async def claim(
        self,
        key: str,
        *,
        args_hash: str,
        idempotency_key: str,
        owner: str,
        lease: float,
        retention: float,
        reclaim: bool,
    ) -> Claim:
        """Atomically claim ``key`` for ``owner`` (see :meth:`toolwire.stores.Store.claim`)."""
        await self._ensure_open()
        return await self._do_claim(
            key,
            args_hash=args_hash,
            idempotency_key=idempotency_key,
            owner=owner,
            lease=lease,
            retention=retention,
            reclaim=reclaim,
        )

    async def heartbeat(self, key: str, *, owner: str, fence: int, lease: float) -> bool:
        """Extend the lease to now + ``lease`` if ``owner``/``fence`` still hold the call."""
        await self._ensure_open()
        name = self._key(key)
        args: list[bytes | int] = [
            _utf8("owner", owner),
            checks.fence(fence),
            _micros("lease", lease),
        ]
        return _flag(await self._run(self._heartbeat, [name], args))

    async def finish(
        self,
        key: str,
        *,
        owner: str,
        fence: int,
        status: FinalStatus,
        result: str | None,
        error: str | None,
    ) -> bool:
        """Record the outcome if ``owner``/``fence`` still hold the call; ``False`` if not."""
        await self._ensure_open()
        name = self._key(key)
        args = _finish_args(owner, fence, status, result, error)
        return _flag(await self._run(self._finish, [name], args))

    async def release(self, key: str, *, owner: str, fence: int) -> bool:
        """Delete the claim if ``owner``/``fence`` still hold it."""
        await self._ensure_open()
        return await self._release_unchecked(key, owner=owner, fence=fence)

    async def get(self, key: str) -> Record | None:
        """The record for ``key``, or ``None`` (also when past its retention)."""
        await self._ensure_open()
        reply = await self._run(self._get, [self._key(key)], [])
        return None if reply is None else _record(key, reply)

    async def purge(self) -> int:
        """Delete every record past its retention that Redis has not expired yet; count them."""
        await self._ensure_open()
        total = 0
        batch: list[bytes] = []
        try:
            async for name in self._client.scan_iter(
                match=_scan_pattern(self._prefix), count=_SCAN_BATCH
            ):
                batch.append(name)
                if len(batch) >= _SCAN_BATCH:
                    total += _count(await self._run(self._purge, batch, []))
                    batch = []
        except StoreError:
            raise
        except Exception as exc:
            raise _failed(exc) from exc
        if batch:
            total += _count(await self._run(self._purge, batch, []))
        return total

    async def aclose(self) -> None:
        """Close the connection pool; later operations raise ``StoreError``."""
        self._closed = True
        with contextlib.suppress(Exception):  # closing is best effort
            await self._client.aclose()

    async def __aenter__(self) -> AsyncRedisStore:
        """Run the self-test for ``async with``; the store is closed on exit."""
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the store."""
        await self.aclose()
