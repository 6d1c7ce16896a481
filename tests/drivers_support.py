"""Helpers shared by the driver tests: the reference run of the assembler alone, sources
that count their ``close()`` calls, and a local HTTP server that serves corpus recordings
(SSE, and AWS event-stream for boto3) to the real SDK clients with injected faults.

The fault server listens on 127.0.0.1 only, serves each connection in a daemon thread, and
bounds every stall (``MAX_STALL`` seconds) so that it always stops by itself; a stall ends
early when the client disconnects, and the server records when it saw that.
"""

from __future__ import annotations

import itertools
import json
import select
import socket
import struct
import threading
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conftest import CORPUS_DIR, load_expected
from toolwire import StreamAssembler, StreamError, UsageReported

EXPECTED = load_expected()
MAX_STALL = 5.0  # no stall of the fault server lasts longer than this


# --------------------------------------------------------------------- the corpus


def byte_names() -> list[str]:
    """Corpus streams whose stored body is SSE, NDJSON or JSON text (not binary)."""
    return sorted(name for name in EXPECTED if not name.endswith(".eventstream"))


def payload_names() -> list[str]:
    """Corpus streams whose payloads can be read one by one (SSE and JSON Lines)."""
    return sorted(name for name in EXPECTED if name.endswith((".sse", ".jsonl")))


def body(name: str) -> bytes:
    """The recorded body of corpus stream ``name``, read at test time (a JSON-array
    recording unwrapped from its recorder envelopes, as ``corpus_support`` reads it)."""
    from corpus_support import stream_bytes

    return stream_bytes(name)


def payloads(name: str) -> list[dict[str, Any]]:
    """The payloads of an SSE or JSON Lines corpus stream, as dicts (event names dropped)."""
    text = (CORPUS_DIR / "streams" / name).read_text("utf-8")
    if not name.endswith(".sse"):
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        data = [line[5:].strip() for line in block.split("\n") if line.startswith("data:")]
        if data and data != ["[DONE]"]:
            out.append(json.loads("\n".join(data)))
    return out


@dataclass
class Run:
    """What consuming a stream gave: its events, and its response or error."""

    events: list[Any]
    response: Any = None
    error: StreamError | None = None

    def outcome(self) -> tuple[Any, ...]:
        """A comparable summary: the response, or the error's type, message and partial."""
        if self.error is not None:
            return (type(self.error), str(self.error), self.error.partial)
        return (self.response,)


def reference(items: list[Any]) -> Run:
    """The assembler alone, fed ``items`` (bytes through ``feed_bytes``, else ``feed``)."""
    asm = StreamAssembler()
    run = Run(events=[])
    try:
        for item in items:
            if isinstance(item, (bytes, bytearray, memoryview)):
                run.events.extend(asm.feed_bytes(bytes(item)))
            else:
                run.events.extend(asm.feed(item))
        run.events.extend(asm.feed_eof())
        run.response = asm.close()
    except StreamError as exc:
        run.error = exc
    return run


def splits(data: bytes, cuts: list[int]) -> list[bytes]:
    """``data`` cut at the given offsets (any order, duplicates allowed)."""
    points = sorted({min(max(c, 0), len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


# ------------------------------------------------------------------ counting sources


class CountingSource:
    """An iterator over ``items`` that counts ``close()`` calls; ``block`` makes ``next()``
    wait (at most ``MAX_STALL``) at that position until ``close()`` is called, like an
    HTTP read that closing the response interrupts. ``raise_at`` raises that exception
    at that position instead."""

    def __init__(
        self,
        items: list[Any],
        *,
        block: int | None = None,
        raise_at: tuple[int, BaseException] | None = None,
        close_error: BaseException | None = None,
    ) -> None:
        self.items = list(items)
        self.position = 0
        self.block = block
        self.raise_at = raise_at
        self.close_error = close_error
        self.closes = 0
        self.closed = threading.Event()
        self.returned = threading.Event()  # next() gave up its block

    def __iter__(self) -> CountingSource:
        return self

    def _step(self) -> Any:
        if self.raise_at is not None and self.position == self.raise_at[0]:
            raise self.raise_at[1]
        if self.block is not None and self.position == self.block:
            self.closed.wait(MAX_STALL)
            self.returned.set()
            raise OSError("read on a closed stream")
        if self.position >= len(self.items):
            raise StopIteration
        item = self.items[self.position]
        self.position += 1
        return item

    def __next__(self) -> Any:
        return self._step()

    def close(self) -> None:
        """Count the call; unblock a waiting ``next()``; raise ``close_error`` if set."""
        self.closes += 1
        self.closed.set()
        if self.close_error is not None:
            raise self.close_error


class AsyncCountingSource(CountingSource):
    """The async twin of :class:`CountingSource`: ``aclose()`` counts, a blocked
    ``__anext__`` waits for it (bounded) or for cancellation."""

    def __init__(self, items: list[Any], **kwargs: Any) -> None:
        super().__init__(items, **kwargs)
        self.cancelled = 0

    def __aiter__(self) -> AsyncCountingSource:
        return self

    async def __anext__(self) -> Any:
        import asyncio

        if self.block is not None and self.position == self.block:
            try:
                await asyncio.sleep(MAX_STALL)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        try:
            return self._step_async()
        except StopIteration:
            raise StopAsyncIteration from None

    def _step_async(self) -> Any:
        if self.raise_at is not None and self.position == self.raise_at[0]:
            raise self.raise_at[1]
        if self.position >= len(self.items):
            raise StopIteration
        item = self.items[self.position]
        self.position += 1
        return item

    async def aclose(self) -> None:
        """Count the call; raise ``close_error`` if set."""
        self.closes += 1
        self.closed.set()
        if self.close_error is not None:
            raise self.close_error


class NoClose:
    """An iterable with neither ``close()`` nor ``aclose()``: left alone by the drivers."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def __iter__(self) -> Iterator[Any]:
        return iter(self.items)


# ------------------------------------------------------------------ the fault server

# fault -> what the server does after the response headers
FAULTS = ("ok", "stall_first", "stall_middle", "drip", "reset", "eof", "error_event", "think")


@dataclass
class Served:
    """One request the fault server handled: its path, and when it saw the client go away."""

    fault: str
    path: str = ""
    disconnected: threading.Event = field(default_factory=threading.Event)
    finished: threading.Event = field(default_factory=threading.Event)


def frames(name: str) -> list[bytes]:
    """The body of corpus stream ``name`` cut into its frames (SSE events, AWS event-stream
    messages, JSON lines), which join back into the body."""
    data = body(name)
    if name.endswith(".eventstream"):
        out, at = [], 0
        while at < len(data):
            (total,) = struct.unpack(">I", data[at : at + 4])
            out.append(data[at : at + total])
            at += total
        return out
    sep = b"\n\n" if name.endswith(".sse") else b"\n"
    pieces = data.split(sep)
    out = [piece + sep for piece in pieces[:-1]]
    if pieces[-1]:
        out.append(pieces[-1])
    return out


def content_cut(name: str) -> int:
    """The byte offset just after the frame that carries the stream's first content (an
    event other than usage): what a client has once the first-event phase is over."""
    asm = StreamAssembler()
    offset = 0
    for frame in frames(name):
        offset += len(frame)
        if any(not isinstance(e, UsageReported) for e in asm.feed_bytes(frame)):
            return offset
    raise AssertionError(f"{name} carries no content")


def bookkeeping_cut(name: str) -> int:
    """The byte offset of the frame that carries the first content (what comes before it
    is bookkeeping: ``message_start``, an empty role delta, ``response.created``...)."""
    return content_cut(name) - len(frames(name)[_content_index(name)])


def _content_index(name: str) -> int:
    asm = StreamAssembler()
    for index, frame in enumerate(frames(name)):
        if any(not isinstance(e, UsageReported) for e in asm.feed_bytes(frame)):
            return index
    raise AssertionError(f"{name} carries no content")


def eventstream_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message with string headers (the binary framing of Bedrock)."""
    head = b"".join(
        struct.pack(">B", len(key))
        + key.encode()
        + b"\x07"
        + struct.pack(">H", len(value))
        + value.encode()
        for key, value in headers.items()
    )
    total = 12 + len(head) + len(payload) + 4
    prelude = struct.pack(">II", total, len(head))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


_ANTHROPIC_ERROR = (
    b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error",'
    b'"message":"Overloaded"}}\n\n'
)
_OPENAI_ERROR = b'data: {"error":{"message":"The server had an error","type":"server_error"}}\n\n'
_RESPONSES_ERROR = (
    b'event: error\ndata: {"type":"error","code":"server_error","message":"The server had '
    b'an error","param":null,"sequence_number":99}\n\n'
)
_GEMINI_ERROR = b'data: {"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}\n\n'
_BEDROCK_ERROR = eventstream_message(
    {
        ":message-type": "exception",
        ":exception-type": "throttlingException",
        ":content-type": "application/json",
    },
    b'{"message":"Too many requests, please wait before trying again."}',
)


def error_event(name: str) -> bytes:
    """The provider's own error event for the wire format of corpus stream ``name``."""
    if name.startswith("anthropic"):
        return _ANTHROPIC_ERROR
    if name.startswith("openai-responses"):
        return _RESPONSES_ERROR
    if name.startswith("gemini"):
        return _GEMINI_ERROR
    if name.endswith(".eventstream"):
        return _BEDROCK_ERROR
    return _OPENAI_ERROR


class FaultServer:
    """Serves ``POST /<fault>/<corpus stream>/...`` as that stream's body, with the fault
    (anything after the stream's name, such as the SDK's own path, is ignored).

    * ``ok``: the whole body, in pieces;
    * ``cuts:N,M,...``: the whole body, in separate TCP segments cut at those offsets;
    * ``stall_first``: headers, then nothing until the client leaves (or ``MAX_STALL``);
    * ``stall_middle``: the body up to its first content event (Anthropic's
      ``message_start`` and first text delta...), then a stall;
    * ``drip``: the same start, then the rest a few bytes every ``drip_gap`` seconds;
    * ``reset``: the same start, then a TCP reset;
    * ``eof``: the same start, then a clean close (no terminal event);
    * ``error_event``: the same start, then the provider's error event, then the close;
    * ``think``: the bookkeeping before the first content, a silence of ``think_gap``
      seconds (a reasoning model thinking), then the rest.

    Event-stream recordings (``.eventstream``) go out as ``application/vnd.amazon.eventstream``
    with chunked transfer encoding, as AWS sends them (``eof`` then lacks the last chunk).
    """

    def __init__(self, *, drip_gap: float = 0.05, think_gap: float = 0.6) -> None:
        self.drip_gap = drip_gap
        self.think_gap = think_gap
        self.served: list[Served] = []
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self.port = self._sock.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def url(self, fault: str, name: str) -> str:
        """The base address that serves ``name`` with ``fault``."""
        return f"http://127.0.0.1:{self.port}/{fault}/{name}"

    def close(self) -> None:
        """Stop accepting; handlers end by themselves within ``MAX_STALL``."""
        self._stop.set()
        self._thread.join(2)
        self._sock.close()

    def _accept(self) -> None:
        deadline = time.monotonic() + 600  # the server stops by itself whatever happens
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self._sock.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _read_request(self, conn: socket.socket) -> str:
        conn.settimeout(MAX_STALL)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return ""
            data += chunk
        head, rest = data.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        length = 0
        for line in lines[1:]:
            key, _, value = line.partition(":")
            if key.strip().lower() == "content-length":
                length = int(value.strip())
        while len(rest) < length:
            chunk = conn.recv(65536)
            if not chunk:
                break
            rest += chunk
        return lines[0].split(" ")[1]

    def _wait_for_client(self, conn: socket.socket, served: Served, seconds: float) -> bool:
        """Stall up to ``seconds``; whether the client disconnected meanwhile."""
        ready, _, _ = select.select([conn], [], [], seconds)
        if not ready:
            return False
        try:
            gone = conn.recv(1) == b""
        except OSError:
            gone = True
        if gone:
            served.disconnected.set()
        return gone

    def _handle(self, conn: socket.socket) -> None:
        served = Served(fault="?")
        try:
            path = self._read_request(conn)
            if not path:
                return
            parts = path.strip("/").split("/")
            fault, name = parts[0], parts[1]
            served.fault, served.path = fault, path
            self.served.append(served)
            data = body(name)
            # AWS answers with chunked transfer encoding (urllib3 then hands each chunk to
            # botocore as it comes); the SSE servers here close-delimit the body
            chunked = name.endswith(".eventstream")

            def send(piece: bytes) -> None:
                if chunked and piece:
                    piece = b"%x\r\n" % len(piece) + piece + b"\r\n"
                conn.sendall(piece)

            conn.sendall(
                b"HTTP/1.1 200 OK\r\ncontent-type: "
                + (b"application/vnd.amazon.eventstream" if chunked else b"text/event-stream")
                + (b"\r\ntransfer-encoding: chunked" if chunked else b"")
                + b"\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n"
            )
            first = content_cut(name)
            if fault == "ok":
                for start in range(0, len(data), 211):
                    send(data[start : start + 211])
            elif fault.startswith("cuts:"):
                # separate TCP segments at the given offsets (a short pause after each, so
                # the client's reads see them apart)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                offsets = [int(c) for c in fault[5:].split(",") if c]
                for piece in splits(data, offsets):
                    send(piece)
                    time.sleep(0.002)
            elif fault == "stall_first":
                self._wait_for_client(conn, served, MAX_STALL)
            elif fault == "stall_middle":
                send(data[:first])
                self._wait_for_client(conn, served, MAX_STALL)
            elif fault == "think":
                cut = bookkeeping_cut(name)
                send(data[:cut])
                if not self._wait_for_client(conn, served, self.think_gap):
                    send(data[cut:])
            elif fault == "drip":
                until = time.monotonic() + MAX_STALL
                send(data[:first])
                for start in range(first, len(data), 64):
                    if time.monotonic() > until:
                        break
                    send(data[start : start + 64])
                    if self._wait_for_client(conn, served, self.drip_gap):
                        break
            elif fault == "reset":
                send(data[:first])
                time.sleep(0.05)
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif fault == "eof":
                send(data[:first])
            elif fault == "error_event":
                send(data[:first] + error_event(name))
            complete = fault in ("ok", "error_event", "think") or fault.startswith("cuts:")
            if chunked and complete:
                conn.sendall(b"0\r\n\r\n")
            if fault != "reset" and (complete or fault == "eof"):
                conn.shutdown(socket.SHUT_WR)
                self._wait_for_client(conn, served, 2.0)
        except OSError:
            served.disconnected.set()  # the client reset the connection
        finally:
            conn.close()
            served.finished.set()


def content_index(items: list[Any]) -> int:
    """How many of ``items`` (payloads) come up to and including the first one that carries
    content (more than usage): a source blocked there is past the first-event phase."""
    asm = StreamAssembler()
    for index, item in enumerate(items):
        if any(not isinstance(e, UsageReported) for e in asm.feed(item)):
            return index + 1
    raise AssertionError("no content in these payloads")


def first_event_usage(name: str) -> int:
    """The input tokens in the first event (``message_start``) of an Anthropic stream."""
    first = payloads(name)[0]
    tokens: int = first["message"]["usage"]["input_tokens"]
    return tokens


def corpus_path(name: str) -> Path:
    """Where corpus stream ``name`` is stored."""
    return CORPUS_DIR / "streams" / name
