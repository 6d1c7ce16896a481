"""Tool definitions in each wire format: the provider table's ``definition`` per tool."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._core.providers import Formats, ToolSpec
from .._errors import ToolDefinitionError
from .._providers import FORMATS

__all__ = ["tool_definitions"]


def tool_definitions(
    tools: Iterable[ToolSpec], format: str, *, strict: bool = False, formats: Formats = FORMATS
) -> list[dict[str, Any]]:
    """The tools' definitions in ``format``, as the request's tools field takes them: one
    per tool, or as the provider groups them (see the format's provider for its shape).

    ``formats`` is the table ``format`` is looked up in (a test passes its own). Raises
    :class:`UnknownFormat` for a format no provider has and :class:`ToolDefinitionError`
    for a schema the format cannot express.
    """
    entry = formats.provider(format)
    if not isinstance(strict, bool):
        raise ToolDefinitionError(f"strict must be True or False, not {strict!r}")
    try:
        definitions = [entry.definition(tool, strict) for tool in tools]
    except RecursionError:
        raise ToolDefinitionError(f"a tool schema is nested too deeply for {entry.name}") from None
    group = entry.group_definitions
    return definitions if group is None else group(definitions)
