"""JSON-safe dicts of responses, partials and outcomes, and back: ``from_dict(to_dict(x))
== x`` for everything a stream assembles (structured output and non-JSON tool values come
back as their JSON form, as a replay from the store gives them)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from .._errors import UsageError
from .outcome import Outcome
from .response import (
    ContentPart,
    Cost,
    Partial,
    PartialCall,
    RejectedCall,
    Response,
    ToolCall,
    Usage,
)

__all__ = [
    "DICT_VERSION",
    "outcome_from_dict",
    "outcome_to_dict",
    "partial_from_dict",
    "partial_to_dict",
    "response_from_dict",
    "response_to_dict",
]

T = TypeVar("T")

DICT_VERSION = 1
"""The version the ``to_dict`` methods write; ``from_dict`` reads it and every older one."""


def check_version(data: Any, what: str) -> dict[str, Any]:
    """``data`` as the dict of a ``what``, refused (``UsageError``) when it is not one or
    comes from a newer toolwire."""
    if not isinstance(data, dict):
        raise UsageError(f"{what}.from_dict() takes a dict, not {type(data).__name__}")
    version = data.get("version", DICT_VERSION)
    if not isinstance(version, int) or isinstance(version, bool) or version > DICT_VERSION:
        raise UsageError(
            f"this {what} dict has version {version!r}; this toolwire reads up to {DICT_VERSION}"
        )
    return data


def read(reader: Callable[[Any], T], data: Any, what: str) -> T:
    """``reader(data)``, with a malformed dict refused as a ``UsageError``."""
    try:
        return reader(data)
    except UsageError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"not the dict of a {what}: {type(exc).__name__}: {exc}") from None


def jsonable(value: Any) -> Any:
    """A JSON value for ``value``: itself when it is one, a pydantic model's JSON form,
    else the value of its JSON text (``json.dumps`` with ``default=str`` refused)."""
    if value is None or type(value) in (str, int, float, bool):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError):
        raise UsageError(
            f"a {type(value).__name__} has no JSON form, so it cannot be kept in a dict"
        ) from None


def _map(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(value)


# ------------------------------------------------------------------------ usage


def _cost_to_dict(cost: Cost) -> dict[str, Any]:
    return {
        "input": cost.input,
        "output": cost.output,
        "cache_read": cost.cache_read,
        "cache_write": cost.cache_write,
        "total": cost.total,
        "currency": cost.currency,
        "model": cost.model,
        "estimated": cost.estimated,
        "missing": list(cost.missing),
    }


def _cost_from_dict(data: dict[str, Any]) -> Cost:
    return Cost(**{**data, "missing": tuple(data.get("missing", ()))})


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)


def usage_to_dict(usage: Usage | None) -> dict[str, Any] | None:
    """The dict of a :class:`Usage` (``None`` stays ``None``)."""
    if usage is None:
        return None
    out: dict[str, Any] = {name: getattr(usage, name) for name in _COUNTS}
    out.update(
        raw=_map(usage.raw),
        estimated=usage.estimated,
        estimated_fields=list(usage.estimated_fields),
        estimated_tokens=usage.estimated_tokens,
        estimate_method=usage.estimate_method,
        format=usage.format,
        cost=None if usage.cost is None else _cost_to_dict(usage.cost),
    )
    return out


def usage_from_dict(data: dict[str, Any] | None) -> Usage | None:
    """The :class:`Usage` :func:`usage_to_dict` wrote."""
    if data is None:
        return None
    cost = data.get("cost")
    return Usage(
        **{name: data.get(name) for name in _COUNTS},
        raw=dict(data.get("raw") or {}),
        estimated=bool(data.get("estimated", False)),
        estimated_fields=tuple(data.get("estimated_fields", ())),
        estimated_tokens=int(data.get("estimated_tokens", 0)),
        estimate_method=data.get("estimate_method"),
        format=data.get("format"),
        cost=None if cost is None else _cost_from_dict(cost),
    )


# ------------------------------------------------------------------- the parts


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
        "index": call.index,
        "metadata": _map(call.metadata),
        "synthetic_id": call.synthetic_id,
    }


def _rejected_to_dict(call: RejectedCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "raw_arguments": call.raw_arguments,
        "reason": call.reason,
        "index": call.index,
        "offset": call.offset,
        "metadata": _map(call.metadata),
        "synthetic_id": call.synthetic_id,
        "duplicate_key": None if call.duplicate_key is None else list(call.duplicate_key),
    }


def _rejected_from_dict(data: dict[str, Any]) -> RejectedCall:
    key = data.get("duplicate_key")
    return RejectedCall(**{**data, "duplicate_key": None if key is None else tuple(key)})


def _partial_call_to_dict(call: PartialCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "raw_arguments": call.raw_arguments,
        "index": call.index,
        "ended": call.ended,
        "synthetic_id": call.synthetic_id,
        "metadata": _map(call.metadata),
    }


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    return {"kind": part.kind, "text": part.text, "call": part.call, "data": _map(part.data)}


# ------------------------------------------------------------------- the wholes


def response_to_dict(response: Response) -> dict[str, Any]:
    """The JSON-safe dict of a :class:`Response` (see :meth:`Response.to_dict`)."""
    return {
        "version": DICT_VERSION,
        "text": response.text,
        "reasoning": response.reasoning,
        "tool_calls": [_call_to_dict(call) for call in response.tool_calls],
        "rejected": [_rejected_to_dict(call) for call in response.rejected],
        "finish_reason": response.finish_reason,
        "raw_finish_reason": response.raw_finish_reason,
        "usage": usage_to_dict(response.usage),
        "response_id": response.response_id,
        "model": response.model,
        "format": response.format,
        "created": response.created,
        "parts": [_part_to_dict(part) for part in response.parts],
        "output": jsonable(response.output),
    }


def response_from_dict(data: Any) -> Response:
    """The :class:`Response` :func:`response_to_dict` wrote."""
    data = check_version(data, "Response")
    return Response(
        text=data["text"],
        reasoning=data["reasoning"],
        tool_calls=[ToolCall(**call) for call in data["tool_calls"]],
        rejected=[_rejected_from_dict(call) for call in data["rejected"]],
        finish_reason=data["finish_reason"],
        raw_finish_reason=data.get("raw_finish_reason"),
        usage=usage_from_dict(data.get("usage")),
        response_id=data.get("response_id"),
        model=data.get("model"),
        format=data.get("format"),
        created=data.get("created"),
        parts=[ContentPart(**part) for part in data.get("parts", ())],
        output=data.get("output"),
    )


def partial_to_dict(partial: Partial) -> dict[str, Any]:
    """The JSON-safe dict of a :class:`Partial`."""
    return {
        "version": DICT_VERSION,
        "text": partial.text,
        "reasoning": partial.reasoning,
        "calls": [_partial_call_to_dict(call) for call in partial.calls],
        "usage": usage_to_dict(partial.usage),
        "raw_finish_reason": partial.raw_finish_reason,
        "response_id": partial.response_id,
        "model": partial.model,
        "format": partial.format,
        "created": partial.created,
        "parts": [_part_to_dict(part) for part in partial.parts],
    }


def partial_from_dict(data: Any) -> Partial:
    """The :class:`Partial` :func:`partial_to_dict` wrote."""
    data = check_version(data, "Partial")
    return Partial(
        text=data["text"],
        reasoning=data["reasoning"],
        calls=[PartialCall(**call) for call in data["calls"]],
        usage=usage_from_dict(data.get("usage")),
        raw_finish_reason=data.get("raw_finish_reason"),
        response_id=data.get("response_id"),
        model=data.get("model"),
        format=data.get("format"),
        created=data.get("created"),
        parts=[ContentPart(**part) for part in data.get("parts", ())],
    )


def outcome_to_dict(outcome: Outcome) -> dict[str, Any]:
    """The JSON-safe dict of an :class:`Outcome` (see :meth:`Outcome.to_dict`)."""
    out: dict[str, Any] = {
        "version": DICT_VERSION,
        "call_id": outcome.call_id,
        "name": outcome.name,
        "status": outcome.status,
        "error": outcome.error,
        "idempotency_key": outcome.idempotency_key,
        "result_json": outcome.result_json,
        "replayed": outcome.replayed,
    }
    if outcome.result_json is None:
        out["value"] = jsonable(outcome.value)
    return out


def outcome_from_dict(data: Any) -> Outcome:
    """The :class:`Outcome` :func:`outcome_to_dict` wrote."""
    data = check_version(data, "Outcome")
    result_json = data.get("result_json")
    value = json.loads(result_json) if result_json is not None else data.get("value")
    return Outcome(
        call_id=data["call_id"],
        name=data["name"],
        status=data["status"],
        value=value,
        error=data.get("error"),
        idempotency_key=data.get("idempotency_key"),
        result_json=result_json,
        replayed=bool(data.get("replayed", False)),
    )
