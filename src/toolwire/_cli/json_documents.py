"""The command line's ``--json`` documents: a ``Response``, a ``StreamError`` and store records.

Every field of a result type appears under its own name; a ``StreamError`` document has an
``error`` member (its class name). :func:`dumps` always succeeds and writes pure ASCII.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from .._errors import ProviderError, StreamError, StreamLimitExceeded, StreamTimeout

__all__ = ["dumps", "error_document", "plain"]


def plain(value: Any) -> Any:
    """``value`` with every dataclass turned into a dict of its fields, every mapping into
    a dict and every tuple into a list, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def error_document(exc: StreamError) -> dict[str, Any]:
    """The JSON document of a stream that did not end properly."""
    doc: dict[str, Any] = {
        "error": type(exc).__name__,
        "message": str(exc),
        "partial": plain(exc.partial),
    }
    if isinstance(exc, ProviderError):
        doc["provider_error"] = plain(exc.error)
    if isinstance(exc, StreamLimitExceeded):
        doc["limit"] = exc.limit
        doc["value"] = exc.value
    if isinstance(exc, StreamTimeout):
        doc["kind"] = exc.kind
    return doc


def dumps(value: Any, *, indent: int | None = 2) -> str:
    """``value`` (made :func:`plain`) as ASCII JSON text, indented by default."""
    return json.dumps(plain(value), indent=indent, ensure_ascii=True, default=str)
