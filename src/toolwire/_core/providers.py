"""The provider table: every wire format toolwire reads, looked up by name or detected.

A :class:`Provider` holds what production needs of one format (detection, the adapter, tool
definitions, the assistant turn and the tool results). The built-in providers are listed
once, explicitly, in ``toolwire._providers`` (which fills this table when it is imported);
tests add toy providers with :func:`register`. Lookups are O(1); detection asks the
providers in ``detect_rank`` order.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import StreamFormatError, UnknownFormat, UsageError

if TYPE_CHECKING:
    from .deltas import Adapter
    from .messages import ResultText
    from .response import Response

__all__ = [
    "Provider",
    "ToolSpec",
    "detect",
    "install",
    "names",
    "provider",
    "register",
    "unregister",
]

Detector = Callable[[dict[str, Any], "str | None"], bool]


class ToolSpec(Protocol):
    """What a provider reads of a tool to write its definition (a toolbox ``Tool`` is one)."""

    @property
    def name(self) -> str:
        """The tool's name, as the model calls it."""

    @property
    def description(self) -> str:
        """What the tool does, for the model."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The JSON Schema of the tool's arguments (never modified by a provider)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """Everything toolwire's production side knows about one wire format.

    - ``name``: the canonical format name; ``aliases``: other names accepted for it;
    - ``detect_rank``: where ``detect`` is asked in the detection order (lower first);
    - ``detect(payload, event)``: whether a decoded first payload (and its SSE event name)
      belongs to this format; ``detect_fallback``: the same, asked only after every
      provider's ``detect`` said no;
    - ``adapter(choice)``: a fresh adapter for one stream (``choice`` selects one of several
      choices or candidates where the format has them);
    - ``definition(tool, strict)``: one tool's definition in the request format;
      ``group_definitions``: turns the tools' definitions into the list the request's
      tools field takes, where that is not one entry per tool (Gemini: one ``Tool``
      holding every declaration); ``None``: one entry per tool;
    - ``tool_results(results)``: the messages carrying the given outcomes, in order;
    - ``assistant_turn(response)``: the assistant turn those results answer;
    - ``done_marker_names``: names that choose this format with one difference: a
      stream's ``[DONE]`` marker is its finish when no finish reason came (a profile for
      servers that send none; ``Response.done_marker_finish`` says it was used). Never
      detected: the marker alone does not show that nothing was cut.
    """

    name: str
    detect_rank: int
    detect: Detector
    adapter: Callable[[int], Adapter]
    definition: Callable[[ToolSpec, bool], dict[str, Any]]
    tool_results: Callable[[Sequence[ResultText]], list[dict[str, Any]]]
    assistant_turn: Callable[[Response], list[dict[str, Any]]]
    detect_fallback: Detector | None = None
    aliases: tuple[str, ...] = ()
    done_marker_names: tuple[str, ...] = ()
    group_definitions: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None


_lock = threading.Lock()
_by_name: dict[str, Provider] = {}  # canonical names and aliases -> provider
_ordered: list[Provider] = []  # detection order


def _add(entry: Provider) -> None:
    taken = [n for n in _names(entry) if n in _by_name]
    if taken:
        raise UsageError(f"format name {taken[0]!r} is already registered")
    for name in _names(entry):
        _by_name[name] = entry
    _ordered.append(entry)
    _ordered.sort(key=lambda p: (p.detect_rank, p.name))


def _names(entry: Provider) -> tuple[str, ...]:
    return (entry.name, *entry.aliases, *entry.done_marker_names)


def install(entries: Iterable[Provider]) -> None:
    """Add the built-in providers (``toolwire._providers`` calls this once)."""
    with _lock:
        for entry in entries:
            _add(entry)


def register(entry: Provider) -> None:
    """Add a provider; its name and aliases must be new (``UsageError`` otherwise)."""
    with _lock:
        _add(entry)


def unregister(name: str) -> None:
    """Remove the provider named ``name`` (and its aliases); unknown names raise."""
    entry = provider(name)
    with _lock:
        for key in _names(entry):
            _by_name.pop(key, None)
        _ordered.remove(entry)


def names() -> tuple[str, ...]:
    """The canonical names of every registered format, in detection order."""
    return tuple(p.name for p in _ordered)


def provider(name: str) -> Provider:
    """The provider called ``name`` (a canonical name or an alias).

    Raises :class:`UnknownFormat` for anything else, naming the closest known names.
    """
    entry = _by_name.get(name) if isinstance(name, str) else None
    if entry is not None:
        return entry
    if not isinstance(name, str):
        raise UnknownFormat(f"a format name is a string, not {type(name).__name__}")
    known = sorted(_by_name)
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
    hint = f" (did you mean {' or '.join(repr(lowered[c]) for c in close)}?)" if close else ""
    raise UnknownFormat(f"unknown format {name!r}{hint}; known: {', '.join(known)}")


def detect(payload: Any, event: str | None = None) -> Provider:
    """The provider whose format ``payload`` (a decoded first event) belongs to.

    Raises :class:`StreamFormatError` when no provider recognises it.
    """
    if type(payload) is not dict:
        raise StreamFormatError(
            f"cannot detect the format of a {type(payload).__name__} payload", payload=payload
        )
    for entry in _ordered:
        if entry.detect(payload, event):
            return entry
    for entry in _ordered:
        if entry.detect_fallback is not None and entry.detect_fallback(payload, event):
            return entry
    shown = ", ".join(sorted(map(str, payload))[:8])
    raise StreamFormatError(
        f"cannot detect the wire format of a payload with keys [{shown}]", payload=payload
    )
