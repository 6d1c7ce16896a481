"""The vocabulary of the next request's messages: what to send for each outcome, and the
check that the assistant turn and its tool results answer each other.

Every tool result answers a call of the assistant turn and every call has its result
(else :class:`UsageError`). The shapes are each provider's: the messages in a named
format are written in ``toolwire._providers`` (``_messages``), which looks the format up.
Linear in the number of calls and outcomes and the size of their texts.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .._errors import UsageError
from .content import Part, decode_result, fallback_text, may_be_rich, rich_parts
from .outcome import Outcome
from .response import ContentPart, PartialCall, RejectedCall, Response, ToolCall

__all__ = [
    "ResultText",
    "call_kind",
    "check_answers",
    "outcome_list",
    "result_text",
    "result_texts",
]

UNNAMED_TOOL = "unnamed_tool"
"""The name under which a call whose name never arrived is carried and answered."""

STATUS_TEXTS: dict[str, str] = {
    "failed": 'The tool "{name}" failed: {error}',
    "rejected": 'The call to "{name}" was rejected: its arguments are invalid.',
    "skipped": 'The tool "{name}" was not run because another call in this turn was invalid; '
    "nothing happened. Fix the invalid call and send every call of this turn again.",
    "timed_out": 'The tool "{name}" did not finish within its timeout. The outcome is unknown; '
    "it may have run; do not assume it failed.",
    "unknown": 'The outcome of the tool "{name}" is unknown; it may have run; '
    "do not assume it failed.",
    "in_progress": 'The tool "{name}" is already running for this call (another worker holds '
    "it); its result is not available yet. Do not assume it failed.",
    "awaiting_approval": 'The call to "{name}" is waiting for a person to approve it; it has '
    "not run yet. Do not assume it ran or failed.",
    "denied": 'The call to "{name}" was denied by a person and did not run. Their reason: {error}',
    "conflict": 'The tool "{name}" was already called with this call id but different '
    "arguments, so this call was not run. Use a new call for different arguments.",
}

_SUCCESS = ("completed", "replayed")

Call = ToolCall | RejectedCall


@dataclass(frozen=True, slots=True)
class ResultText:
    """One outcome with the content to send for it: ``text``, and whether it is an error.

    ``parts`` holds a rich result's text, images and files (see ``content``) for the
    formats that carry them; ``text`` is then its text fallback (:func:`fallback_text`).
    ``plain`` is ``True`` when ``text`` is a ``str`` result (or a fallback), not JSON text.
    ``kind`` is the kind of the call it answers (``ToolCall.kind``: ``"function"``, or a
    provider's own kind such as Responses ``"custom_tool_call"``), which picks the item.
    """

    outcome: Outcome
    text: str
    error: bool
    parts: tuple[Part, ...] | None = None
    plain: bool = False
    kind: str = "function"

    @property
    def name(self) -> str:
        """The tool name to carry the result under (see :func:`wire_name`)."""
        return wire_name(self.outcome.name)


_json_text = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
).encode


def outcome_text(outcome: Outcome) -> tuple[str, bool]:
    """The content to send for one outcome, and whether it is an error (see
    :func:`result_text`)."""
    result = result_text(outcome)
    return result.text, result.error


def result_text(outcome: Outcome) -> ResultText:
    """What to send for one outcome.

    ``completed``/``replayed``: a ``str`` result as plain text, a rich result as its parts
    (with a text fallback), any other value as its JSON text (``result_json`` verbatim);
    not an error. Otherwise the status text of the module docstring, an error.
    """
    if not isinstance(outcome, Outcome):
        raise UsageError(f"expected an Outcome, got {type(outcome).__name__}")
    status = outcome.status
    if status in _SUCCESS:
        return _success(outcome)
    if status == "rejected" and outcome.error:
        return ResultText(outcome, outcome.error, True)
    template = STATUS_TEXTS.get(status)
    if template is None:
        raise UsageError(f"outcome {outcome.call_id!r} has an unknown status {status!r}")
    error = outcome.error or "no error message was recorded"
    return ResultText(outcome, template.format(name=outcome.name, error=error), True)


def _success(outcome: Outcome) -> ResultText:
    text = outcome.result_json
    if text is not None:
        if not isinstance(text, str):
            raise UsageError(f"outcome {outcome.call_id!r}: result_json must be a string")
        if not (text.startswith('"') or may_be_rich(text)):
            return ResultText(outcome, text, False)  # the common case: JSON sent verbatim
        try:
            value = decode_result(text)
        except ValueError as exc:
            raise UsageError(
                f"outcome {outcome.call_id!r}: result_json is not a stored result: {exc}"
            ) from None
    else:
        value = outcome.value
    if isinstance(value, str):
        return ResultText(outcome, value, False, plain=True)
    parts = rich_parts(value)
    if parts is not None:
        return ResultText(outcome, fallback_text(parts), False, parts, plain=True)
    try:
        return ResultText(outcome, _json_text(value), False)
    except (TypeError, ValueError) as exc:
        raise UsageError(
            f"outcome {outcome.call_id!r} has no result_json and its value is not JSON: {exc}"
        ) from None


def outcome_list(outcomes: Iterable[Outcome]) -> list[Outcome]:
    if isinstance(outcomes, (Outcome, str, bytes, dict)):
        raise UsageError("expected a list of Outcome objects")
    try:
        return list(outcomes)
    except TypeError:
        raise UsageError("expected a list of Outcome objects") from None


def result_texts(outcomes: Iterable[Outcome], response: Response | None = None) -> list[ResultText]:
    """What to send for each of ``outcomes``, in order (:func:`result_text`).

    ``response``, the response whose calls the outcomes answer, gives each result the kind
    of its call (``ToolCall.kind``), which picks the provider's item; without it every
    outcome answers a function call. Raises :class:`UsageError` for input that is not
    a list of outcomes.
    """
    items = outcome_list(outcomes)
    kinds = call_kinds(response) if response is not None else {}
    results = [result_text(o) for o in items]
    if kinds:
        results = [replace(r, kind=kinds.get(r.outcome.call_id, r.kind)) for r in results]
    return results


def call_kind(call: Call | PartialCall) -> str:
    """The kind of a call: its ``kind`` when it is not ``"function"``, else the ``"kind"``
    its adapter put in its metadata (a rejected or partial call has no field of its own)."""
    kind = call.kind if isinstance(call, ToolCall) else "function"
    if kind == "function":
        kind = str(call.metadata.get("kind") or "function")
    return kind


def call_kinds(response: Response) -> dict[str, str]:
    """Each call id of ``response`` whose call is not a function call, with its kind."""
    everything: list[Call] = [*response.tool_calls, *response.rejected]
    return {c.id: call_kind(c) for c in everything if call_kind(c) != "function"}


def check_answers(response: Response, outcomes: list[Outcome]) -> None:
    """Every call of ``response`` has exactly one outcome, and every outcome a call."""
    if not isinstance(response, Response):
        raise UsageError(f"expected a Response, got {type(response).__name__}")
    waiting: dict[str, deque[Call]] = {}
    everything: list[Call] = [*response.tool_calls, *response.rejected]
    for call in sorted(everything, key=lambda c: c.index):
        waiting.setdefault(call.id, deque()).append(call)
    for outcome in outcomes:
        if not isinstance(outcome, Outcome):
            raise UsageError(f"expected an Outcome, got {type(outcome).__name__}")
        queue = waiting.get(outcome.call_id)
        if not queue:
            raise UsageError(
                f"the outcome for call id {outcome.call_id!r} answers no call of this response"
            )
        queue.popleft()
    for queue in waiting.values():
        for call in queue:
            raise UsageError(
                f"call {call.id!r} ({call.name or 'no name'}) has no outcome: every call of "
                "the assistant turn needs its result"
            )


# ------------------------------------------------ helpers for the providers' assistant turns


def wire_name(name: str) -> str:
    """The tool name a call and its result are carried under (:data:`UNNAMED_TOOL` for a
    call whose name never arrived, which every API refuses as empty)."""
    return name or UNNAMED_TOOL


def string_arguments(call: Call) -> str:
    """Arguments for APIs that take them as text: the raw text as it arrived (a rejected
    call's invalid JSON included), ``"{}"`` when there was none."""
    return call.raw_arguments or "{}"


def object_arguments(call: Call) -> dict[str, Any]:
    """Arguments for APIs that take them as an object: the call's arguments when they are
    one, else ``{"INVALID_JSON": raw text}`` (see the module docstring)."""
    if isinstance(call, ToolCall) and isinstance(call.arguments, dict):
        return call.arguments
    return {"INVALID_JSON": call.raw_arguments}


def turn_parts(response: Response) -> list[tuple[ContentPart, Call | None]]:
    """``response``'s output in order, each call part with its call.

    A response built by hand without ``parts`` reads as its reasoning, its text, then its
    calls in index order; a call that no part names comes last.
    """
    everything: list[Call] = [*response.tool_calls, *response.rejected]
    calls = {c.index: c for c in everything}
    parts = list(response.parts)
    if not parts:
        if response.reasoning:
            parts.append(ContentPart(kind="reasoning", text=response.reasoning))
        if response.text:
            parts.append(ContentPart(kind="text", text=response.text))
    out: list[tuple[ContentPart, Call | None]] = []
    for part in parts:
        if part.kind != "call":
            out.append((part, None))
        elif part.call in calls:
            out.append((part, calls.pop(part.call)))
    for index in sorted(calls):
        out.append((ContentPart(kind="call", call=index), calls[index]))
    return out
