"""The HTTP side of the simulator: an ASGI app served by uvicorn in a background thread.

Routes come from the providers' declared endpoints; each request is recorded, checked,
answered from the script and written following its faults' byte plan. O(1) per request
besides encoding.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import random
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._faults import BytePlan, apply_event_faults, byte_plan, has, http_status
from ._formats import Route, WireFormats
from ._recordings import RecordedBody
from ._scenario import Script
from ._scenario_types import Fault, ScenarioResponse
from ._wire_writing import (
    CONTENT_TYPES,
    EncodeOptions,
    Encoder,
    ErrorReply,
    Framing,
    Unencodable,
    serialise,
    truncate_arguments,
)

__all__ = ["ConnectionRecord", "RecordedRequest", "SimulatorApp", "Tracker", "counting_protocol"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_log = logging.getLogger("toolwire.testing")
_DELIBERATE_CUT: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolwire_simulator_cut", default=False
)
_UNFINISHED = "ASGI callable returned without completing response."


class _DropDeliberateCuts(logging.Filter):
    """Drops uvicorn's "returned without completing" record for the simulator's own cuts."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep every record except that one, when the cut was deliberate."""
        return not (record.msg == _UNFINISHED and _DELIBERATE_CUT.get())


_FILTER_LOCK = threading.Lock()


def install_log_filter() -> None:
    """Add the filter to uvicorn's error logger once per process."""
    logger = logging.getLogger("uvicorn.error")
    with _FILTER_LOCK:
        if not any(isinstance(f, _DropDeliberateCuts) for f in logger.filters):
            logger.addFilter(_DropDeliberateCuts())


# ------------------------------------------------------------------- bookkeeping


@dataclass
class ConnectionRecord:
    """One TCP connection: its peer, when it opened and closed, what it carried."""

    peer: tuple[str, int] | None
    opened: float
    closed: float | None = None
    requests: int = 0
    body_bytes_sent: int = 0
    """Body bytes handed to the transport while the connection was open."""


class Tracker:
    """Open and closed connections, updated from the server thread, read from any thread."""

    def __init__(self, keep: int | None = None) -> None:
        self._lock = threading.Lock()
        self._open: dict[tuple[str, int] | None, ConnectionRecord] = {}
        self.connections: list[ConnectionRecord] = []
        self.keep = keep
        self.changed = threading.Condition(self._lock)

    def opened(self, peer: tuple[str, int] | None) -> None:
        """A connection was accepted."""
        with self._lock:
            record = ConnectionRecord(peer=peer, opened=time.monotonic())
            self._open[peer] = record
            self.connections.append(record)
            if self.keep is not None and len(self.connections) > self.keep:
                del self.connections[: len(self.connections) - self.keep]
            self.changed.notify_all()

    def closed(self, peer: tuple[str, int] | None) -> None:
        """A connection ended, whoever closed it; its body bytes are logged (debug)."""
        with self._lock:
            record = self._open.pop(peer, None)
            if record is not None:
                record.closed = time.monotonic()
            self.changed.notify_all()
        if record is not None:
            _log.debug(
                "connection %s closed after %d requests and %d body bytes",
                peer,
                record.requests,
                record.body_bytes_sent,
            )

    def record(self, peer: tuple[str, int] | None) -> ConnectionRecord | None:
        """The open connection of ``peer``, if it is still open."""
        with self._lock:
            return self._open.get(peer)

    @property
    def open_count(self) -> int:
        """How many connections are open now."""
        with self._lock:
            return len(self._open)

    def wait_closed(self, timeout: float) -> bool:
        """Wait until no connection is open; whether that happened within ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._open:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.changed.wait(left)
            return True


def counting_protocol(tracker: Tracker) -> type[Any]:
    """uvicorn's h11 protocol class, reporting each connection to ``tracker``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class CountingH11Protocol(H11Protocol):
        """H11Protocol that tells the tracker when a connection opens and closes."""

        _peer: tuple[str, int] | None = None

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            """Count the connection and switch Nagle off, then let uvicorn take it."""
            sock = transport.get_extra_info("socket")
            if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
                # uvicorn writes headers and body apart; with Nagle on, the body waits for
                # the client's delayed ACK of the headers on every response
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            peer = transport.get_extra_info("peername")
            self._peer = (str(peer[0]), int(peer[1])) if peer else None
            tracker.opened(self._peer)
            super().connection_made(transport)  # type: ignore[arg-type]

        def connection_lost(self, exc: Exception | None) -> None:
            """Record the close, then let uvicorn clean up."""
            tracker.closed(self._peer)
            super().connection_lost(exc)

    return CountingH11Protocol


@dataclass
class RecordedRequest:
    """One request the simulator received, and what it answered.

    ``body`` is the parsed JSON (or the raw bytes when the body was not JSON). ``served``
    says what answered: ``"response"`` (a scripted response; ``response`` holds it with
    the ids the encoder minted), ``"recording"`` (``recording`` is its path), ``"fault"``
    (an ``http:STATUS`` fault), ``"refused"`` (the provider's checks; ``error`` is the
    message), ``"exhausted"`` (no scripted response left), ``"unencodable"`` or
    ``"not-found"``. ``body_bytes`` is the size of the body planned, ``bytes_sent`` what
    was handed to the transport while the connection was open; ``completed`` is whether
    the body was finished, ``client_closed`` whether the client went away before that.
    """

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    format: str | None = None
    stream: bool = False
    status: int = 200
    served: str = ""
    response: ScenarioResponse | None = None
    recording: Path | None = None
    faults: tuple[str, ...] = ()
    error: str | None = None
    body_bytes: int = 0
    bytes_sent: int = 0
    completed: bool = False
    client_closed: bool = False
    peer: tuple[str, int] | None = None
    notes: list[str] = field(default_factory=list)
    """What the faults did: which event was duplicated, where the body was cut..."""
    finished: threading.Event = field(default_factory=threading.Event, repr=False)
    """Set when the server is done with the request (answered, cut or abandoned)."""


# ---------------------------------------------------------------------------- app


@dataclass
class _Reply:
    """What to write: status, headers and the body in writes, with the faults' plan."""

    status: int
    content_type: str
    writes: list[bytes]
    plan: BytePlan = field(default_factory=BytePlan)
    headers: dict[str, str] = field(default_factory=dict)
    chunked: bool = True


@dataclass(frozen=True, slots=True)
class _Served:
    """A scripted response about to be encoded, with what encoding it takes: the
    request's options, the faults and the two seeded choices (encoding and faults)."""

    response: ScenarioResponse
    options: EncodeOptions
    faults: tuple[Fault, ...]
    rng: random.Random
    fault_rng: random.Random


def _wants_stream(target: Route, body: dict[str, Any]) -> bool:
    """Whether to stream: the endpoint says, else the body's ``stream`` (the endpoint's
    default without one)."""
    if target.stream is not None:
        return target.stream
    return body.get("stream", target.stream_default) is True


def _requested_model(target: Route, body: dict[str, Any]) -> str | None:
    """The model the path names, else the body's ``model`` when it is a string."""
    model = body.get("model")
    return target.model or (model if isinstance(model, str) else None)


def _encode_options(
    body: dict[str, Any], model: str | None, response: ScenarioResponse
) -> EncodeOptions:
    """The encoding options a request asks for (its model, its ``stream_options``)."""
    options_usage = body.get("stream_options")
    return EncodeOptions(
        model=model or "simulated-model",
        include_usage=isinstance(options_usage, dict)
        and options_usage.get("include_usage") is True,
        profiles=response.profiles,
        request=body,
    )


def _stream_writes(
    encoder: Encoder, served: _Served, framing: Framing, notes: list[str]
) -> list[bytes]:
    """The writes of a streamed response, its event faults applied (noted in ``notes``)."""
    frames = encoder.stream(served.response, rng=served.rng, options=served.options)
    frames = apply_event_faults(
        frames,
        served.faults,
        encoder=encoder,
        rng=served.fault_rng,
        options=served.options,
        notes=notes,
    )
    return serialise(frames, framing)


def _body_document(encoder: Encoder, served: _Served) -> str:
    """The JSON body of a response that is not streamed (cut to half by a
    ``malformed-chunk`` fault)."""
    document = json.dumps(encoder.body(served.response, options=served.options), ensure_ascii=False)
    if has(served.faults, "malformed-chunk"):
        document = document[: max(1, len(document) // 2)]
    return document


def _json_reply(reply: ErrorReply) -> _Reply:
    data = json.dumps(reply.body).encode()
    headers = dict(reply.headers)
    if reply.status == 429:
        headers.setdefault("retry-after", "1")
    return _Reply(reply.status, "application/json", [data], headers=headers, chunked=False)


_BATCH = 16 * 1024


def coalesce(writes: list[bytes], plan: BytePlan) -> tuple[list[bytes], BytePlan]:
    """Join consecutive writes (up to 16 KiB) where nothing happens between them.

    Without a drip or a stall between two events, writing them apart changes nothing a
    client can observe (TCP is a byte stream) but costs a server round per event; a stall
    boundary starts a new write, and the cut is a byte offset, so every fault lands where
    it did. Linear in the number of writes.
    """
    if plan.drip is not None or len(writes) < 2:
        return writes, plan
    out: list[bytes] = []
    stalls: dict[int, float] = {}
    batch = bytearray()
    for index, data in enumerate(writes):
        if batch and (index in plan.stalls or len(batch) + len(data) > _BATCH):
            out.append(bytes(batch))
            batch = bytearray()
        if index in plan.stalls:
            stalls[len(out)] = plan.stalls[index]
        batch += data
    if batch:
        out.append(bytes(batch))
    return out, BytePlan(plan.stall_first, stalls, plan.drip, plan.cut_at)


def _recording_writes(recording: RecordedBody) -> list[bytes]:
    """A recording's bytes in event-sized writes (so a stall lands between events)."""
    data = recording.data
    if recording.framing in ("sse", "ndjson"):
        separator = b"\n\n" if recording.framing == "sse" else b"\n"
        out, start = [], 0
        while start < len(data):
            end = data.find(separator, start)
            end = len(data) if end < 0 else end + len(separator)
            out.append(data[start:end])
            start = end
        return out
    return [data[i : i + 512] for i in range(0, len(data), 512)]


class SimulatorApp:
    """The ASGI application: routes, checks, encodes, injects faults and records."""

    def __init__(
        self,
        script: Script,
        *,
        seed: int,
        faults: Iterable[Fault],
        tracker: Tracker,
        keep: int | None = None,
        wires: WireFormats,
    ) -> None:
        self.wires = wires  # the formats served: routes, checks, encoders
        self.keep = keep  # how many requests (and served responses) to remember; None: all
        self.script = script
        self.seed = seed
        self.faults = tuple(faults)
        self.tracker = tracker
        self.requests: list[RecordedRequest] = []
        self.served_calls: dict[str, set[str]] = {}
        self._serial = 0
        self._lock = threading.Lock()
        self.stopping: asyncio.Event | None = None  # set by the server thread at start

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """ASGI entry point (HTTP only; lifespan is switched off)."""
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        gone = asyncio.Event()

        async def watch() -> None:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    gone.set()
                    return

        watcher = asyncio.ensure_future(watch())
        try:
            await self._handle(scope, b"".join(chunks), send, gone)
        finally:
            watcher.cancel()

    async def _handle(self, scope: Scope, raw: bytes, send: Send, gone: asyncio.Event) -> None:
        method = scope["method"]
        path = scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        headers: dict[str, str] = {}
        for key, value in scope.get("headers", []):
            name = key.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[name] = f"{headers[name]}, {text}" if name in headers else text
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        client = scope.get("client")
        peer = (str(client[0]), int(client[1])) if client else None
        record = RecordedRequest(method, path, query, headers, body, peer=peer)
        self.requests.append(record)
        if self.keep is not None and len(self.requests) > self.keep:
            del self.requests[: len(self.requests) - self.keep]
        try:
            await self._serve(record, method, path, query, headers, body, send, gone)
        finally:
            record.finished.set()

    async def _serve(
        self,
        record: RecordedRequest,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        body: Any,
        send: Send,
        gone: asyncio.Event,
    ) -> None:
        peer = record.peer
        connection = self.tracker.record(peer)
        if connection is not None:
            connection.requests += 1
        if method == "GET" and path == "/":
            host = headers.get("host", "127.0.0.1")
            listing = {"toolwire-simulator": self.wires.base_urls(f"http://{host}")}
            reply = _Reply(200, "application/json", [json.dumps(listing).encode()], chunked=False)
            record.served = "index"
            await self._write(reply, send, record, gone)
            return
        target = self.wires.route(method, path, query)
        if target is None:
            record.status, record.served = 404, "not-found"
            message = f"toolwire simulator: no endpoint for {method} {path}"
            await self._write(_json_reply(ErrorReply(404, {"error": message})), send, record, gone)
            return
        encoder = self.wires.encoder_for(target.format)
        record.format = target.format
        reply = self._answer(target, encoder, body, record)
        await self._write(reply, send, record, gone)

    def _answer(
        self, target: Route, encoder: Encoder, body: Any, record: RecordedRequest
    ) -> _Reply:
        if not isinstance(body, dict):
            record.status, record.served = 400, "refused"
            record.error = "the request body is not a JSON object"
            return _json_reply(encoder.error_body(400, record.error))
        stream = _wants_stream(target, body)
        record.stream = stream
        problem = self.wires.check_request(target.format, body, self._calls_of)
        if problem is not None:
            record.status, record.served, record.error = 400, "refused", problem
            return _json_reply(encoder.error_body(400, problem))
        model = _requested_model(target, body)
        entry = self.script.take(model)
        if entry is None:
            record.status, record.served = 500, "exhausted"
            record.error = (
                "toolwire simulator: no scripted response left for this request; add one "
                "with Simulator.add_response() or add_recording()"
            )
            return _json_reply(encoder.error_body(500, record.error))
        serial = self._next_serial()
        faults = entry.faults + self.faults
        record.faults = tuple(str(f) for f in faults)
        fault_rng = random.Random(f"{self.seed}/{serial}/faults")
        status = http_status(faults)
        if status is not None:
            record.status, record.served = status, "fault"
            message = "Rate limit reached; retry later." if status == 429 else "Simulated error."
            return _json_reply(encoder.error_body(status, message))
        if isinstance(entry, RecordedBody):
            record.served, record.recording = "recording", entry.path
            writes = _recording_writes(entry)
            plan = byte_plan(faults, [len(w) for w in writes], fault_rng)
            return _Reply(200, entry.content_type, writes, plan)
        rng = random.Random(f"{self.seed}/{serial}/encode")
        response = self._served_response(entry, encoder, rng, faults, fault_rng)
        record.response = response
        served = _Served(
            response=response,
            options=_encode_options(body, model, response),
            faults=faults,
            rng=rng,
            fault_rng=fault_rng,
        )
        return self._encode(target, encoder, served, stream=stream, record=record)

    def _next_serial(self) -> int:
        """The number of the next response served (it seeds the response's choices)."""
        with self._lock:
            serial = self._serial
            self._serial += 1
        return serial

    def _served_response(
        self,
        entry: ScenarioResponse,
        encoder: Encoder,
        rng: random.Random,
        faults: tuple[Fault, ...],
        fault_rng: random.Random,
    ) -> ScenarioResponse:
        """The scripted response with its ids, cut short by a ``length`` fault; its calls
        remembered for the requests that continue it."""
        response = encoder.ids(entry, rng=rng)
        if has(faults, "length"):
            response = response.with_changes(finish="length")
            if encoder.text_arguments:
                response = truncate_arguments(response, fault_rng)
        if response.response_id:
            self.served_calls[response.response_id] = {c.id for c in response.tool_calls if c.id}
            if self.keep is not None and len(self.served_calls) > self.keep:
                del self.served_calls[next(iter(self.served_calls))]
        return response

    def _encode(
        self,
        target: Route,
        encoder: Encoder,
        served: _Served,
        *,
        stream: bool,
        record: RecordedRequest,
    ) -> _Reply:
        """The reply of a scripted response: a stream with the event faults applied, or
        one JSON body; the byte faults' plan for writing it."""
        faults = served.faults
        try:
            if stream:
                framing = target.framing or encoder.framing
                writes = _stream_writes(encoder, served, framing, record.notes)
                content_type = CONTENT_TYPES[framing]
            else:
                for kind in ("no-terminal", "duplicate-chunk"):
                    if has(faults, kind):
                        record.notes.append(f"{kind}: no effect on a non-streamed body")
                if has(faults, "error-event"):
                    record.status = 500
                    return _json_reply(encoder.error_body(500, "The server had an error."))
                writes = [_body_document(encoder, served).encode()]
                content_type = "application/json"
        except Unencodable as exc:
            record.status, record.served, record.error = 500, "unencodable", str(exc)
            return _json_reply(encoder.error_body(500, f"toolwire simulator: {exc}"))
        record.served = "response"
        plan = byte_plan(faults, [len(w) for w in writes], served.fault_rng)
        return _Reply(200, content_type, writes, plan, chunked=stream)

    def _calls_of(self, response_id: str) -> set[str] | None:
        return self.served_calls.get(response_id)

    # ---------------------------------------------------------------- writing

    async def _pause(self, seconds: float, gone: asyncio.Event) -> bool:
        """Wait ``seconds``; True when the client left or the server stops meanwhile."""
        if seconds <= 0:
            return gone.is_set()
        waiters = [asyncio.ensure_future(gone.wait())]
        if self.stopping is not None:
            waiters.append(asyncio.ensure_future(self.stopping.wait()))
        done, pending = await asyncio.wait(
            waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED
        )
        for waiter in pending:
            waiter.cancel()
        return bool(done)

    async def _write(
        self, reply: _Reply, send: Send, record: RecordedRequest, gone: asyncio.Event
    ) -> None:
        record.status = reply.status
        total = sum(len(w) for w in reply.writes)
        record.body_bytes = total
        headers = [(b"content-type", reply.content_type.encode())]
        if reply.chunked:
            headers.append((b"cache-control", b"no-cache"))
        else:
            headers.append((b"content-length", str(total).encode()))
        headers += [(k.lower().encode(), v.encode()) for k, v in reply.headers.items()]
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        plan = reply.plan
        if plan.cut_at is not None:
            record.notes.append(f"cut after {plan.cut_at} of {total} body bytes")
        for index, seconds in sorted(plan.stalls.items()):
            record.notes.append(
                f"stall of {seconds:g} s before write {index} of {len(reply.writes)}"
            )
        if await self._pause(plan.stall_first, gone):
            return self._abandon(record, gone)
        writes, plan = coalesce(reply.writes, plan)
        offset = 0
        for index, data in enumerate(writes):
            if index in plan.stalls and await self._pause(plan.stalls[index], gone):
                return self._abandon(record, gone)
            if plan.cut_at is not None and offset + len(data) >= plan.cut_at:
                if not await self._send(data[: plan.cut_at - offset], send, record, plan, gone):
                    return self._abandon(record, gone)
                _DELIBERATE_CUT.set(True)
                return None  # uvicorn closes the connection: the body stays unfinished
            final = plan.cut_at is None and index == len(writes) - 1
            if not await self._send(data, send, record, plan, gone, final=final):
                return self._abandon(record, gone)
            offset += len(data)
        if plan.cut_at is not None:  # an empty body cut at 0: still no terminating chunk
            _DELIBERATE_CUT.set(True)
            return None
        if not record.completed:  # no body, or an empty last write
            record.completed = True
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        return None

    def _abandon(self, record: RecordedRequest, gone: asyncio.Event) -> None:
        """Stop writing: the client left, or the simulator is stopping (the cut is ours)."""
        record.client_closed = gone.is_set() or self.tracker.record(record.peer) is None
        if not record.client_closed:
            record.notes.append("abandoned: the simulator stopped before the body ended")
        _DELIBERATE_CUT.set(True)

    async def _send(
        self,
        data: bytes,
        send: Send,
        record: RecordedRequest,
        plan: BytePlan,
        gone: asyncio.Event,
        *,
        final: bool = False,
    ) -> bool:
        """Write ``data`` (dripped if the plan says so), ending the body with its last piece
        when ``final``; False if the client left.

        The record is brought up to date *before* each piece goes out: the transport may
        deliver it at once, and a client that has its whole response may read
        ``Simulator.requests`` before this coroutine runs again. A piece the connection
        dropped is taken back out.
        """
        if not data:
            return not gone.is_set()
        step = len(data)
        if plan.drip is not None:
            step = max(1, int(plan.drip / 10))
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            last = final and start + step >= len(data)
            connection = self.tracker.record(record.peer)
            if gone.is_set() or connection is None:
                return False
            connection.body_bytes_sent += len(piece)
            record.bytes_sent += len(piece)
            record.completed = last
            await send({"type": "http.response.body", "body": piece, "more_body": not last})
            if self.tracker.record(record.peer) is None:  # closed while we wrote: uvicorn
                connection.body_bytes_sent -= len(piece)  # dropped the piece
                record.bytes_sent -= len(piece)
                record.completed = False
                return False
            if last:
                return True
            if plan.drip is not None and await self._pause(len(piece) / plan.drip, gone):
                return False
        return True
