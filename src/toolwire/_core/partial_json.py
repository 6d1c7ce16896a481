"""Incremental, strict JSON parsing with a monotonic preview.

:class:`PartialJSONParser` reads one document arriving in pieces: every character is
scanned once (``feed`` is amortised O(len)), invalid JSON raises at its first bad
character, ``close()`` equals ``json.loads``, and every snapshot is a prefix of every later
one and of the final value. Previews are read-only; one a caller keeps never changes.
"""

from __future__ import annotations

import enum
import json.decoder
import re
import sys
from collections.abc import Callable
from itertools import islice
from typing import Any, Final, Literal, cast

from .._errors import JSONDepthError, JSONDuplicateKeyError, JSONSizeError, JSONSyntaxError
from .events import JSONEvent, make_appended, make_completed, make_started
from .jsonpointer import format_pointer

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

# What the snapshot cache holds instead of a snapshot: _STALE once the structure changed
# since the last snapshot, _GROWN while only the open string grew (its fast path).
_STALE: Final[Any] = object()
_GROWN: Final[Any] = object()

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
_LOW_PREFIX = r"\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]?)?)?)?\Z"
_MATCH_LOW_PREFIX = re.compile(_LOW_PREFIX).match
# An escape that is valid so far but cut by the end of the input.
_ESCAPE_PREFIX = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?\Z")
# Everything that must wait for the next piece at the end of a string piece: an escape cut
# short, or a high surrogate whose partner may still follow (with that partner's beginning).
# The definition that _cut_length computes from the end (the tests compare the two).
_CUT = r"\\(?:u(?:[0-9a-fA-F]{0,3}|[dD][89abAB][0-9a-fA-F]{2}(?:" + _LOW_PREFIX[:-2] + r")?))?\Z"
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

# ------------------------------------------------------------------- a string piece's end
#
# A piece that continues a string is decoded whole by _scanstring, which also validates it;
# only what it ends with may have to wait for the next piece (``_CUT``): an escape cut short,
# or a high surrogate whose low partner may still follow, with that partner's beginning.
# That starts at a backslash among the last 6 characters (the partner's, or the high
# surrogate's own when it is complete), so the piece's end is classified from there, in O(1)
# whatever the piece's length: the characters from that backslash on (at most 6, and only
# from the shapes ``\``, ``\u``, ``\uX``... that _tail_hold reads) give the length to hold
# back, memoised in _TAIL_HOLDS; the backslashes before it tell an escape's start from the
# second half of ``\\``; and a possible low half is checked against the 6 characters before
# it.

_HEXDIGITS: Final = "0123456789abcdefABCDEF"
_match_high = _HIGH_SURROGATE.match
# tail -> what _tail_hold returns for it; bounded, since tails of invalid escapes land here too
_TAIL_HOLDS: dict[str, int] = {}
_TAIL_HOLDS_MAX: Final = 4096


def _tail_hold(tail: str) -> int:
    """How much of ``tail`` (a backslash that starts an escape, then at most 5 characters,
    the end of a string piece) must wait for the next piece: ``0`` (a complete escape that
    cannot pair, or an invalid one, which the decoder then rejects), ``d`` (an escape cut
    short, ``d`` characters; or 6 for a complete high surrogate) or ``-d`` (cut short and
    possibly the beginning of a low surrogate: the 6 characters before it are held back
    too when they are a high surrogate). Memoised in ``_TAIL_HOLDS``."""
    d = len(tail)
    if d == 1:
        hold = -1
    elif tail[1] != "u":
        hold = 0  # a two-character escape (plain characters may follow)
    elif d == 6:  # a complete \u escape: held back when it is a high surrogate
        hold = 6 if _match_high(tail) else 0
    elif tail[2:].lstrip(_HEXDIGITS):
        hold = 0  # not the beginning of a valid \u escape
    elif d == 2 or (tail[2] in "dD" and (d == 3 or tail[3] in "cdefCDEF")):
        hold = -d  # \u, \uD, \uDC, \uDCX: may be a low surrogate's beginning
    else:
        hold = d
    if len(_TAIL_HOLDS) < _TAIL_HOLDS_MAX:
        _TAIL_HOLDS[tail] = hold
    return hold


def _escape_starts_at(s: str, i: int) -> bool:
    """Whether the backslash at ``s[i]`` starts an escape (``s`` starts outside one): it does
    when an even number of backslashes precede it, since those pair up into ``\\``."""
    j = i
    while j and s[j - 1] == "\\":
        j -= 1
    return not (i - j) & 1


def _cut_length(s: str) -> int:
    """How many characters at the end of ``s`` (string content that starts outside an
    escape) must wait for the next piece: the length of ``_CUT``'s match at the end, found
    from the end in O(1) (amortised over the backslashes counted). An invalid escape is not
    held back: the decoder rejects the piece and the scanner reports the error.
    (``feed`` inlines this; it is kept whole here for reading and for the tests.)"""
    b = s.rfind("\\", -6)
    if b < 0:
        return 0
    hold = _TAIL_HOLDS.get(s[b:])
    if hold is None:
        hold = _tail_hold(s[b:])
    if not hold or (b and s[b - 1] == "\\" and not _escape_starts_at(s, b)):
        return 0
    if hold < 0:
        hold = -hold
        h = b - 6
        if h >= 0 and _match_high(s, h) and _escape_starts_at(s, h):
            hold += 6
    return hold


# ------------------------------------------------------------------ reusing preview objects
#
# A preview container or string may be updated in place for the next snapshot only when
# nothing outside the parser refers to it any more. CPython's reference count says so;
# _SOLE is the count sys.getrefcount reports for an object held by one local variable
# alone, measured here with the same call shape the snapshot code uses, so it follows
# whatever the interpreter version counts. Without reference counts (PyPy), every snapshot
# copies what changed, as if every preview were still held.

_refcount: Callable[[object], int] = getattr(sys, "getrefcount", lambda _obj: sys.maxsize)


def _sole_count() -> int:
    probe: list[Any] = []
    return _refcount(probe)


_SOLE: Final = _sole_count() if hasattr(sys, "getrefcount") else -1

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

_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
_LITERAL_START = {"t": "true", "f": "false", "n": "null"}
_NUMBER_START = frozenset("-0123456789")
_NUMBER_CHARS = frozenset("0123456789+-.eE")

_Kind = Literal["object", "array", "string", "number", "true", "false", "null"]
# A path link (see _events): () for the root, (parent_link, key) below it.
_Link = tuple[Any, ...]

# A snapshot copies an open container this small afresh rather than updating its last
# view: the copy costs less than the bookkeeping, and the bound stays O(1) per container.
_SMALL = 64

# Pieces of an open string are joined into one block every this many pieces, which bounds
# the per-piece overhead (a list slot and a str header per piece) to a small fraction.
_FOLD = 256


def _found(text: str, pos: int) -> str:
    """Describe the character at ``pos`` for an error message."""
    ch = text[pos]
    return f"found {ch!r}"


class _Frame:
    """One open container on the stack.

    ``container`` holds the completed members in preview form (first value of a duplicate
    key wins); ``final`` is ``None`` until the final form differs from it (a duplicate key
    inside), from then on it is maintained in parallel with ``json.loads`` semantics.
    ``link`` is the container's path link (events only); ``key`` the key of the member being
    read. ``view`` is the copy of ``container`` that the last snapshot showed (``None``
    before the first). Once the container has more than ``_SMALL`` members its view is
    updated rather than copied, and ``synced`` and ``vslot`` describe it: ``synced``
    completed members (-1: none counted yet) and, when ``vslot`` is not ``None``, one more
    entry for the open child (``True`` for an array, the key for an object).
    """

    __slots__ = ("container", "final", "is_obj", "key", "link", "synced", "view", "vslot")

    synced: int
    vslot: Any

    def __init__(self, is_obj: bool, container: Any, link: _Link) -> None:
        self.is_obj = is_obj
        self.container = container
        self.final: Any = None
        self.link = link
        self.key = ""
        self.view: Any = None
        self.synced = -1  # no view of this container counts its members yet


class PartialJSONParser:
    """Incremental strict JSON parser with a monotonic preview (see the module docstring).

    Feed text with :meth:`feed` (returns the JSON events it caused), read the preview with
    :meth:`snapshot`, and finish with :meth:`close`, which returns the value ``json.loads``
    would return for the whole input or raises :class:`~toolwire.JSONSyntaxError`.

    ``events=False`` builds no events at all (``feed`` returns the empty tuple ``()``), for
    callers that only read :meth:`snapshot`; everything else (errors, offsets, limits,
    ``complete``, previews, ``close()``) is identical. ``max_depth`` bounds the nesting of
    containers (:class:`~toolwire.JSONDepthError`); ``max_size`` bounds the number of
    characters fed (:class:`~toolwire.JSONSizeError`). ``reject_duplicates=True`` makes an
    object key that its object already has an error (:class:`~toolwire.JSONDuplicateKeyError`)
    instead of following ``json.loads`` (the last value wins).
    """

    __slots__ = (
        "_carry",
        "_emit",
        "_error",
        "_keys",
        "_kpieces",
        "_kstart",
        "_lit",
        "_lit_i",
        "_llink",
        "_max_depth",
        "_max_size",
        "_nlink",
        "_nparts",
        "_nstart",
        "_nstate",
        "_offset",
        "_root",
        "_root_final",
        "_sblocks",
        "_slink",
        "_snap",
        "_spieces",
        "_stack",
        "_state",
        "_stext",
        "_unique",
    )

    def __init__(
        self,
        *,
        events: bool = True,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_size: int = DEFAULT_MAX_SIZE,
        reject_duplicates: bool = False,
    ) -> None:
        if not isinstance(events, bool):
            raise TypeError(f"events must be True or False, got {events!r}")
        if not isinstance(reject_duplicates, bool):
            raise TypeError(f"reject_duplicates must be True or False, got {reject_duplicates!r}")
        if not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be a positive int, got {max_depth!r}")
        if not isinstance(max_size, int) or max_size < 1:
            raise ValueError(f"max_size must be a positive int, got {max_size!r}")
        self._emit = events
        self._unique = reject_duplicates
        self._max_depth = max_depth
        self._max_size = max_size
        self._state = _VALUE
        self._stack: list[_Frame] = []
        self._offset = 0
        self._carry = ""
        self._error: JSONSyntaxError | None = None
        # the open string value: its link, and its decoded text so far in three parts, in
        # order: _stext (consolidated, what the last snapshot showed), then _sblocks (joined
        # pieces), then _spieces (pieces as fed)
        self._slink: _Link = ()
        self._stext = ""
        self._sblocks: list[str] = []
        self._spieces: list[str] = []
        self._kpieces: list[str] = []
        self._kstart = 0  # where the open object key's opening quote is
        self._keys: dict[str, str] = {}
        # the open number
        self._nstate = _N_START
        self._nparts: list[str] = []
        self._nstart = 0
        self._nlink: _Link = ()
        # the open literal
        self._lit = ""
        self._lit_i = 0
        self._llink: _Link = ()
        # the finished top-level value: preview form and json.loads form
        self._root: Any = MISSING
        self._root_final: Any = MISSING
        self._snap: Any = MISSING

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
    def emits_events(self) -> bool:
        """Whether :meth:`feed` returns JSON events (the ``events`` argument)."""
        return self._emit

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

        Returns ``()`` when the parser was made with ``events=False``. Raises
        :class:`~toolwire.JSONSyntaxError` (or its depth / size subclasses) at the first
        character that cannot continue valid JSON, and again on every later call.
        """
        if not text:
            if not isinstance(text, str):
                raise TypeError(f"feed() takes str, not {type(text).__name__}")
            return ()
        if self._error is not None:
            raise self._refusal()
        # Fast path: the piece continues a string value (the common case for long
        # arguments). Plain text is checked without a regex when it is printable; a piece
        # with escapes, or the rest of an escape cut by the previous piece, is matched by
        # one regex (what can be decoded now, and an escape cut by the end of the piece)
        # and decoded by json's C decoder. Anything else (the closing quote, an error, a
        # lone surrogate, the size limit) goes to the scanner, from the same state.
        if self._state == _STRING and isinstance(text, str):
            carry = self._carry
            piece: str | None = None
            if not carry and "\\" not in text:
                if (
                    '"' not in text
                    and (text.isprintable() or _match_plain(text, 0).end() == len(text))
                    and self._offset + len(text) <= self._max_size
                ):
                    piece = text
            elif self._offset + len(text) <= self._max_size:
                whole = carry + text if carry else text
                # _cut_length(whole), inlined: k is where what must wait begins
                k = len(whole)
                b = whole.rfind("\\", -6)
                if b >= 0:
                    hold = _TAIL_HOLDS.get(whole[b:])
                    if hold is None:
                        hold = _tail_hold(whole[b:])
                    if hold and (not b or whole[b - 1] != "\\" or _escape_starts_at(whole, b)):
                        if hold > 0:
                            k -= hold
                        else:  # whole[b:] may begin a low surrogate: a high one before waits too
                            k = b
                            h = b - 6
                            if (
                                h >= 0
                                and whole[h + 2] in "dD"
                                and _match_high(whole, h)
                                and (not h or whole[h - 1] != "\\" or _escape_starts_at(whole, h))
                            ):
                                k = h
                if not k:  # nothing decodable yet: all of it waits for the next piece
                    self._carry = whole
                    self._offset += len(text)
                    return ()
                try:
                    decoded, end = _scanstring(whole[:k] + '"', 0)
                except ValueError:  # an invalid escape or control character: the scanner
                    pass  # reports it, at its offset
                else:
                    if end > k:  # no closing quote inside the piece
                        piece = decoded
                        self._carry = whole[k:]
            if piece is not None:
                self._offset += len(text)
                pieces = self._spieces
                pieces.append(piece)
                if len(pieces) >= _FOLD:
                    self._sblocks.append("".join(pieces))
                    pieces.clear()
                if self._snap is not _STALE:
                    self._snap = _GROWN
                if self._emit:
                    return (make_appended(self._slink, piece),)
                return ()
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
        return tuple(events) if events else ()

    def feed_string(self, text: str) -> str | None:
        """Feed ``text`` if it only continues the open string value; return what it appends.

        For a caller that follows the document through its own state (a typed preview): if
        the parser is inside a string value and ``text`` neither ends it nor breaks it (no
        closing quote, no invalid escape or control character, within ``max_size``), it is
        consumed exactly as :meth:`feed` would consume it and the decoded text it appends
        is returned (``""`` when it ends inside an escape); no event is built. Otherwise
        nothing is consumed and ``None`` is returned: feed it with :meth:`feed`. The same
        fast path as ``feed``'s, kept apart so that ``feed`` pays no extra call.
        """
        if self._state != _STRING or self._error is not None or not text:
            return None
        carry = self._carry
        if "\\" not in text and not carry:
            if (
                '"' not in text
                and (text.isprintable() or _match_plain(text, 0).end() == len(text))
                and self._offset + len(text) <= self._max_size
            ):
                piece = text
            else:
                return None
        elif self._offset + len(text) <= self._max_size:
            whole = carry + text if carry else text
            k = len(whole) - _cut_length(whole)  # what must wait for the next piece starts at k
            if not k:
                self._carry = whole
                self._offset += len(text)
                return ""
            try:
                decoded, end = _scanstring(whole[:k] + '"', 0)
            except ValueError:  # an invalid escape or control character: feed() reports it
                return None
            if end <= k:  # a closing quote inside the piece: feed() ends the string
                return None
            piece = decoded
            self._carry = whole[k:]
        else:
            return None
        self._offset += len(text)
        pieces = self._spieces
        pieces.append(piece)
        if len(pieces) >= _FOLD:
            self._sblocks.append("".join(pieces))
            pieces.clear()
        if self._snap is not _STALE:
            self._snap = _GROWN
        return piece

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
        msg = f"{err.msg} (the parser stopped at this error)"
        if isinstance(err, JSONDuplicateKeyError):
            return JSONDuplicateKeyError(msg, err.offset, err.path)
        return type(err)(msg, err.offset)

    # --------------------------------------------------------------------------- scanning

    def _scan(self, text: str, ev: list[JSONEvent]) -> None:
        # The hot transitions (whitespace, punctuation, containers, plain keys with their
        # colon, plain strings, delimited numbers, whole literals) are inlined with the
        # state in a local variable; rarer work (escapes, split numbers and literals,
        # errors) goes through helpers, which read and write self._state, so the local is
        # synchronised around each helper call. Events and their path links are built only
        # when ``emit``.
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
        emit = self._emit
        unique = self._unique
        state = self._state
        path: _Link = ()
        try:
            while pos < n:
                if state >= _STRING:  # inside a token, or after the top-level value
                    if state == _STRING:
                        end = _match_plain(text, pos).end()
                        if end == n or text[end] == '"':  # no escape: no decoding needed
                            pieces = self._spieces
                            if end > pos:
                                piece = text[pos:end]
                                pieces.append(piece)
                                if emit:
                                    append(make_appended(self._slink, piece))
                                if self._snap is not _STALE:
                                    self._snap = _GROWN
                            if end == n:
                                break
                            if len(pieces) == 1 and not self._sblocks and not self._stext:
                                value = pieces.pop()  # the whole string in one piece
                            else:
                                value = self._take_text()
                            if emit:
                                append(make_completed(self._slink, value))
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
                            if unique and key in top.container:
                                raise self._duplicate(key, self._kstart)
                            top.key = self._keys.setdefault(key, key)
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
                            if unique and key in top.container:
                                raise self._duplicate(key, base + m.start(1) - 1)
                            top.key = self._keys.setdefault(key, key)
                            state = _VALUE
                            pos = m.end()
                            continue
                        state = _ELEM
                        pos += 1
                        continue
                    if ch == ("}" if top.is_obj else "]"):
                        state = self._close_container(append if emit else None)
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
                            self._kstart = base + pos
                            state = _KEY_STRING
                            pos += 1
                            continue
                        key = m.group(1)
                        top = stack[-1]
                        if unique and key in top.container:
                            raise self._duplicate(key, base + pos)
                        # one str per distinct key, as json.loads does: arrays of records
                        # cost the memory of their distinct keys once
                        top.key = self._keys.setdefault(key, key)
                        state = _VALUE
                        pos = m.end()
                        continue
                    if ch == "}" and state == _OBJ_FIRST:
                        state = self._close_container(append if emit else None)
                        pos += 1
                        continue
                    raise self._unexpected(state, text, pos, base)
                # _VALUE, _ELEM, _ARR_FIRST: a value starts here
                if ch == "]" and state == _ARR_FIRST:
                    state = self._close_container(append if emit else None)
                    pos += 1
                    continue
                if emit and stack:
                    top = stack[-1]
                    path = (top.link, top.key if top.is_obj else len(top.container))
                if ch == '"':
                    pos += 1
                    end = _match_plain(text, pos).end()
                    if end < n and text[end] == '"':  # a plain string, whole: complete it
                        value = text[pos:end]
                        if emit:
                            append(make_started(path, "string"))
                            if value:
                                append(make_appended(path, value))
                            append(make_completed(path, value))
                        state = self._attach(value, value)
                        pos = end + 1
                        continue
                    self._slink = path
                    self._snap = _STALE  # the key shows up now, with ""
                    if emit:
                        append(make_started(path, "string"))
                    state = _STRING
                    if end > pos:
                        piece = text[pos:end]
                        self._spieces.append(piece)
                        if emit:
                            append(make_appended(path, piece))
                        pos = end
                    if end < n:  # an escape (or an invalid character) follows
                        self._state = state
                        pos = self._scan_string(text, pos, base, ev)
                        state = self._state
                    continue
                if ch == "{" or ch == "[":
                    if len(stack) >= self._max_depth:
                        raise JSONDepthError(
                            f"containers nest deeper than max_depth={self._max_depth}",
                            base + pos,
                        )
                    if ch == "{":
                        stack.append(_Frame(True, {}, path))
                        if emit:
                            append(make_started(path, "object"))
                        state = _OBJ_FIRST
                    else:
                        stack.append(_Frame(False, [], path))
                        if emit:
                            append(make_started(path, "array"))
                        state = _ARR_FIRST
                    self._snap = _STALE
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
                            if emit:
                                append(make_started(path, "number"))
                                append(make_completed(path, number))
                            state = self._attach(number, number)
                            pos = end
                            continue
                else:
                    word = _LITERAL_START.get(ch)
                    if word is not None and text.startswith(word, pos):
                        literal = _LITERALS[word]
                        if emit:
                            append(make_started(path, cast(_Kind, word)))
                            append(make_completed(path, literal))
                        state = self._attach(literal, literal)
                        pos += len(word)
                        continue
                self._state = state
                pos = self._start_scalar(path, text, pos, base, ev)
                state = self._state
        finally:
            self._state = state

    def _start_scalar(
        self, path: _Link, text: str, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """Start a number or a literal at ``pos`` (or raise: no value starts there)."""
        ch = text[pos]
        if ch in _NUMBER_START:
            self._nlink = path
            self._nstate = _N_START
            self._nparts = []
            self._nstart = base + pos
            self._state = _NUMBER
            if self._emit:
                ev.append(make_started(path, "number"))
            return pos  # the number scanner reads the first character itself
        word = _LITERAL_START.get(ch)
        if word is None:
            raise self._unexpected(self._state, text, pos, base)
        self._llink = path
        self._lit = word
        self._lit_i = 1
        self._state = _LITERAL
        if self._emit:
            ev.append(make_started(path, cast(_Kind, word)))
        return pos + 1

    def _scan_string(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        is_key = self._state == _KEY_STRING
        pieces = self._kpieces if is_key else self._spieces
        emit = self._emit and not is_key
        n = len(text)
        try:
            while True:
                end = _match_segment(text, pos).end()
                if end > pos:
                    seg = text[pos:end]
                    piece = _scanstring(seg + '"', 0)[0] if "\\" in seg else seg
                    pieces.append(piece)
                    if not is_key:
                        if self._snap is not _STALE:
                            self._snap = _GROWN
                        if emit:
                            ev.append(make_appended(self._slink, piece))
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
                    if after == n or _MATCH_LOW_PREFIX(text, after):
                        # A low-surrogate escape may still follow: hold the high half back.
                        self._carry = text[end:]
                        return n
                    # Anything else follows: a lone surrogate, as json.loads decodes it.
                    piece = chr(int(text[end + 2 : after], 16))
                    pieces.append(piece)
                    if not is_key:
                        if self._snap is not _STALE:
                            self._snap = _GROWN
                        if emit:
                            ev.append(make_appended(self._slink, piece))
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
        finally:
            if not is_key and len(pieces) >= _FOLD:
                self._sblocks.append("".join(pieces))
                pieces.clear()

    def _leaf_text(self) -> str:
        """The open string value's decoded text so far.

        Folds the pending blocks and pieces into ``_stext`` with ``+=`` while no other
        reference of the parser's holds it, so CPython extends the string in place
        (amortised O(new text)) whenever no earlier preview still refers to it; otherwise
        ``+=`` copies, and the preview that holds the old text keeps it unchanged.
        """
        pieces = self._spieces
        blocks = self._sblocks
        if pieces:
            more = pieces[0] if len(pieces) == 1 else "".join(pieces)
            pieces.clear()
            if blocks:
                blocks.append(more)
                more = "".join(blocks)
                blocks.clear()
        elif blocks:
            more = blocks[0] if len(blocks) == 1 else "".join(blocks)
            blocks.clear()
        else:
            return self._stext
        text = self._stext
        self._stext = ""
        text += more
        self._stext = text
        return text

    def _take_text(self) -> str:
        """The open string value's whole text, at its closing quote (resets the builder)."""
        text = self._leaf_text()
        self._stext = ""
        return text

    def _finish_string(self, is_key: bool, ev: list[JSONEvent]) -> None:
        if is_key:
            pieces = self._kpieces
            key = pieces[0] if len(pieces) == 1 else "".join(pieces)
            pieces.clear()
            top = self._stack[-1]
            if self._unique and key in top.container:
                raise self._duplicate(key, self._kstart)
            top.key = self._keys.setdefault(key, key)
            self._state = _COLON
            return
        value = self._take_text()
        if self._emit:
            ev.append(make_completed(self._slink, value))
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
        if ev is not None and self._emit:
            ev.append(make_completed(self._nlink, value))
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
            if self._emit:
                ev.append(make_completed(self._llink, value))
            self._attach(value, value)
        return pos + k

    # ------------------------------------------------------------------- tree building

    def _close_container(self, append: Callable[[JSONEvent], None] | None) -> int:
        frame = self._stack.pop()
        value = frame.container
        final = value if frame.final is None else frame.final
        if append is not None:
            append(make_completed(frame.link, final))
        return self._attach(value, final)

    def _attach(self, value: Any, final: Any) -> int:
        """Put a completed value (preview form, json.loads form) into its parent; return
        (and set) the new state."""
        self._snap = _STALE
        stack = self._stack
        if not stack:
            self._root = value
            self._root_final = final
            self._state = _DONE
            self._keys.clear()  # only whitespace may follow: no key will be read again
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

    def _duplicate(self, key: str, offset: int) -> JSONDuplicateKeyError:
        """The error for ``key``, read whole at ``offset``, that the innermost open object
        already has (``reject_duplicates``): O(depth), once."""
        stack = self._stack
        path = (*(f.key if f.is_obj else len(f.container) for f in stack[:-1]), key)
        return JSONDuplicateKeyError(
            f"duplicate key {key!r} at {format_pointer(path)} "
            "(each key may appear only once in an object)",
            offset,
            path,
        )

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

        Cached: the same object while no input changed it. Otherwise amortised O(what
        changed since the last snapshot + depth) when no earlier preview is still held,
        and O(open containers' entries + open string) when one is (see the module
        docstring). Previews share completed subtrees with each other and with the final
        value, and the parser may reuse a preview object once nothing refers to it: treat
        previews as read-only.
        """
        snap = self._snap
        if snap is _GROWN:
            snap = self._grown()
            self._snap = snap
            return snap
        if snap is not _STALE:
            return snap
        state = self._state
        if state == _DONE:
            snap = self._root
        elif self._stack:
            snap = self._views()
        elif state == _STRING:
            snap = self._leaf_text()
        else:
            snap = MISSING
        self._snap = snap
        return snap

    def _grown(self) -> Any:
        """The snapshot when only the open string grew since the last one: if every view
        on the path is still the parser's alone, put the longer text in the innermost
        view's entry (O(new text + depth)); else the general way."""
        stack = self._stack
        if not stack:
            return self._leaf_text()
        limit = _SOLE + 1  # the local and frame.view; below the root the parent's entry too
        for frame in stack:
            view = frame.view
            if view is None or _refcount(view) > limit:
                return self._views()
            limit = _SOLE + 2
        slot: str | int = -1
        if frame.is_obj:
            slot = frame.key
            if slot in frame.container:  # a duplicate key's value: not shown
                return self._views()
        view[slot] = None  # let go of the old text, so that += can extend it in place
        pieces = self._spieces
        if len(pieces) == 1 and not self._sblocks:  # _leaf_text's common case, inlined
            text = self._stext
            self._stext = ""
            text += pieces.pop()
            self._stext = text
        else:
            text = self._leaf_text()
        view[slot] = text
        return stack[0].view

    def _views(self) -> Any:
        """Bring the open containers' previews up to date; return the root's.

        One pass from the root down. A small container's view is a fresh copy (cheaper
        than any bookkeeping). A larger one's view is reused when nothing but its frame
        refers to it (its parent, settled just before, has let go of it): it gets the
        members completed since the last snapshot, and its open child's entry is freed,
        so that the child's view in turn counts no reference of the parser's but its
        frame's; otherwise it is replaced by a fresh copy. Each view then goes in its
        parent's entry; the open string, if shown, goes in last.
        """
        stack = self._stack
        parent: _Frame | None = None
        pview: Any = None
        pbig = False
        for frame in stack:
            c = frame.container
            n = len(c)
            big = n > _SMALL
            if not big:
                view = c.copy()
            else:
                view = frame.view
                frame.view = None
                if view is None or frame.synced < 0 or _refcount(view) > _SOLE:
                    view = c.copy()  # the first view since it grew, or somebody holds it
                    frame.synced = n
                    frame.vslot = None
                else:
                    synced = frame.synced
                    slot = frame.vslot
                    if frame.is_obj:
                        if n > synced:  # the open child completed: it is a new member
                            items = list(islice(reversed(c.items()), n - synced))
                            items.reverse()
                            view.update(items)
                            frame.synced = n
                            frame.vslot = None
                        elif slot is not None:
                            view[slot] = None  # let go of the open child's old preview
                    else:
                        if slot is not None:
                            del view[synced:]
                            frame.vslot = None
                        if n > synced:
                            view += c[synced:]
                            frame.synced = n
            frame.view = view
            if parent is not None:  # put this view in its parent's (now free) entry
                if parent.is_obj:
                    pview[parent.key] = view
                    if pbig:
                        parent.vslot = parent.key
                else:
                    pview.append(view)
                    if pbig:
                        parent.vslot = True
            if frame.is_obj and frame.key in c:
                break  # a duplicate key: its value (and everything below) is hidden
            parent, pview, pbig = frame, view, big
        else:  # the deepest container is shown: and its open string, if any
            assert parent is not None
            if self._state == _STRING:
                if parent.is_obj:
                    pview[parent.key] = self._leaf_text()
                    if pbig:
                        parent.vslot = parent.key
                else:
                    pview.append(self._leaf_text())
                    if pbig:
                        parent.vslot = True
            elif pbig and parent.vslot is not None:  # a child no longer there (errors)
                if parent.is_obj:
                    del pview[parent.vslot]
                else:
                    del pview[parent.synced :]
                parent.vslot = None
        return stack[0].view

    def _final_preview(self) -> Any:
        """The preview, built into the parser's own containers (no copies): for a parser
        that is thrown away right after (``parse_partial``), never fed again."""
        state = self._state
        if state == _DONE:
            return self._root
        child: Any = self._leaf_text() if state == _STRING else MISSING
        for frame in reversed(self._stack):
            c = frame.container
            if child is not MISSING:
                if not frame.is_obj:
                    c.append(child)
                elif frame.key not in c:  # a duplicate key keeps showing its first value
                    c[frame.key] = child
            child = c
        self._error = JSONSyntaxError("parse_partial's parser is spent", self._offset)
        return child


def snapshot_outdated(parser: PartialJSONParser) -> bool:
    """Whether ``parser.snapshot()`` would build a new preview: input changed the document
    since the snapshot was last built (or none was ever built). O(1), no work done.

    The signal the snapshot cache keeps anyway: it is set where the structure changes or
    the open string grows, which also happens when a string or container closes without
    changing what the preview shows. ``StreamAssembler`` reads it for
    ``ToolCallArguments.preview_changed`` when its parsers emit no JSON events.
    """
    snap = parser._snap
    return snap is _STALE or snap is _GROWN


def parse_partial(
    text: str, *, max_depth: int = DEFAULT_MAX_DEPTH, max_size: int = DEFAULT_MAX_SIZE
) -> Any:
    """The monotonic preview of ``text``, a prefix of a JSON document (or ``MISSING``).

    Equal to feeding ``text`` into a new :class:`PartialJSONParser` and taking
    :meth:`~PartialJSONParser.snapshot`; raises :class:`~toolwire.JSONSyntaxError` when
    ``text`` cannot begin a valid JSON document. Builds no events and copies nothing, so
    its peak memory is the value's plus O(depth).
    """
    parser = PartialJSONParser(events=False, max_depth=max_depth, max_size=max_size)
    parser.feed(text)
    return parser._final_preview()
