"""Idempotency keys: which call this is (the call key) and what it was asked (the args hash).

Equal JSON values give equal hashes on every platform (RFC 8785); values outside I-JSON
raise :class:`IdempotencyKeyError`, never coerced. Linear in the size of the arguments.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import rfc8785

from .._core.partial_json import DEFAULT_MAX_DEPTH
from .._errors import IdempotencyKeyError

__all__ = ["arguments_hash"]

_CALL_KEY_TAG = b"toolwire-call-key/v1\x00"
_IDEMPOTENCY_KEY_TAG = b"toolwire-idempotency-key/v1\x00"


# The compact JSON of the key fields.
_KEY_FIELDS = json.JSONEncoder(separators=(",", ":")).encode
# RFC 8785's form of the values _plain admits: sorted keys, compact, UTF-8 as is. The
# standard library writes strings exactly as RFC 8785 does (the same two-character escapes,
# \u00xx in lower case for the other controls, nothing else escaped).
_CANONICAL = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode
_SAFE_INT = 2**53 - 1
_SURROGATES = "\ud800"


def _plain(value: Any) -> bool:
    """Whether ``value`` is made only of the JSON values whose RFC 8785 form the standard
    library's encoder writes byte for byte: exact ``dict``/``list``/``tuple``/``str``/
    ``int``/``bool``/``None``,
    integers within 2**53 - 1, strings without lone surrogates, and object keys below
    U+D800 (where UTF-16 order, RFC 8785's, is code point order, Python's). Floats take
    the reference implementation (ECMAScript number formatting)."""
    check = _PLAIN_BY_TYPE.get(type(value))
    return check is not None and check(value)


def _plain_str(value: str) -> bool:
    return value.isascii() or _unicode_ok(value)


def _plain_int(value: int) -> bool:
    return -_SAFE_INT <= value <= _SAFE_INT


def _plain_scalar(value: object) -> bool:
    return True


def _plain_object(value: dict[Any, Any]) -> bool:
    return all(_plain_key(key) and _plain(item) for key, item in value.items())


def _plain_array(value: list[Any] | tuple[Any, ...]) -> bool:
    return all(_plain(item) for item in value)


_PLAIN_BY_TYPE: dict[type, Callable[[Any], bool]] = {
    str: _plain_str,
    int: _plain_int,
    bool: _plain_scalar,
    type(None): _plain_scalar,
    dict: _plain_object,
    list: _plain_array,
    tuple: _plain_array,
}
"""How :func:`_plain` checks a value of each exact type (any other type is not plain)."""


def _plain_key(key: object) -> bool:
    """Whether an object key is a string whose UTF-16 order is its code point order."""
    return type(key) is str and (key.isascii() or max(key) < _SURROGATES)


def _unicode_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: the reference implementation refuses it
        return False
    return True


def canonical_json(arguments: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 form of ``arguments``, or :class:`IdempotencyKeyError`.

    Arguments made of plain JSON values (no floats, see :func:`_plain`) are written by the
    standard library's ``json``, several times faster; everything else by the reference
    implementation. Both give the same bytes (a property test checks it). Both recurse:
    arguments nested deeper than Python's recursion limit lets them go, or that may nest
    deeper than 1,000 containers, are written without recursion (the same bytes), which
    refuses more than the parser's 1,000 nested containers on every Python version.
    """
    try:
        try:
            if _plain(arguments):
                data: bytes = _CANONICAL(arguments).encode("utf-8")
            else:
                data = rfc8785.dumps(arguments)
            if data.count(b"[") + data.count(b"{") > DEFAULT_MAX_DEPTH:
                # maybe nested deeper than the parser reads (brackets inside strings count
                # too): the writer below holds the limit whatever Python's recursion allows
                data = _canonical_deep(arguments)
        except RecursionError:  # both writers recurse: deep arguments are written below
            data = _canonical_deep(arguments)
    except IdempotencyKeyError:
        raise
    except (ValueError, TypeError) as exc:
        # rfc8785.CanonicalizationError is a ValueError; TypeError guards odd mappings.
        raise IdempotencyKeyError(f"arguments are not I-JSON: {exc}") from exc
    return data


def _canonical_deep(arguments: Any) -> bytes:
    """``rfc8785.dumps(arguments)`` without recursion (its containers written here, in its
    order, its scalars by it), for arguments nested up to the parser's ``max_depth``."""
    out: list[bytes] = []
    todo: list[Any] = [(arguments, 1)]  # what is left to write, last first
    while todo:
        item = todo.pop()
        if type(item) is bytes:
            out.append(item)
            continue
        value, depth = item
        if not isinstance(value, (list, tuple, dict)) or isinstance(value, (str, int, float)):
            out.append(rfc8785.dumps(value))
            continue
        if depth > DEFAULT_MAX_DEPTH:
            raise IdempotencyKeyError("arguments nest too deeply to canonicalise")
        parts = (
            _object_parts(value, depth) if isinstance(value, dict) else _array_parts(value, depth)
        )
        todo += reversed(parts)
    return b"".join(out)


def _object_parts(value: Any, depth: int) -> list[Any]:
    """An object's text in order: its punctuation and keys as bytes, its members as
    ``(member, depth)`` still to write; members sorted by their keys' UTF-16 form."""
    try:
        members = sorted(dict(value).items(), key=lambda kv: kv[0].encode("utf-16be"))
    except AttributeError:
        raise ValueError("object keys must be strings") from None
    parts: list[Any] = [b"{"]
    for key, member in members:
        parts += (b"," if len(parts) > 1 else b"", rfc8785.dumps(key) + b":")
        parts.append((member, depth + 1))
    parts.append(b"}")
    return parts


def _array_parts(value: Any, depth: int) -> list[Any]:
    """An array's text in order: its punctuation as bytes, its items as ``(item, depth)``."""
    parts: list[Any] = [b"["]
    for member in value:
        if len(parts) > 1:
            parts.append(b",")
        parts.append((member, depth + 1))
    parts.append(b"]")
    return parts


def arguments_hash(arguments: Any) -> str:
    """Hex SHA-256 of the RFC 8785 canonical form of validated ``arguments``.

    Equal JSON values hash equal whatever their original spelling; a value outside I-JSON
    raises :class:`IdempotencyKeyError` (a ``ValueError``).
    """
    return hashlib.sha256(canonical_json(arguments)).hexdigest()


def _check_str(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise IdempotencyKeyError(f"{name} must be a str, not {type(value).__name__}")


def call_key(
    scope: str,
    response_id: str | None,
    tool_name: str,
    call_id: str,
    occurrence: int = 0,
    *,
    created: str | None = None,
    turn: str | None = None,
) -> str:
    """Hex SHA-256 naming one tool call: scope, provider response id, tool name, call id.

    ``occurrence`` tells apart calls that repeat one id inside a single response (0 for
    the first, as for every well-formed response). ``created`` is the provider's response
    timestamp (``Response.created``) and ``turn`` the caller's identity of the request
    that produced the response (``run(response, turn=...)``); either one tells apart the
    turns of a provider that sends no response id. Fields are JSON-encoded as one array,
    so no choice of field contents can make two different identities collide.
    """
    _check_call_fields(scope, response_id, tool_name, call_id, created, turn)
    if not isinstance(occurrence, int) or isinstance(occurrence, bool) or occurrence < 0:
        raise IdempotencyKeyError("occurrence must be a non-negative int")
    fields: list[object] = [scope, response_id, tool_name, call_id]
    if occurrence:
        fields.append(occurrence)
    if created is not None or turn is not None:
        fields.append(_turn_identity(created, turn))
    # ensure_ascii keeps lone surrogates encodable; the text is only hashed.
    text = _KEY_FIELDS(fields)
    return hashlib.sha256(_CALL_KEY_TAG + text.encode("ascii")).hexdigest()


def _check_call_fields(
    scope: object,
    response_id: object,
    tool_name: object,
    call_id: object,
    created: object,
    turn: object,
) -> None:
    """:class:`IdempotencyKeyError` naming the first field of a call key that is no string."""
    if (
        isinstance(scope, str)
        and isinstance(tool_name, str)
        and isinstance(call_id, str)
        and (response_id is None or isinstance(response_id, str))
        and (created is None or isinstance(created, str))
        and (turn is None or isinstance(turn, str))
    ):  # one test for the common case; the checks below name what is wrong
        return
    _check_str("scope", scope)
    _check_str("response_id", response_id, optional=True)
    _check_str("tool_name", tool_name)
    _check_str("call_id", call_id)
    _check_str("created", created, optional=True)
    _check_str("turn", turn, optional=True)


def _turn_identity(created: str | None, turn: str | None) -> dict[str, str]:
    """The turn's identity as one field: an object, never a string or an int, so it cannot
    be mistaken for another field."""
    identity: dict[str, str] = {}
    if created is not None:
        identity["created"] = created
    if turn is not None:
        identity["turn"] = turn
    return identity


def idempotency_key(call_key: str, args_hash: str) -> str:
    """Hex SHA-256 of a call key and an args hash: the key a tool receives and forwards."""
    if not (isinstance(call_key, str) and isinstance(args_hash, str)):
        _check_str("call_key", call_key)
        _check_str("args_hash", args_hash)
    if call_key.isascii() and call_key.isalnum() and args_hash.isascii() and args_hash.isalnum():
        # Hex digests (always, from the executor) need no escaping: the same JSON text.
        text = f'["{call_key}","{args_hash}"]'
    else:
        text = _KEY_FIELDS([call_key, args_hash])
    return hashlib.sha256(_IDEMPOTENCY_KEY_TAG + text.encode("ascii")).hexdigest()
