"""JSON Pointers (RFC 6901) and the ``$ref`` URI fragments that carry them (RFC 3986).

The one place pointer text is parsed, formatted and followed, so every caller agrees on the
edge cases. Failures raise :class:`~toolwire.ToolDefinitionError`. Linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, unquote_to_bytes

from .._errors import ToolDefinitionError

__all__ = [
    "escape_token",
    "format_fragment",
    "format_pointer",
    "parse_fragment",
    "parse_pointer",
    "resolve",
    "resolve_ref",
    "unescape_token",
]

_INDEX = re.compile(r"0|[1-9][0-9]*")
_BAD_TILDE = re.compile(r"~(?![01])")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# RFC 3986 fragment characters that need no encoding: pchar / "/" / "?" minus "%" (which
# always starts an escape) and minus "#" (which cannot appear in a fragment).
_FRAGMENT_SAFE = "/?:@!$&'()*+,;=-._~"


def escape_token(token: str) -> str:
    """Escape one reference token for a pointer: ``~`` becomes ``~0``, ``/`` becomes ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def unescape_token(text: str) -> str:
    """Read one escaped reference token: ``~1`` is ``/``, ``~0`` is ``~``.

    Raises :class:`ToolDefinitionError` for a ``~`` not followed by ``0`` or ``1``.
    """
    if "~" not in text:
        return text
    if _BAD_TILDE.search(text):
        raise ToolDefinitionError(
            f"the JSON pointer token {text!r} has a '~' that is not '~0' or '~1'"
        )
    # ~1 first: "~01" is "~1" escaped, never "/".
    return text.replace("~1", "/").replace("~0", "~")


def parse_pointer(pointer: str) -> tuple[str, ...]:
    """The reference tokens of a JSON Pointer: ``""`` is ``()``, ``"/a/b~1c"`` is ``("a", "b/c")``.

    Raises :class:`ToolDefinitionError` for text that is not a pointer.
    """
    if not isinstance(pointer, str):
        raise ToolDefinitionError(f"a JSON pointer must be a string, not {pointer!r}")
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise ToolDefinitionError(f"the JSON pointer {pointer!r} must be empty or start with '/'")
    return tuple(unescape_token(part) for part in pointer[1:].split("/"))


def format_pointer(tokens: Sequence[str | int]) -> str:
    """The JSON Pointer text for ``tokens`` (array indexes may be given as ``int``)."""
    return "".join("/" + escape_token(str(token)) for token in tokens)


def parse_fragment(ref: str) -> tuple[str, ...]:
    """The reference tokens of a ``$ref`` fragment: ``"#/$defs/a%25b"`` is ``("$defs", "a%b")``.

    ``ref`` must be a same-document reference: ``#`` followed by a (possibly percent-encoded)
    JSON Pointer. Raises :class:`ToolDefinitionError` otherwise, saying whether it points to
    another document or uses an anchor.
    """
    if not isinstance(ref, str):
        raise ToolDefinitionError(f"a $ref must be a string, not {ref!r}")
    if not ref.startswith("#"):
        raise ToolDefinitionError(
            f"the $ref {ref!r} points to another document (only '#...' references within "
            "the schema are resolved here)"
        )
    text = _percent_decode(ref[1:], ref)
    if text and not text.startswith("/"):
        raise ToolDefinitionError(
            f"the $ref {ref!r} names an anchor, not a JSON pointer (only '#' and '#/...' "
            "are resolved here)"
        )
    return parse_pointer(text)


def format_fragment(tokens: Sequence[str | int]) -> str:
    """The ``$ref`` fragment for ``tokens``: ``#`` and the pointer, percent-encoded as needed."""
    return "#" + quote(format_pointer(tokens), safe=_FRAGMENT_SAFE)


def _percent_decode(text: str, ref: str) -> str:
    if "%" not in text:
        return text
    if _PERCENT.search(text):
        raise ToolDefinitionError(f"the $ref {ref!r} has a '%' that does not start '%XX'")
    try:
        return unquote_to_bytes(text).decode("utf-8")
    except UnicodeDecodeError:
        raise ToolDefinitionError(
            f"the $ref {ref!r} percent-encodes bytes that are not UTF-8"
        ) from None


def resolve(document: Any, tokens: Sequence[str]) -> Any:
    """The value that ``tokens`` name inside ``document`` (``()`` is the document itself).

    Raises :class:`ToolDefinitionError` naming the first token that does not resolve.
    """
    current = document
    for depth, token in enumerate(tokens):
        if isinstance(current, dict):
            if token in current:
                current = current[token]
                continue
            problem = f"the object has no key {token!r}"
        elif isinstance(current, list):
            if _INDEX.fullmatch(token) and int(token) < len(current):
                current = current[int(token)]
                continue
            problem = f"{token!r} is not an index of this array of {len(current)} items"
        else:
            problem = f"a {type(current).__name__} has no member {token!r}"
        where = format_pointer(tokens[:depth]) or "the root"
        raise ToolDefinitionError(
            f"the JSON pointer {format_pointer(tokens)!r} does not resolve: at {where}, {problem}"
        )
    return current


def resolve_ref(document: Any, ref: str) -> Any:
    """Follow a same-document ``$ref`` (``"#"``, ``"#/$defs/Item"``) from ``document``'s root.

    ``$id`` inside the document is not consulted: the pointer is read from the root, as a
    document without embedded resources means it. Raises :class:`ToolDefinitionError` for a
    reference to another document, an anchor, or a pointer that does not resolve.
    """
    return resolve(document, parse_fragment(ref))
