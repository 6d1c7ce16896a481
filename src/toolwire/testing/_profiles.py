"""Quirk profiles by name: every profile that a served format's encoder declares.

:data:`PROFILES` is a live, read-only view, so a format registered at run time brings its
own profiles.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from .._errors import UsageError
from ._formats import encoder_for, served_formats
from ._scenario_types import Profile

__all__ = ["PROFILES", "Profile", "parse_profiles"]


class ProfileTable(Mapping[str, Profile]):
    """Every quirk profile declared by a served format's encoder, by name (read-only)."""

    def _table(self) -> dict[str, Profile]:
        return {p.name: p for name in served_formats() for p in encoder_for(name).profiles}

    def __getitem__(self, name: str) -> Profile:
        """The profile called ``name`` (``KeyError`` for an unknown one)."""
        return self._table()[name]

    def __iter__(self) -> Iterator[str]:
        """The profile names, format by format in registry order."""
        return iter(self._table())

    def __len__(self) -> int:
        """How many profiles the served formats declare."""
        return len(self._table())

    def __repr__(self) -> str:
        return f"ProfileTable({sorted(self._table())})"


PROFILES: Mapping[str, Profile] = ProfileTable()
"""Every quirk profile the simulator can apply, by name."""


def parse_profiles(spec: str | Sequence[str] | None) -> tuple[Profile, ...]:
    """The profiles named by ``spec`` (one name, a list of names, or ``None``)."""
    if spec is None:
        return ()
    names = [spec] if isinstance(spec, str) else list(spec)
    table = dict(PROFILES)  # one read of the encoders for the whole spec
    out = []
    for name in names:
        profile = table.get(name) if isinstance(name, str) else None
        if profile is None:
            known = ", ".join(sorted(table))
            raise UsageError(f"unknown quirk profile {name!r}; known: {known}")
        out.append(profile)
    return tuple(out)
