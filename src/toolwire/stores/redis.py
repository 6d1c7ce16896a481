"""Redis stores (redis-py): ``RedisStore`` (threads) and ``AsyncRedisStore`` (``redis.asyncio``).

Every transition is one Lua script, atomic on the server. Safe only on a single Redis
primary without asynchronous fail-over (a fail-over can lose an acknowledged claim). One
round trip per operation.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
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

from .._errors import SettingsError, StoreError
from . import _requests as requests
from ._protocol import LEASE_LOST, Claim, Record, Status
from ._requests import Request, T
from ._shells import AsyncShell, Flow, SyncShell, arun_flow, run_flow

__all__ = ["AsyncRedisStore", "RedisStore"]

_SCAN_BATCH = 500

# Shared by every script: effect replication, the server clock in microseconds, integer
# formatting that survives Lua's tostring (which would print 1.7e+15), the owner/fence
# test, and the renewal of a record's expiry (never moved back) with its Redis TTL.
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
local function held(k, owner, fence)
  local v = redis.call('HMGET', k, 'status', 'owner', 'fence')
  return v[1] == 'in_progress' and v[2] == owner and v[3] ~= false
    and tonumber(v[3]) == tonumber(fence)
end
local function renew(k, deadline, grace)
  local old = tonumber(redis.call('HGET', k, 'expires_at') or 0) or 0
  local expires = math.max(old, deadline)
  redis.call('HSET', k, 'expires_at', fmt(expires))
  redis.call('PEXPIREAT', k, fmt(math.floor(expires / 1000) + grace))
end
local function retention(k)
  return tonumber(redis.call('HGET', k, 'retention') or 0) or 0
end
local function identity(k, first)
  -- The call's identity fields, as (present flag, text) pairs from ARGV[first] on.
  local names = {'scope', 'turn', 'tool_name', 'call_id'}
  for i, name in ipairs(names) do
    local at = first + (i - 1) * 2
    if ARGV[at] == '1' then redis.call('HSET', k, name, ARGV[at + 1]) end
  end
end
local function texts(k, has_result, result, has_error, err)
  if has_result == '1' then redis.call('HSET', k, 'result', result)
  else redis.call('HDEL', k, 'result') end
  if has_error == '1' then redis.call('HSET', k, 'error', err)
  else redis.call('HDEL', k, 'error') end
end
"""

_SCRIPTS = {
    "claim": """
local k = KEYS[1]
local args_hash, idem, owner = ARGV[1], ARGV[2], ARGV[3]
local lease, keep = tonumber(ARGV[4]), tonumber(ARGV[5])
local reclaim, grace, lost = ARGV[6] == '1', tonumber(ARGV[7]), ARGV[8]
local now = now_us()
local v = redis.call('HMGET', k, 'args_hash', 'status', 'fence', 'lease_expires_at')
local acquired = 0
if v[2] == false then
  if redis.call('EXISTS', k) == 1 then
    return redis.error_reply('toolwire: ' .. k .. ' is not a call record')
  end
  redis.call('HSET', k, 'args_hash', args_hash, 'idempotency_key', idem,
    'status', 'in_progress', 'owner', owner, 'fence', '1',
    'lease_expires_at', fmt(now + lease), 'created_at', fmt(now), 'retention', fmt(keep),
    'updated_at', fmt(now))
  identity(k, 9)
  renew(k, now + lease + keep, grace)
  acquired = 1
elseif v[1] == args_hash and v[2] == 'in_progress' and v[4] ~= false
    and tonumber(v[4]) <= now then
  keep = math.max(retention(k), keep)
  local fence = fmt(tonumber(v[3]) + 1)
  if reclaim then
    redis.call('HSET', k, 'idempotency_key', idem, 'owner', owner, 'fence', fence,
      'lease_expires_at', fmt(now + lease), 'retention', fmt(keep), 'updated_at', fmt(now))
    renew(k, now + lease + keep, grace)
    acquired = 1
  else
    redis.call('HSET', k, 'status', 'unknown', 'fence', fence, 'error', lost,
      'retention', fmt(keep), 'updated_at', fmt(now))
    redis.call('HDEL', k, 'owner', 'lease_expires_at')
    renew(k, now + keep, grace)
  end
end
return {acquired, redis.call('HGETALL', k)}
""",
    "heartbeat": """
local k, lease, grace = KEYS[1], tonumber(ARGV[3]), tonumber(ARGV[4])
if not held(k, ARGV[1], ARGV[2]) then
  return 0
end
local now = now_us()
redis.call('HSET', k, 'lease_expires_at', fmt(now + lease))
renew(k, now + lease + retention(k), grace)
return 1
""",
    "finish": """
local k = KEYS[1]
if not held(k, ARGV[1], ARGV[2]) then
  return 0
end
local now = now_us()
redis.call('HSET', k, 'status', ARGV[3], 'updated_at', fmt(now))
redis.call('HDEL', k, 'lease_expires_at')
texts(k, ARGV[4], ARGV[5], ARGV[6], ARGV[7])
renew(k, now + retention(k), tonumber(ARGV[8]))
return 1
""",
    "resolve": """
local k = KEYS[1]
if redis.call('HGET', k, 'status') ~= 'unknown' then
  return 0
end
local now = now_us()
redis.call('HSET', k, 'status', ARGV[1], 'updated_at', fmt(now))
texts(k, ARGV[2], ARGV[3], ARGV[4], ARGV[5])
renew(k, now + retention(k), tonumber(ARGV[6]))
return 1
""",
    "release": """
if not held(KEYS[1], ARGV[1], ARGV[2]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
""",
    # For each hash under the prefix whose fields equal the (field, value) pairs of ARGV:
    # its key and created_at, for the listing to sort.
    "summary": """
local found = {}
for _, k in ipairs(KEYS) do
  if redis.call('TYPE', k)['ok'] == 'hash' then
    local v = redis.call('HMGET', k, 'status', 'created_at')
    local ok = v[1] ~= false and v[2] ~= false
    for i = 1, #ARGV, 2 do
      if ok and redis.call('HGET', k, ARGV[i]) ~= ARGV[i + 1] then ok = false end
    end
    if ok then
      table.insert(found, k)
      table.insert(found, v[2])
    end
  end
end
return found
""",
    "fetch": """
local found = {}
for i, k in ipairs(KEYS) do
  found[i] = redis.call('HGETALL', k)
end
return found
""",
    "purge": """
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
""",
}
SCRIPTS = {name: _PRELUDE + body for name, body in _SCRIPTS.items()}


@dataclass(frozen=True, slots=True)
class Script:
    """Run the script ``name`` with ``keys`` and ``args``; the reply is Redis's."""

    name: str
    keys: Sequence[bytes]
    args: Sequence[bytes | int] = ()


@dataclass(frozen=True, slots=True)
class Command:
    """Run one Redis command (``SCAN``); the reply is redis-py's."""

    args: tuple[bytes | str | int, ...]


# ---------------------------------------------------------------------------- encoding


def _utf8(value: str) -> bytes:
    return value.encode("utf-8")


def _micros(seconds: float) -> int:
    """A positive duration in seconds as whole microseconds (at least 1)."""
    return max(1, round(seconds * 1_000_000))


def _optional(value: str | None) -> list[bytes | int]:
    """A result or error as (present flag, exact bytes) for the scripts."""
    if value is None:
        return [b"0", b""]
    return [b"1", value.encode("utf-8", "surrogatepass")]


def _scan_pattern(prefix: bytes) -> bytes:
    """A ``SCAN MATCH`` pattern for every key under ``prefix``, glob characters escaped."""
    return re.sub(rb"([*?\[\]\\])", rb"\\\1", prefix) + b"*"


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


def _field_label(fields: dict[bytes, bytes], name: bytes, reply: object) -> str | None:
    value = fields.get(name)
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _unexpected(reply) from exc


def _record(key: str, reply: object) -> Record:
    """A flat ``HGETALL`` reply as a :class:`Record`; ``StoreError`` if malformed."""
    fields = _hash_fields(reply)
    status = _field_text(fields, "status", reply)
    if status not in requests.STATUSES:
        raise _unexpected(reply)
    state = cast(Status, status)  # checked against STATUSES above
    created_at = _field_time(fields, "created_at", reply)
    expires_at = _field_time(fields, "expires_at", reply)
    if created_at is None or expires_at is None:
        raise _unexpected(reply)
    fence, owner = _holder(fields, reply)
    return Record(
        key=key,
        args_hash=_field_text(fields, "args_hash", reply),
        idempotency_key=_field_text(fields, "idempotency_key", reply),
        status=state,
        owner=owner,
        fence=fence,
        lease_expires_at=_field_time(fields, "lease_expires_at", reply),
        result=_field_payload(fields, b"result"),
        error=_field_payload(fields, b"error"),
        created_at=created_at,
        expires_at=expires_at,
        retention=_field_time(fields, "retention", reply),
        scope=_field_label(fields, b"scope", reply),
        turn=_field_label(fields, b"turn", reply),
        tool_name=_field_label(fields, b"tool_name", reply),
        call_id=_field_label(fields, b"call_id", reply),
        updated_at=_field_time(fields, "updated_at", reply),
    )


def _hash_fields(reply: object) -> dict[bytes, bytes]:
    """A flat, non-empty ``HGETALL`` reply of bytes as a mapping; ``StoreError`` if not."""
    if not isinstance(reply, list) or len(reply) % 2 or not reply:
        raise _unexpected(reply)
    if not all(isinstance(item, bytes) for item in reply):
        raise _unexpected(reply)
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _holder(fields: dict[bytes, bytes], reply: object) -> tuple[int, str | None]:
    """A record's fence and owner (``None`` when nobody holds it)."""
    owner = fields.get(b"owner")
    try:
        return int(fields.get(b"fence", b"")), None if owner is None else owner.decode("utf-8")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _unexpected(reply) from exc


def _field_payload(fields: dict[bytes, bytes], name: bytes) -> str | None:
    """A stored result or error text (lone surrogates kept), or ``None``."""
    value = fields.get(name)
    return None if value is None else value.decode("utf-8", "surrogatepass")


def _flag(reply: object) -> bool:
    if reply not in (0, 1) or isinstance(reply, bool):
        raise _unexpected(reply)
    return reply == 1


def _count(reply: object) -> int:
    if isinstance(reply, bool) or not isinstance(reply, int) or reply < 0:
        raise _unexpected(reply)
    return reply


# ------------------------------------------------------------------------------- flows


class Keys:
    """How call keys map to Redis keys under one prefix, and the scripts' fixed options."""

    def __init__(self, prefix: object, expire_grace: object) -> None:
        if not isinstance(prefix, str):
            raise SettingsError(f"prefix must be a string, got {type(prefix).__name__}")
        self.prefix = prefix.encode("utf-8", "surrogatepass")
        self.grace_ms = _micros(requests.seconds("expire_grace", expire_grace)) // 1000

    def name(self, key: str) -> bytes:
        """The Redis key of call ``key``."""
        return self.prefix + _utf8(key)

    def key(self, name: bytes) -> str:
        """The call key of Redis key ``name`` (under the prefix)."""
        return name[len(self.prefix) :].decode("utf-8")


def _claim(keys: Keys, r: requests.ClaimRequest) -> Flow[Claim]:
    args: list[bytes | int] = [_utf8(r.args_hash), _utf8(r.idempotency_key), _utf8(r.owner)]
    args += [_micros(r.lease), _micros(r.retention), b"1" if r.reclaim else b"0"]
    args += [keys.grace_ms, LEASE_LOST.encode()]
    for label in (r.scope, r.turn, r.tool_name, r.call_id):
        args += [b"0", b""] if label is None else [b"1", _utf8(label)]
    reply = yield Script("claim", [keys.name(r.key)], args)
    if not isinstance(reply, list) or len(reply) != 2 or reply[0] not in (0, 1):
        raise _unexpected(reply)
    return Claim(acquired=reply[0] == 1, record=_record(r.key, reply[1]))


def _write(script: Script) -> Flow[bool]:
    return _flag((yield script))


def _scan(keys: Keys) -> Flow[list[list[bytes]]]:
    """Every Redis key under the prefix, in batches of at most ``_SCAN_BATCH``."""
    batches: list[list[bytes]] = []
    cursor: int | bytes = 0
    while True:
        reply = yield Command(("SCAN", cursor, "MATCH", _scan_pattern(keys.prefix), "COUNT", 500))
        if not isinstance(reply, (list, tuple)) or len(reply) != 2:
            raise _unexpected(reply)
        cursor, names = reply
        batches.extend(names[i : i + _SCAN_BATCH] for i in range(0, len(names), _SCAN_BATCH))
        if int(cursor) == 0:
            return [batch for batch in batches if batch]


def _records(keys: Keys, r: requests.RecordsRequest) -> Flow[list[Record]]:
    found: list[tuple[int, str, bytes]] = []
    tests: list[bytes | int] = []
    for field, value in r.filters():
        if field != "created_at":  # since: judged below, on the exact stored times
            tests += [field.encode(), _utf8(str(value))]
    for batch in (yield from _scan(keys)):
        found += _summaries(keys, (yield Script("summary", batch, tests)), r.since)
    found.sort(reverse=r.newest_first)
    chosen = found[: r.limit]
    if not chosen:
        return []
    replies = yield Script("fetch", [name for _, _, name in chosen])
    if not isinstance(replies, list) or len(replies) != len(chosen):
        raise _unexpected(replies)
    # A record deleted between the two steps (release, purge, expiry) is left out.
    pairs = zip(chosen, replies, strict=True)
    return [_record(key, reply) for (_, key, _), reply in pairs if reply]


def _summaries(keys: Keys, reply: object, since: float | None) -> list[tuple[int, str, bytes]]:
    """The ``summary`` script's flat ``[name, created micros, ...]`` reply as
    ``(micros, key, name)``, for the records created at ``since`` or later."""
    if not isinstance(reply, list) or len(reply) % 2:
        raise _unexpected(reply)
    found: list[tuple[int, str, bytes]] = []
    for name, created in zip(reply[::2], reply[1::2], strict=True):
        try:
            micros = int(created)
            if since is None or micros / 1_000_000 >= since:
                found.append((micros, keys.key(name), name))
        except (ValueError, UnicodeDecodeError) as exc:
            raise _unexpected(reply) from exc
    return found


def _purge(keys: Keys) -> Flow[int]:
    total = 0
    for batch in (yield from _scan(keys)):
        total += _count((yield Script("purge", batch)))
    return total


def flow(keys: Keys, request: Request[Any]) -> Flow[Any]:
    """The scripts and commands that serve ``request``, as a flow of :class:`Script` and
    :class:`Command` steps whose replies are Redis's."""
    r: Any = request
    if isinstance(r, requests.ClaimRequest):
        return _claim(keys, r)
    if isinstance(r, requests.HeartbeatRequest):
        args: list[bytes | int] = [_utf8(r.owner), r.fence, _micros(r.lease), keys.grace_ms]
        return _write(Script("heartbeat", [keys.name(r.key)], args))
    if isinstance(r, requests.FinishRequest):
        args = [_utf8(r.owner), r.fence, r.status.encode()]
        args += [*_optional(r.result), *_optional(r.error), keys.grace_ms]
        return _write(Script("finish", [keys.name(r.key)], args))
    if isinstance(r, requests.ResolveRequest):
        args = [r.status.encode(), *_optional(r.result), *_optional(r.error), keys.grace_ms]
        return _write(Script("resolve", [keys.name(r.key)], args))
    if isinstance(r, requests.ReleaseRequest):
        return _write(Script("release", [keys.name(r.key)], [_utf8(r.owner), r.fence]))
    if isinstance(r, requests.GetRequest):
        return _get(keys, r.key)
    if isinstance(r, requests.RecordsRequest):
        return _records(keys, r)
    assert isinstance(r, requests.PurgeRequest)
    return _purge(keys)


def _get(keys: Keys, key: str) -> Flow[Record | None]:
    reply = yield Script("fetch", [keys.name(key)])
    if not isinstance(reply, list) or len(reply) != 1:
        raise _unexpected(reply)
    return _record(key, reply[0]) if reply[0] else None


# ------------------------------------------------------------------------------ stores


def _failed(exc: Exception) -> StoreError:
    return StoreError(f"Redis operation failed: {exc}")


class _Options:
    """The constructor both stores share: checks every option, then ``_connect``s."""

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
            raise SettingsError(f"url must be a string, got {type(url).__name__}")
        self._keys = Keys(prefix, expire_grace)
        timeout = _micros(requests.seconds("socket_timeout", socket_timeout)) / 1_000_000
        options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        self._self_test_wanted = self_test
        self._behind = "Redis"
        self._closed = False
        try:
            self._connect(url, {**options, **(client_kwargs or {})})
        except (StoreError, SettingsError):
            raise
        except Exception as exc:
            raise StoreError(f"cannot use Redis URL {url!r}: {exc}") from exc

    def _connect(self, url: str, options: dict[str, Any]) -> None:
        """Make the client (and, for the sync store, run the self-test)."""
        raise NotImplementedError


class RedisStore(_Options, SyncShell):
    """The :class:`~toolwire.stores.AdminStore` Protocol on one Redis primary, thread-safe.

    ``url`` is a ``redis://`` / ``rediss://`` / ``unix://`` URL; keys are ``prefix`` plus
    the call key. Hashes are left for Redis to expire ``expire_grace`` seconds after their
    expiry. ``socket_timeout`` bounds every network wait; ``client_kwargs`` go to
    ``redis.Redis.from_url``. With ``self_test`` (the default) the constructor checks that
    the server enforces the scripts' conditional writes and raises ``StoreError`` if not.

    Safe only on a single primary without asynchronous fail-over (see the module notes).
    """

    def _connect(self, url: str, options: dict[str, Any]) -> None:
        # No silent re-sends: a script whose reply was lost may have run, and running it
        # again would misreport (a finish that worked would say False).
        options.setdefault("retry", Retry(NoBackoff(), 0))
        self._client = redis.Redis.from_url(url, **options)
        self._scripts = {n: self._client.register_script(s) for n, s in SCRIPTS.items()}
        if self._self_test_wanted:
            try:
                self._self_test(self._behind)
            except BaseException:
                self.close()
                raise

    def _step(self, step: Script | Command) -> Any:
        if isinstance(step, Script):
            return self._scripts[step.name](keys=step.keys, args=step.args)
        return self._client.execute_command(*step.args)  # type: ignore[no-untyped-call]

    def _perform(self, request: Request[T]) -> T:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            result: T = run_flow(flow(self._keys, request), self._step)
        except (StoreError, SettingsError):
            raise
        except Exception as exc:
            raise _failed(exc) from exc
        return result

    def close(self) -> None:
        """Close the connection pool; later operations raise ``StoreError``."""
        self._closed = True
        client = getattr(self, "_client", None)
        if client is not None:
            with contextlib.suppress(Exception):  # closing is best effort
                client.close()


class AsyncRedisStore(_Options, AsyncShell):
    """The :class:`~toolwire.stores.AsyncAdminStore` Protocol on one Redis primary (asyncio).

    Same options and semantics as :class:`RedisStore`. The self-test runs on first use (or
    by ``await store.open()`` / ``async with``); use one store per event loop.
    """

    def _connect(self, url: str, options: dict[str, Any]) -> None:
        options.setdefault("retry", AsyncRetry(NoBackoff(), 0))  # no re-sends (see above)
        self._client = aredis.Redis.from_url(url, **options)
        self._scripts = {n: self._client.register_script(s) for n, s in SCRIPTS.items()}

    async def _setup(self) -> None:
        """Nothing to prepare: the client connects on first use."""

    async def _step(self, step: Script | Command) -> Any:
        if isinstance(step, Script):
            return await self._scripts[step.name](keys=step.keys, args=step.args)
        return await self._client.execute_command(*step.args)  # type: ignore[no-untyped-call]

    async def _execute(self, request: Request[T]) -> T:
        if self._closed:
            raise StoreError("the store is closed")
        try:
            result: T = await arun_flow(flow(self._keys, request), self._step)
        except (StoreError, SettingsError):
            raise
        except Exception as exc:
            raise _failed(exc) from exc
        return result

    async def aclose(self) -> None:
        """Close the connection pool; later operations raise ``StoreError``."""
        self._closed = True
        with contextlib.suppress(Exception):  # closing is best effort
            await self._client.aclose()
