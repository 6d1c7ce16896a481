"""Typed, monotonic, incremental previews of a JSON document that is still streaming.

Sans-IO: parser events in, previews typed by the target out. Every preview is a prefix of
every later one and of the final value; each completed subtree is validated once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any, Final

from .._core.events import StringAppended, ValueCompleted, ValueStarted, last_key
from .._core.json_types import json_type
from .._core.partial_json import MISSING
from .shapes import Invalid, ModelShape, Shape, json_kind

__all__ = ["Invalid", "TypedPreview"]

_STALE: Final[Any] = object()  # the preview must be rebuilt
_GROWN: Final[Any] = object()  # only the open string grew since the last preview

_CONTAINER = {"object": "object", "array": "array"}


class _Frame:
    """One open container of the typed tree.

    ``data`` holds the members for validation (by JSON key; a list for arrays); ``shown``
    the members shown (by field name for a model; the same list for arrays). ``key`` and
    ``name`` name the open member (JSON key, shown name or ``None`` when it is not shown).
    ``view`` is the preview object last built for this container; ``synced`` counts the
    shown members it holds and ``vslot`` names the entry holding the open member's
    preview (``True`` for an array; ``None``: none).
    """

    __slots__ = (
        "data",
        "is_list",
        "is_model",
        "key",
        "name",
        "shape",
        "shown",
        "synced",
        "view",
        "vslot",
    )

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.is_list = shape.container == "array"
        self.is_model = isinstance(shape, ModelShape)
        self.data: Any = [] if self.is_list else {}
        self.shown: Any = self.data if self.is_list else {}
        self.key: Any = None
        self.name: Any = None
        self.view: Any = None
        self.synced = 0
        self.vslot: Any = None

    def child(self, key: Any) -> tuple[Any, Shape | None]:
        """``(shown name or None, shape or None)`` of the member at ``key``."""
        shape = self.shape
        if self.is_model:
            found = shape.field(key)  # type: ignore[attr-defined]
            if found is None:
                return None, None
            name, child = found
        else:
            child = shape.child(key)
            name = key
        if child is None or (not self.is_list and name in self.shown):
            return None, child  # not shown (a duplicate key keeps showing its first value)
        return name, child

    def add(self, key: Any, name: Any, value: Any) -> None:
        """A member completed with the validated ``value``."""
        if self.is_list:
            self.data.append(value)
            return
        self.data[key] = value  # json.loads keeps the last of a duplicate key
        if name is not None and name not in self.shown:
            self.shown[name] = value  # a preview keeps the first

    def fresh(self) -> Any:
        """A new preview object holding the shown members (no open member yet)."""
        shown = self.shown
        self.synced = len(shown)
        self.vslot = None
        if self.is_list:
            view = shown.copy()
        elif self.is_model:
            view = self.shape.build(shown)
        else:
            view = shown.copy()
        self.view = view
        return view

    def sync(self, view: Any) -> None:
        """Bring a preview object up to date in place: drop the open member's entry, add
        the members shown since."""
        shown = self.shown
        n = len(shown)
        synced = self.synced
        slot = self.vslot
        if self.is_list:
            if slot is not None:
                del view[synced:]
                self.vslot = None
            if n > synced:
                view += shown[synced:]
                self.synced = n
            return
        values = view.__dict__ if self.is_model else view
        if slot is not None:
            values[slot] = None  # the open member's entry: filled again by put() or update()
            self.vslot = None
        if n > synced:
            fresh = list(islice(reversed(shown.items()), n - synced))
            values.update(fresh)
            if self.is_model:
                view.__pydantic_fields_set__.update(name for name, _ in fresh)
            self.synced = n

    def put(self, view: Any, child: Any) -> None:
        """Show ``child`` as the open member's preview in ``view``."""
        if self.is_list:
            view.append(child)
            self.vslot = True
            return
        name = self.name
        if self.is_model:
            view.__dict__[name] = child
            view.__pydantic_fields_set__.add(name)
        else:
            view[name] = child
        self.vslot = name


class TypedPreview:
    """Typed previews of one JSON document, fed its parser's events (module docstring).

    ``apply(events)`` takes the events of one ``feed``; ``preview()`` is the typed preview
    (``MISSING`` before anything can be shown); ``complete`` turns true when the root
    completed and ``value`` holds the validated root. ``final(raw)`` validates the whole
    root once it completes (``None``: the root shape's own validation); ``finish_root(raw)``
    completes a document that ends without an event (a top-level number at the parser's
    ``close()``). ``growing`` and ``grow(text)`` let a caller that knows the open string's
    next text (``PartialJSONParser.feed_string``) skip the event.
    """

    __slots__ = (
        "_final",
        "_hdepth",
        "_hkey",
        "_hname",
        "_hshape",
        "_path",
        "_root",
        "_shape",
        "_skey",
        "_slot",
        "_sname",
        "_snap",
        "_sopen",
        "_spieces",
        "_sshape",
        "_stack",
        "_stext",
        "complete",
        "growing",
        "value",
    )

    def __init__(self, shape: Shape, final: Callable[[Any], Any] | None = None) -> None:
        self._shape = shape
        self._final = final
        self._stack: list[_Frame] = []
        self._hdepth = -1  # >= 0 while inside a value shown only once complete
        self._hshape: Shape | None = None
        self._hkey: Any = None
        self._hname: Any = None
        self._sopen = False  # a growing string is open
        self._skey: Any = None
        self._sname: Any = None
        self._sshape: Shape | None = None
        self._stext = ""
        self._spieces: list[str] = []
        self._snap: Any = MISSING
        self._path: tuple[Any, ...] | None = None  # see _grown
        self._slot: tuple[Any, Any] = (None, None)
        self._root: Any = MISSING
        self.complete = False
        self.value: Any = MISSING
        self.growing = False
        """Whether a shown string is open: :meth:`grow` may take its next piece."""

    # ----------------------------------------------------------------------- events

    def apply(self, events: Sequence[Any]) -> bool:
        """Apply one feed's JSON events; return whether the preview changed.

        Raises :class:`Invalid` (with ``path``) when a completed value does not validate.
        """
        if len(events) == 1 and self._sopen:
            ev = events[0]
            if type(ev) is StringAppended and self._hdepth < 0:
                # the common case of a long value: one more piece of the open string
                self._spieces.append(ev.text)
                if self._snap is not _STALE:
                    self._snap = _GROWN
                return True
        changed = False
        for ev in events:
            t = type(ev)
            if t is StringAppended:
                if self._sopen and self._hdepth < 0:
                    self._spieces.append(ev.text)
                    if self._snap is not _STALE:
                        self._snap = _GROWN
                    changed = True
            elif t is ValueStarted:
                if self._started(ev):
                    self._snap = _STALE
                    changed = True
            elif t is ValueCompleted and self._completed(ev):
                self._snap = _STALE
                changed = True
        self.growing = self._sopen and self._hdepth < 0
        return changed

    def grow(self, text: str) -> None:
        """The open string grew by ``text`` (what a ``StringAppended`` event would say),
        for a caller that knows it without the event (see :attr:`growing`)."""
        self._spieces.append(text)
        if self._snap is not _STALE:
            self._snap = _GROWN

    def _started(self, ev: ValueStarted) -> bool:
        kind = ev.kind
        if self._hdepth >= 0:
            if kind in _CONTAINER:
                self._hdepth += 1
            return False
        stack = self._stack
        if stack:
            top = stack[-1]
            key = last_key(ev)
            name, shape = top.child(key)
            top.key, top.name = key, name
        else:
            key = name = None
            shape = self._shape
        if shape is not None:
            shape = shape.resolve(json_kind(kind))
        if shape is not None and shape.container is not None and shape.container == kind:
            stack.append(_Frame(shape))
            return name is not None or len(stack) == 1
        if kind == "string" and shape is not None and shape.grows:
            self._sopen = True
            self._skey, self._sname, self._sshape = key, name, shape
            self._stext = ""
            self._spieces.clear()
            return name is not None or not stack
        self._hdepth = 1 if kind in _CONTAINER else 0
        self._hshape, self._hkey, self._hname = shape, key, name
        return False

    def _completed(self, ev: ValueCompleted) -> bool:
        value = ev.value
        if self._hdepth >= 0:
            if self._hdepth > 0 and type(value) in (dict, list):
                self._hdepth -= 1
            if self._hdepth > 0:
                return False
            self._hdepth = -1
            shape, key, name = self._hshape, self._hkey, self._hname
            self._hshape = None
            typed = value if shape is None else self._check(shape, value, value, ev)
            return self._attach(key, name, typed, value, ev)
        if self._sopen:
            self._sopen = False
            shape = self._sshape
            assert shape is not None
            self._sshape = None
            self._stext = ""
            self._spieces.clear()
            typed = self._check(shape, value, value, ev)
            return self._attach(self._skey, self._sname, typed, value, ev)
        frame = self._stack.pop()
        if not self._stack and self._final is not None:
            return self._attach(None, None, MISSING, value, ev)  # final() validates it whole
        typed = self._check(frame.shape, frame.data, value, ev)
        if not self._stack:
            return self._attach(None, None, typed, value, ev)
        parent = self._stack[-1]
        return self._attach(parent.key, parent.name, typed, value, ev)

    def _check(self, shape: Shape, value: Any, raw: Any, ev: Any) -> Any:
        try:
            return shape.validate(value, raw)
        except Invalid as exc:
            exc.path = ev.path  # type: ignore[attr-defined]
            raise

    def _attach(self, key: Any, name: Any, typed: Any, raw: Any, ev: Any) -> bool:
        stack = self._stack
        if stack:
            stack[-1].add(key, name, typed)
            return name is not None
        # the root completed: validated once more, whole, by the caller's exact rules
        if self._final is not None:
            try:
                typed = self._final(raw)
            except Invalid as exc:
                exc.path = ()  # type: ignore[attr-defined]
                raise
        self._root = typed
        self.value = typed
        self.complete = True
        return True

    def finish_root(self, raw: Any) -> Any:
        """Complete a root that ended without an event (a top-level number at ``close()``)."""
        if not self.complete:
            shape = self._shape.resolve(json_type(raw))
            typed = self._final(raw) if self._final is not None else shape.validate(raw, raw)
            self._root = self.value = typed
            self.complete = True
            self._snap = _STALE
        return self.value

    # --------------------------------------------------------------------- previews

    def preview(self) -> Any:
        """The typed, monotonic preview (``MISSING`` before anything can be shown).

        Cached while nothing changed; treat it as read-only (see the module docstring).
        """
        snap = self._snap
        if snap is _GROWN:
            snap = self._grown()
        elif snap is _STALE:
            snap = self._build()
        else:
            return snap
        self._snap = snap
        return snap

    def _text(self) -> str:
        pieces = self._spieces
        if pieces:
            text = self._stext
            self._stext = ""
            text += pieces[0] if len(pieces) == 1 else "".join(pieces)
            pieces.clear()
            self._stext = text
        return self._stext

    def _build(self) -> Any:
        """The preview, top-down: a container's previous preview object is updated in
        place (a preview is live: a held one grows with the document), a new container's
        is built from its shown members. Then each open member's preview goes in its
        container's entry, the open string's text last."""
        if self.complete:
            return self._root
        stack = self._stack
        self._path = None
        if not stack:
            return self._text() if self._sopen else MISSING
        parent: _Frame | None = None
        pview: Any = None
        for frame in stack:
            view = frame.view
            if view is not None:
                frame.sync(view)
            else:
                view = frame.fresh()
            if parent is not None:
                parent.put(pview, view)
            parent, pview = frame, view
        assert parent is not None
        self._path = None
        if self._sopen and self._sname is not None:
            parent.put(pview, self._text())
            self._path = tuple(frame.view for frame in stack)
            holder = pview
            if not parent.is_list:
                holder = pview.__dict__ if parent.is_model else pview
            self._slot = (holder, -1 if parent.is_list else parent.name)
        return stack[0].view

    def _grown(self) -> Any:
        """Only the open string grew: put the longer text in the innermost preview object,
        in place.

        ``_path`` (set by :meth:`_build`) holds the path's preview objects, root first, and
        ``_slot`` the container and key of the string's entry.
        """
        path = self._path
        if path is None:
            return self._build()
        holder, slot = self._slot
        holder[slot] = None  # let go of the old text so that += can extend it in place
        pieces = self._spieces
        text = self._stext
        self._stext = ""
        text += pieces[0] if len(pieces) == 1 else "".join(pieces)
        pieces.clear()
        self._stext = holder[slot] = text
        return path[0]
