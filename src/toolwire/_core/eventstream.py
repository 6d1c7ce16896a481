"""Incremental decoder for AWS's binary ``application/vnd.amazon.eventstream`` framing (Bedrock).

Messages come out as boto3 yields them, whatever the split of the bytes; a bad CRC, length,
header or payload raises ``StreamFormatError``, and a message cut by the end is never
dispatched. Linear in the input; memory holds one message plus one chunk.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from typing import Any

from .._errors import StreamFormatError

__all__ = ["EventStreamDecoder", "HeaderValue", "decode_headers", "looks_like_eventstream"]

HeaderValue = bool | int | bytes | str | uuid.UUID

_PRELUDE = 12  # total length, header length, prelude CRC
_OVERHEAD = 16  # prelude plus the trailing message CRC
_MAX_HEADERS = 128 * 1024
_MAX_MESSAGE = 24 * 1024 * 1024

# value type -> (struct format, size) for the fixed-size integer types
_FIXED = {2: (">b", 1), 3: (">h", 2), 4: (">i", 4), 5: (">q", 8), 8: (">q", 8)}


def _error(message: str, data: Any = None) -> StreamFormatError:
    return StreamFormatError(f"AWS event stream: {message}", payload=data)


def looks_like_eventstream(head: bytes) -> bool | None:
    """Whether a body starting with ``head`` is in this framing; ``None``: too short to tell.

    The first 12 bytes of an event stream are a prelude whose last 4 bytes are the CRC-32
    of the first 8, with plausible lengths; text framings (SSE, NDJSON, JSON) start with
    printable characters and match by chance with probability about 2**-32.
    """
    if len(head) < _PRELUDE:
        return None
    total: int
    header_length: int
    prelude_crc: int
    total, header_length, prelude_crc = struct.unpack_from(">III", head)
    return (
        zlib.crc32(head[:8]) == prelude_crc
        and _OVERHEAD <= total <= _MAX_MESSAGE
        and header_length <= min(_MAX_HEADERS, total - _OVERHEAD)
    )


def decode_headers(data: bytes) -> dict[str, HeaderValue]:
    """The headers block of one message as ``{name: value}``; malformed input raises."""
    headers: dict[str, HeaderValue] = {}
    pos, end = 0, len(data)
    try:
        while pos < end:
            name_length = data[pos]
            raw_name = data[pos + 1 : pos + 1 + name_length]
            pos += 1 + name_length
            if name_length == 0 or len(raw_name) != name_length or pos >= end:
                raise _error("truncated header", data)
            name = raw_name.decode("utf-8")
            kind = data[pos]
            pos += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _FIXED:
                fmt, size = _FIXED[kind]
                if pos + size > end:
                    raise _error(f"truncated value of header {name!r}", data)
                (value,) = struct.unpack_from(fmt, data, pos)
                pos += size
            elif kind in (6, 7):
                if pos + 2 > end:
                    raise _error(f"truncated value of header {name!r}", data)
                (length,) = struct.unpack_from(">H", data, pos)
                raw = data[pos + 2 : pos + 2 + length]
                if len(raw) != length:
                    raise _error(f"truncated value of header {name!r}", data)
                value = raw.decode("utf-8") if kind == 7 else bytes(raw)
                pos += 2 + length
            elif kind == 9:
                if pos + 16 > end:
                    raise _error(f"truncated value of header {name!r}", data)
                value = uuid.UUID(bytes=bytes(data[pos : pos + 16]))
                pos += 16
            else:
                raise _error(f"header {name!r} has unknown value type {kind}", data)
            headers[name] = value
    except UnicodeDecodeError as exc:
        raise _error("header text is not UTF-8", data) from exc
    return headers


class EventStreamDecoder:
    """Turns response bytes, split anywhere, into Bedrock stream events.

    ``feed(data)`` returns the ``(event name, {event name: payload})`` pairs completed by
    ``data``; ``close()`` ends the stream (a cut message is dropped, never completed).
    """

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._pos = 0  # start of the first unconsumed message in the buffer
        self._checked_prelude = False  # whether the pending message's prelude was verified
        self._failed = False
        self._closed = False

    @property
    def pending(self) -> int:
        """Bytes received that do not yet form a whole message."""
        return len(self._buffer) - self._pos

    def feed(self, data: bytes) -> list[tuple[str | None, Any]]:
        """The events completed by ``data``."""
        if self._failed:
            raise _error("the decoder already failed; it accepts no more input")
        if self._closed:
            raise _error("feed() after close()")
        self._buffer += data
        out: list[tuple[str | None, Any]] = []
        try:
            while (taken := self._take()) is not None:
                item = self._item(*taken)
                if item is not None:
                    out.append(item)
        except StreamFormatError:
            self._failed = True
            raise
        if self._pos > len(self._buffer) // 2:
            del self._buffer[: self._pos]  # amortised: each byte is moved at most once
            self._pos = 0
        return out

    def close(self) -> list[tuple[str | None, Any]]:
        """End of input: a message still incomplete is dropped, never dispatched."""
        self._closed = True
        return []

    def _take(self) -> tuple[dict[str, HeaderValue], bytes, bytes] | None:
        """The next whole, CRC-checked message as (headers, payload, message), or ``None``."""
        available = len(self._buffer) - self._pos
        if available < _PRELUDE:
            return None
        start = self._pos
        total, header_length, prelude_crc = struct.unpack_from(">III", self._buffer, start)
        if not self._checked_prelude:
            if zlib.crc32(self._buffer[start : start + 8]) != prelude_crc:
                raise _error("prelude CRC mismatch (corrupt or not an event stream)")
            if total < _OVERHEAD or total > _MAX_MESSAGE:
                raise _error(f"impossible message length {total}")
            if header_length > min(_MAX_HEADERS, total - _OVERHEAD):
                raise _error(f"impossible header length {header_length} in a {total}-byte message")
            self._checked_prelude = True
        if available < total:
            return None
        # One copy of the message out of the buffer (a bytearray slice would copy twice),
        # and its CRC is taken over a view rather than over another copy.
        with memoryview(self._buffer) as view:
            message = bytes(view[start : start + total])
        self._pos += total
        self._checked_prelude = False
        (message_crc,) = struct.unpack_from(">I", message, total - 4)
        with memoryview(message) as whole:
            crc = zlib.crc32(whole[:-4])
        if crc != message_crc:
            raise _error("message CRC mismatch (corrupt message)", message)
        headers = decode_headers(message[_PRELUDE : _PRELUDE + header_length])
        return headers, message[_PRELUDE + header_length : -4], message

    @staticmethod
    def _item(
        headers: dict[str, HeaderValue], body: bytes, message: bytes
    ) -> tuple[str | None, Any] | None:
        """The ``(name, {name: payload})`` pair of one message; ``None`` for other types."""
        kind = headers.get(":message-type", "event")
        if kind == "error":
            code = headers.get(":error-code")
            text = headers.get(":error-message")
            return "error", {"error": {"code": code, "message": text}}
        if kind == "event":
            name = headers.get(":event-type")
        elif kind == "exception":
            name = headers.get(":exception-type")
        else:
            return None  # message types added later carry nothing for toolwire
        if not isinstance(name, str) or not name:
            raise _error(f"{kind} message without its type header", message)
        try:
            payload = json.loads(body.decode("utf-8")) if body else {}
        except (UnicodeDecodeError, ValueError) as exc:
            raise _error(f"{name} payload is not JSON: {exc}", message) from exc
        return name, {name: payload}
