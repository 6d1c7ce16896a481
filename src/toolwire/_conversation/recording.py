"""``record`` / ``arecord``: read a source to its proper end and keep what arrived as a
:class:`~toolwire.Recording`; a stream that did not end properly raises, nothing kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypedDict

from .._core.events import StreamEvent
from .._core.recording import Recording, joined
from .._core.signatures import check_keywords
from .._errors import UsageError
from .._streaming.drivers import AsyncStreamHandle, StreamHandle
from .._turn.identity import request_identity
from ..accounting.pricing import Prices

__all__ = ["arecord", "record"]

_BYTES = (bytes, bytearray, memoryview)


class RecordOptions(TypedDict, total=False):
    """The keyword arguments of :func:`record` / :func:`arecord`, all optional, as for
    ``toolwire.stream``: ``format`` (``"auto"``), ``first_event_timeout``,
    ``idle_timeout``, ``total_timeout``, ``prices``, ``output``, ``output_tool``; and
    ``on_event``, called with every event as it arrives."""

    format: str
    first_event_timeout: float | None
    idle_timeout: float | None
    total_timeout: float | None
    prices: Prices | None
    output: Any
    output_tool: str | None
    on_event: Callable[[StreamEvent], object] | None


class _Tape:
    """The items a stream read, as they came (bytes copied: a source may reuse a buffer)."""

    def __init__(self) -> None:
        self.items: list[Any] = []

    def __call__(self, item: Any) -> None:
        self.items.append(bytes(item) if isinstance(item, _BYTES) else item)

    def recording(self, handle: StreamHandle | AsyncStreamHandle) -> Recording:
        response = handle.response  # raises the stream's StreamError
        assert response.format is not None
        http = handle.http_response
        return Recording(
            format=response.format,
            items=joined([_payload(item) for item in self.items]),
            request_identity=request_identity(getattr(http, "request", None)),
        )


def _payload(item: Any) -> Any:
    """``item`` as a JSON value: bytes as they are, an SDK object in its wire shape (the
    fields the server sent, by their wire names, as the assembler reads it)."""
    if isinstance(item, (bytes, str)):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump) and not isinstance(item, dict):
        try:
            item = dump(mode="json", exclude_unset=True, by_alias=True)
        except TypeError:
            item = dump()
    try:
        return json.loads(json.dumps(item, allow_nan=False))
    except (TypeError, ValueError):
        raise UsageError(
            f"the source gave a {type(item).__name__} that JSON cannot carry, so it cannot "
            "be recorded"
        ) from None


def _handle_options(options: RecordOptions, name: str) -> tuple[dict[str, Any], Any]:
    check_keywords(RecordOptions, options, name)
    given: dict[str, Any] = dict(options)
    on_event = given.pop("on_event", None)
    if on_event is not None and not callable(on_event):
        raise UsageError(f"on_event must be a callable taking an event, not {on_event!r}")
    given["json_events"] = on_event is not None
    return given, on_event


def record(source: Any, **options: Any) -> Recording:
    """Read ``source`` (anything ``toolwire.stream`` accepts) to its end and return what
    arrived as a :class:`Recording`; ``run_turn(recording, ...)`` replays it with the same
    calls, ids and idempotency keys. A stream that did not end properly raises its
    :class:`StreamError` and nothing is recorded. The keyword arguments are those of
    :class:`RecordOptions`."""
    settings, on_event = _handle_options(options, "record")  # type: ignore[arg-type]
    tape = _Tape()
    handle = StreamHandle(source, **settings)
    handle._flow.tap = tape
    with handle:
        for event in handle:
            if on_event is not None:
                on_event(event)
    return tape.recording(handle)


async def arecord(source: Any, **options: Any) -> Recording:
    """The asyncio twin of :func:`record`: ``recording = await toolwire.arecord(source)``
    for anything ``toolwire.astream`` accepts."""
    settings, on_event = _handle_options(options, "arecord")  # type: ignore[arg-type]
    tape = _Tape()
    handle = AsyncStreamHandle(source, **settings)
    handle._flow.tap = tape
    async with handle:
        async for event in handle:
            if on_event is not None:
                on_event(event)
    return tape.recording(handle)
