"""The events toolwire emits: immutable values, each built by its own constructor.

JSON events (from :meth:`PartialJSONParser.feed`, each with a ``path``) and stream events
(from :meth:`StreamAssembler.feed`, one vocabulary for every provider). Stream events are
frozen, slotted, keyword-only dataclasses; the ones made per argument fragment (the JSON
events and ``ToolCallArguments``) are plain slotted classes whose ``__init__`` stores the
fields and which the hot paths call positionally (a frozen dataclass's ``__init__`` costs
an ``object.__setattr__`` per field, and a keyword call a dict of the arguments). Their
fields are read-only (assignment raises ``FrozenInstanceError``), and they compare, hash
and print as the dataclasses did. A JSON event costs O(1) at any depth: the parser passes
its ``path`` as a link (see :func:`_path_of`), and the tuple is built when read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from .response import Usage

JSONPath = tuple[str | int, ...]
ValueKind = Literal["object", "array", "string", "number", "true", "false", "null"]


def _read_only(get: Callable[[Any], Any], name: str, doc: str) -> Any:
    """The public field ``name``, read with ``get`` (``attrgetter`` of the private slot the
    constructor stored it in, a C getter), while assignment and deletion raise
    ``FrozenInstanceError``, as on a frozen dataclass."""

    def refuse(self: object, value: object = None) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    return property(get, refuse, refuse, doc)


# --------------------------------------------------------------------------- JSON events


def _path_of(at: tuple[Any, ...]) -> JSONPath:
    """The path tuple that a JSON event's ``path`` argument stands for.

    The parser passes a link, ``(parent link, key)`` with ``()`` for the root, built once
    per container and key, so that an event costs O(1) at any depth; it is walked up to
    the root here (O(depth)). Anything else is a path as given. The two never collide: a
    path holds keys and indexes, a link's first item is a link (a tuple).
    """
    if len(at) != 2 or type(at[0]) is not tuple:
        return at
    parent, key = at
    if not parent:
        return (key,)
    keys = [key]
    while parent:
        parent, key = parent
        keys.append(key)
    keys.reverse()
    return tuple(keys)


def _rebuild(cls: type[_JSONEvent], path: JSONPath, value: Any) -> _JSONEvent:
    """Unpickle a JSON event through its constructor (see ``__reduce__``)."""
    return cls(path=path, **{cls._field: value})  # type: ignore[call-arg]


_VALUE = attrgetter("_value")


class _JSONEvent:
    """What the JSON events share: ``path`` and one other field (``_field`` names it),
    stored in ``_at`` and ``_value``; equal when of one class with equal fields."""

    __slots__ = ("_at", "_value")
    _field: ClassVar[str]

    _at: tuple[Any, ...]
    _value: Any

    if TYPE_CHECKING:
        path: JSONPath
    else:
        path = _read_only(
            lambda self: _path_of(self._at),
            "path",
            "The path from the root: ``str`` keys and ``int`` indexes.",
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return (self.path, self._value) == (other.path, other._value)

    def __hash__(self) -> int:
        return hash((self.path, self._value))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(path={self.path!r}, {self._field}={self._value!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and copy) through the constructor, with the path as a tuple."""
        return (_rebuild, (type(self), self.path, self._value))


class ValueStarted(_JSONEvent):
    """A value began at ``path``: emitted at its first character (``{``, ``[``, ``"``, a
    digit or ``-``, ``t``, ``f``, ``n``)."""

    __slots__ = ()
    _field = "kind"

    def __init__(self, path: JSONPath, kind: ValueKind) -> None:
        self._at = path
        self._value = kind

    if TYPE_CHECKING:
        kind: ValueKind
    else:
        kind = _read_only(_VALUE, "kind", "What began: ``object``, ``array``, ``string``...")


class StringAppended(_JSONEvent):
    """Decoded text was appended to the string at ``path``.

    The texts emitted for one path join to that string's final value. Text is emitted only
    once it can no longer change: never half an escape, never a lone high surrogate that a
    following escape could still pair.
    """

    __slots__ = ()
    _field = "text"

    def __init__(self, path: JSONPath, text: str) -> None:
        self._at = path
        self._value = text

    if TYPE_CHECKING:
        text: str
    else:
        text = _read_only(_VALUE, "text", "The decoded text appended.")


class ValueCompleted(_JSONEvent):
    """The value at ``path`` is complete; ``value`` is what ``json.loads`` gives for it.

    A number completes when the character after it arrives (or at ``close()``).
    """

    __slots__ = ()
    _field = "value"

    def __init__(self, path: JSONPath, value: Any) -> None:
        self._at = path
        self._value = value

    if TYPE_CHECKING:
        value: Any
    else:
        value = _read_only(_VALUE, "value", "The complete value, as ``json.loads`` gives it.")


JSONEvent = ValueStarted | StringAppended | ValueCompleted


def last_key(event: JSONEvent) -> str | int | None:
    """The last key or index of ``event.path`` (``None`` at the root), in O(1)."""
    at = event._at
    if len(at) == 2 and type(at[0]) is tuple:
        return at[1]  # type: ignore[no-any-return]
    return at[-1] if at else None


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

    __slots__ = (
        "_changed",
        "_delta",
        "_id",
        "_json_events",
        "_key",
        "_name",
        "_preview",
        "_typed",
    )

    def __init__(
        self,
        key: int,
        delta: str,
        json_events: tuple[JSONEvent, ...],
        _preview: Callable[[], Any],
        id: str = "",
        name: str = "",
        preview_changed: bool = True,
        _typed: Callable[[], Any] | None = None,
    ) -> None:
        self._key = key
        self._delta = delta
        self._json_events = json_events
        self._preview = _preview
        self._id = id
        self._name = name
        self._changed = preview_changed
        self._typed = _typed

    if TYPE_CHECKING:
        key: int
        delta: str
        json_events: tuple[JSONEvent, ...]
        id: str
        name: str
        preview_changed: bool
    else:
        key = _read_only(attrgetter("_key"), "key", "The call's handle.")
        delta = _read_only(attrgetter("_delta"), "delta", "The raw text fragment.")
        json_events = _read_only(
            attrgetter("_json_events"), "json_events", "What the call's parser made of it."
        )
        id = _read_only(attrgetter("_id"), "id", "The call's id.")
        name = _read_only(attrgetter("_name"), "name", "The call's tool name.")
        preview_changed = _read_only(
            attrgetter("_changed"), "preview_changed", "Whether it can have changed the preview."
        )

    def _fields(self) -> tuple[Any, ...]:
        return (self._key, self._delta, self._json_events, self._id, self._name, self._changed)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"ToolCallArguments(key={self._key!r}, delta={self._delta!r}, "
            f"json_events={self._json_events!r}, id={self._id!r}, name={self._name!r}, "
            f"preview_changed={self._changed!r})"
        )

    def _replace(self, **changes: Any) -> ToolCallArguments:
        """A copy with ``changes`` (named as the constructor names them), built by the
        constructor: a fragment that waited for its call's name, or given a typed preview."""
        fields: dict[str, Any] = {
            "key": self._key,
            "delta": self._delta,
            "json_events": self._json_events,
            "_preview": self._preview,
            "id": self._id,
            "name": self._name,
            "preview_changed": self._changed,
            "_typed": self._typed,
        }
        fields.update(changes)
        return ToolCallArguments(**fields)

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
