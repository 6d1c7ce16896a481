"""The formats the simulator serves, and where: all read from the provider registry.

A format is served when its provider declares an encoder (``Provider.encoder``); the
encoder lives in the provider's package and is imported on its first use, so building
scenarios imports none. Its endpoints (``Provider.endpoints``: the provider's own paths,
whether they stream, their framing) route requests to it, and ``Provider.base_path`` gives
the base URL its SDK takes. Nothing here names a provider, so one registered at run time
(``_providers.register``) is served like a built-in one.

Routing asks every served provider's endpoints in the registry's order, first match wins
(the built-ins' paths do not overlap): O(number of endpoints) pattern matches per request.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import UnknownFormat
from .._providers import Provider, names, provider
from .._wire_writing import Encoder, Framing

__all__ = ["FORMATS", "Route", "base_urls", "encoder_for", "route", "served", "served_formats"]


def served_formats() -> tuple[str, ...]:
    """The canonical names of every registered format that has an encoder, now."""
    return tuple(name for name in names() if provider(name).encoder is not None)


FORMATS: tuple[str, ...] = served_formats()
"""The built-in formats the simulator writes (:func:`served_formats` is the live list)."""


def served(format: str) -> Provider:
    """The provider of ``format`` (a name or an alias) if the simulator serves it;
    :class:`~toolwire.UnknownFormat` otherwise."""
    try:
        entry = provider(format)
    except UnknownFormat:
        entry = None
    if entry is None or entry.encoder is None:
        known = ", ".join(served_formats())
        raise UnknownFormat(f"the simulator has no encoder for {format!r}; known: {known}")
    return entry


def encoder_for(format: str) -> Encoder:
    """A fresh encoder of ``format`` (a name or an alias); :class:`~toolwire.UnknownFormat`
    for a name no provider has or a provider without an encoder."""
    make = served(format).encoder
    assert make is not None  # served() refuses a provider without one
    return make()


def base_urls(root: str) -> dict[str, str]:
    """What each served format's SDK takes as its base URL, for a server at ``root``."""
    return {name: root + provider(name).base_path for name in served_formats()}


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request goes: its format, whether it streams (``None``: the body's
    ``"stream"`` says, ``stream_default`` without one), the model the path names and the
    framing of the stream when the endpoint fixes one."""

    format: str
    stream: bool | None
    model: str | None = None
    framing: Framing | None = None
    stream_default: bool = False


def route(method: str, path: str, query: str) -> Route | None:
    """The route of a request, or ``None`` when no served endpoint takes it (only POST)."""
    if method != "POST":
        return None
    for name in served_formats():
        for endpoint in provider(name).endpoints:
            segments = endpoint.match(path, query)
            if segments is not None:
                return Route(
                    name,
                    endpoint.stream,
                    segments.get("model"),
                    endpoint.framing,
                    endpoint.stream_default,
                )
    return None
