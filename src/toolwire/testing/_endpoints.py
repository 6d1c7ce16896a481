"""The HTTP endpoints a provider declares, at which the simulator serves its format.

Each provider lists its endpoints in its ``Provider`` entry (``endpoints``), with the
provider's own paths, so the simulator's server routes from the registry instead of a
table of its own: a provider registered at run time is served like a built-in one.

A path is a template: literal text, and ``{name}`` for one path segment (no ``/``) or
``{name:regex}`` for what ``regex`` matches. The segment called ``model`` names the model
the request asks for (Gemini and Bedrock put it in the path), URL-decoded. ``query`` lists
query parameters the request must carry (name -> one of its values), so that one path can
be two endpoints (Gemini streams SSE with ``alt=sse`` and a JSON array without).

Matching is sans-IO and O(length of the path); a template is compiled once, on its first
match, so declaring endpoints costs nothing to code that only reads streams.
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
