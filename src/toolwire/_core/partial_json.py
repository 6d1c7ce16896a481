"""Incremental, strict JSON parsing with a monotonic preview.

:class:`PartialJSONParser` reads one document arriving in pieces: every character is
scanned once (``feed`` is amortised O(len)), invalid JSON raises at its first bad
character, ``close()`` equals ``json.loads``, and every snapshot is a prefix of every later
one and of the final value. A preview is live: the open containers are their own
previews, so one a caller keeps only grows with later input (copy it to keep it as it is).
"""

from __future__ import annotations

import enum
import json.decoder
import re
from collections.abc import Callable
from typing import Any, Final, Literal, cast

from .._errors import JSONDepthError, JSONDuplicateKeyError, JSONSizeError, JSONSyntaxError
from .events import JSONEvent, StringAppended, ValueCompleted, ValueStarted
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
# Shortcuts for the common shapes: a whole plain key with its colon (and the whitespace
# after it), the same after a comma, a comma in an array with the whitespace after it, a
# whole number (its delimiter is checked by the caller).
_match_key = re.compile(f'"({_STR_CHAR}*)"[ \\t\\n\\r]*:[ \\t\\n\\r]*').match
_match_comma_key = re.compile(f',[ \\t\\n\\r]*"({_STR_CHAR}*)"[ \\t\\n\\r]*:[ \\t\\n\\r]*').match
_match_comma = cast(_MatchAt, re.compile(r",[ \t\n\r]*").match)
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
    held back: the decoder rejects the piece and the scanner reports the error."""
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

# Number sub-states: a small DFA whose transitions are _N_STEP[(state, character class)];
# digit runs are consumed by _DIGITS in one step.
_N_START, _N_MINUS, _N_ZERO, _N_INT, _N_DOT, _N_FRAC, _N_E, _N_ESIGN, _N_EXP = range(9)
_N_ACCEPTING = frozenset({_N_ZERO, _N_INT, _N_FRAC, _N_EXP})
_N_RUNS = frozenset({_N_INT, _N_FRAC, _N_EXP})  # states in a run of digits
_N_NEEDS = {
    _N_START: "a digit",
    _N_MINUS: "a digit after '-'",
    _N_DOT: "a digit after the decimal point",
    _N_E: "a digit or a sign in the exponent",
    _N_ESIGN: "a digit in the exponent",
}
# the characters a number may hold, by class: "0", "1" (any other digit), ".", "e", "-", "+"
_N_CLASS = {
    **dict.fromkeys("123456789", "1"),
    **{"0": "0", ".": ".", "e": "e", "E": "e", "-": "-", "+": "+"},
}
_N_STEP: Final = {
    (_N_START, "-"): _N_MINUS,
    **{(s, "0"): _N_ZERO for s in (_N_START, _N_MINUS)},
    **{(s, "1"): _N_INT for s in (_N_START, _N_MINUS)},
    **{(s, "."): _N_DOT for s in (_N_ZERO, _N_INT)},
    **{(s, "e"): _N_E for s in (_N_ZERO, _N_INT, _N_FRAC)},
    **{(s, d): _N_FRAC for s in (_N_DOT, _N_FRAC) for d in "01"},
    **{(s, d): _N_EXP for s in (_N_E, _N_ESIGN, _N_EXP) for d in "01"},
    **{(_N_E, sign): _N_ESIGN for sign in "-+"},
    **{(_N_INT, d): _N_INT for d in "01"},
}

_LITERALS: Final[dict[str, Any]] = {"true": True, "false": False, "null": None}
_LITERAL_START = {"t": "true", "f": "false", "n": "null"}
_NUMBER_START = frozenset("-0123456789")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_WHITESPACE = " \t\n\r"

# What each structural state expects, for error messages (_AFTER and _VALUE depend on where).
_EXPECTED = {
    _COLON: "':' after an object key",
    _OBJ_FIRST: "'\"' to start an object key or '}'",
    _KEY: "'\"' to start an object key",
    _DONE: "only whitespace after the complete top-level value",
    _ARR_FIRST: "a value or ']'",
    _ELEM: "a value after ','",
}

_Kind = Literal["object", "array", "string", "number", "true", "false", "null"]
# A path link (see _events): () for the root, (parent_link, key) below it.
_Link = tuple[Any, ...]

# Pieces of an open string are joined into one block every this many pieces, which bounds
# the per-piece overhead (a list slot and a str header per piece) to a small fraction.
_FOLD = 256


def _found(text: str, pos: int) -> str:
    """Describe the character at ``pos`` for an error message."""
    ch = text[pos]
    return f"found {ch!r}"


def _hint(state: int, ch: str) -> str:
    """What an error message adds when ``ch`` does not fit ``state``: the likely mistake."""
    if state in (_OBJ_FIRST, _KEY):
        if state == _KEY and ch == "}":
            return " (trailing commas are not allowed)"
        if ch == "'":
            return " (JSON strings use double quotes)"
        if ch.isalpha() or ch == "_":
            return " (object keys must be double-quoted strings)"
        return ""
    if state in (_AFTER, _COLON, _DONE):
        return ""
    if state == _ELEM and ch == "]":
        return " (trailing commas are not allowed)"
    if ch == "'":
        return " (JSON strings use double quotes)"
    if ch == "N" or ch == "I":
        return " (NaN and Infinity are not JSON)"
    if ch == ".":
        return " (a number needs a digit before the decimal point)"
    return ""


class _Frame:
    """One open container on the stack.

    ``container`` is the container as the preview shows it: its completed members (first
    value of a duplicate key wins) and, when ``shown``, the member being read (an open
    container or string, put in at its start; its text is brought up to date by
    ``snapshot``). ``final`` is ``None`` until the final form differs from it (a duplicate
    key inside), from then on it is maintained in parallel with ``json.loads`` semantics.
    ``link`` is the container's path link (events only); ``key`` the key of the member
    being read.
    """

    __slots__ = ("container", "final", "is_obj", "key", "link", "shown")

    def __init__(self, is_obj: bool, container: Any, link: _Link) -> None:
        self.is_obj = is_obj
        self.container = container
        self.final: Any = None
        self.link = link
        self.key = ""
        self.shown = False

    def index(self) -> int:
        """The index of the element being read (an array's frame)."""
        return len(self.container) - 1 if self.shown else len(self.container)


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
        "_outdated",
        "_root",
        "_root_final",
        "_sblocks",
        "_slink",
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
        self._outdated = False  # input changed the document since the last snapshot

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

    # --------------------------------------------------------------------------- feeding

    def feed(self, text: str) -> tuple[JSONEvent, ...]:
        """Consume the next piece of the document; return the JSON events it completed.

        Returns ``()`` when the parser was made with ``events=False``. Raises
        :class:`~toolwire.JSONSyntaxError` (or its depth / size subclasses) at the first
        character that cannot continue valid JSON, and again on every later call.
        """
        if not isinstance(text, str):
            raise TypeError(f"feed() takes str, not {type(text).__name__}")
        if not text:
            return ()
        if self._error is not None:
            raise self._refusal()
        if self._state == _STRING:  # the common case for long arguments
            piece = self._continue_string(text)
            if piece is not None:
                if piece and self._emit:
                    return (StringAppended(self._slink, piece),)
                return ()
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
        nothing is consumed and ``None`` is returned: feed it with :meth:`feed`.
        """
        if self._state != _STRING or self._error is not None or not text:
            return None
        return self._continue_string(text)

    def _continue_string(self, text: str) -> str | None:
        """The fast path of a piece that continues the open string value: consume it and
        return the decoded text it appends (``""`` when all of it must wait for the next
        piece), or ``None``, consuming nothing, when the scanner must read it (it ends the
        string, holds an invalid escape or control character, or passes ``max_size``).

        Plain printable text is checked with ``in`` and ``isprintable``; a piece with
        escapes (or the rest of an escape the previous piece cut) is decoded whole by json's
        C decoder, after what it ends with that must wait was found by ``_cut_length``.
        """
        if self._offset + len(text) > self._max_size:
            return None
        carry = self._carry
        if not carry and "\\" not in text:
            if '"' in text or not (text.isprintable() or _match_plain(text, 0).end() == len(text)):
                return None
            piece = text
        else:
            whole = carry + text if carry else text
            k = len(whole) - _cut_length(whole)  # what must wait for the next piece starts at k
            if not k:
                self._carry = whole
                self._offset += len(text)
                return ""
            try:
                piece, end = _scanstring(whole[:k] + '"', 0)
            except ValueError:  # an invalid escape or control character: the scanner
                return None  # reports it, at its offset
            if end <= k:  # a closing quote inside the piece: the scanner ends the string
                return None
            self._carry = whole[k:]
        self._offset += len(text)
        pieces = self._spieces  # _add_piece, inlined: this runs once per fragment
        pieces.append(piece)
        if len(pieces) >= _FOLD:
            self._sblocks.append("".join(pieces))
            pieces.clear()
        self._outdated = True
        return piece

    def _add_piece(self, piece: str) -> None:
        """Append decoded text to the open string value."""
        pieces = self._spieces
        pieces.append(piece)
        if len(pieces) >= _FOLD:
            self._sblocks.append("".join(pieces))
            pieces.clear()
        self._outdated = True

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
    #
    # _scan hands the text to the scanner of the current state, _SCANNERS[state], until
    # it is consumed. Each scanner reads from ``pos``, sets the next state and returns
    # where it stopped: a structural one reads one token (whitespace before it included),
    # a token's one reads as far as the token goes. Common shapes are read in one step (a
    # plain key with its colon, after its comma; a number with its delimiter in sight; a
    # whole literal; a whole plain string). ``base`` is the offset of ``text[0]`` in the
    # whole input; events go to ``ev`` (built only when the parser emits them).

    def _scan(self, text: str, ev: list[JSONEvent]) -> None:
        carry = self._carry
        base = self._offset - len(carry)
        self._offset += len(text)
        if carry:
            text = carry + text
            self._carry = ""
        n = len(text)
        pos = 0
        scanners = _SCANNERS
        while pos < n:
            pos = scanners[self._state](self, text, pos, base, ev)

    def _scan_value(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """A value (or, after ``[``, the ``]`` of an empty array) starts at ``pos``."""
        ch = text[pos]
        if ch in _WHITESPACE:
            pos = _match_ws(text, pos).end()
            if pos == len(text):
                return pos
            ch = text[pos]
        if ch == "]" and self._state == _ARR_FIRST:
            self._close_container(ev)
            return pos + 1
        path: _Link = ()  # the value's path link, when events are built
        stack = self._stack
        if self._emit and stack:
            top = stack[-1]
            path = (top.link, top.key if top.is_obj else len(top.container))
        if ch == '"':
            return self._start_string(path, text, pos + 1, base, ev)
        if ch == "{" or ch == "[":
            return self._open_container(ch == "{", path, pos, base, ev)
        if ch in _NUMBER_START:
            return self._start_number(path, text, pos, base, ev)
        return self._start_literal(path, text, pos, base, ev)

    def _scan_key(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """An object key (or, after ``{``, the ``}`` of an empty object) starts at ``pos``."""
        ch = text[pos]
        if ch in _WHITESPACE:
            pos = _match_ws(text, pos).end()
            if pos == len(text):
                return pos
            ch = text[pos]
        if ch == '"':
            m = _match_key(text, pos)
            if m is None:  # the key is cut by the end of the piece, or holds an escape
                self._kstart = base + pos
                self._state = _KEY_STRING
                return pos + 1
            self._set_key(m.group(1), base + pos)
            self._state = _VALUE
            return m.end()
        if ch == "}" and self._state == _OBJ_FIRST:
            self._close_container(ev)
            return pos + 1
        raise self._unexpected(text, pos, base)

    def _scan_colon(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """The ``:`` after an object key."""
        ch = text[pos]
        if ch in _WHITESPACE:
            return _match_ws(text, pos).end()
        if ch != ":":
            raise self._unexpected(text, pos, base)
        self._state = _VALUE
        return pos + 1

    def _scan_after(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """After a member or element: ``,`` (with the next plain key in one step), or the
        closing bracket."""
        ch = text[pos]
        if ch in _WHITESPACE:
            pos = _match_ws(text, pos).end()
            if pos == len(text):
                return pos
            ch = text[pos]
        top = self._stack[-1]
        if ch == ",":
            if not top.is_obj:
                self._state = _ELEM
                return _match_comma(text, pos).end()
            m = _match_comma_key(text, pos)
            if m is None:
                self._state = _KEY
                return pos + 1
            self._set_key(m.group(1), base + m.start(1) - 1)
            self._state = _VALUE
            return m.end()
        if ch != ("}" if top.is_obj else "]"):
            raise self._unexpected(text, pos, base)
        self._close_container(ev)
        return pos + 1

    def _scan_done(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """After the top-level value: only whitespace."""
        if text[pos] not in _WHITESPACE:
            raise self._unexpected(text, pos, base)
        return _match_ws(text, pos).end()

    def _scan_string_value(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """Inside a string value: a plain run up to the closing quote or the end of the
        piece is taken as it is; anything else goes through ``_scan_string``."""
        end = _match_plain(text, pos).end()
        n = len(text)
        if end < n and text[end] != '"':  # an escape (or an invalid character)
            return self._scan_string(text, pos, base, ev)
        if end > pos:
            piece = text[pos:end]
            self._add_piece(piece)
            if self._emit:
                ev.append(StringAppended(self._slink, piece))
        if end == n:
            return n
        self._end_string(ev)
        return end + 1

    def _scan_key_string(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """Inside an object key cut by the end of an earlier piece, or holding an escape."""
        end = _match_plain(text, pos).end()
        kpieces = self._kpieces
        if end == len(text):
            kpieces.append(text[pos:])
            return end
        if text[end] != '"':
            if end > pos:
                kpieces.append(text[pos:end])
            return self._scan_string(text, end, base, ev)
        kpieces.append(text[pos:end])
        self._end_key()
        return end + 1

    def _set_key(self, key: str, offset: int) -> None:
        """Make ``key`` (read whole, its opening quote at ``offset``) the innermost open
        object's current key: one ``str`` per distinct key, as ``json.loads`` makes them
        (arrays of records cost the memory of their distinct keys once)."""
        top = self._stack[-1]
        if self._unique and key in top.container:
            raise self._duplicate(key, offset)
        top.key = self._keys.setdefault(key, key)

    def _end_key(self) -> None:
        """The closing quote of a key read in pieces."""
        pieces = self._kpieces
        key = pieces[0] if len(pieces) == 1 else "".join(pieces)
        pieces.clear()
        self._set_key(key, self._kstart)
        self._state = _COLON

    def _start_string(
        self, path: _Link, text: str, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """A string value whose opening quote is just before ``pos``: complete at once when
        it is plain and whole, else shown (empty so far) and read on."""
        end = _match_plain(text, pos).end()
        n = len(text)
        if end < n and text[end] == '"':
            value = text[pos:end]
            if self._emit:
                ev.append(ValueStarted(path, "string"))
                if value:
                    ev.append(StringAppended(path, value))
                ev.append(ValueCompleted(path, value))
            self._attach(value, value)
            return end + 1
        self._slink = path
        self._show("")
        self._state = _STRING
        if self._emit:
            ev.append(ValueStarted(path, "string"))
        if end > pos:
            piece = text[pos:end]
            self._add_piece(piece)
            if self._emit:
                ev.append(StringAppended(path, piece))
        if end == n:
            return n
        return self._scan_string(text, end, base, ev)  # an escape (or an invalid character)

    def _open_container(
        self, is_obj: bool, path: _Link, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """``{`` or ``[`` at ``pos``: a container opens, shown from now on."""
        stack = self._stack
        if len(stack) >= self._max_depth:
            raise JSONDepthError(
                f"containers nest deeper than max_depth={self._max_depth}", base + pos
            )
        container: Any = {} if is_obj else []
        self._show(container)
        stack.append(_Frame(is_obj, container, path))
        if self._emit:
            ev.append(ValueStarted(path, "object" if is_obj else "array"))
        self._state = _OBJ_FIRST if is_obj else _ARR_FIRST
        return pos + 1

    def _start_literal(
        self, path: _Link, text: str, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """A literal starts at ``pos`` (or nothing valid does: an error)."""
        word = _LITERAL_START.get(text[pos])
        if word is None:
            raise self._unexpected(text, pos, base)
        if self._emit:
            ev.append(ValueStarted(path, cast(_Kind, word)))
        if text.startswith(word, pos):  # the whole literal
            value = _LITERALS[word]
            if self._emit:
                ev.append(ValueCompleted(path, value))
            self._attach(value, value)
            return pos + len(word)
        self._llink = path
        self._lit = word
        self._lit_i = 1
        self._state = _LITERAL
        return pos + 1

    def _start_number(
        self, path: _Link, text: str, pos: int, base: int, ev: list[JSONEvent]
    ) -> int:
        """A number starts at ``pos``: complete at once when its delimiter is in sight."""
        if self._emit:
            ev.append(ValueStarted(path, "number"))
        m = _match_number(text, pos)
        if m is not None:
            end = m.end()
            if end < len(text) and text[end] not in _NUMBER_CHARS and end - pos < 300:
                token = m.group()
                number: Any = int(token) if m.lastindex is None else float(token)
                if self._emit:
                    ev.append(ValueCompleted(path, number))
                self._attach(number, number)
                return end
        self._nlink = path
        self._nstate = _N_START
        self._nparts = []
        self._nstart = base + pos
        self._state = _NUMBER
        return self._scan_number(text, pos, base, ev)

    def _scan_string(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """Inside a string value or key, at ``pos``: runs of plain characters and complete
        escapes, decoded by json's C decoder; an escape cut by the end of the piece (or a
        high surrogate whose partner may follow) is carried over to the next piece."""
        is_key = self._state == _KEY_STRING
        n = len(text)
        while True:
            end = _match_segment(text, pos).end()
            if end > pos:
                seg = text[pos:end]
                self._string_piece(is_key, _scanstring(seg + '"', 0)[0] if "\\" in seg else seg, ev)
            if end == n:
                return n
            ch = text[end]
            if ch == '"':
                if is_key:
                    self._end_key()
                else:
                    self._end_string(ev)
                return end + 1
            if ch != "\\" or not _HIGH_SURROGATE.match(text, end):
                if ch == "\\" and _ESCAPE_PREFIX.match(text, end):
                    self._carry = text[end:]  # an escape cut by the end of this piece
                    return n
                raise self._string_error(text, end, base)
            after = end + 6
            if after == n or _MATCH_LOW_PREFIX(text, after):
                # A low-surrogate escape may still follow: hold the high half back.
                self._carry = text[end:]
                return n
            # Anything else follows: a lone surrogate, as json.loads decodes it.
            self._string_piece(is_key, chr(int(text[end + 2 : after], 16)), ev)
            pos = after

    def _string_piece(self, is_key: bool, piece: str, ev: list[JSONEvent]) -> None:
        """Decoded text of the open key or string value."""
        if is_key:
            self._kpieces.append(piece)
            return
        self._add_piece(piece)
        if self._emit:
            ev.append(StringAppended(self._slink, piece))

    def _string_error(self, text: str, end: int, base: int) -> JSONSyntaxError:
        """The error for ``text[end]`` in a string: a control character, or a backslash
        that starts no valid escape."""
        if text[end] != "\\":
            return JSONSyntaxError(
                f"control character {text[end]!r} in a string (it must be escaped)", base + end
            )
        if text[end + 1] != "u":
            return JSONSyntaxError(
                f"invalid escape '\\{text[end + 1]}' in a string "
                '(valid: \\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)',
                base + end + 1,
            )
        j = end + 2
        while text[j] in _HEX:  # at most 3: four would have been a complete escape
            j += 1
        return JSONSyntaxError(
            f"expected 4 hexadecimal digits after '\\u', {_found(text, j)}", base + j
        )

    def _leaf_text(self) -> str:
        """The open string value's decoded text so far.

        Folds the pending blocks and pieces into ``_stext``. The text grows with ``+=`` on a
        local that holds the only reference the parser keeps, which CPython extends in
        place when nothing else refers to it (amortised O(new text)) and copies when an
        earlier preview still holds it (that preview keeps its text).
        """
        pieces = self._spieces
        blocks = self._sblocks
        if blocks:  # all the pending text goes to the blocks, in order
            blocks.extend(pieces)
            pieces.clear()
            pieces = blocks
        if not pieces:
            return self._stext
        more = pieces[0] if len(pieces) == 1 else "".join(pieces)
        pieces.clear()
        text = self._stext
        self._stext = ""
        text += more
        self._stext = text
        return text

    def _end_string(self, ev: list[JSONEvent]) -> None:
        """The closing quote of a string value: it completes with its whole text."""
        text = self._leaf_text()
        self._stext = ""
        if self._emit:
            ev.append(ValueCompleted(self._slink, text))
        self._attach(text, text)

    def _scan_number(self, text: str, pos: int, base: int, ev: list[JSONEvent]) -> int:
        """Inside a number: the DFA of ``_N_STEP`` over its characters, up to the first
        character that cannot be part of a number (its delimiter)."""
        ns = self._nstate
        start = pos
        n = len(text)
        while pos < n:
            cls = _N_CLASS.get(text[pos])
            if cls is None:
                break
            nxt = _N_STEP.get((ns, cls))
            if nxt is None:
                raise self._number_error(ns, text, pos, base)
            ns = nxt
            pos = _match_digits(text, pos + 1).end() if ns in _N_RUNS else pos + 1
        if pos > start:
            self._nparts.append(text[start:pos])
        self._nstate = ns
        if pos < n:  # a delimiter follows: the number is complete (or invalid)
            if ns not in _N_ACCEPTING:
                raise self._number_error(ns, text, pos, base)
            self._finish_number(ev)
        return pos

    def _number_error(self, ns: int, text: str, pos: int, base: int) -> JSONSyntaxError:
        if ns == _N_ZERO and "0" <= text[pos] <= "9":
            return JSONSyntaxError(
                f"leading zeros are not allowed in a number, {_found(text, pos)}", base + pos
            )
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
            ev.append(ValueCompleted(self._nlink, value))
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
                ev.append(ValueCompleted(self._llink, value))
            self._attach(value, value)
        return pos + k

    # ------------------------------------------------------------------- tree building

    # ------------------------------------------------------------------- tree building
    #
    # The open containers are their own previews: a container or string is put in its
    # parent when it opens (``_show``), a completed value when it completes (``_attach``),
    # so a snapshot has nothing to copy; only the open string's entry is brought up to
    # date when a snapshot is taken. A duplicate key's value is never put in.

    def _show(self, value: Any) -> None:
        """Put a container or string that opens now into its parent's preview."""
        stack = self._stack
        self._outdated = True
        if not stack:
            return
        top = stack[-1]
        c = top.container
        if not top.is_obj:
            c.append(value)
        elif top.key in c:
            return  # a repeated key: the preview keeps showing its first value
        else:
            c[top.key] = value
        top.shown = True

    def _close_container(self, ev: list[JSONEvent]) -> None:
        frame = self._stack.pop()
        value = frame.container
        final = value if frame.final is None else frame.final
        if self._emit:
            ev.append(ValueCompleted(frame.link, final))
        self._attach(value, final)

    def _attach(self, value: Any, final: Any) -> None:
        """Put a completed value (preview form, json.loads form) into its parent, and set
        the next state."""
        self._outdated = True
        stack = self._stack
        if not stack:
            self._root = value
            self._root_final = final
            self._state = _DONE
            self._keys.clear()  # only whitespace may follow: no key will be read again
            return
        self._state = _AFTER
        parent = stack[-1]
        if parent.is_obj:
            self._attach_member(parent, value, final)
            return
        c = parent.container
        if parent.shown:
            parent.shown = False
            c[-1] = value
        else:
            c.append(value)
        if parent.final is not None:
            parent.final.append(final)
        elif final is not value:
            parent.final = c.copy()
            parent.final[-1] = final

    @staticmethod
    def _attach_member(parent: _Frame, value: Any, final: Any) -> None:
        """``_attach`` for an object member."""
        c = parent.container
        key = parent.key
        if parent.shown:
            parent.shown = False
        elif key in c:
            # Duplicate key: the preview keeps the first value; json.loads keeps the first
            # position with the last value.
            if parent.final is None:
                parent.final = c.copy()
            parent.final[key] = final
            return
        c[key] = value
        if parent.final is not None:
            parent.final[key] = final
        elif final is not value:
            parent.final = c.copy()
            parent.final[key] = final

    # --------------------------------------------------------------------------- errors

    def _unexpected(self, text: str, pos: int, base: int) -> JSONSyntaxError:
        """The error for a structural character that does not fit the current state."""
        ch = text[pos]
        state = self._state
        if state == _AFTER:
            if self._stack[-1].is_obj:
                expected = "',' or '}' after an object member"
            else:
                expected = "',' or ']' after an array element"
        elif state == _VALUE:
            expected = "a value after ':'" if self._stack else "a JSON value"
        else:
            expected = _EXPECTED[state]
        return JSONSyntaxError(f"expected {expected}, found {ch!r}{_hint(state, ch)}", base + pos)

    def _duplicate(self, key: str, offset: int) -> JSONDuplicateKeyError:
        """The error for ``key``, read whole at ``offset``, that the innermost open object
        already has (``reject_duplicates``): O(depth), once."""
        stack = self._stack
        path = (*(f.key if f.is_obj else f.index() for f in stack[:-1]), key)
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

        The open containers are their own previews, kept up to date as values complete, so
        this is O(1) plus the open string's new text: a snapshot is always the same object
        (the root container, once it opened), which later input only ever extends. Previews
        share completed subtrees with the final value: treat them as read-only, and copy
        one (``copy.deepcopy``) to keep it as it is now.
        """
        self._outdated = False
        state = self._state
        if state == _DONE:
            return self._root
        stack = self._stack
        if not stack:
            return self._leaf_text() if state == _STRING else MISSING
        if state == _STRING:
            top = stack[-1]
            if top.shown:  # its entry shows the text so far (not a repeated key's value)
                slot = top.key if top.is_obj else -1
                c = top.container
                c[slot] = ""  # _leaf_text's += may then extend the text in place
                c[slot] = self._leaf_text()
        return stack[0].container


def snapshot_outdated(parser: PartialJSONParser) -> bool:
    """Whether input changed the document since ``parser.snapshot()`` was last taken (or
    none was ever taken). O(1), no work done.

    The flag is set where the structure changes or the open string grows, which also
    happens when a string or container closes without changing what the preview shows.
    ``StreamAssembler`` reads it for ``ToolCallArguments.preview_changed`` when its parsers
    emit no JSON events.
    """
    return parser._outdated


# The scanner of each state (see PartialJSONParser._scan), indexed by the state's number.
_SCANNERS: Final[tuple[Callable[[PartialJSONParser, str, int, int, list[JSONEvent]], int], ...]] = (
    PartialJSONParser._scan_value,  # _VALUE
    PartialJSONParser._scan_value,  # _ELEM
    PartialJSONParser._scan_value,  # _ARR_FIRST
    PartialJSONParser._scan_key,  # _OBJ_FIRST
    PartialJSONParser._scan_key,  # _KEY
    PartialJSONParser._scan_colon,  # _COLON
    PartialJSONParser._scan_after,  # _AFTER
    PartialJSONParser._scan_string_value,  # _STRING
    PartialJSONParser._scan_key_string,  # _KEY_STRING
    PartialJSONParser._scan_number,  # _NUMBER
    PartialJSONParser._scan_literal,  # _LITERAL
    PartialJSONParser._scan_done,  # _DONE
)


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
    return parser.snapshot()
