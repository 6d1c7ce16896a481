"""Recorded bodies served byte-exact, their framing found from their content.

The bytes on the wire are the file's (only byte faults change how they are written).
O(size of the file), read once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .._core.framing import detect_framing
from .._errors import StreamFormatError, UsageError
from ._faults import EVENT_FAULTS, Fault, parse_faults
from ._wire_writing import CONTENT_TYPES, Framing

__all__ = ["RecordedBody", "load_recording"]


@dataclass(frozen=True, slots=True)
class RecordedBody:
    """A recorded body: where it came from, its bytes, its framing and byte faults.

    Not :class:`toolwire.Recording` (a recorded model response, for replays): this is the
    file the simulator serves byte-exact."""

    path: Path
    data: bytes
    framing: Framing
    faults: tuple[Fault, ...] = ()

    @property
    def content_type(self) -> str:
        """The ``Content-Type`` it is served with, from its framing."""
        return CONTENT_TYPES[self.framing]


def load_recording(path: str | Path, *, faults: Iterable[str | Fault] = ()) -> RecordedBody:
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
    return RecordedBody(path=path, data=data, framing=framing, faults=parsed)
