"""The events toolwire emits, as frozen, slotted, keyword-only dataclasses.

Two families live here:

* JSON events, returned by :meth:`PartialJSONParser.feed`, each with a ``path`` (a tuple of
  ``str`` keys and ``int`` indices from the root);
* stream events, returned by :meth:`StreamAssembler.feed`, one vocabulary for every
  provider.

Each event is a past-tense fact; its docstring says when it is emitted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._response import Usage

JSONPath = tuple[str | int, ...]
ValueKind = Literal["object", "array", "string", "number", "true", "false", "null"]


# --------------------------------------------------------------------------- JSON events


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueStarted:
    """A value began at ``path``: emitted at its first character (``{``, ``[``, ``"``, a
    digit or ``-``, ``t``, ``f``, ``n``)."""

    path: JSONPath
    kind: ValueKind


@dataclass(frozen=True, slots=True, kw_only=True)
class StringAppended:
    """Decoded text was appended to the string at ``path``.

    The texts emitted for one path join to that string's final value. Text is emitted only
    once it can no longer change: never half an escape, never a lone high surrogate that a
    following escape could still pair.
    """

    path: JSONPath
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueCompleted:
    """The value at ``path`` is complete; ``value`` is what ``json.loads`` gives for it.

    A number completes when the character after it arrives (or at ``close()``).
    """

    path: JSONPath
    value: Any


JSONEvent = ValueStarted | StringAppended | ValueCompleted


# ------------------------------------------------------------------------- stream events


@dataclass(frozen=True, slots=True, kw_only=True)
class TextDelta:
    """The model's visible text grew by ``text``."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    """The model's reasoning (thinking) text grew by ``text``; it is never part of ``text``."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallStarted:
    """A new tool call was opened; emitted once per call, when its name is first known.

    ``key`` is toolwire's stable handle for the call (used by every later event of the
    call); ``id`` is the provider's call id, or a deterministic synthesised one when the
    provider sent none; ``index`` is the call's position in the response (0-based, in
    order of appearance).
    """

    key: int
    id: str
    name: str
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallArguments:
    """A fragment of a call's JSON arguments arrived.

    ``delta`` is the raw text fragment, ``json_events`` what the call's incremental parser
    made of it. ``preview`` is the call's monotonic argument preview (see
    :class:`PartialJSONParser`); it is computed on first access and cached by the parser,
    so reading it costs nothing when nothing changed. Read it while handling the event:
    once later fragments of the same call were fed it shows that newer state (which only
    ever extends the older one).
    """

    key: int
    delta: str
    json_events: tuple[JSONEvent, ...]
    _preview: Callable[[], Any] = field(repr=False, compare=False)

    @property
    def preview(self) -> Any:
        """The call's arguments as far as they can be shown without ever changing later."""
        return self._preview()


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallEnded:
    """The provider signalled the end of this call's arguments (``content_block_stop``,
    ``output_item.done``, a whole-call part...). Not a promise that the response ended; in
    a format that sends these, a call that never gets one is never finalised."""

    key: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallRejected:
    """The call can never be valid: its arguments are not JSON (``offset`` into them says
    where) or its name is empty. It will be in ``Response.rejected``; the stream goes on."""

    key: int
    reason: str
    raw_arguments: str
    offset: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageReported:
    """The provider reported token usage; ``usage`` is everything reported so far, merged."""

    usage: Usage


@dataclass(frozen=True, slots=True, kw_only=True)
class Finished:
    """The provider's terminal event arrived.

    ``finish_reason`` is normalised (``"tool_calls"`` when calls are present, ``"stop"``,
    ``"length"``, ``"content_filter"``, ``"error"``); ``raw_finish_reason`` is the
    provider's own value.
    """

    finish_reason: str
    raw_finish_reason: str | None


StreamEvent = (
    TextDelta
    | ReasoningDelta
    | ToolCallStarted
    | ToolCallArguments
    | ToolCallEnded
    | ToolCallRejected
    | UsageReported
    | Finished
)
