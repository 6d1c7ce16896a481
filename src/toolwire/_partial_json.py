"""Incremental, strict JSON parsing with a monotonic preview.

One :class:`PartialJSONParser` reads one JSON document that arrives in arbitrary pieces
(tool-call argument fragments). It is a sans-IO state machine: text goes in through
:meth:`~PartialJSONParser.feed`, JSON events come back, and
:meth:`~PartialJSONParser.snapshot` shows the document so far.

Strategy
--------
* **Every character is scanned once.** The scan state (a stack of open containers, the
  state inside the innermost token) survives between ``feed`` calls, so any split is
  handled: inside a key, a string, an escape (``\\``, ``\\u00``), between the two halves of
  a surrogate pair, inside a number or a literal. Only an unfinished escape (at most 11
  characters: a high-surrogate escape plus the beginning of its partner) is carried over
  and looked at again; the buffer is never re-parsed. ``feed(text)`` therefore costs
  O(len(text)) amortised, and ``feed("")`` costs nothing.
* **Runs, not characters.** Compiled regular expressions consume whole runs of plain string
  characters (with the complete escapes between them), whitespace and digits, and the
  common shapes in one step (a plain key with its colon, after its comma; a number with
  its delimiter in sight; a whole literal); a segment that holds escapes is decoded in one
  call of the C string decoder that ``json.loads`` itself uses, so decoding (including
  surrogate pairs and lone surrogates) is identical to ``json.loads``. Python-level work
  per character happens only for structure (``{``, ``,``...) and for the non-digit
  characters of a number split across pieces. A piece that lies inside a string takes a
  short fast path (one regex match, one event). Measured by ``benchmarks/partial_json.py``:
  a 467 KB argument in 55k deltas costs about 0.1 s in total, a few µs per delta.
* **Strict.** Invalid JSON raises :class:`~toolwire.JSONSyntaxError` at the first character
  that cannot continue a valid document, with its 0-based ``offset`` in the whole input
  and a message that says what was expected and what was found. Only whitespace may follow
  the top-level value. ``NaN`` and ``Infinity`` are rejected. After an error the parser
  refuses any further input (it raises the error again). ``close()`` returns exactly what
  ``json.loads`` returns for the whole input (numbers through ``int``/``float`` like
  ``json.loads``, escapes through its decoder, last duplicate key wins at its first
  position) or raises when the input is empty or incomplete.
* **Limits.** ``max_depth`` (default 1000 nested containers) and ``max_size`` (default
  64 Mi characters) raise :class:`~toolwire.JSONDepthError` and
  :class:`~toolwire.JSONSizeError` (both ``JSONSyntaxError`` subclasses).

The monotonic preview
---------------------
``snapshot()`` never shows anything that later input could change other than by growing:
every snapshot is a prefix (same type; strings by ``startswith``; lists by length and
element-wise prefix; dicts by key subset with prefix values; other scalars equal) of every
later snapshot and of the final value. Containers appear when they open; a string shows its
decoded text so far, never half an escape and never a high surrogate that a following
escape could still pair (a high-surrogate escape followed by anything else is a lone
surrogate, exactly as ``json.loads`` produces it); numbers and literals appear only once
complete. A number is complete when a delimiter follows it, so a top-level ``12`` becomes
complete, and :attr:`~PartialJSONParser.complete` turns True, only at ``close()`` (or at the
whitespace after it); for every other document ``complete`` turns True exactly at its last
significant character. An object key appears together with the first showable form of its
value.

*Duplicate keys* cannot be both monotonic and equal to ``json.loads``: the preview keeps
showing the **first** value of a repeated key for the whole stream, while ``close()`` and
the ``ValueCompleted`` event of the enclosing object carry ``json.loads``' result (the last
value, at the first key's position). That is the only case where the final value is not an
extension of the previews.

Cost of a snapshot: it is cached, so calling it again without new input is O(1). Otherwise
it costs O(entries of the open containers + length of the open string), not O(document):
it makes shallow copies of the open containers (the stack path) plus the open string's
text (whose pieces are joined lazily; the joined prefix is cached); completed subtrees are
immutable and **shared** between snapshots, the ``ValueCompleted`` events and ``close()``.
Treat every returned value as read-only: mutating one changes the others.

Events
------
``feed`` returns a tuple of :class:`~toolwire.ValueStarted` (at a value's first
character), :class:`~toolwire.StringAppended` (decoded text appended to a string value,
usually one per ``feed`` call and string; never empty) and
:class:`~toolwire.ValueCompleted` (a string at its closing quote, a literal at its last
letter, a number at the delimiter after it, a container at its closing bracket, carrying
the finished container). Paths are tuples built once per member and shared by its events.
Object keys produce no events of their own. A top-level number completed by ``close()``
produces no event (``close()`` returns the value).

Memory is linear in the input: the parser keeps the decoded value, plus O(depth) state.
"""

from __future__ import annotations

import dataclasses
import enum
import json.decoder
import re
import types
from collections.abc import Callable
from typing import Any, Final, Literal, TypeVar, cast

from ._errors import JSONDepthError, JSONSizeError, JSONSyntaxError
from ._events import JSONEvent, JSONPath, StringAppended, ValueCompleted, ValueStarted

__all__ = ["MISSING", "PartialJSONParser", "parse_partial"]


class _MissingType(enum.Enum):
    """Type of :data:`MISSING` (an enum member, so it stays a singleton when pickled)."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "toolwire.MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _MissingType.MISSING
"""What :meth:`PartialJSONParser.snapshot` returns before any value can be shown (falsy)."""

DEFAULT_MAX_DEPTH: Final = 1000
DEFAULT_MAX_SIZE: Final = 64 * 1024 * 1024

# ------------------------------------------------------------------------ regular expressions

_WS = re.compile(r"[ \t\n\r]*")
_DIGITS = re.compile(r"[0-9]*")
_STR_CHAR = r'[^"\\\x00-\x1f]'
# Complete escapes that can never change meaning: simple ones, \u escapes that are not a high
# surrogate, and a high surrogate together with its low partner. A high surrogate without a
# complete partner stops the run so the caller can decide (hold it back or emit it lone).
_ESCAPE = (
    r'\\(?:["\\/bfnrt]'
    r"|u(?![dD][89abAB])[0-9a-fA-F]{4}"
    r"|u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})"
)
# Unrolled loop (no nested quantifier over the same characters, so no backtracking blow-up).
_SEGMENT = re.compile(f"{_STR_CHAR}*(?:{_ESCAPE}{_STR_CHAR}*)*")
_HIGH_SURROGATE = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}")
# What may still become the low half of a pair when the input ends here.
_LOW_PREFIX = re.compile(r"\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]?)?)?)?\Z")
# An escape that is valid so far but cut by the end of the input.
_ESCAPE_PREFIX = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
_HEX = frozenset("0123456789abcdefABCDEF")

# The C string decoder behind json.loads (typeshed does not declare it): decoding escapes
# with it makes every string identical to json.loads' result, surrogates included.
_scanstring = cast(
    Callable[[str, int], "tuple[str, int]"],
    json.decoder.scanstring,  # type: ignore[attr-defined]
)
# These patterns match (possibly empty) at every position; the casts say so to mypy, and
# binding the methods once saves an attribute lookup per run.
_MatchAt = Callable[[str, int], "re.Match[str]"]
_match_ws = cast(_MatchAt, _WS.match)
_match_digits = cast(_MatchAt, _DIGITS.match)
_match_segment = cast(_MatchAt, _SEGMENT.match)
_match_plain = cast(_MatchAt, re.compile(f"{_STR_CHAR}*").match)
# Shortcuts for the common shapes: a whole plain key with its colon, the same after a comma,
# a whole number (its delimiter is checked by the caller).
_match_key = re.compile(f'"({_STR_CHAR}*)"[ \\t\\n\\r]*:').match
_match_comma_key = re.compile(f',[ \\t\\n\\r]*"({_STR_CHAR}*)"[ \\t\\n\\r]*:').match
_match_number = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?").match

# ------------------------------------------------------------------------------ scan states

_VALUE = 0  # a value: at top level or after ':'
_ELEM = 1  # a value after ',' in an array
_ARR_FIRST = 2  # a value or ']' after '['
_OBJ_FIRST = 3  # a key or '}' after '{'
_KEY = 4  # a key after ','
_COLON = 5  # ':' after a key
_AFTER = 6  # ',' or the closing bracket after a member / element
_STRING = 7  # inside a string value
_KEY_STRING = 8  # inside an object key
_NUMBER = 9  # inside a number
_LITERAL = 10  # inside true / false / null
_DONE = 11  # after the top-level value: only whitespace may follow

# Number sub-states (a small DFA; digit runs are consumed by _DIGITS in one step).
_N_START, _N_MINUS, _N_ZERO, _N_INT, _N_DOT, _N_FRAC, _N_E, _N_ESIGN, _N_EXP = range(9)
_N_ACCEPTING = frozenset({_N_ZERO, _N_INT, _N_FRAC, _N_EXP})
_N_NEEDS = {
    _N_START: "a digit",
    _N_MINUS: "a digit after '-'",
    _N_DOT: "a digit after the decimal point",
    _N_E: "a digit or a sign in the exponent",
    _N_ESIGN: "a digit in the exponent",
}

# ------------------------------------------------------------------------ event factories
#
# The events are frozen slotted dataclasses; their generated __init__ goes through
# object.__setattr__ per field, which is most of the cost of an event. These factories fill
# the slots directly (the same end state, about twice as fast). If the event classes ever
# stop being two-slot dataclasses with these field names, the plain constructor is used.

_E = TypeVar("_E")


def _pair_factory(cls: type[_E], first: str, second: str) -> Callable[[Any, Any], _E]:
    names = tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
    slots = (cls.__dict__.get(first), cls.__dict__.get(second))
    if names != (first, second) or not all(
        isinstance(slot, types.MemberDescriptorType) for slot in slots
    ):
        return lambda a, b: cls(**{first: a, second: b})
    set_first = cast(types.MemberDescriptorType, slots[0]).__set__
    set_second = cast(types.MemberDescriptorType, slots[1]).__set__
    new = object.__new__

    def make(a: Any, b: Any) -> _E:
        event = new(cls)
        set_first(event, a)
        set_second(event, b)
        return event

    return make


_started = _pair_factory(ValueStarted, "path", "kind")
_appended = _pair_factory(StringAppended, "path", "text")
_completed = _pair_factory(ValueCompleted, "path", "value")

_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
_LITERAL_START = {"t": "true", "f": "false", "n": "null"}
_NUMBER_START = frozenset("-0123456789")
_NUMBER_CHARS = frozenset("0123456789+-.eE")

_Kind = Literal["object", "array", "string", "number", "true", "false", "null"]


def _found(text: str, pos: int) -> str:
    """Describe the character at ``pos`` for an error message."""
    ch = text[pos]
    return f"found {ch!r}"


class _Frame:
    """One open container on the stack.

    ``container`` is the preview form (first value of a duplicate key wins); ``final`` is
    ``None`` until the final form differs from it (a duplicate key inside), from then on it
    is maintained in parallel with ``json.loads`` semantics.
    """

    __slots__ = ("child_path", "container", "final", "is_obj", "key", "path")

    def __init__(self, is_obj: bool, container: Any, path: JSONPath) -> None:
        self.is_obj = is_obj
        self.container = container
        self.final: Any = None
        self.path = path
        self.key = ""
        self.child_path: JSONPath = path


class PartialJSONParser:
    """Incremental strict JSON parser with a monotonic preview (see the module docstring).

    Feed text with :meth:`feed` (returns the JSON events it caused), read the preview with
    :meth:`snapshot`, and finish with :meth:`close`, which returns the value ``json.loads``
    would return for the whole input or raises :class:`~toolwire.JSONSyntaxError`.

    ``max_depth`` bounds the nesting of containers (:class:`~toolwire.JSONDepthError`);
    ``max_size`` bounds the number of characters fed (:class:`~toolwire.JSONSizeError`).
    """

    __slots__ = (
        "_carry",
        "_error",
        "_kpieces",
        "_lit",
        "_lit_i",
        "_lpath",
        "_max_depth",
        "_max_size",
        "_nparts",
        "_npath",
        "_nstart",
        "_nstate",
        "_offset",
        "_root",
        "_root_final",
        "_sblocks",
        "_snap",
        "_snap_ok",
        "_spath",
        "_spieces",
        "_stack",
        "_state",
    )

    def __init__(
        self, *, max_depth: int = DEFAULT_MAX_DEPTH, max_size: int = DEFAULT_MAX_SIZE
    ) -> None:
        if not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be a positive int, got {max_depth!r}")
        if not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"max_size must be a positive int, got {max_size!r}")
        self._max_depth = max_depth
        self._max_size = max_size
        self._state = _VALUE
        self._stack: list[_Frame] = []
        self._offset = 0
        self._carry = ""
        self._error: JSONSyntaxError | None = None
        # the open string value: its path and decoded text (pieces, then joined blocks)
        self._spath: JSONPath = ()
        self._spieces: list[str] = []
        self._sblocks: list[str] = []
        self._kpieces: list[str] = []
        # the open number
        self._nstate = _N_START
        self._nparts: list[str] = []
        self._nstart = 0
        self._npath: JSONPath = ()
        # the open literal
        self._lit = ""
        self._lit_i = 0
        self._lpath: JSONPath = ()
        # the finished top-level value: preview form and json.loads form
        self._root: Any = MISSING
        self._root_final: Any = MISSING
        self._snap: Any = MISSING
        self._snap_ok = True

    # ------------------------------------------------------------------------ properties

    @property
    def complete(self) -> bool:
        """True once one whole top-level value has been read (see the module docstring for
        top-level numbers, which complete at the delimiter after them or at ``close()``)."""
        return self._state == _DONE

    @property
    def offset(self) -> int:
        """Number of characters fed so far (O(1))."""
        return self._offset

    @property
    def failed(self) -> bool:
        """True once the parser raised a ``JSONSyntaxError``; it then refuses more input."""
        return self._error is not None

    @property
    def max_depth(self) -> int:
        """The nesting limit this parser enforces."""
        return self._max_depth

    @property
    def max_size(self) -> int:
        """The input-size limit (in characters) this parser enforces."""
        return self._max_size

    # --------------------------------------------------------------------------- feeding

    def feed(self, text: str) -> tuple[JSONEvent, ...]:
        """Consume the next piece of the document; return the JSON events it completed.

        Raises :class:`~toolwire.JSONSyntaxError` (or its depth / size subclasses) at the
        first character that cannot continue valid JSON, and again on every later call.
        """
        if not text:
            if not isinstance(text, str):
                raise TypeError(f"feed() takes str, not {type(text).__name__}")
            return ()
        if self._error is not None:
            raise self._refusal()
        # Fast path: the piece lies entirely inside a string value and holds only plain
        # characters and complete escapes (the common case for long arguments).
        if self._state == _STRING and not self._carry and isinstance(text, str):
            n = len(text)
            if self._offset + n <= self._max_size and _match_segment(text, 0).end() == n:
                self._offset += n
                piece = _scanstring(text + '"', 0)[0] if "\\" in text else text
                pieces = self._spieces
                pieces.append(piece)
                if len(pieces) >= 256:  # bound the per-piece overhead (memory)
                    self._sblocks.append("".join(pieces))
                    pieces.clear()
                self._snap_ok = False
                return (_appended(self._spath, piece),)
        if not isinstance(text, str):
            raise TypeError(f"feed() takes str, not {type(text).__name__}")
        events: list[JSONEvent] = []
        try:
            if len(text) > self._max_size - self._offset:
                self._scan_over_limit(text, events)
            else:
                self._scan(text, events)
        except JSONSyntaxError as exc:
            self._error = exc
            raise
        return tuple(events)

    def _scan_over_limit(self, text: str, events: list[JSONEvent]) -> None:
        # An offending character within the allowed size is reported as such; otherwise
        # the size error, at the first character beyond the limit.
        room = self._max_size - self._offset
        if room > 0:
            self._scan(text[:room], events)
        raise JSONSizeError(
            f"input longer than max_size={self._max_size} characters", self._max_size
        )

    def _refusal(self) -> JSONSyntaxError:
        err = self._error
        assert err is not None
        return type(err)(f"{err.msg} (the parser stopped at this error)", err.offset)

    # --------------------------------------------------------------------------- scanning

    def _scan(self, text: str, ev: list[JSONEvent]) -> None:
        # The hot transitions (whitespace, punctuation, containers, plain keys with their
        # colon, plain strings, delimited numbers, whole literals) are inlined with the
        # state in a local variable; rarer work (escapes, split numbers and literals,
        # errors) goes through helpers, which read and write self._state, so the local is
        # synchronised around each helper call.
        carry = self._carry
        base = self._offset - len(carry)
        self._offset += len(text)
        if carry:
            text = carry + text
            self._carry = ""
        n = len(text)
        pos = 0
        stack = self._stack
        append = ev.append
        state = self._state
        try:
            while pos < n:
                if state >= _STRING:  # inside a token, or after the top-level value
                    if state == _STRING:
                        end = _match_plain(text, pos).end()
                        if end == n or text[end] == '"':  # no escape: no decoding needed
                            if end > pos:
                                piece = text[pos:end]
                                self._spieces.append(piece)
                                append(_appended(self._spath, piece))
                                self._snap_ok = False
                            if end == n:
                                break
                            value = self._string_text()
                            append(_completed(self._spath, value))
                            state = self._attach(value, value)
                            pos = end + 1
                            continue
                        self._state = state
                        pos = self._scan_string(text, pos, base, ev)
                        state = self._state
                        continue
                    if state == _KEY_STRING:
                        end = _match_plain(text, pos).end()
                        kpieces = self._kpieces
                        if end == n:
                            kpieces.append(text[pos:])
                            break
                        if text[end] == '"':
                            key = text[pos:end]
                            if kpieces:
                                kpieces.append(key)
                                key = "".join(kpieces)
                                kpieces.clear()
                            top = stack[-1]
                            top.key = key
                            top.child_path = (*top.path, key)
                            state = _COLON
                            pos = end + 1
                            continue
                        if end > pos:
                            kpieces.append(text[pos:end])
                        self._state = state
                        pos = self._scan_string(text, end, base, ev)
                        state = self._state
                        continue
                    self._state = state
                    if state == _NUMBER:
                        pos = self._scan_number(text, pos, base, ev)
                    elif state == _LITERAL:
                        pos = self._scan_literal(text, pos, base, ev)
                    elif text[pos] in " \t\n\r":  # _DONE
                        pos = _match_ws(text, pos).end()
                    else:
                        raise self._unexpected(state, text, pos, base)
                    state = self._state
                    continue
                ch = text[pos]
                if ch in " \t\n\r":
                    pos = _match_ws(text, pos).end()
                    continue
                if state == _AFTER:
                    top = stack[-1]
                    if ch == ",":
                        if top.is_obj:
                            # ',' "key" ':' in one step when the key is plain and whole
                            m = _match_comma_key(text, pos)
                            if m is None:
                                state = _KEY
                                pos += 1
                                continue
                            key = m.group(1)
                            top.key = key
                            top.child_path = (*top.path, key)
                            state = _VALUE
                            pos = m.end()
                            continue
                        state = _ELEM
                        pos += 1
                        continue
                    if ch == ("}" if top.is_obj else "]"):
                        state = self._close_container(append)
                        pos += 1
                        continue
                    raise self._unexpected(state, text, pos, base)
                if state == _COLON:
                    if ch == ":":
                        state = _VALUE
                        pos += 1
                        continue
                    raise self._unexpected(state, text, pos, base)
                if state in (_OBJ_FIRST, _KEY):
                    if ch == '"':
                        m = _match_key(text, pos)
                        if m is None:
                            state = _KEY_STRING
                            pos += 1
                            continue
                        key = m.group(1)
                        top = stack[-1]
                        top.key = key
                        top.child_path = (*top.path, key)
                        state = _VALUE
                        pos = m.end()
                        continue
                    if ch == "}" and state == _OBJ_FIRST:
                        state = self._close_container(append)
                        pos += 1
                        continue
                    raise self._unexpected(state, text, pos, base)
                # _VALUE, _ELEM, _ARR_FIRST: a value starts here
                if ch == "]" and state == _ARR_FIRST:
                    state = self._close_container(append)
                    pos += 1
                    continue
                if stack:
                    top = stack[-1]
                    path = top.child_path if top.is_obj else (*top.path, len(top.container))
                else:
                    path = ()
                if ch == '"':
                    self._spath = path
                    self._spieces = []
                    self._sblocks = []
                    self._snap_ok = False  # the key shows up now, with ""
                    append(_started(path, "string"))
                    state = _STRING
                    pos += 1
                    continue
                if ch == "{" or ch == "[":
                    if len(stack) >= self._max_depth:
                        raise JSONDepthError(
                            f"containers nest deeper than max_depth={self._max_depth}",
                            base + pos,
                        )
                    if ch == "{":
                        stack.append(_Frame(True, {}, path))
                        append(_started(path, "object"))
                        state = _OBJ_FIRST
                    else:
                        stack.append(_Frame(False, [], path))
                        append(_started(path, "array"))
                        state = _ARR_FIRST
                    self._snap_ok = False
                    pos += 1
                    continue
                if ch in _NUMBER_START:
                    # A whole number followed by its delimiter: complete it at once.
                    m = _match_number(text, pos)
                    if m is not None:
                        end = m.end()
                        if end < n and text[end] not in _NUMBER_CHARS and end - pos < 300:
                            token = m.group()
                            number: Any = int(token) if m.lastindex is None else float(token)
                            append(_started(path, "number"))
                            append(_completed(path, number))
                            state = self._attach(number, number)
                            pos = end
                            continue
                else:
                    word = _LITERAL_START.get(ch)
                    if word is not None and text.startswith(word, pos):
                        literal = _LITERALS[word]
                        append(_started(path, word))
                        append(_completed(path, literal))
                        state = self._attach(literal, literal)
                        pos += len(word)
                        continue
                self._state = state
                pos = self._start_scalar(path, text, pos, base, ev)
                state = self._state
        finally:
            self._state = state

    def _start_scalar(
        self, path: JSONPath, text: str, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """Start a number or a literal at ``pos`` (or raise: no value starts there)."""
        ch = text[pos]
        if ch in _NUMBER_START:
            self._npath = path
            self._nstate = _N_START
            self._nparts = []
            self._nstart = base + pos
            self._state = _NUMBER
            ev.append(_started(path, "number"))
            return pos  # the number scanner reads the first character itself
        word = _LITERAL_START.get(ch)
        if word is None:
            raise self._unexpected(self._state, text, pos, base)
        self._lpath = path
        self._lit = word
        self._lit_i = 1
        self._state = _LITERAL
        kind: _Kind = "true" if ch == "t" else "false" if ch == "f" else "null"
        ev.append(_started(path, kind))
        return pos + 1

    def _scan_string(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        is_key = self._state == _KEY_STRING
        pieces = self._kpieces if is_key else self._spieces
        n = len(text)
        while True:
            end = _match_segment(text, pos).end()
            if end > pos:
                seg = text[pos:end]
                piece = _scanstring(seg + '"', 0)[0] if "\\" in seg else seg
                pieces.append(piece)
                if not is_key:
                    ev.append(_appended(self._spath, piece))
                    self._snap_ok = False
            if end == n:
                return n
            ch = text[end]
            if ch == '"':
                self._finish_string(is_key, ev)
                return end + 1
            if ch != "\\":
                raise JSONSyntaxError(
                    f"control character {ch!r} in a string (it must be escaped)", base + end
                )
            if _HIGH_SURROGATE.match(text, end):
                after = end + 6
                if after == n or _LOW_PREFIX.match(text, after):
                    # A low-surrogate escape may still follow: hold the high half back.
                    self._carry = text[end:]
                    return n
                # Anything else follows: a lone surrogate, as json.loads decodes it.
                piece = chr(int(text[end + 2 : after], 16))
                pieces.append(piece)
                if not is_key:
                    ev.append(_appended(self._spath, piece))
                    self._snap_ok = False
                pos = after
                continue
            if _ESCAPE_PREFIX.match(text, end):
                self._carry = text[end:]  # an escape cut by the end of this piece
                return n
            if text[end + 1] != "u":
                raise JSONSyntaxError(
                    f"invalid escape '\\{text[end + 1]}' in a string "
                    '(valid: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)',
                    base + end + 1,
                )
            j = end + 2
            while text[j] in _HEX:  # at most 3: four would have been a complete escape
                j += 1
            raise JSONSyntaxError(
                f"expected 4 hexadecimal digits after '\\u', {_found(text, j)}", base + j
            )

    def _string_text(self) -> str:
        """The open string value's decoded text so far (joins pieces once, then caches)."""
        blocks = self._sblocks
        pieces = self._spieces
        if pieces:
            blocks.append("".join(pieces))
            pieces.clear()
        if len(blocks) > 1:
            joined = "".join(blocks)
            blocks.clear()
            blocks.append(joined)
        return blocks[0] if blocks else ""

    def _finish_string(self, is_key: bool, ev: list[JSONEvent]) -> None:
        if is_key:
            pieces = self._kpieces
            key = pieces[0] if len(pieces) == 1 else "".join(pieces)
            pieces.clear()
            top = self._stack[-1]
            top.key = key
            top.child_path = (*top.path, key)
            self._state = _COLON
            return
        value = self._string_text()
        ev.append(_completed(self._spath, value))
        self._attach(value, value)

    def _scan_number(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        ns = self._nstate
        start = pos
        n = len(text)
        while pos < n:
            ch = text[pos]
            if "0" <= ch <= "9":
                if ns in (_N_INT, _N_FRAC, _N_EXP):
                    pos = _match_digits(text, pos).end()
                    continue
                if ns in (_N_START, _N_MINUS):
                    ns = _N_ZERO if ch == "0" else _N_INT
                elif ns == _N_DOT:
                    ns = _N_FRAC
                elif ns in (_N_E, _N_ESIGN):
                    ns = _N_EXP
                else:  # _N_ZERO
                    raise JSONSyntaxError(
                        f"leading zeros are not allowed in a number, {_found(text, pos)}",
                        base + pos,
                    )
            elif ch == ".":
                if ns != _N_ZERO and ns != _N_INT:
                    raise self._number_error(ns, text, pos, base)
                ns = _N_DOT
            elif ch == "e" or ch == "E":
                if ns != _N_ZERO and ns != _N_INT and ns != _N_FRAC:
                    raise self._number_error(ns, text, pos, base)
                ns = _N_E
            elif ch == "-":
                if ns == _N_START:
                    ns = _N_MINUS
                elif ns == _N_E:
                    ns = _N_ESIGN
                else:
                    raise self._number_error(ns, text, pos, base)
            elif ch == "+":
                if ns != _N_E:
                    raise self._number_error(ns, text, pos, base)
                ns = _N_ESIGN
            else:
                break
            pos += 1
        if pos > start:
            self._nparts.append(text[start:pos])
        self._nstate = ns
        if pos < n:  # a delimiter follows: the number is complete (or invalid)
            if ns not in _N_ACCEPTING:
                raise self._number_error(ns, text, pos, base)
            self._finish_number(ev)
        return pos

    def _number_error(self, ns: int, text: str, pos: int, base: int) -> JSONSyntaxError:
        need = _N_NEEDS.get(ns)
        if need is None:
            return JSONSyntaxError(f"unexpected {text[pos]!r} in a number", base + pos)
        return JSONSyntaxError(f"expected {need}, {_found(text, pos)}", base + pos)

    def _finish_number(self, ev: list[JSONEvent] | None) -> None:
        parts = self._nparts
        s = parts[0] if len(parts) == 1 else "".join(parts)
        self._nparts = []
        value: Any
        if self._nstate == _N_ZERO or self._nstate == _N_INT:
            try:
                value = int(s)
            except ValueError:
                # Python refuses to convert integers beyond sys.get_int_max_str_digits().
                raise JSONSyntaxError(
                    f"integer with {len(s)} digits exceeds Python's integer conversion limit",
                    self._nstart,
                ) from None
        else:
            value = float(s)
        if ev is not None:
            ev.append(_completed(self._npath, value))
        self._attach(value, value)

    def _scan_literal(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        word = self._lit
        i = self._lit_i
        k = min(len(word) - i, len(text) - pos)
        chunk = text[pos : pos + k]
        if chunk != word[i : i + k]:
            j = 0
            while chunk[j] == word[i + j]:
                j += 1
            raise JSONSyntaxError(
                f"invalid literal: expected {word!r}, {_found(text, pos + j)}", base + pos + j
            )
        i += k
        self._lit_i = i
        if i == len(word):
            value = _LITERALS[word]
            ev.append(_completed(self._lpath, value))
            self._attach(value, value)
        return pos + k

    # ------------------------------------------------------------------- tree building

    def _close_container(self, append: Callable[[JSONEvent], None]) -> int:
        frame = self._stack.pop()
        value = frame.container
        final = value if frame.final is None else frame.final
        append(_completed(frame.path, final))
        return self._attach(value, final)

    def _attach(self, value: Any, final: Any) -> int:
        """Put a completed value (preview form, json.loads form) into its parent; return
        (and set) the new state."""
        self._snap_ok = False
        stack = self._stack
        if not stack:
            self._root = value
            self._root_final = final
            self._state = _DONE
            return _DONE
        self._state = _AFTER
        parent = stack[-1]
        c = parent.container
        if parent.is_obj:
            key = parent.key
            if key in c:
                # Duplicate key: the preview keeps the first value; json.loads keeps the
                # first position with the last value.
                if parent.final is None:
                    parent.final = c.copy()
                parent.final[key] = final
                return _AFTER
            c[key] = value
            if parent.final is not None:
                parent.final[key] = final
            elif final is not value:
                parent.final = c.copy()
                parent.final[key] = final
        else:
            c.append(value)
            if parent.final is not None:
                parent.final.append(final)
            elif final is not value:
                parent.final = c.copy()
                parent.final[-1] = final
        return _AFTER

    # --------------------------------------------------------------------------- errors

    def _unexpected(self, state: int, text: str, pos: int, base: int) -> JSONSyntaxError:
        """The error for a structural character that does not fit ``state``."""
        ch = text[pos]
        stack = self._stack
        hint = ""
        if state == _AFTER:
            if stack[-1].is_obj:
                expected = "',' or '}' after an object member"
            else:
                expected = "',' or ']' after an array element"
        elif state == _COLON:
            expected = "':' after an object key"
        elif state in (_OBJ_FIRST, _KEY):
            expected = "'\"' to start an object key" + (" or '}'" if state == _OBJ_FIRST else "")
            if state == _KEY and ch == "}":
                hint = " (trailing commas are not allowed)"
            elif ch == "'":
                hint = " (JSON strings use double quotes)"
            elif ch.isalpha() or ch == "_":
                hint = " (object keys must be double-quoted strings)"
        elif state == _DONE:
            expected = "only whitespace after the complete top-level value"
        else:
            if state == _ARR_FIRST:
                expected = "a value or ']'"
            elif state == _ELEM:
                expected = "a value after ','"
                if ch == "]":
                    hint = " (trailing commas are not allowed)"
            elif stack:
                expected = "a value after ':'"
            else:
                expected = "a JSON value"
            if ch == "'":
                hint = " (JSON strings use double quotes)"
            elif ch == "N" or ch == "I":
                hint = " (NaN and Infinity are not JSON)"
            elif ch == ".":
                hint = " (a number needs a digit before the decimal point)"
        return JSONSyntaxError(f"expected {expected}, found {ch!r}{hint}", base + pos)

    def _eof_error(self) -> JSONSyntaxError:
        """The error for input that ends before its value is complete (at ``close()``)."""
        state = self._state
        stack = self._stack
        where = ""
        if stack:
            kind = "object" if stack[-1].is_obj else "array"
            where = f" inside an unclosed {kind} ({len(stack)} container(s) open)"
        if state == _VALUE and not stack:  # nothing but whitespace so far
            what = "empty input (no JSON value)"
        elif state == _STRING:
            what = "unterminated string" + (" (cut inside an escape)" if self._carry else "")
        elif state == _KEY_STRING:
            what = "unterminated object key"
        elif state == _LITERAL:
            what = f"incomplete literal {self._lit[: self._lit_i]!r} (expected {self._lit!r})"
        elif state == _NUMBER and self._nstate not in _N_ACCEPTING:
            what = f"incomplete number (expected {_N_NEEDS[self._nstate]})"
        else:
            what = "unclosed " + ("object" if stack[-1].is_obj else "array")
            where = f" ({len(stack)} container(s) open)"
        what += where
        return JSONSyntaxError(f"unexpected end of input: {what}", self._offset)

    # ------------------------------------------------------------------------- results

    def close(self) -> Any:
        """Finish the document and return its value, equal to ``json.loads`` of all input.

        Raises :class:`~toolwire.JSONSyntaxError` (with ``offset`` equal to the input
        length) when the input is empty or incomplete, or again the error that stopped the
        parser. May be called again; it returns the same value.
        """
        if self._error is not None:
            raise self._refusal()
        if self._state == _NUMBER and not self._stack and self._nstate in _N_ACCEPTING:
            try:
                self._finish_number(None)
            except JSONSyntaxError as exc:
                self._error = exc
                raise
        if self._state != _DONE:
            err = self._eof_error()
            self._error = err
            raise err
        return self._root_final

    def snapshot(self) -> Any:
        """The monotonic preview of the document so far, or :data:`MISSING`.

        Cached: O(1) when nothing changed since the last call; otherwise shallow copies of
        the open containers plus the open string's text. The result shares completed
        subtrees with other snapshots and with the final value: do not mutate it.
        """
        if self._snap_ok:
            return self._snap
        state = self._state
        child: Any
        if state == _DONE:
            child = self._root
        elif state == _STRING:
            child = self._string_text()
        else:
            child = MISSING
        for frame in reversed(self._stack):
            c = frame.container
            copy = c.copy()
            if child is not MISSING:
                if not frame.is_obj:
                    copy.append(child)
                elif frame.key not in c:  # a duplicate key keeps showing its first value
                    copy[frame.key] = child
            child = copy
        self._snap = child
        self._snap_ok = True
        return child


def parse_partial(
    text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_size: int = DEFAULT_MAX_SIZE
) -> Any:
    """The monotonic preview of ``text``, a prefix of a JSON document (or ``MISSING``).

    Equal to feeding ``text`` into a new :class:`PartialJSONParser` and taking
    :meth:`~PartialJSONParser.snapshot`; raises :class:`~toolwire.JSONSyntaxError` when
    ``text`` cannot begin a valid JSON document.
    """
    parser = PartialJSONParser(max_depth=max_depth, max_size=max_size)
    parser.feed(text)
    return parser.snapshot()
