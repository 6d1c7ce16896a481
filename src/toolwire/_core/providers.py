"""The vocabulary of a provider table: what one wire format is (:class:`Provider`) and an
immutable table of them (:class:`Formats`), looked up by name or detected.

The core holds no table of its own: the built-in one is the literal ``FORMATS`` of
``toolwire._providers``, and whatever looks a format up receives a table from its caller
(tests pass their own). A table is built once and never changes; lookups are O(1) and
detection asks the providers in the table's order.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .._errors import StreamFormatError, UnknownFormat, UsageError

if TYPE_CHECKING:
    from .deltas import Adapter
    from .messages import ResultText
    from .response import PartialCall, Response

__all__ = ["ClientRunCall", "Formats", "Provider", "ToolSpec"]

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


class ClientRunCall(NamedTuple):
    """A kind of the provider's own calls that the client runs (``Toolbox.handle``)."""

    tool: str
    """The tool name its calls are carried under."""
    approval: bool = False
    """The call asks the client's approval: it always waits for a person, and by default
    runs nothing once approved."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """Everything toolwire's production side knows about one wire format.

    - ``name``: the canonical format name; ``aliases``: other names accepted for it;
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
      ``user_message(text)``: a user message holding ``text`` (toolwire's own notes, such
      as the token-limit continuation's);
    - ``done_marker_names``: names that choose this format with one difference: a
      stream's ``[DONE]`` marker is its finish when no finish reason came (a profile for
      servers that send none; ``Response.done_marker_finish`` says it was used). Never
      detected: the marker alone does not show that nothing was cut;
    - ``custom_definition(tool)``: the definition of a custom tool (free-form text input,
      ``ToolCall.kind`` ``"custom_tool_call"``); ``None``: the format has no custom tools;
      ``custom_input(call)``: a custom tool call's input text from the arguments that
      arrived (as far as they did), ``None`` for a call that is not a custom one;
    - ``client_run_calls``: the kinds of the format's own calls that the client runs
      (``Toolbox.handle``), each with how it is carried (:class:`ClientRunCall`).
    """

    name: str
    detect: Detector
    adapter: Callable[[int], Adapter]
    definition: Callable[[ToolSpec, bool], dict[str, Any]]
    tool_results: Callable[[Sequence[ResultText]], list[dict[str, Any]]]
    assistant_turn: Callable[[Response], list[dict[str, Any]]]
    user_message: Callable[[str], dict[str, Any]]
    detect_fallback: Detector | None = None
    aliases: tuple[str, ...] = ()
    done_marker_names: tuple[str, ...] = ()
    group_definitions: Callable[[list[dict[str, Any]]], list[dict[str, Any]]] | None = None
    custom_definition: Callable[[ToolSpec], dict[str, Any]] | None = None
    custom_input: Callable[[PartialCall], str | None] | None = None
    client_run_calls: Mapping[str, ClientRunCall] = field(default_factory=dict)


class Formats:
    """An immutable table of providers: by name (canonical, alias or done-marker name) and
    in detection order (the order given).

    Names must not repeat across the table (:class:`UsageError`). ``toolwire._providers``
    holds the built-in table, ``FORMATS``; a test builds its own from a toy provider and
    the built-ins (``Formats(TOY, *FORMATS)``) and passes it where formats are looked up.
    """

    __slots__ = ("_by_name", "_ordered")

    def __init__(self, *providers: Provider) -> None:
        by_name: dict[str, Provider] = {}
        for entry in providers:
            for name in (entry.name, *entry.aliases, *entry.done_marker_names):
                if name in by_name:
                    raise UsageError(f"format name {name!r} is in the table twice")
                by_name[name] = entry
        self._by_name = by_name
        self._ordered = providers

    def __iter__(self) -> Iterator[Provider]:
        """The providers, in detection order."""
        return iter(self._ordered)

    def __repr__(self) -> str:
        return f"Formats({', '.join(self.names())})"

    def names(self) -> tuple[str, ...]:
        """The canonical names of the table's formats, in detection order."""
        return tuple(p.name for p in self._ordered)

    def provider(self, name: str) -> Provider:
        """The provider called ``name`` (a canonical name or an alias).

        Raises :class:`UnknownFormat` for anything else, naming the closest known names.
        """
        entry = self._by_name.get(name) if isinstance(name, str) else None
        if entry is not None:
            return entry
        if not isinstance(name, str):
            raise UnknownFormat(f"a format name is a string, not {type(name).__name__}")
        known = sorted(self._by_name)
        lowered = {k.lower(): k for k in known}
        close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
        hint = f" (did you mean {' or '.join(repr(lowered[c]) for c in close)}?)" if close else ""
        raise UnknownFormat(f"unknown format {name!r}{hint}; known: {', '.join(known)}")

    def detect(self, payload: Any, event: str | None = None) -> Provider:
        """The provider whose format ``payload`` (a decoded first event) belongs to.

        Raises :class:`StreamFormatError` when no provider recognises it.
        """
        if type(payload) is not dict:
            raise StreamFormatError(
                f"cannot detect the format of a {type(payload).__name__} payload", payload=payload
            )
        for entry in self._ordered:
            if entry.detect(payload, event):
                return entry
        for entry in self._ordered:
            if entry.detect_fallback is not None and entry.detect_fallback(payload, event):
                return entry
        shown = ", ".join(sorted(map(str, payload))[:8])
        raise StreamFormatError(
            f"cannot detect the wire format of a payload with keys [{shown}]", payload=payload
        )

    def client_run_call(self, kind: str) -> ClientRunCall | None:
        """How a provider's own client-run calls of ``kind`` are carried, or ``None`` when
        no format of the table has calls of that kind."""
        for entry in self._ordered:
            call = entry.client_run_calls.get(kind)
            if call is not None:
                return call
        return None

    def client_run_kinds(self) -> tuple[str, ...]:
        """Every client-run call kind of the table's formats, sorted."""
        return tuple(sorted({k for entry in self._ordered for k in entry.client_run_calls}))
