"""Quirk profiles by name: every profile that a built-in format's encoder declares.

A simulator given its own table of formats (``Simulator(formats=...)``) reads that
table's profiles instead (``WireFormats.profiles``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ._formats import WIRES
from ._scenario_types import Profile

__all__ = ["PROFILES", "Profile", "parse_profiles"]

PROFILES: Mapping[str, Profile] = WIRES.profiles
"""Every quirk profile the simulator can apply to the built-in formats, by name."""


def parse_profiles(spec: str | Sequence[str] | None) -> tuple[Profile, ...]:
    """The profiles named by ``spec`` (one name, a list of names, or ``None``)."""
    return WIRES.parse_profiles(spec)
