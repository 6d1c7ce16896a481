"""Recorded bodies served byte-exact, their framing found from their content.

A recording is served exactly as stored, whichever endpoint asks: the bytes on the wire are
the file's bytes (only byte faults, such as ``cut`` or ``stall``, change how they are
written). Its framing, and so its ``Content-Type``, is read from the first bytes with
toolwire's own detector (``_framing.detect_framing``): ``[`` opens a JSON array, ``{`` an
NDJSON body, a leading zero byte an AWS event stream, anything else SSE. The path asked
for plays no part.

One caveat, documented rather than hidden: JSON-array recordings made by llama-stack's
recorder wrap every payload as ``{"__type__": ..., "__data__": {...}}``. Served byte-exact,
those envelopes reach the client as they are, and no client reads them: neither the
provider SDKs nor toolwire's ``feed_bytes`` (which takes payloads as providers send them).
To test a client with such a recording, serve the array of its ``__data__`` values, which
is what the provider sent. NDJSON recordings of payloads (one provider event per line,
no SSE framing) are likewise served as NDJSON, which an SSE-reading SDK sees as an empty
stream. Loading is O(size of the file); the bytes are read once, at ``add_recording``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .._core.framing import detect_framing
from .._errors import StreamFormatError, UsageError
from ._faults import EVENT_FAULTS, Fault, parse_faults
from ._wire_writing import CONTENT_TYPES, Framing

__all__ = ["Recording", "load_recording"]


@dataclass(frozen=True, slots=True)
class Recording:
    """A recorded body: where it came from, its bytes, its framing and byte faults."""

    path: Path
    data: bytes
    framing: Framing
    faults: tuple[Fault, ...] = ()

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` it is served with, from its framing."""
        return CONTENT_TYPES[self.framing]


def load_recording(path: str | Path, *, faults: Iterable[str | Fault] = ()) -> Recording:
    """Read ``path`` and detect its framing; only byte faults (and ``http``) apply."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the recording {path}: {exc}") from None
    parsed = parse_faults(faults)
    event_level = sorted({f.kind for f in parsed if f.kind in EVENT_FAULTS})
    if event_level:
        raise UsageError(
            f"a recording is served byte-exact, so only byte faults apply; "
            f"{', '.join(event_level)} would need its events re-encoded"
        )
    try:
        framing = detect_framing(data[:64])
    except StreamFormatError as exc:
        raise UsageError(f"{path} is no recorded stream toolwire can frame: {exc}") from None
    if framing is None:
        raise UsageError(f"the recording {path} is empty")
    return Recording(path=path, data=data, framing=framing, faults=parsed)
