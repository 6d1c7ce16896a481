"""The HTTP endpoints a provider declares, at which the simulator serves its format.

A path template has literal text, ``{name}`` segments and ``{name:regex}``; matching is
sans-IO and O(length of the path).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, unquote

if TYPE_CHECKING:
    from ._wire_writing import Framing

__all__ = ["Endpoint"]

_PLACEHOLDER = re.compile(r"\{(\w+)(?::([^{}]+))?\}")


@functools.lru_cache(maxsize=256)
def _compile(template: str) -> re.Pattern[str]:
    """The regular expression of a path template (see the module docstring)."""
    parts: list[str] = []
    position = 0
    for found in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position : found.start()]))
        parts.append(f"(?P<{found.group(1)}>{found.group(2) or '[^/]+'})")
        position = found.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts))


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One ``POST`` endpoint of a provider's HTTP API (see the module docstring).

    ``stream``: whether it streams (``True``, ``False``), or ``None`` when the request
    body's ``"stream"`` member says so, ``stream_default`` when the body has none.
    ``framing``: how its stream is written, when not the encoder's own framing.
    """

    path: str
    stream: bool | None = None
    stream_default: bool = False
    framing: Framing | None = None
    query: Mapping[str, str] | None = None

    def match(self, path: str, query: str = "") -> dict[str, str] | None:
        """The URL-decoded segments of ``path`` by name when a request to ``path`` with
        the query string ``query`` reaches this endpoint, else ``None``."""
        found = _compile(self.path).fullmatch(path)
        if found is None:
            return None
        if self.query:
            given = parse_qs(query)
            if any(value not in given.get(name, []) for name, value in self.query.items()):
                return None
        return {name: unquote(value) for name, value in found.groupdict().items()}
