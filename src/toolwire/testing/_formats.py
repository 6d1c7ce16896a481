"""The formats the simulator serves, read from the provider registry.

A format is served when its provider declares an encoder (``Provider.encoder``); the
encoder lives in the provider's package and is imported on its first use, so building
scenarios imports none. A provider registered at run time (``_providers.register``) is
served like a built-in one. Lookups are O(1) after the registry's first load.
"""

from __future__ import annotations

from .._errors import UnknownFormat
from .._providers import names, provider
from .._wire_writing import Encoder

__all__ = ["FORMATS", "encoder_for", "served_formats"]


def served_formats() -> tuple[str, ...]:
    """The canonical names of every registered format that has an encoder, now."""
    return tuple(name for name in names() if provider(name).encoder is not None)


FORMATS: tuple[str, ...] = served_formats()
"""The built-in formats the simulator writes (:func:`served_formats` is the live list)."""


def encoder_for(format: str) -> Encoder:
    """A fresh encoder of ``format`` (a name or an alias); :class:`~toolwire.UnknownFormat`
    for a name no provider has or a provider without an encoder."""
    try:
        entry = provider(format)
    except UnknownFormat:
        entry = None
    if entry is None or entry.encoder is None:
        known = ", ".join(served_formats())
        raise UnknownFormat(f"the simulator has no encoder for {format!r}; known: {known}")
    return entry.encoder()
