"""JSON text of trees of plain values, exactly as ``json.dumps`` with the same options writes it."""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from functools import partial
from typing import Any

__all__ = ["encoder"]

_make = getattr(json.encoder, "c_make_encoder", None)


def encoder(
    *, ensure_ascii: bool, separators: tuple[str, str], sort_keys: bool, allow_nan: bool = True
) -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=..., separators=..., sort_keys=..., allow_nan=...)``
    as a function of ``value`` alone (the circular check left out, see the module notes)."""
    if _make is None:  # pragma: no cover - an interpreter without the C encoder
        return partial(
            json.dumps,
            ensure_ascii=ensure_ascii,
            separators=separators,
            sort_keys=sort_keys,
            allow_nan=allow_nan,
        )
    item_separator, key_separator = separators
    chunks = _make(
        None,  # markers: no circular check
        json.JSONEncoder().default,  # raises TypeError for what JSON cannot carry
        json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring,
        None,  # indent
        key_separator,
        item_separator,
        sort_keys,
        False,  # skipkeys
        allow_nan,
    )
    join = "".join

    def encode(value: Any) -> str:
        return join(chunks(value, 0))

    return encode
