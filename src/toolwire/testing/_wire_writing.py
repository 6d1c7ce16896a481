"""Writing wire formats: the encoder interface and the sans-IO pieces every encoder shares.

Encoders are pure (no I/O, no clock): every choice comes from the ``rng`` they are handed,
so a seed gives the same bytes; faults act on their frames before :func:`serialise` writes
them. Linear in the size of the response.
"""

from __future__ import annotations

import json
import random
import string
import struct
import zlib
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

if TYPE_CHECKING:
    from ._scenario_types import Profile, ScenarioCall, ScenarioResponse

__all__ = [
    "EncodeOptions",
    "Encoder",
    "ErrorReply",
    "Frame",
    "Framing",
    "IdStyle",
    "ProviderEncoder",
    "TypedEvents",
    "Unencodable",
    "argument_object",
    "check_profiles",
    "eventstream_message",
    "finish_name",
    "mint",
    "no_refusal",
    "pieces",
    "serialise",
    "truncate_arguments",
    "typed_event",
    "with_ids",
]

Framing = Literal["sse", "ndjson", "json-array", "aws-eventstream"]

CONTENT_TYPES: dict[Framing, str] = {
    "sse": "text/event-stream; charset=utf-8",
    "ndjson": "application/x-ndjson",
    "json-array": "application/json; charset=utf-8",
    "aws-eventstream": "application/vnd.amazon.eventstream",
}


_ALNUM = string.ascii_letters + string.digits


class Unencodable(Exception):
    """An encoder cannot write this response in its format (argument text that is not a
    JSON object for a format that sends arguments as objects, a quirk profile of another
    format). Internal: the server answers 500 with the message, so the test sees why."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One streamed event: its payload (a JSON object, or raw text written as it is), the
    SSE event name (``None``: a bare ``data:`` event), and whether it is one of the
    provider's terminal events (what ``no-terminal`` drops)."""

    payload: dict[str, Any] | str
    event: str | None = None
    terminal: bool = False
    headers: Mapping[str, str] | None = None  # AWS event-stream headers, when not an event

    def json(self) -> str:
        """The payload as text: compact JSON for objects, raw text as it is."""
        if isinstance(self.payload, str):
            return self.payload
        return json.dumps(self.payload, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class EncodeOptions:
    """What the request said that changes the encoding."""

    model: str = "simulated-model"
    include_usage: bool = False  # OpenAI chat ``stream_options.include_usage``
    profiles: tuple[Profile, ...] = ()
    request: Mapping[str, Any] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        """Whether the quirk profile ``name`` applies."""
        return any(p.name == name for p in self.profiles)


@dataclass(frozen=True, slots=True)
class ErrorReply:
    """An HTTP error response: status, JSON body and extra headers."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)


class Encoder(Protocol):
    """Turns a scenario response into one provider's wire shapes (see the module docs)."""

    format: str
    framing: Framing
    text_arguments: bool
    profiles: tuple[Profile, ...]

    def ids(self, response: ScenarioResponse, *, rng: random.Random) -> ScenarioResponse:
        """``response`` with every missing id (response, calls) minted in this provider's
        style; ids already given are kept."""
        ...

    def stream(
        self, response: ScenarioResponse, *, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The streamed events of ``response``, terminal ones marked."""
        ...

    def body(self, response: ScenarioResponse, *, options: EncodeOptions) -> dict[str, Any]:
        """The non-streamed response body."""
        ...

    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """The provider's in-stream error event."""
        ...

    def error_body(self, status: int, message: str) -> ErrorReply:
        """The provider's HTTP error reply for ``status``."""
        ...


class IdStyle(NamedTuple):
    """How a provider mints one kind of id: ``prefix`` plus ``length`` seeded characters of
    ``alphabet``."""

    prefix: str
    length: int
    alphabet: str = _ALNUM

    def mint(self, rng: random.Random) -> str:
        """A fresh id in this style, drawn from ``rng``."""
        return mint(rng, self.prefix, self.length, self.alphabet)


class ProviderEncoder(ABC):
    """An :class:`Encoder` built from what a provider's encoder declares.

    A subclass sets ``format`` and, where its format differs from the defaults, ``framing``,
    ``text_arguments``, ``profiles``, the styles of its call and response ids (``call_ids``
    left ``None``: the format sends no ids at all; ``response_ids`` left ``None``: its
    responses carry none) and ``refusals = False`` for a format without a refusal channel.
    It writes ``_frames``, ``_body``, ``error_event`` and ``error_body``; the checks every
    format makes before encoding (quirk profiles of another format, a refusal it cannot
    carry) are made here.
    """

    format: str
    framing: Framing = "sse"
    text_arguments = True
    profiles: tuple[Profile, ...] = ()
    call_ids: IdStyle | None = None
    response_ids: IdStyle | None = None
    refusals = True
    server_tools = False  # serves ``server_tools`` and ``finish="pause"`` (Anthropic's)

    def ids(self, response: ScenarioResponse, *, rng: random.Random) -> ScenarioResponse:
        """``response`` with every missing id (calls, then the response) minted in this
        format's styles; ids already given are kept."""
        calls, responses = self.call_ids, self.response_ids
        if calls is None:
            return response
        return with_ids(
            response,
            lambda call: calls.mint(rng),
            None if responses is None else lambda: responses.mint(rng),
        )

    def stream(
        self, response: ScenarioResponse, *, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The streamed events of ``response``, terminal ones marked; :class:`Unencodable`
        for a quirk profile of another format or a refusal the format cannot carry."""
        check_profiles(self.format, options)
        self._servable(response)
        return self._frames(response, rng, options)

    def body(self, response: ScenarioResponse, *, options: EncodeOptions) -> dict[str, Any]:
        """The non-streamed response body; :class:`Unencodable` for a refusal the format
        cannot carry."""
        self._servable(response)
        return self._body(response, options)

    def _servable(self, response: ScenarioResponse) -> None:
        if not self.refusals:
            no_refusal(self.format, response)
        if not self.server_tools and (response.server_tools or response.finish == "pause"):
            raise Unencodable(
                f"{self.format} serves no provider-run tools or paused turns (Anthropic does)"
            )

    @abstractmethod
    def _frames(
        self, response: ScenarioResponse, rng: random.Random, options: EncodeOptions
    ) -> list[Frame]:
        """The streamed events of a response this format can carry."""

    @abstractmethod
    def _body(self, response: ScenarioResponse, options: EncodeOptions) -> dict[str, Any]:
        """The non-streamed body of a response this format can carry."""

    @abstractmethod
    def error_event(self, *, rng: random.Random, options: EncodeOptions) -> Frame:
        """The provider's in-stream error event."""

    @abstractmethod
    def error_body(self, status: int, message: str) -> ErrorReply:
        """The provider's HTTP error reply for ``status``."""


def typed_event(kind: str, terminal: bool = False, **fields: Any) -> Frame:
    """The event ``{"type": kind, **fields}`` under the SSE name ``kind``: the shape of every
    event of the formats that name their events after their type (Anthropic, Cohere,
    OpenAI Responses)."""
    return Frame({"type": kind, **fields}, event=kind, terminal=terminal)


class TypedEvents(list[Frame]):
    """The frames of a format whose events are named after their ``type``, appended by
    :meth:`emit`."""

    def emit(self, kind: str, terminal: bool = False, **fields: Any) -> None:
        """Append :func:`typed_event` ``(kind, terminal, **fields)``."""
        self.append(typed_event(kind, terminal, **fields))


# ------------------------------------------------------------------------ helpers


def pieces(text: str, rng: random.Random, low: int, high: int) -> list[str]:
    """``text`` split into pieces of ``low`` to ``high`` characters (seeded); ``[]`` for
    an empty text. The pieces join to ``text``."""
    out: list[str] = []
    position = 0
    while position < len(text):
        size = rng.randint(low, high)
        out.append(text[position : position + size])
        position += size
    return out


def mint(rng: random.Random, prefix: str, length: int, alphabet: str = _ALNUM) -> str:
    """A seeded id: ``prefix`` plus ``length`` characters of ``alphabet``."""
    return prefix + "".join(rng.choice(alphabet) for _ in range(length))


def with_ids(
    response: ScenarioResponse,
    call_id: Callable[[ScenarioCall], str],
    response_id: Callable[[], str] | None = None,
) -> ScenarioResponse:
    """``response`` with ``call_id(call)`` for each call the scenario gave no id, then, for a
    format with response ids (``response_id`` given), ``response_id()`` if it gave none.
    Calls are minted first, so the seeded draws always come in that order."""
    calls = tuple(
        call if call.id else replace(call, id=call_id(call)) for call in response.tool_calls
    )
    if response_id is None:
        return response.with_changes(tool_calls=calls)
    return response.with_changes(
        response_id=response.response_id or response_id(), tool_calls=calls
    )


def finish_name(response: ScenarioResponse, *, length: str, tool_calls: str, stop: str) -> str:
    """The provider's name for how ``response`` ends: ``length`` at a token limit,
    ``tool_calls`` when it ends for its calls (and has some), else ``stop``."""
    kind = response.finish_kind
    if kind == "length":
        return length
    return tool_calls if kind == "tool_calls" and response.tool_calls else stop


def argument_object(call: ScenarioCall, why: str) -> dict[str, Any]:
    """The call's arguments as a JSON object; :class:`Unencodable`, saying ``why`` the
    format needs one, when its raw argument text is not one."""
    arguments = call.object_arguments()
    if arguments is None:
        raise Unencodable(f"the arguments of {call.name!r} are not a JSON object; {why}")
    return arguments


def check_profiles(format: str, options: EncodeOptions) -> None:
    """Refuse (``Unencodable``) the quirk profiles that do not shape ``format``."""
    foreign = [p.name for p in options.profiles if format not in p.formats]
    if foreign:
        raise Unencodable(
            f"the quirk profile(s) {', '.join(foreign)} shape {options.profiles[0].formats[0]} "
            f"streams, not {format}"
        )


def no_refusal(format: str, response: ScenarioResponse) -> None:
    """Refuse (``Unencodable``) a response with a refusal for ``format``, which has no
    refusal channel: a scenario serves the words as text there."""
    if response.refusal:
        raise Unencodable(f"{format} has no refusal channel; serve the words as text")


def truncate_arguments(response: ScenarioResponse, rng: random.Random) -> ScenarioResponse:
    """``response`` with the last call's argument text cut at a seeded point (at least one
    character kept, at least one dropped), as a token limit leaves it."""
    if not response.tool_calls:
        return response
    *head, last = response.tool_calls
    raw = last.raw_arguments
    if len(raw) < 2:
        return response
    cut = rng.randint(1, len(raw) - 1)
    return response.with_changes(
        tool_calls=(*head, replace(last, raw_arguments=raw[:cut], arguments=None))
    )


# ------------------------------------------------------------------------ framing


def serialise(frames: list[Frame], framing: Framing) -> list[bytes]:
    """One write per frame, in ``framing``; a JSON array gets its brackets and commas."""
    if framing == "sse":
        out = []
        for frame in frames:
            data = "\n".join(f"data: {line}" for line in frame.json().split("\n"))
            head = f"event: {frame.event}\n" if frame.event else ""
            out.append(f"{head}{data}\n\n".encode())
        return out
    if framing == "ndjson":
        return [f"{frame.json()}\n".encode() for frame in frames]
    if framing == "json-array":
        if not frames:
            return [b"[]"]
        writes = [("[" if i == 0 else ",\r\n") + f.json() for i, f in enumerate(frames)]
        writes[-1] += "]"
        return [w.encode() for w in writes]
    return [_eventstream(frame) for frame in frames]


def _eventstream(frame: Frame) -> bytes:
    headers = frame.headers
    if headers is None:
        headers = {
            ":event-type": frame.event or "",
            ":content-type": "application/json",
            ":message-type": "event",
        }
    return eventstream_message(headers, frame.json().encode())


def eventstream_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One AWS event-stream message: prelude (lengths and their CRC-32), string headers,
    payload and the CRC-32 of everything before it (the inverse of ``_eventstream``)."""
    block = bytearray()
    for name, value in headers.items():
        raw_name = name.encode()
        raw_value = value.encode()
        block += struct.pack(">B", len(raw_name)) + raw_name
        block += struct.pack(">BH", 7, len(raw_value)) + raw_value  # 7: string
    total = 12 + len(block) + len(payload) + 4
    prelude = struct.pack(">II", total, len(block))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + bytes(block) + payload
    return message + struct.pack(">I", zlib.crc32(message))
