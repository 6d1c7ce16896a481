"""``record`` / ``arecord``: read a source to its proper end and keep what arrived as a
:class:`~toolwire.Recording`; a stream that did not end properly raises, nothing kept."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .._core.events import StreamEvent
from .._core.recording import Recording, joined
from .._errors import UsageError
from .._streaming.drivers import (
    FIRST_EVENT_TIMEOUT,
    IDLE_TIMEOUT,
    AsyncStreamHandle,
    StreamHandle,
)
from .._turn.identity import request_identity
from ..accounting.pricing import Prices

__all__ = ["arecord", "record"]

_BYTES = (bytes, bytearray, memoryview)


OnEvent = Callable[[StreamEvent], object]


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


def _checked(on_event: OnEvent | None) -> OnEvent | None:
    if on_event is not None and not callable(on_event):
        raise UsageError(f"on_event must be a callable taking an event, not {on_event!r}")
    return on_event


def record(
    source: Any,
    *,
    format: str = "auto",
    first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
    idle_timeout: float | None = IDLE_TIMEOUT,
    total_timeout: float | None = None,
    prices: Prices | None = None,
    output: Any = None,
    output_tool: str | None = None,
    on_event: OnEvent | None = None,
) -> Recording:
    """Read ``source`` (anything ``toolwire.stream`` accepts) to its end and return what
    arrived as a :class:`Recording`; ``run_turn(recording, ...)`` replays it with the same
    calls, ids and idempotency keys. A stream that did not end properly raises its
    :class:`StreamError` and nothing is recorded. The keyword arguments are those of
    ``toolwire.stream``, and ``on_event``, called with every event as it arrives."""
    on_event = _checked(on_event)
    tape = _Tape()
    handle = StreamHandle(
        source,
        format=format,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
        prices=prices,
        output=output,
        output_tool=output_tool,
        json_events=on_event is not None,
    )
    handle._flow.tap = tape
    with handle:
        for event in handle:
            if on_event is not None:
                on_event(event)
    return tape.recording(handle)


async def arecord(
    source: Any,
    *,
    format: str = "auto",
    first_event_timeout: float | None = FIRST_EVENT_TIMEOUT,
    idle_timeout: float | None = IDLE_TIMEOUT,
    total_timeout: float | None = None,
    prices: Prices | None = None,
    output: Any = None,
    output_tool: str | None = None,
    on_event: OnEvent | None = None,
) -> Recording:
    """The asyncio twin of :func:`record`: ``recording = await toolwire.arecord(source)``
    for anything ``toolwire.astream`` accepts."""
    on_event = _checked(on_event)
    tape = _Tape()
    handle = AsyncStreamHandle(
        source,
        format=format,
        first_event_timeout=first_event_timeout,
        idle_timeout=idle_timeout,
        total_timeout=total_timeout,
        prices=prices,
        output=output,
        output_tool=output_tool,
        json_events=on_event is not None,
    )
    handle._flow.tap = tape
    async with handle:
        async for event in handle:
            if on_event is not None:
                on_event(event)
    return tape.recording(handle)
