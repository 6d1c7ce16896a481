"""Incremental decoders from raw response bytes to provider payloads: SSE, NDJSON, a JSON
array, AWS event-stream.

The payloads do not depend on how the bytes were split; a cut line is dropped, never
completed. Linear in the input; memory holds one unfinished line, event or element.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from .._errors import StreamFormatError, StreamLimitExceeded

__all__ = [
    "DONE",
    "FrameDecoder",
    "Framing",
    "JSONArrayDecoder",
    "NDJSONDecoder",
    "SSEDecoder",
    "SSEEvent",
    "decode_payload",
    "detect_framing",
]

DONE = "[DONE]"
"""The OpenAI end-of-stream sentinel, passed through as a string payload."""

Framing = Literal["sse", "ndjson", "json-array", "aws-eventstream"]

# A decoded payload with the SSE event name it came with (``None`` outside SSE).
Item = tuple["str | None", Any]

_BOM = "\ufeff"

# The json module's C scanner: ``scan(text, i)`` -> (value, end). json.loads adds two
# regular-expression whitespace matches and three Python calls around it, a third of the
# cost of a small payload; the scanner itself is what parses. It refuses leading
# whitespace (StopIteration), so such text takes decode_payload. (typeshed does not
# declare the instance attribute that JSONDecoder.__init__ sets.)
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
_SCAN_ERRORS = (ValueError, StopIteration, RecursionError)
# ``scanstring(text, i, strict)`` -> (decoded, index after the closing quote), for ``i``
# just inside a string; it reports a missing closing quote at ``i - 1``.
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True, kw_only=True)
class SSEEvent:
    """One dispatched server-sent event: its type (``"message"`` by default), its data
    (the ``data:`` lines joined with ``"\\n"``) and the last event id seen."""

    event: str
    data: str
    id: str | None = None


def decode_payload(text: str, *, where: str = "payload") -> Any:
    """Parse one payload's text: ``[DONE]`` stays a string, anything else must be JSON.

    Raises :class:`StreamFormatError` (naming the text) when it is not JSON.
    """
    stripped = text.strip()
    if stripped == DONE:
        return DONE
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError) as exc:
        shown = stripped if len(stripped) <= 200 else stripped[:200] + "..."
        raise StreamFormatError(f"{where} is not JSON: {exc}: {shown!r}", payload=text) from None


def _parse(text: str, where: str) -> Any:
    """:func:`decode_payload` for text known to be non-blank, C scanner first."""
    try:
        value, end = _scan(text, 0)
    except _SCAN_ERRORS:
        return decode_payload(text, where=where)
    if end != len(text) and not text[end:].isspace():
        return decode_payload(text, where=where)  # raises: data after the value
    return value


def _is_complete_payload(text: str) -> bool:
    """Whether leftover text at end of input is a whole payload (and so may be flushed)."""
    stripped = text.strip()
    if not stripped:
        return False
    if stripped == DONE:
        return True
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    return True


_Raw = tuple[str, str, "str | None"]  # event type, data, last event id
_NOTHING: Any = object()  # an event that carries no payload


class _TextDecoder:
    """Incremental UTF-8 with the BOM dropped at the very start; typed errors."""

    __slots__ = ("_decode", "_started")

    def __init__(self) -> None:
        self._decode = codecs.getincrementaldecoder("utf-8")("strict").decode
        self._started = False

    def decode(self, data: bytes, final: bool = False) -> str:
        try:
            text: str = self._decode(data, final)
        except UnicodeDecodeError as exc:
            raise StreamFormatError(f"stream is not valid UTF-8: {exc}", payload=data) from None
        if not self._started and text:
            self._started = True
            if text[0] == _BOM:
                text = text[1:]
        return text


class Decoder(Protocol):
    """What every framing decoder offers."""

    @property
    def pending(self) -> int:
        """How much input is held for the payload in progress."""
        ...

    def feed(self, data: bytes) -> list[Item]: ...

    def close(self) -> list[Item]: ...


class _Lines:
    """Cuts decoded text into lines, holding the unfinished last line as a list of pieces.

    ``lf_only`` (NDJSON) ends lines at LF alone; otherwise (SSE) at LF, CR and CRLF, also
    when the CR and the LF of one line end arrive in different reads.
    """

    __slots__ = ("_lf_only", "_skip_lf", "held", "pieces")

    def __init__(self, *, lf_only: bool) -> None:
        self._lf_only = lf_only
        self._skip_lf = False  # the previous text ended in CR: a leading LF belongs to it
        self.pieces: list[str] = []  # the unfinished line, in pieces
        self.held = 0  # characters in pieces

    def split(self, text: str) -> list[str]:
        """The lines that ``text`` completes; O(len(text)) plus the completed line's join."""
        if not self._lf_only:
            if self._skip_lf:
                self._skip_lf = False
                if text[:1] == "\n":
                    text = text[1:]
            if "\r" in text:
                # One pass makes every line end an LF; a CR ending the text already ends
                # its line, and an LF opening the next text must not end another one.
                self._skip_lf = text[-1] == "\r"
                text = text.replace("\r\n", "\n").replace("\r", "\n")
        if "\n" not in text:
            if text:
                self.pieces.append(text)
                self.held += len(text)
            return []
        lines = text.split("\n")
        rest = lines.pop()
        if self.pieces:
            self.pieces.append(lines[0])
            lines[0] = "".join(self.pieces)
            self.pieces = [rest] if rest else []
        elif rest:
            self.pieces.append(rest)
        self.held = len(rest)
        return lines

    def take_rest(self) -> str:
        """End of input: the unfinished line (possibly empty), which is then forgotten."""
        rest = "".join(self.pieces)
        self.pieces = []
        self.held = 0
        return rest


class SSEDecoder:
    """Incremental WHATWG event-stream parser yielding ``(event name, payload)`` pairs.

    :meth:`feed_events` / :meth:`close_events` give the raw :class:`SSEEvent` objects;
    :meth:`feed` / :meth:`close` decode each event's data as JSON (``[DONE]`` kept as a
    string) and drop events without data, as the spec says.
    """

    __slots__ = ("_data", "_data_chars", "_event", "_last_id", "_lines", "_retry", "_text")

    def __init__(self) -> None:
        self._text = _TextDecoder()
        self._lines = _Lines(lf_only=False)
        self._data: list[str] = []  # the data lines of the event in progress
        self._data_chars = 0  # characters in _data, kept as a running count
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    @property
    def pending(self) -> int:
        """Characters held for the event in progress (its data lines and the open line)."""
        return self._lines.held + self._data_chars

    @property
    def retry(self) -> int | None:
        """The last ``retry:`` value (milliseconds), as the spec tells clients to keep it."""
        return self._retry

    def feed_events(self, data: bytes) -> list[SSEEvent]:
        """Feed raw bytes; return the events completed by them."""
        return [SSEEvent(event=e, data=d, id=i) for e, d, i in self._consume(data, raw=True)]

    def close_events(self) -> list[SSEEvent]:
        """End of input: flush a last event that lacks only its blank line."""
        return [SSEEvent(event=e, data=d, id=i) for e, d, i in self._close()]

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes; return ``(event name, payload)`` for each completed event.

        Events whose data is blank (keep-alives) carry no payload and are skipped.
        """
        return self._consume(data, raw=False)

    def close(self) -> list[Item]:
        """End of input; see :meth:`close_events`."""
        return [_sse_item(e, d) for e, d, _ in self._close() if d.strip()]

    def _close(self) -> list[_Raw]:
        out: list[_Raw] = self._consume(b"", raw=True, final=True)
        line = self._lines.take_rest()
        if line:
            # The final line has no line end: it is processed only if the event it
            # completes is whole JSON, so a cut line is never taken for a complete one.
            saved = (list(self._data), self._event, self._last_id)
            self._line(line)
            if not (self._data and _is_complete_payload("\n".join(self._data))):
                self._data, self._event, self._last_id = saved
        if self._data:
            pending = "\n".join(self._data)
            if _is_complete_payload(pending):
                out.append((self._event or "message", pending, self._last_id))
        self._data = []
        self._data_chars = 0
        self._event = ""
        return out

    def _consume(self, data: bytes, *, raw: bool, final: bool = False) -> list[Any]:
        """The events completed by ``data``: raw triples, or decoded items (``raw=False``)."""
        text = self._text.decode(data, final)
        if not text:
            return []
        out: list[Any] = []
        lines = self._lines.split(text)
        if not lines:
            return out
        data_lines = self._data
        fresh = len(data_lines)  # data lines before this index are already counted
        scan = _scan
        for line in lines:
            if line.startswith("data: "):  # the common line, without a call
                data_lines.append(line[6:])
            elif line:
                self._line(line)
            elif data_lines:  # blank line: dispatch
                body = data_lines[0] if len(data_lines) == 1 else "\n".join(data_lines)
                event = self._event or "message"
                if raw:
                    out.append((event, body, self._last_id))
                else:
                    # _parse inlined: this runs once per event of every stream
                    try:
                        value, end = scan(body, 0)
                        if end != len(body) and not body[end:].isspace():
                            raise ValueError  # data after the value: decode_payload says so
                    except _SCAN_ERRORS:
                        if not body or body.isspace():  # blank data is a keep-alive
                            value = _NOTHING
                        else:
                            value = decode_payload(body, where=f"SSE data of event {event!r}")
                    if value is not _NOTHING:
                        out.append((None if event == "message" else event, value))
                data_lines = self._data = []
                self._data_chars = fresh = 0
                self._event = ""
            else:
                self._event = ""
        if data_lines:
            self._data_chars += sum(map(len, data_lines[fresh:]))
        return out

    def _line(self, line: str) -> None:
        if line[0] == ":":
            return  # comment
        colon = line.find(":")
        if colon < 0:
            field, value = line, ""
        else:
            field = line[:colon]
            value = line[colon + 1 :]
            if value[:1] == " ":
                value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id":
            if "\0" not in value:
                self._last_id = value
        elif field == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)


def _sse_item(event: str, data: str) -> Item:
    name = None if event == "message" else event
    return (name, decode_payload(data, where=f"SSE data of event {event!r}"))


class _UnnamedPayloads:
    """Base of the decoders whose payloads have no event name (NDJSON, a JSON array): the
    bytes are decoded to text incrementally, and ``_consume`` finds the payloads in it."""

    __slots__ = ("_text",)

    def __init__(self) -> None:
        self._text = _TextDecoder()

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes; return a ``(None, payload)`` pair per completed payload."""
        text = self._text.decode(data)
        return self._consume(text) if text else []

    def _flush(self) -> list[Item]:
        """End of input: the pairs completed by the text the decoder still held."""
        tail = self._text.decode(b"", True)
        return self._consume(tail) if tail else []

    def _consume(self, text: str) -> list[Item]:
        """The pairs of the payloads that ``text`` completes (the subclass's framing)."""
        raise NotImplementedError


class NDJSONDecoder(_UnnamedPayloads):
    """Incremental JSON Lines: one payload per ``\\n``-terminated line (``\\r\\n`` too)."""

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        super().__init__()
        self._lines = _Lines(lf_only=True)

    @property
    def pending(self) -> int:
        """Characters of the line in progress."""
        return self._lines.held

    def close(self) -> list[Item]:
        """End of input: a last line without newline is kept only if it is whole JSON."""
        out = self._flush()
        rest = self._lines.take_rest()
        if _is_complete_payload(rest):
            out.append((None, decode_payload(rest, where="NDJSON line")))
        return out

    def _consume(self, text: str) -> list[Item]:
        return [
            (None, _parse(line, "NDJSON line"))
            for line in self._lines.split(text)
            if line and not line.isspace()
        ]


def _odd_backslashes(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` ends in an odd run of backslashes (which escapes the
    character at ``end``); O(length of the run)."""
    k = end - 1
    while k >= start and text[k] == "\\":
        k -= 1
    return (end - 1 - k) % 2 == 1


# JSON-array scanning, outside strings: skip to the next quote or bracket, and at the
# element's own level (depth 0) to the next comma too. Each pattern matches everywhere
# (possibly the empty string), so its ``match`` is typed as never returning None.
_Skip = Callable[[str, int], "re.Match[str]"]
_skip_top = cast(_Skip, re.compile(r'[^"\[\]{},]*').match)
_skip_deep = cast(_Skip, re.compile(r'[^"\[\]{}]*').match)
_skip_space = cast(_Skip, re.compile(r"\s*").match)

_AFTER_BARE = frozenset(" \t\r\n,]")  # what may follow a bare value inside the array

# where the array decoder is between elements
_BEFORE, _FIRST, _NEXT, _AFTER, _INSIDE, _DONE = range(6)


class JSONArrayDecoder(_UnnamedPayloads):
    """Incremental reader of a body that is one JSON array of payloads.

    An element complete within one read is parsed there by the C scanner; one that spans
    reads is followed by an incremental scanner (depth, strings, escapes) over new text
    only, and parsed once when it ends. Each element is dispatched as soon as it is
    complete; see the module header for the complexity.
    """

    __slots__ = ("_depth", "_esc", "_held", "_in_str", "_pieces", "_state")

    def __init__(self) -> None:
        super().__init__()
        self._state = _BEFORE
        self._pieces: list[str] = []  # the element in progress (state _INSIDE)
        self._held = 0  # characters in _pieces
        self._depth = 0  # nesting inside the element in progress
        self._in_str = False
        self._esc = False  # the last piece ended inside a string after an odd backslash run

    @property
    def pending(self) -> int:
        """Characters of the element in progress."""
        return self._held

    def close(self) -> list[Item]:
        """End of input; an unfinished element (a cut) is dropped."""
        out = self._flush()
        self._pieces = []
        self._held = 0
        return out

    def _consume(self, text: str) -> list[Item]:
        out: list[Item] = []
        n = len(text)
        pos = 0
        state = self._state
        if state == _INSIDE:
            end = self._follow(text, 0)
            if end < 0:
                self._pieces.append(text)
                self._held += n
                return out
            self._pieces.append(text[:end])
            out.append(self._element("".join(self._pieces)))
            self._pieces = []
            self._held = 0
            pos = end
            state = self._state = _AFTER
        while True:
            pos = _skip_space(text, pos).end()
            if pos >= n:
                break
            c = text[pos]
            if state == _AFTER:
                if c == ",":
                    state = _NEXT
                elif c == "]":
                    state = _DONE
                else:
                    raise StreamFormatError(
                        "JSON array elements must be separated by commas", payload=text[pos:]
                    )
                pos += 1
            elif state in (_FIRST, _NEXT):
                if c == "]":  # "[]", or a trailing comma before the end
                    state = _DONE
                    pos += 1
                    continue
                if c == ",":
                    raise StreamFormatError("empty element in the JSON array", payload=text)
                try:
                    value, end = _scan(text, pos)
                except _SCAN_ERRORS:
                    end = -1
                # A closing bracket or quote ends a value for good. A bare value (a number,
                # true...) ends only where a delimiter follows it: "1e" or "1." scan as 1,
                # and the read may stop inside "123" too.
                if end > pos and (text[end - 1] in '}]"' or (end < n and text[end] in _AFTER_BARE)):
                    out.append((None, value))
                    pos = end
                    state = _AFTER
                    continue
                self._depth, self._in_str, self._esc = 0, False, False
                end = self._follow(text, pos)
                if end < 0:
                    self._pieces = [text[pos:]]
                    self._held = n - pos
                    state = _INSIDE
                    break
                out.append(self._element(text[pos:end]))
                pos = end
                state = _AFTER
            elif state == _BEFORE:
                if c != "[":
                    raise StreamFormatError("body does not start a JSON array", payload=text)
                state = _FIRST
                pos += 1
            else:  # _DONE
                self._state = state
                raise StreamFormatError("data after the end of the JSON array", payload=text[pos:])
        self._state = state
        return out

    def _follow(self, text: str, pos: int) -> int:
        """Scan the element in progress through ``text`` from ``pos``: the index where it
        ends (after its closing bracket or quote, or at the comma or ``]`` after a bare
        value), or -1 when ``text`` ends first (the scanner's state is then kept)."""
        n = len(text)
        depth, in_str = self._depth, self._in_str
        if in_str and self._esc:
            pos += 1  # the character escaped by the backslash that ended the last piece
        self._esc = False
        while pos < n:
            if in_str:
                pos = self._string_end(text, pos)
                if pos < 0:
                    break
                in_str = False
                if depth == 0:
                    return pos  # the element was a string
                continue
            pos = (_skip_deep if depth else _skip_top)(text, pos).end()
            if pos == n:
                break
            c = text[pos]
            if c == '"':
                in_str = True
            elif c == "{" or c == "[":
                depth += 1
            elif c == "}" or c == "]":
                if depth == 0:
                    return pos  # the array's end after a bare value
                depth -= 1
                if depth == 0:
                    return pos + 1
            else:  # a comma at depth 0: the end of a bare value
                return pos
            pos += 1
        self._depth, self._in_str = depth, in_str
        return -1

    def _string_end(self, text: str, pos: int) -> int:
        """The index after the quote that closes the string ``text`` is inside from
        ``pos`` on, or -1 (with ``_esc`` set when ``text`` ends in an unpaired backslash)."""
        try:
            # The C string scanner finds the closing quote at the json module's speed.
            return _scanstring(text, pos, False)[1]
        except ValueError as exc:
            if getattr(exc, "pos", None) != pos - 1:
                return self._string_end_slowly(text, pos)  # an escape it refused: cut or bad
        # Unterminated: no closing quote. An odd run of backslashes at the end escapes the
        # next read's first character.
        self._esc = _odd_backslashes(text, pos, len(text))
        return -1

    def _string_end_slowly(self, text: str, pos: int) -> int:
        """:meth:`_string_end` by hand: a quote closes the string unless an odd run of
        backslashes precedes it."""
        while True:
            quote = text.find('"', pos)
            if quote < 0:
                self._esc = _odd_backslashes(text, pos, len(text))
                return -1
            escaped = _odd_backslashes(text, pos, quote)
            pos = quote + 1
            if not escaped:
                return pos

    @staticmethod
    def _element(text: str) -> Item:
        if not text or text.isspace():
            raise StreamFormatError("empty element in the JSON array", payload=text)
        return (None, _parse(text, "JSON array element"))


def detect_framing(head: bytes) -> Framing | None:
    """Guess the framing from the first bytes; ``None`` while there is only whitespace."""
    text = head.lstrip(b"\xef\xbb\xbf" if head.startswith(b"\xef\xbb\xbf") else b"").lstrip()
    if not text:
        return None
    first = text[:1]
    if first == b"[":
        return "json-array"
    if first == b"{":
        return "ndjson"
    if head[:1] == b"\x00":
        # a big-endian message length: AWS event-stream framing (Bedrock)
        return "aws-eventstream"
    if first[0] < 0x09 or (0x0E <= first[0] < 0x20):
        raise StreamFormatError("binary data that is no known stream framing", payload=head[:64])
    return "sse"


DEFAULT_MAX_PENDING = 64 * 1024 * 1024


class FrameDecoder:
    """Picks SSE, NDJSON, JSON-array or AWS event-stream framing from the first bytes and
    delegates to it.

    ``max_pending`` bounds what one unfinished payload may hold (default 64 Mi characters
    or bytes): a body that never ends its event cannot grow memory without limit; past it,
    :class:`StreamLimitExceeded` is raised.
    """

    __slots__ = ("_decoder", "_head", "framing", "max_pending")

    def __init__(
        self, framing: Framing | None = None, *, max_pending: int = DEFAULT_MAX_PENDING
    ) -> None:
        self.framing: Framing | None = framing
        self.max_pending = max_pending
        self._head = b""
        self._decoder: Decoder | None = _make(framing) if framing else None

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes in any split; return ``(event name, payload)`` pairs."""
        if self._decoder is None:
            self._head += data
            # wait for a decisive byte; the BOM may arrive split too
            if len(self._head) < 3 and b"\xef\xbb\xbf".startswith(self._head):
                return []
            framing = detect_framing(self._head)
            if framing is None:
                return []
            self.framing = framing
            self._decoder = _make(framing)
            data, self._head = self._head, b""
        items = self._decoder.feed(data)
        if self._decoder.pending > self.max_pending:
            raise StreamLimitExceeded(
                f"one payload holds more than {self.max_pending} unfinished characters",
                limit="max_pending",
                value=self.max_pending,
            )
        return items

    def close(self) -> list[Item]:
        """End of input: flush a last unterminated but complete payload."""
        if self._decoder is None:
            return []
        return self._decoder.close()


def _make(framing: Framing) -> Decoder:
    if framing == "sse":
        return SSEDecoder()
    if framing == "ndjson":
        return NDJSONDecoder()
    if framing == "aws-eventstream":
        from .eventstream import EventStreamDecoder

        return EventStreamDecoder()
    return JSONArrayDecoder()
