"""``Recording``: what arrived in a stream that ended properly, kept as versioned JSON.

A recording is replayed like the iterable of payloads (or bytes) it was read from, so the
same calls, ids and idempotency keys come out of it again, under later toolwire versions.
Pure data: nothing here reads a source (``toolwire.record`` does).
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import UsageError

__all__ = ["Recording"]

RECORDING_VERSION = 1
"""The version ``Recording.to_dict`` writes; ``from_dict`` reads it and every older one."""

_KIND = "toolwire.recording"
_BYTES = (bytes, bytearray, memoryview)


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """A finished stream, as it arrived: ``toolwire.record(source)`` makes one.

    Fields:

    - ``format``: the wire format that was read (``"openai-chat"``...);
    - ``items``: what the source gave, in order: decoded payloads (JSON objects, or the
      strings ``"[DONE]"`` and JSON text) and ``bytes`` (consecutive chunks joined: their
      split never changes what a stream means);
    - ``request_identity``: the identity of the HTTP request that produced it, where the
      source exposed one (it keys the calls of a response without a response id, as
      ``run_turn`` on the live source would);
    - ``version``: the recording format's version.

    Iterating a recording gives its items (fresh copies), so ``run_turn(recording, ...)``,
    ``toolwire.stream(recording)`` and their async forms replay it.
    """

    format: str
    items: tuple[Any, ...]
    request_identity: str | None = None
    version: int = RECORDING_VERSION

    def __iter__(self) -> Iterator[Any]:
        for item in self.items:
            yield item if isinstance(item, bytes) else copy.deepcopy(item)

    async def _replay(self) -> AsyncIterator[Any]:
        for item in self:
            yield item

    def __aiter__(self) -> AsyncIterator[Any]:
        return self._replay()

    def __len__(self) -> int:
        return len(self.items)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe dict of the recording: bytes as ``{"text": ...}`` when they are
        UTF-8, else ``{"base64": ...}``; payloads as ``{"payload": ...}``."""
        items: list[dict[str, Any]] = []
        for item in self.items:
            if isinstance(item, bytes):
                try:
                    items.append({"text": item.decode("utf-8")})
                except UnicodeDecodeError:
                    items.append({"base64": base64.b64encode(item).decode("ascii")})
            else:
                items.append({"payload": item})
        return {
            "type": _KIND,
            "version": self.version,
            "format": self.format,
            "request_identity": self.request_identity,
            "items": items,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Recording:
        """The recording ``to_dict`` wrote (any version up to this toolwire's).
        Raises :class:`UsageError` for anything else."""
        if not isinstance(data, dict) or data.get("type") != _KIND:
            raise UsageError("not a toolwire recording (its 'type' is not 'toolwire.recording')")
        version = data.get("version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise UsageError(f"a recording's version must be a positive int, not {version!r}")
        if version > RECORDING_VERSION:
            raise UsageError(
                f"this recording has version {version}; this toolwire reads up to "
                f"{RECORDING_VERSION}: upgrade toolwire to replay it"
            )
        fmt = data.get("format")
        identity = data.get("request_identity")
        entries = data.get("items")
        if not isinstance(fmt, str) or not fmt:
            raise UsageError(f"a recording's format must be a non-empty str, not {fmt!r}")
        if identity is not None and not isinstance(identity, str):
            raise UsageError(f"a recording's request_identity must be a str, not {identity!r}")
        if not isinstance(entries, list):
            raise UsageError("a recording's items must be a list")
        return cls(
            format=fmt,
            items=tuple(_item(entry) for entry in entries),
            request_identity=identity,
            version=RECORDING_VERSION,
        )

    def to_json(self) -> str:
        """The recording as JSON text (:meth:`to_dict`, compact, UTF-8 as is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> Recording:
        """The recording :meth:`to_json` wrote."""
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"a recording must be JSON: {exc}") from None
        return cls.from_dict(data)


def _item(entry: Any) -> Any:
    if isinstance(entry, dict) and len(entry) == 1:
        if "payload" in entry:
            return entry["payload"]
        if isinstance(entry.get("text"), str):
            return entry["text"].encode("utf-8")
        if isinstance(entry.get("base64"), str):
            try:
                return base64.b64decode(entry["base64"], validate=True)
            except ValueError:
                pass
    raise UsageError(f"a recording item must be {{payload|text|base64: ...}}, not {entry!r}")


def joined(items: Sequence[Any]) -> tuple[Any, ...]:
    """``items`` with consecutive bytes chunks joined into one ``bytes``."""
    out: list[Any] = []
    chunk: list[bytes] = []
    for item in items:
        if isinstance(item, _BYTES):
            chunk.append(bytes(item))
            continue
        if chunk:
            out.append(b"".join(chunk))
            chunk = []
        out.append(item)
    if chunk:
        out.append(b"".join(chunk))
    return tuple(out)
