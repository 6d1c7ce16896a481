"""Rich tool results: :class:`Image` and :class:`File`, and their stored JSON form.

A rich result is an ``Image``, a ``File``, or a list mixing them with ``str`` text. It is
stored as JSON: ``{"$toolwire": "image", "media_type", "data": base64}`` (a file adds
``"filename"``), a list as an array of those and strings. A plain value that could be read
as one (a dict with a ``"$toolwire"`` key, or a list holding one) is stored wrapped as
``{"$toolwire": "json", "value": ...}``, so every stored text reads back as what was stored.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["File", "Image"]

MAX_BINARY_BYTES: Final = 10 * 1024 * 1024
"""The largest total size (bytes, before base64) of the images and files of one tool
result; a larger result is a ``failed`` outcome (the executor's ``max_binary_bytes``)."""

MARK: Final = "$toolwire"
_MARK_TEXT: Final = json.dumps(MARK)


@dataclass(frozen=True, slots=True)
class Image:
    """An image a tool returns: raw ``data`` bytes and their ``media_type``
    (``"image/png"``, ``"image/jpeg"``, ``"image/gif"``, ``"image/webp"``)."""

    data: bytes
    media_type: str

    def __post_init__(self) -> None:
        _check(self, "Image")

    def __repr__(self) -> str:
        return f"Image({self.media_type!r}, {len(self.data)} bytes)"


@dataclass(frozen=True, slots=True)
class File:
    """A file a tool returns: raw ``data`` bytes, their ``media_type`` (``"application/pdf"``,
    ``"text/plain"``...) and an optional ``filename``."""

    data: bytes
    media_type: str
    filename: str | None = None

    def __post_init__(self) -> None:
        _check(self, "File")
        if self.filename is not None and not isinstance(self.filename, str):
            raise TypeError(f"File filename must be a str or None, not {type(self.filename)}")

    def __repr__(self) -> str:
        return f"File({self.media_type!r}, {self.filename!r}, {len(self.data)} bytes)"


Binary = Image | File
Part = str | Image | File


def _check(item: Image | File, what: str) -> None:
    if not isinstance(item.data, bytes):
        raise TypeError(f"{what} data must be bytes, not {type(item.data).__name__}")
    if not isinstance(item.media_type, str) or "/" not in item.media_type:
        raise TypeError(
            f"{what} media_type must be a type like 'image/png', not {item.media_type!r}"
        )


def rich_parts(value: Any) -> tuple[Part, ...] | None:
    """The parts of a rich result (an ``Image``, a ``File``, or a list or tuple of text,
    images and files holding at least one of them), ``None`` for any other value."""
    if isinstance(value, (Image, File)):
        return (value,)
    if (
        isinstance(value, (list, tuple))
        and any(isinstance(v, (Image, File)) for v in value)
        and all(isinstance(v, (str, Image, File)) for v in value)
    ):
        return tuple(value)
    return None


def binary_size(parts: tuple[Part, ...]) -> int:
    """The total bytes of the images and files among ``parts``."""
    return sum(len(p.data) for p in parts if not isinstance(p, str))


def _part_json(part: Part) -> Any:
    if isinstance(part, str):
        return part
    out: dict[str, Any] = {
        MARK: "image" if isinstance(part, Image) else "file",
        "media_type": part.media_type,
        "data": base64.b64encode(part.data).decode("ascii"),
    }
    if isinstance(part, File) and part.filename is not None:
        out["filename"] = part.filename
    return out


def rich_json(parts: tuple[Part, ...], *, single: bool) -> Any:
    """The JSON value stored for ``parts`` (one object when ``single``, else an array)."""
    if single and len(parts) == 1:
        return _part_json(parts[0])
    return [_part_json(p) for p in parts]


def _marked(value: Any) -> bool:
    return isinstance(value, dict) and MARK in value


def needs_wrapping(value: Any) -> bool:
    """Whether a plain JSON ``value`` would read back as a rich result (see the module
    docstring), so it is stored wrapped."""
    if _marked(value):
        return True
    return isinstance(value, list) and any(_marked(v) for v in value)


def wrap(value: Any) -> dict[str, Any]:
    """The stored form of a plain JSON value that :func:`needs_wrapping`."""
    return {MARK: "json", "value": value}


def may_be_rich(text: str) -> bool:
    """A cheap test: whether stored JSON ``text`` can hold a rich or wrapped value."""
    return _MARK_TEXT in text


def _read_part(item: Any) -> Part:
    if isinstance(item, str):
        return item
    kind = item.get(MARK)
    try:
        data = base64.b64decode(item["data"], validate=True)
        if kind == "image":
            return Image(data, item["media_type"])
        if kind == "file":
            return File(data, item["media_type"], item.get("filename"))
    except (KeyError, TypeError, binascii.Error) as exc:
        raise ValueError(f"a stored {kind} is malformed: {exc}") from None
    raise ValueError(f"unknown stored part {kind!r}")


def read_stored(value: Any) -> Any:
    """The value a stored JSON value stands for: the ``Image``, ``File`` or list of parts
    of a rich result, the inner value of a wrapped one, else ``value`` itself. Raises
    ``ValueError`` for a malformed rich form."""
    if _marked(value):
        if value[MARK] == "json":
            return value["value"]
        return _read_part(value)
    if isinstance(value, list) and any(_marked(v) for v in value):
        return [_read_part(v) for v in value]
    return value


def decode_result(text: str) -> Any:
    """The value of stored result JSON ``text`` (``json.loads``, then :func:`read_stored`
    when it may be rich)."""
    value = json.loads(text)
    return read_stored(value) if may_be_rich(text) else value


def fallback_text(parts: tuple[Part, ...]) -> str:
    """Text for formats that carry no images or files: the text parts as they are, each
    image or file as ``[image/png, 1234 bytes]`` / ``[file report.pdf, application/pdf,
    1234 bytes]``, one per line."""
    lines = []
    for part in parts:
        if isinstance(part, str):
            lines.append(part)
        elif isinstance(part, Image):
            lines.append(f"[{part.media_type}, {len(part.data)} bytes]")
        else:
            name = f"file {part.filename}, " if part.filename else "file, "
            lines.append(f"[{name}{part.media_type}, {len(part.data)} bytes]")
    return "\n".join(lines)


def data_url(part: Binary) -> str:
    """``data:<media type>;base64,<data>``."""
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def b64(part: Binary) -> str:
    """The part's data as base64 text."""
    return base64.b64encode(part.data).decode("ascii")
