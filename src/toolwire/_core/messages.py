"""The messages of the next request: the assistant turn and the tool results that answer it.

Every tool result answers a call of the assistant turn and every call has its result
(else :class:`UsageError`); the shapes are each provider's. Linear in the number of
calls and outcomes and the size of their texts.
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
from .providers import provider
from .response import ContentPart, PartialCall, RejectedCall, Response, ToolCall

__all__ = ["tool_results"]  # assistant_turn and turn_messages are private until run_turn

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


def _outcome_list(outcomes: Iterable[Outcome]) -> list[Outcome]:
    if isinstance(outcomes, (Outcome, str, bytes, dict)):
        raise UsageError("expected a list of Outcome objects")
    try:
        return list(outcomes)
    except TypeError:
        raise UsageError("expected a list of Outcome objects") from None


def tool_results(
    outcomes: Iterable[Outcome], format: str, *, response: Response | None = None
) -> list[dict[str, Any]]:
    """The messages that carry ``outcomes`` back to the model in ``format``.

    ``format`` is any format name ``StreamAssembler`` accepts (``"openai-chat"``, its
    alias ``"openai"``, ``"openai-responses"``, ``"anthropic"``, ``"gemini"``,
    ``"bedrock-converse"``, ``"ollama"``, ``"cohere"``). Each completed or replayed
    outcome sends its result: a ``str`` as plain text, an ``Image``/``File`` (or a list
    mixing them with text) as the format's content blocks (a text note such as
    ``[image/png, 1234 bytes]`` where the format has none: OpenAI chat, Ollama, Cohere),
    anything else as its JSON text; every other status a text for the model,
    marked as an error where the format can. Raises :class:`UnknownFormat` for a format it
    does not know and :class:`UsageError` for input that is not a list of outcomes.

    ``response``, the response whose calls the outcomes answer, tells each result the kind
    of its call (``ToolCall.kind``): a Responses custom tool call is answered with a
    ``custom_tool_call_output`` item, not ``function_call_output``. Without it every
    outcome answers a function call.
    """
    entry = provider(format)
    items = _outcome_list(outcomes)
    kinds = call_kinds(response) if response is not None else {}
    results = [result_text(o) for o in items]
    if kinds:
        results = [replace(r, kind=kinds.get(r.outcome.call_id, r.kind)) for r in results]
    return entry.tool_results(results)


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


def assistant_turn(
    response: Response, outcomes: Iterable[Outcome], format: str
) -> list[dict[str, Any]]:
    """The assistant turn repeating ``response`` in ``format``, for the results of
    ``outcomes`` to answer (see the module docstring for the consistency check)."""
    entry = provider(format)
    check_answers(response, _outcome_list(outcomes))
    return entry.assistant_turn(response)


def turn_messages(
    response: Response, outcomes: Iterable[Outcome], format: str
) -> list[dict[str, Any]]:
    """The assistant turn and then the tool results: what the next request appends."""
    items = _outcome_list(outcomes)
    turn = assistant_turn(response, items, format)
    return turn + tool_results(items, format, response=response)


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
