"""What a live source is: how a driver enters it, reads it and closes it (attribute inspection
only: no I/O, no SDK import).

A source of the wrong kind is refused with a ``SettingsError``. O(1) per call.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sized
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import SettingsError

__all__ = ["Enterable", "Mode", "Readable", "recognise"]

Mode = Literal["sync", "async"]

_BYTES = (bytes, bytearray, memoryview)

# whole (non-streamed) responses of the SDKs, by class name -> the call that streams instead
_WHOLE_RESPONSES = {
    "ChatCompletion": "client.chat.completions.create(..., stream=True)",
    "ParsedChatCompletion": "client.chat.completions.stream(...)",
    "Response": "client.responses.create(..., stream=True) or client.responses.stream(...)",
    "ParsedResponse": "client.responses.stream(...)",
    "Message": "client.messages.create(..., stream=True) or client.messages.stream(...)",
    "ParsedMessage": "client.messages.stream(...)",
    "GenerateContentResponse": "client.models.generate_content_stream(...)",
}
_STREAMING_CALLS = (
    "pass the result of a streaming call: create(..., stream=True), an SDK's .stream(...) "
    "manager, generate_content_stream(...), boto3's converse_stream(...), or an httpx "
    "response opened with stream=True"
)


@dataclass(frozen=True, slots=True)
class Enterable:
    """A source to enter before reading: a context manager, or an awaitable to await
    (``astream()`` only). What entering gives is recognised again."""

    obj: Any
    awaitable: bool


@dataclass(frozen=True, slots=True)
class Readable:
    """A source recognised for reading.

    ``items`` is the object to iterate, or, with ``as_bytes``, the httpx response whose body
    bytes are read; ``close`` is the object to close when done (``None``: left alone, e.g.
    what a manager yielded, which its exit closes); ``http`` is the httpx response under
    the source, if any (its socket bounds a blocked read); ``in_memory`` says reading never
    blocks.
    """

    items: Any
    as_bytes: bool
    close: Any
    http: Any
    in_memory: bool


def recognise(obj: Any, mode: Mode, *, entered: bool = False) -> Enterable | Readable:
    """How the driver of ``mode`` reads ``obj``; ``entered`` marks what a manager yielded.
    Raises :class:`SettingsError` for anything that is not a stream it can read."""
    _refuse_single_value(obj)
    if inspect.isawaitable(obj):
        return _awaitable(obj, mode)
    if isinstance(obj, Mapping):
        return _converse_stream(obj, mode, entered=entered)
    closer = None if entered else obj
    raw = _raw_stream(obj)
    http = _http_response(raw)
    if _reads_body(raw, http, mode):
        return Readable(http, True, closer, http, False)
    if hasattr(obj, "__aiter__" if mode == "async" else "__iter__"):
        in_memory = mode == "sync" and isinstance(obj, Sized)
        return Readable(raw, False, closer, http, in_memory)
    if _is_manager(obj, mode):
        return Enterable(obj, awaitable=False)
    raise _wrong_kind(obj, mode, http)


def _reads_body(raw: Any, http: Any, mode: Mode) -> bool:
    """Whether the driver reads the bytes of the HTTP response under the source (the
    source is that response, or its body is not consumed yet) rather than the SDK's
    parsed events."""
    readable = http is not None and _body_readable(http, mode)
    return readable and (raw is http or not http.is_stream_consumed)


def _awaitable(obj: Any, mode: Mode) -> Enterable:
    """An awaitable source (an SDK's un-awaited ``create(...)``): async code awaits it."""
    if mode == "async":
        return Enterable(obj, awaitable=True)
    raise SettingsError(
        f"a {type(obj).__name__} is awaitable: it belongs to async code; use toolwire.astream()"
    )


def _converse_stream(obj: Mapping[str, Any], mode: Mode, *, entered: bool) -> Readable:
    """boto3's converse_stream() response: {"stream": EventStream, "ResponseMetadata": ...}."""
    events = obj["stream"]
    if mode == "async":
        raise SettingsError(
            "boto3's converse_stream() response is a sync stream; use toolwire.stream()"
        )
    return Readable(events, False, None if entered else events, None, False)


def _is_manager(obj: Any, mode: Mode) -> bool:
    """Whether ``obj`` is a context manager of ``mode`` (``async with`` or ``with``)."""
    enter, exit_ = ("__aenter__", "__aexit__") if mode == "async" else ("__enter__", "__exit__")
    return hasattr(obj, enter) and hasattr(obj, exit_)


def _refuse_single_value(obj: Any) -> None:
    """A dict, string, bytes object or SDK model is one payload, not a stream of them."""
    name = type(obj).__name__
    if isinstance(obj, Mapping) and "stream" not in obj:
        hint = (
            "for boto3 call converse_stream(...), not converse(...)"
            if "output" in obj
            else "pass an iterable of payloads (e.g. [payload]) or of bytes chunks"
        )
        raise SettingsError(f"the source is a single {name}, not a stream; {hint}")
    if isinstance(obj, (str, *_BYTES)):
        raise SettingsError(
            f"the source is a single {name}, not a stream of them; "
            "pass an iterable of payloads (e.g. [payload]) or of bytes chunks"
        )
    if callable(getattr(obj, "model_dump", None)):
        call = _WHOLE_RESPONSES.get(name)
        hint = f"stream it with {call}" if call is not None else _STREAMING_CALLS
        raise SettingsError(f"the source is a whole {name}, not a stream: {hint}")


def _raw_stream(obj: Any) -> Any:
    """The SDK's raw stream under one of its helper streams (openai's ChatCompletionStream
    and ResponseStream, anthropic's MessageStream), or ``obj`` itself."""
    raw = getattr(obj, "_raw_stream", None)
    if raw is not None and _http_response(raw) is not None:
        return raw
    return obj


def _http_response(obj: Any) -> Any:
    """The httpx(-like) response carrying ``obj``: ``obj`` itself, or an SDK stream's
    ``.response``; ``None`` for anything else."""
    for candidate in (obj, getattr(obj, "response", None)):
        if isinstance(getattr(candidate, "extensions", None), Mapping) and hasattr(
            candidate, "is_stream_consumed"
        ):
            return candidate
    return None


def _body_readable(response: Any, mode: Mode) -> bool:
    """Whether the driver of ``mode`` can read the body of an httpx ``response`` (a body
    opened by a ``Client`` reads only sync, by an ``AsyncClient`` only async)."""
    body = getattr(response, "stream", None)
    if mode == "async":
        return callable(getattr(response, "aiter_bytes", None)) and hasattr(body, "__aiter__")
    return callable(getattr(response, "iter_bytes", None)) and hasattr(body, "__iter__")


def _wrong_kind(obj: Any, mode: Mode, http: Any) -> SettingsError:
    name = type(obj).__name__
    if mode == "sync" and (
        http is not None or hasattr(obj, "__aiter__") or hasattr(obj, "__aenter__")
    ):
        if http is obj:
            return SettingsError(
                "the httpx response was opened by an AsyncClient; use toolwire.astream()"
            )
        return SettingsError(f"a {name} is an async source; use toolwire.astream()")
    if mode == "async" and (
        http is not None or hasattr(obj, "__iter__") or hasattr(obj, "__enter__")
    ):
        return SettingsError(
            f"a {name} is a sync source: it would block the event loop; "
            "use toolwire.stream(), or an async source"
        )
    return SettingsError(f"cannot stream from a {name}: {_STREAMING_CALLS}")
