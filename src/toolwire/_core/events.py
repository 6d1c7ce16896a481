"""The events toolwire emits, as frozen, slotted, keyword-only dataclasses.

JSON events (from :meth:`PartialJSONParser.feed`, each with a ``path``) and stream events
(from :meth:`StreamAssembler.feed`, one vocabulary for every provider). A JSON event costs
O(1) at any depth; ``path`` is built when read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, overload

if TYPE_CHECKING:
    from .response import Usage

_E = TypeVar("_E")

JSONPath = tuple[str | int, ...]
ValueKind = Literal["object", "array", "string", "number", "true", "false", "null"]


# --------------------------------------------------------------------------- JSON events


def _path_of_link(link: tuple[Any, ...]) -> JSONPath:
    """The path tuple that an event's stored link stands for (see the module docstring).

    ``()`` is the root; ``(path,)`` is a path given to a constructor; ``(parent, key)`` is a
    parser link, walked up to the root (O(depth)).
    """
    if len(link) != 2:
        return cast(JSONPath, link[0]) if link else ()
    parent, key = link
    if not parent:
        return (key,)
    keys = [key]
    while parent:
        parent, key = parent
        keys.append(key)
    keys.reverse()
    return tuple(keys)


class _LinkSlot:
    """Base of the JSON events: the ``_at`` slot holds the path as a shared link, and each
    event's own slot (its one other field) holds its value."""

    __slots__ = ("_at",)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle through the constructor: the path and the event's one other field."""
        cls = type(self)
        (name,) = cls.__slots__
        return (_rebuild, (cls, _path_of_link(_get_at(self)), name, getattr(self, name)))


_get_at = cast(Callable[[object], Any], _LinkSlot.__dict__["_at"].__get__)
_set_at = cast(Callable[[object, Any], None], _LinkSlot.__dict__["_at"].__set__)


class _PathField:
    """The ``path`` field of the JSON events: a tuple materialised from the ``_at`` link.

    A data descriptor, so the frozen dataclass ``__init__`` (which sets fields with
    ``object.__setattr__``) stores through it, while assignment on an instance still raises
    ``FrozenInstanceError``. Asked on the class it raises ``AttributeError``, which tells
    ``dataclasses`` that the field has no default.
    """

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> _PathField: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> JSONPath: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            raise AttributeError("path")
        return _path_of_link(_get_at(obj))

    def __set__(self, obj: object, value: JSONPath) -> None:
        _set_at(obj, (value,))


_PATH: Any = _PathField()


def _rebuild(cls: type[_E], path: JSONPath, name: str, value: Any) -> _E:
    """Unpickle a JSON event through its constructor (see ``__reduce__``)."""
    return cls(path=path, **{name: value})  # type: ignore[call-arg]


@dataclass(frozen=True, kw_only=True)
class ValueStarted(_LinkSlot):
    """A value began at ``path``: emitted at its first character (``{``, ``[``, ``"``, a
    digit or ``-``, ``t``, ``f``, ``n``)."""

    __slots__ = ("kind",)

    path: JSONPath = _PATH
    kind: ValueKind


@dataclass(frozen=True, kw_only=True)
class StringAppended(_LinkSlot):
    """Decoded text was appended to the string at ``path``.

    The texts emitted for one path join to that string's final value. Text is emitted only
    once it can no longer change: never half an escape, never a lone high surrogate that a
    following escape could still pair.
    """

    __slots__ = ("text",)

    path: JSONPath = _PATH
    text: str


@dataclass(frozen=True, kw_only=True)
class ValueCompleted(_LinkSlot):
    """The value at ``path`` is complete; ``value`` is what ``json.loads`` gives for it.

    A number completes when the character after it arrives (or at ``close()``).
    """

    __slots__ = ("value",)

    path: JSONPath = _PATH
    value: Any


JSONEvent = ValueStarted | StringAppended | ValueCompleted


def _maker(cls: type[_E], name: str) -> Callable[[tuple[Any, ...], Any], _E]:
    """A constructor ``make(link, value)`` for the parser's hot path.

    It fills the two slots directly: the same frozen instance as ``cls(path=..., name=...)``
    would give for that link, without the generated ``__init__`` (one ``object.__setattr__``
    per field, through the path descriptor), which costs about twice as much.
    """
    set_second = cast(Callable[[object, Any], None], cls.__dict__[name].__set__)
    new = object.__new__

    def make(link: tuple[Any, ...], value: Any) -> _E:
        event = new(cls)
        _set_at(event, link)
        set_second(event, value)
        return event

    return make


# What the parser calls to build its events: make_started(link, kind),
# make_appended(link, text), make_completed(link, value).
make_started: Callable[[tuple[Any, ...], ValueKind], ValueStarted] = _maker(ValueStarted, "kind")
make_appended: Callable[[tuple[Any, ...], str], StringAppended] = _maker(StringAppended, "text")
make_completed: Callable[[tuple[Any, ...], Any], ValueCompleted] = _maker(ValueCompleted, "value")


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

    ``key`` is the call's handle, ``id`` and ``name`` the call's id and tool name as its
    ``ToolCallStarted`` announced them (so a consumer needs no ``key -> name`` table; the
    fragments of a call whose name comes late are emitted after its ``ToolCallStarted``,
    already carrying it). ``delta`` is the raw text fragment, ``json_events`` what the
    call's incremental parser made of it (``()`` under ``StreamAssembler(json_events=
    False)``). ``preview`` is the call's monotonic argument preview (see
    :class:`PartialJSONParser`); it is computed on first access and cached by the parser,
    so reading it costs nothing when nothing changed. It shows the call as fed when it is
    read: the events of one ``feed``/``feed_bytes`` (a driver's one network read) come
    out once all of it is parsed, so an early one of them already shows the later
    fragments of that read (which only ever extend its own). Feed one payload at a time
    and read it before the next feed for each fragment's own preview.

    ``preview_changed`` says whether this fragment can have changed the preview: ``False``
    guarantees that ``preview`` equals the preview of the call's previous fragment, so a
    UI may skip re-rendering (a fragment inside a key, the digits of a number still
    growing, a closing quote or bracket). With JSON events it is exact but for one case:
    a repeated key's later value counts as a change though the preview keeps the first.
    Without JSON events it is ``True`` whenever the parser's cached snapshot was
    invalidated since it was last read, which also counts closing quotes and brackets.
    """

    key: int
    delta: str
    json_events: tuple[JSONEvent, ...]
    _preview: Callable[[], Any] = field(repr=False, compare=False)
    id: str = ""
    name: str = ""
    preview_changed: bool = True
    _typed: Callable[[], Any] | None = field(default=None, repr=False, compare=False)

    @property
    def preview(self) -> Any:
        """The call's arguments as far as they can be shown without ever changing later."""
        return self._preview()

    @property
    def typed_preview(self) -> Any:
        """The arguments typed by the tool (``StreamAssembler(tools=...)``): an instance of
        the tool's argument model (completed fields validated, a growing string as far as
        it arrived, fields not yet shown ``None``), or for a raw-schema tool the JSON value
        checked part by part. ``None`` when the assembler has no ``tools=`` or the tool is
        unknown. Same rules as :class:`OutputPreview`."""
        typed = self._typed
        return None if typed is None else typed()


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputPreview:
    """The structured output's typed preview changed (``StreamAssembler(output=...)``).

    Emitted after the :class:`TextDelta` (or, for ``output_tool=``, instead of the call's
    events) whose text changed it. ``delta`` is that text; ``complete`` whether the whole
    output has arrived and validated. ``preview`` is the typed, monotonic preview: for a
    pydantic model an instance of the model built without validation whose complete
    fields are validated and typed, whose growing ``str`` fields show the text so far and
    whose fields not yet shown are ``None`` (``model_fields_set`` names the fields shown);
    a ``list`` / ``dict`` for those types; the JSON value for a schema. Nothing shown ever
    changes except by growing. Computed when read, cached: the state as fed when it is read
    (an early event of one ``feed``/``feed_bytes`` already shows that input's later text,
    which only ever extends it; see :class:`ToolCallArguments`). Treat it as read-only.
    """

    delta: str
    complete: bool
    _preview: Callable[[], Any] = field(repr=False, compare=False)

    @property
    def preview(self) -> Any:
        """The output as far as it can be shown typed without ever changing later."""
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
    where), repeat an object key (``duplicate_key``: that key's path, its last item the key;
    ``offset``: where it is repeated) or its name is empty. It will be in
    ``Response.rejected``; the stream goes on."""

    key: int
    reason: str
    raw_arguments: str
    offset: int | None = None
    duplicate_key: tuple[str | int, ...] | None = None


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
    | OutputPreview
    | ToolCallEnded
    | ToolCallRejected
    | UsageReported
    | Finished
)
