"""Shapes that OpenAI introduced and other providers copied (usage, errors, tool-call entries,
tool result messages), written once. Linear in what is read or written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core.deltas import UsageDelta
from .._core.messages import Call, ResultText, string_arguments, wire_name

__all__ = [
    "error_message",
    "function_call_entry",
    "openai_usage",
    "opt_int",
    "tool_messages",
    "without_nulls",
]


def opt_int(value: Any) -> int | None:
    """An int field that may be absent; bools and other types count as absent."""
    return value if type(value) is int else None


def without_nulls(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without null members (recursively): a field sent as ``null`` and a field not
    sent are the same report, so SDK dumps and wire dicts give equal ``Usage.raw``."""
    return {k: without_nulls(v) if type(v) is dict else v for k, v in obj.items() if v is not None}


def openai_usage(usage: dict[str, Any], *, input_key: str, output_key: str) -> UsageDelta:
    """Read an OpenAI ``usage`` object whose counts are named ``input_key``/``output_key``."""
    cached = reasoning = None
    details = usage.get(f"{input_key}_details")
    if type(details) is dict:
        cached = opt_int(details.get("cached_tokens"))
    details = usage.get(f"{output_key}_details")
    if type(details) is dict:
        reasoning = opt_int(details.get("reasoning_tokens"))
    return UsageDelta(
        input_tokens=opt_int(usage.get(input_key)),
        output_tokens=opt_int(usage.get(output_key)),
        total_tokens=opt_int(usage.get("total_tokens")),
        cache_read_tokens=cached,
        reasoning_tokens=reasoning,
        raw=without_nulls(usage),
    )


def error_message(error: Any) -> str:
    """A readable message from an OpenAI-style ``error`` member (object or anything else)."""
    if type(error) is dict:
        msg = error.get("message")
        if isinstance(msg, str) and msg:
            return msg
        code = error.get("code")
        if code is not None:
            return str(code)
    return str(error)


def function_call_entry(call: Call) -> dict[str, Any]:
    """One call as an assistant message's ``tool_calls`` entry; the arguments are the raw
    text as it arrived (a rejected call's invalid JSON included, see ``_results``), and the
    call's ``extra_content`` as it came (Gemini's ``thought_signature``)."""
    entry: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {"name": wire_name(call.name), "arguments": string_arguments(call)},
    }
    extra = call.metadata.get("extra_content")
    if extra:
        entry["extra_content"] = extra
    return entry


def tool_messages(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One ``{"role": "tool", "tool_call_id", "content"}`` message per result."""
    return [{"role": "tool", "tool_call_id": r.outcome.call_id, "content": r.text} for r in results]
