"""JSON text of trees of plain values, by the standard library's C encoder built once.

Strategy. ``json.dumps(value, **options)`` builds a ``JSONEncoder`` per call, and
``JSONEncoder.encode`` builds its C encoder per call (``iterencode``): for the small values
on the path of every executed call (arguments, call keys, results) that set-up costs more
than the encoding. :func:`encoder` builds the C encoder once, for one set of options, and
returns a function that gives exactly ``json.dumps(value, **options)``'s text (the same C
code, the same float ``repr``, the same escapes).

What it leaves out: the circular-reference check (``check_circular``). Every caller hands
it values it has already walked or built (scanned arguments, fresh ``json_value`` trees,
lists of strings), where a cycle cannot be; a cycle would raise ``RecursionError`` instead
of ``ValueError``. Not thread-sensitive: the C encoder keeps no state between calls when it
has no markers. On an interpreter without the C encoder (``json.encoder.c_make_encoder``
is ``None``), the functions are ``json.dumps`` with the options.

Cost: one C call per value; no Python frame per container.
"""

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
