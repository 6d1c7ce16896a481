"""Incremental decoders that turn raw response bytes into provider payloads.

Four framings are understood, each fed bytes in any split:

* **SSE** (``text/event-stream``) following the WHATWG parsing rules: LF, CR and CRLF line
  ends (a CR at the end of one chunk and an LF at the start of the next are one line end),
  a BOM at the start, comments (``:``), ``event:``, ``id:``, ``retry:``, several ``data:``
  lines joined with ``"\\n"``, one optional space after the colon, unknown fields ignored.
  The ``event`` name travels with the payload so that an ``event: error`` whose data is
  JSON reaches the adapter as an error (Groq ``tool_use_failed``).
* **NDJSON**: one JSON value per line, blank lines skipped.
* **A JSON array** holding one payload per element (recorded bodies); elements are cut out
  incrementally at depth one and dispatched as soon as they are complete. Elements are
  passed on as they are: unwrapping a recorder's envelope is the recorder's business.
* **AWS event-stream** (binary, Bedrock), recognised by its leading zero length byte and
  handed to ``_eventstream.EventStreamDecoder``.

UTF-8 is decoded incrementally, so a character split across chunks is never mangled;
invalid UTF-8 raises :class:`StreamFormatError`.

Guarantees: the payloads produced do not depend on how the bytes were split. At
:meth:`close`, a last event or line that lacks only its terminator is dispatched when its
data is complete JSON (or ``[DONE]``); anything else left over (a cut line) is dropped,
never completed: the assembler then sees no terminal event and reports an aborted stream.
Not guaranteed: a cut that happens to fall exactly after a complete JSON value (the cut
is then indistinguishable from a missing terminator).

Complexity: every byte is decoded once and every character is scanned a bounded number of
times (line ends are found with ``str.find`` from where the last search stopped), so the
work is linear in the input; memory holds at most one unfinished line or event, bounded by
``FrameDecoder.max_pending``.
"""

from __future__ import annotations

import codecs
import json
import re
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ._errors import StreamFormatError, StreamLimitExceeded

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
_STRING_SPECIAL = re.compile(r'["\\]')


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


def _item(event: str, data: str) -> Item:
    name = None if event == "message" else event
    return (name, decode_payload(data, where=f"SSE data of event {event!r}"))


class _TextDecoder:
    """Incremental UTF-8 with the BOM dropped at the very start; typed errors."""

    __slots__ = ("_decoder", "_started")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._started = False

    def decode(self, data: bytes, final: bool = False) -> str:
        try:
            text = self._decoder.decode(data, final)
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


class SSEDecoder:
    """Incremental WHATWG event-stream parser yielding ``(event name, payload)`` pairs.

    :meth:`feed_events` / :meth:`close_events` give the raw :class:`SSEEvent` objects;
    :meth:`feed` / :meth:`close` decode each event's data as JSON (``[DONE]`` kept as a
    string) and drop events without data, as the spec says.
    """

    __slots__ = ("_buf", "_data", "_event", "_last_id", "_retry", "_skip_lf", "_text")

    def __init__(self) -> None:
        self._text = _TextDecoder()
        self._buf = ""  # text after the last complete line
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._data: list[str] = []
        self._event = ""
        self._last_id: str | None = None
        self._retry: int | None = None

    @property
    def pending(self) -> int:
        """Characters held for the event in progress (its data lines and the open line)."""
        return len(self._buf) + sum(map(len, self._data))

    @property
    def retry(self) -> int | None:
        """The last ``retry:`` value (milliseconds), as the spec tells clients to keep it."""
        return self._retry

    def feed_events(self, data: bytes) -> list[SSEEvent]:
        """Feed raw bytes; return the events completed by them."""
        return [
            SSEEvent(event=e, data=d, id=i) for e, d, i in self._consume(self._text.decode(data))
        ]

    def close_events(self) -> list[SSEEvent]:
        """End of input: flush a last event that lacks only its blank line."""
        return [SSEEvent(event=e, data=d, id=i) for e, d, i in self._close()]

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes; return ``(event name, payload)`` for each completed event.

        Events whose data is blank (keep-alives) carry no payload and are skipped.
        """
        return [_item(e, d) for e, d, _ in self._consume(self._text.decode(data)) if d.strip()]

    def close(self) -> list[Item]:
        """End of input; see :meth:`close_events`."""
        return [_item(e, d) for e, d, _ in self._close() if d.strip()]

    def _close(self) -> list[_Raw]:
        out = self._consume(self._text.decode(b"", True))
        if self._buf:
            # The final line has no line end: it is processed only if the event it
            # completes is whole JSON, so a cut line is never taken for a complete one.
            line, self._buf = self._buf, ""
            saved = (list(self._data), self._event, self._last_id)
            self._line(line)
            pending = "\n".join(self._data)
            if not (self._data and _is_complete_payload(pending)):
                self._data, self._event, self._last_id = saved
        if self._data:
            pending = "\n".join(self._data)
            if _is_complete_payload(pending):
                out.append((self._event or "message", pending, self._last_id))
        self._data = []
        self._event = ""
        return out

    def _consume(self, text: str) -> list[_Raw]:
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        buf = self._buf + text if self._buf else text
        out: list[_Raw] = []
        pos = 0
        n = len(buf)
        find = buf.find
        has_cr = "\r" in buf  # most streams use LF only: skip the CR search then
        data = self._data
        while pos < n:
            lf = find("\n", pos)
            cr = find("\r", pos, lf if lf >= 0 else n) if has_cr else -1
            if cr >= 0:
                end = cr
                if cr + 1 < n:
                    nxt = cr + 2 if buf[cr + 1] == "\n" else cr + 1
                else:
                    nxt = cr + 1
                    self._skip_lf = True  # a following LF is part of this line end
            elif lf >= 0:
                end = lf
                nxt = lf + 1
            else:
                break
            if end == pos:  # blank line: dispatch
                if data:
                    out.append((self._event or "message", "\n".join(data), self._last_id))
                    data = self._data = []
                self._event = ""
            elif buf.startswith("data: ", pos):  # the common line, without a call
                data.append(buf[pos + 6 : end])
            else:
                self._line(buf[pos:end])
            pos = nxt
        self._buf = buf[pos:]
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


class NDJSONDecoder:
    """Incremental JSON Lines: one payload per ``\\n``-terminated line (``\\r\\n`` too)."""

    __slots__ = ("_buf", "_text")

    def __init__(self) -> None:
        self._text = _TextDecoder()
        self._buf = ""

    @property
    def pending(self) -> int:
        """Characters of the line in progress."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes; return a ``(None, payload)`` pair per completed line."""
        text = self._text.decode(data)
        if not text:
            return []
        buf = self._buf + text if self._buf else text
        last = buf.rfind("\n")
        if last < 0:
            self._buf = buf
            return []
        self._buf = buf[last + 1 :]
        return [
            (None, decode_payload(line, where="NDJSON line"))
            for line in buf[:last].split("\n")
            if line.strip()
        ]

    def close(self) -> list[Item]:
        """End of input: a last line without newline is kept only if it is whole JSON."""
        rest = self._buf + self._text.decode(b"", True)
        self._buf = ""
        if _is_complete_payload(rest):
            return [(None, decode_payload(rest, where="NDJSON line"))]
        return []


class JSONArrayDecoder:
    """Incremental reader of a body that is one JSON array of payloads.

    Element boundaries are found by a scanner that tracks strings, escapes and depth, each
    character once; a complete element is parsed with ``json.loads`` and dispatched.
    """

    __slots__ = ("_buf", "_depth", "_done", "_esc", "_in_str", "_scan", "_start", "_text")

    def __init__(self) -> None:
        self._text = _TextDecoder()
        self._buf = ""
        self._scan = 0  # next character of _buf to scan
        self._start = -1  # start of the current element in _buf, -1 before the array opens
        self._depth = 0
        self._in_str = False
        self._esc = False
        self._done = False

    @property
    def pending(self) -> int:
        """Characters of the element in progress."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Item]:
        """Feed raw bytes; return a ``(None, payload)`` pair per completed element."""
        return self._consume(self._text.decode(data))

    def close(self) -> list[Item]:
        """End of input; an unfinished element (a cut) is dropped."""
        out = self._consume(self._text.decode(b"", True))
        self._buf = ""
        return out

    def _consume(self, text: str) -> list[Item]:
        if self._done:
            if text.strip():
                raise StreamFormatError("data after the end of the JSON array", payload=text)
            return []
        self._buf += text
        buf = self._buf
        out: list[Item] = []
        i = self._scan
        n = len(buf)
        depth, in_str, esc, start = self._depth, self._in_str, self._esc, self._start
        while i < n:
            c = buf[i]
            if in_str:
                if esc:
                    esc = False
                elif c == "\\":
                    esc = True
                elif c == '"':
                    in_str = False
                else:
                    # skip ordinary string characters in bulk
                    m = _STRING_SPECIAL.search(buf, i + 1)
                    i = m.start() if m else n
                    continue
            elif c == '"':
                in_str = True
            elif c in "{[":
                if depth == 0:
                    if c != "[":
                        raise StreamFormatError("body does not start a JSON array", payload=buf)
                    start = i + 1
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth == 0:
                    self._emit(buf[start:i], out, last=True)
                    self._done = True
                    rest = buf[i + 1 :]
                    self._buf = ""
                    self._scan = 0
                    if rest.strip():
                        raise StreamFormatError(
                            "data after the end of the JSON array", payload=rest
                        )
                    return out
            elif c == "," and depth == 1:
                self._emit(buf[start:i], out, last=False)
                start = i + 1
            elif depth == 0 and not c.isspace():
                raise StreamFormatError("body does not start a JSON array", payload=buf)
            i += 1
        # drop what is already dispatched so memory holds one element at most
        if start > 0:
            buf = buf[start:]
            i -= start
            start = 0
        self._buf = buf
        self._scan = i
        self._depth, self._in_str, self._esc, self._start = depth, in_str, esc, start
        return out

    @staticmethod
    def _emit(text: str, out: list[Item], *, last: bool) -> None:
        if not text.strip():
            if last:
                return  # "[]" or a trailing "]" after the last element
            raise StreamFormatError("empty element in the JSON array", payload=text)
        out.append((None, decode_payload(text, where="JSON array element")))


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
        from ._eventstream import EventStreamDecoder  # binary framing: loaded only when met

        return EventStreamDecoder()
    return JSONArrayDecoder()
