"""JSON-safe dicts of a :class:`Turn` and its :class:`EarlyAbort`, and back."""

from __future__ import annotations

from dataclasses import MISSING, fields
from typing import TYPE_CHECKING, Any

from .._core.json_safe import DICT_VERSION, check_version, jsonable
from .._core.outcome import outcome_from_dict, outcome_to_dict
from .._core.response import (
    partial_from_dict,
    partial_to_dict,
    response_from_dict,
    response_to_dict,
    usage_from_dict,
    usage_to_dict,
)
from .early_abort import EarlyAbort

if TYPE_CHECKING:
    from .run import Turn

__all__ = ["turn_from_dict", "turn_to_dict"]


_ABORT_FIELDS = tuple(field.name for field in fields(EarlyAbort))
_ABORT_REQUIRED = tuple(field.name for field in fields(EarlyAbort) if field.default is MISSING)


def _abort_to_dict(abort: EarlyAbort) -> dict[str, Any]:
    data = {name: getattr(abort, name) for name in _ABORT_FIELDS}
    data["path"] = None if abort.path is None else list(abort.path)
    data["partial"] = None if abort.partial is None else partial_to_dict(abort.partial)
    return data


def _abort_from_dict(data: dict[str, Any]) -> EarlyAbort:
    path = data.get("path")
    partial = data.get("partial")
    return EarlyAbort(
        **{name: data[name] for name in _ABORT_REQUIRED},
        path=None if path is None else tuple(path),
        offset=data.get("offset"),
        partial=None if partial is None else partial_from_dict(partial),
    )


def turn_to_dict(turn: Turn) -> dict[str, Any]:
    """The JSON-safe dict of a :class:`Turn` (see :meth:`Turn.to_dict`)."""
    return {
        "version": DICT_VERSION,
        "response": response_to_dict(turn.response),
        "outcomes": [outcome_to_dict(outcome) for outcome in turn.outcomes],
        "messages": jsonable(turn.messages),
        "usage": usage_to_dict(turn.usage),
        "done": turn.done,
        "aborted": None if turn.aborted is None else _abort_to_dict(turn.aborted),
        "identity": turn.identity,
        "output": jsonable(turn.output),
    }


def turn_from_dict(cls: type[Turn], data: Any) -> Turn:
    """The :class:`Turn` :func:`turn_to_dict` wrote."""
    data = check_version(data, "Turn")
    aborted = data.get("aborted")
    return cls(
        response=response_from_dict(data["response"]),
        outcomes=[outcome_from_dict(item) for item in data["outcomes"]],
        messages=list(data["messages"]),
        usage=usage_from_dict(data.get("usage")),
        done=bool(data["done"]),
        aborted=None if aborted is None else _abort_from_dict(aborted),
        identity=data.get("identity"),
        output=data.get("output"),
    )
