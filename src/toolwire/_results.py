"""Tool result messages for the next request: ``tool_results(outcomes, format)``.

Strategy: one pure function turns the executor's :class:`Outcome` list into the messages
each provider expects, in the order given. The content of a ``completed`` or ``replayed``
outcome is its ``result_json`` verbatim, so the first run and every replay send the same
bytes (for Gemini, whose response must be an object, the same JSON value: an object is
sent as is, anything else as ``{"result": value}``). Every other status is sent as a clear
text for the model and marked as an error (``is_error: true`` for Anthropic, ``{"error":
text}`` for Gemini):

- ``failed``: ``The tool "{name}" failed: {error}``
- ``rejected``: the validation message (``Outcome.error``, written for the model), or
  ``The call to "{name}" was rejected: its arguments are invalid.`` without one
- ``skipped``: ``The tool "{name}" was not run because another call in this turn was
  invalid; nothing happened. Fix the invalid call and send every call of this turn again.``
- ``timed_out``: ``The tool "{name}" did not finish within its timeout. The outcome is
  unknown; it may have run; do not assume it failed.``
- ``unknown``: ``The outcome of the tool "{name}" is unknown; it may have run; do not
  assume it failed.``
- ``in_progress``: ``The tool "{name}" is already running for this call (another worker
  holds it); its result is not available yet. Do not assume it failed.``
- ``conflict``: ``The tool "{name}" was already called with this call id but different
  arguments, so this call was not run. Use a new call for different arguments.``

(:data:`STATUS_TEXTS` holds these templates.) A ``completed``/``replayed`` outcome
without ``result_json`` gets the compact, key-sorted JSON of its ``value``.

Formats:

- ``"openai-chat"``: one ``{"role": "tool", "tool_call_id", "content"}`` per outcome;
- ``"openai-responses"``: one ``{"type": "function_call_output", "call_id", "output"}``;
- ``"anthropic"``: one ``{"role": "user", "content": [{"type": "tool_result",
  "tool_use_id", "content", "is_error"}, ...]}`` for all outcomes;
- ``"gemini"``: one ``{"role": "user", "parts": [{"functionResponse": {"name", "id",
  "response"}}, ...]}`` (``id`` left out when the call id is empty).
- ``"bedrock-converse"``: one ``{"role": "user", "content": [{"toolResult": {"toolUseId",
  "content": [{"text": ...}], "status": "success" | "error"}}, ...]}``;
- ``"ollama"``: one ``{"role": "tool", "tool_name", "content"}`` per outcome (Ollama
  matches results to calls by name and order);
- ``"cohere"``: one ``{"role": "tool", "tool_call_id", "content"}`` per outcome.

No outcomes give ``[]``. Bad input (an unknown format, something that is not an
``Outcome``, a ``result_json`` that is not JSON where Gemini needs the value) raises a
typed error: :class:`UnknownFormat` or :class:`InvalidOutcome`.

Complexity: linear in the number of outcomes and the size of their texts.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ._errors import InvalidOutcome, UnknownFormat
from ._outcome import Outcome

__all__ = ["tool_results"]

RESULT_FORMATS = (
    "openai-chat",
    "openai-responses",
    "anthropic",
    "gemini",
    "bedrock-converse",
    "ollama",
    "cohere",
)

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
    "conflict": 'The tool "{name}" was already called with this call id but different '
    "arguments, so this call was not run. Use a new call for different arguments.",
}

_SUCCESS = ("completed", "replayed")


def outcome_text(outcome: Outcome) -> tuple[str, bool]:
    """The content to send for one outcome, and whether it is an error.

    ``completed``/``replayed``: ``result_json`` verbatim, not an error; otherwise the
    status text of the module docstring, an error.
    """
    if not isinstance(outcome, Outcome):
        raise InvalidOutcome(f"expected an Outcome, got {type(outcome).__name__}")
    status = outcome.status
    if status in _SUCCESS:
        if outcome.result_json is not None:
            if not isinstance(outcome.result_json, str):
                raise InvalidOutcome(f"outcome {outcome.call_id!r}: result_json must be a string")
            return outcome.result_json, False
        try:
            text = json.dumps(
                outcome.value,
                ensure_ascii=False,
                separators=(",", ":"),
                sort_keys=True,
                allow_nan=False,
            )
        except (TypeError, ValueError) as exc:
            raise InvalidOutcome(
                f"outcome {outcome.call_id!r} has no result_json and its value is not JSON: {exc}"
            ) from None
        return text, False
    if status == "rejected" and outcome.error:
        return outcome.error, True
    template = STATUS_TEXTS.get(status)
    if template is None:
        raise InvalidOutcome(f"outcome {outcome.call_id!r} has an unknown status {status!r}")
    error = outcome.error or "no error message was recorded"
    return template.format(name=outcome.name, error=error), True


def tool_results(outcomes: Iterable[Outcome], format: str) -> list[dict[str, Any]]:
    """The messages that carry ``outcomes`` back to the model in ``format``.

    See the module docstring for each format's shape and the texts. Raises
    :class:`UnknownFormat` for a format it does not know and :class:`InvalidOutcome` for
    input that is not a list of outcomes.
    """
    if format not in RESULT_FORMATS:
        raise UnknownFormat(
            f"unknown tool result format {format!r}; expected one of "
            + ", ".join(repr(f) for f in RESULT_FORMATS)
        )
    if isinstance(outcomes, (Outcome, str, bytes, dict)):
        raise InvalidOutcome("tool_results takes a list of Outcome objects")
    try:
        items = list(outcomes)
    except TypeError:
        raise InvalidOutcome("tool_results takes a list of Outcome objects") from None
    texts = [outcome_text(o) for o in items]
    if format == "openai-chat":
        return [
            {"role": "tool", "tool_call_id": o.call_id, "content": text}
            for o, (text, _) in zip(items, texts, strict=True)
        ]
    if format == "openai-responses":
        return [
            {"type": "function_call_output", "call_id": o.call_id, "output": text}
            for o, (text, _) in zip(items, texts, strict=True)
        ]
    if format == "cohere":
        return [
            {"role": "tool", "tool_call_id": o.call_id, "content": text}
            for o, (text, _) in zip(items, texts, strict=True)
        ]
    if format == "ollama":
        return [
            {"role": "tool", "tool_name": o.name, "content": text}
            for o, (text, _) in zip(items, texts, strict=True)
        ]
    if not items:
        return []
    if format == "bedrock-converse":
        results = [
            {
                "toolResult": {
                    "toolUseId": o.call_id,
                    "content": [{"text": text}],
                    "status": "error" if error else "success",
                }
            }
            for o, (text, error) in zip(items, texts, strict=True)
        ]
        return [{"role": "user", "content": results}]
    if format == "anthropic":
        blocks = [
            {"type": "tool_result", "tool_use_id": o.call_id, "content": text, "is_error": error}
            for o, (text, error) in zip(items, texts, strict=True)
        ]
        return [{"role": "user", "content": blocks}]
    parts = []
    for o, (text, error) in zip(items, texts, strict=True):
        function_response: dict[str, Any] = {"name": o.name}
        if o.call_id:
            function_response["id"] = o.call_id
        function_response["response"] = {"error": text} if error else _gemini_response(o, text)
        parts.append({"functionResponse": function_response})
    return [{"role": "user", "parts": parts}]


def _gemini_response(outcome: Outcome, text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        raise InvalidOutcome(
            f"outcome {outcome.call_id!r}: result_json is not JSON, so Gemini cannot get it"
        ) from None
    if isinstance(value, dict):
        return value
    return {"result": value}
