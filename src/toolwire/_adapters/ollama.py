"""Ollama native ``/api/chat`` NDJSON lines -> normalised deltas.

Strategy: every line is one ``ChatResponse`` object (``model``, ``created_at``,
``message``, ``done``, and on the last line ``done_reason`` plus the counters). The
shape follows Ollama's API reference (``docs/api.md``, "Generate a chat completion",
streaming, with tools and with ``think``) and its Go types (``api/types.go``:
``ChatResponse``, ``Message``, ``ToolCall``, ``ToolCallFunction`` with an optional
``index`` and ``arguments`` as an object).

Guaranteed:

- ``message.content`` is text, ``message.thinking`` reasoning (empty strings dropped);
- every ``message.tool_calls[]`` entry is a whole call: ``function.arguments`` is an
  object, serialised as compact JSON (``ensure_ascii=False``), emitted with
  ``start=True`` and ``end=True``. A call has no id unless the server sends one (newer
  servers do; the assembler synthesises the rest). Its ``index`` is its position among
  this stream's calls, not ``function.index``: Ollama has sent index 0 for every parallel
  call, and a whole call needs no routing hint anyway. A string ``arguments`` (what the
  OpenAI-compatible endpoint would send) is taken as JSON text unchanged;
- ``model`` gives a ``MetaDelta`` once (Ollama has no response id);
- ``done: true`` gives the one ``FinishDelta``: ``done_reason`` ``stop`` -> stop,
  ``length`` -> length, a missing reason (servers before ``done_reason`` existed) ->
  stop, and anything else (``load``, ``unload``: no turn was generated) -> other. The
  counters ``prompt_eval_count`` / ``eval_count`` give a ``UsageDelta`` (total = their
  sum), durations are kept in ``raw``;
- an ``{"error": "..."}`` line gives an ``ErrorDelta``.

Ollama reports ``done_reason: "stop"`` after tool calls; deciding that such a stream is a
tool turn is the assembler's rule (calls present), not this adapter's. Each line is
translated in time linear in its size.
"""

from __future__ import annotations

from typing import Any

from .._deltas import (
    CallDelta,
    Delta,
    ErrorDelta,
    FinishDelta,
    FinishKind,
    MetaDelta,
    ReasoningPart,
    TextPart,
    UsageDelta,
)
from ._payload import (
    dump_arguments,
    ensure_dict,
    fail,
    opt_bool,
    opt_count,
    opt_dict,
    opt_list,
    opt_str,
    req_dict,
    type_name,
)

__all__ = ["OllamaAdapter"]

_DONE_KINDS: dict[str, FinishKind] = {"stop": "stop", "length": "length"}
_COUNTERS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


class OllamaAdapter:
    """Translates one Ollama ``/api/chat`` stream (``format = "ollama"``)."""

    format: str = "ollama"

    def __init__(self) -> None:
        self._calls = 0
        self._model: str | None = None
        self._finished = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one NDJSON line (``event`` is unused)."""
        payload = ensure_dict(payload, "an Ollama line", payload)
        if "error" in payload:
            error = payload["error"]
            if isinstance(error, dict):
                text = opt_str(error, "message", "error", payload) or "Ollama error"
            elif isinstance(error, str):
                text = error
            else:
                raise fail(f"error must be a string, got {type_name(error)}", payload)
            return [ErrorDelta(message=text, error=error)]
        out: list[Delta] = []
        model = opt_str(payload, "model", "line", payload)
        if model and model != self._model:
            self._model = model
            # Ollama sends no ids: its first line's timestamp is what tells two responses
            # apart (the assembler seeds synthesised call ids with it)
            created = opt_str(payload, "created_at", "line", payload)
            out.append(MetaDelta(model=model, created=created or None))
        message = opt_dict(payload, "message", "line", payload)
        if message is not None:
            out.extend(self._message(message, payload))
        if opt_bool(payload, "done", "line", payload):
            out.extend(self._done(payload))
        return out

    def _message(self, message: dict[str, Any], payload: dict[str, Any]) -> list[Delta]:
        out: list[Delta] = []
        thinking = opt_str(message, "thinking", "message", payload)
        if thinking:
            out.append(ReasoningPart(text=thinking))
        content = opt_str(message, "content", "message", payload)
        if content:
            out.append(TextPart(text=content))
        for item in opt_list(message, "tool_calls", "message", payload) or ():
            call = ensure_dict(item, "message.tool_calls[]", payload)
            function = req_dict(call, "function", "message.tool_calls[]", payload)
            where = "message.tool_calls[].function"
            name = opt_str(function, "name", where, payload)
            if name is None:
                raise fail(f"{where}.name is missing", payload)
            opt_count(function, "index", where, payload)  # validated, not used (see above)
            arguments = function.get("arguments")
            if arguments is None:
                text = ""
            elif isinstance(arguments, str):
                text = arguments
            elif isinstance(arguments, dict):
                text = dump_arguments(arguments, f"{where}.arguments", payload)
            else:
                raise fail(
                    f"{where}.arguments must be an object, got {type_name(arguments)}", payload
                )
            call_id = opt_str(call, "id", "message.tool_calls[]", payload) or None
            out.append(
                CallDelta(
                    id=call_id, index=self._calls, name=name, arguments=text, start=True, end=True
                )
            )
            self._calls += 1
        return out

    def _done(self, payload: dict[str, Any]) -> list[Delta]:
        if self._finished:
            raise fail("a second line with done: true", payload)
        self._finished = True
        out: list[Delta] = []
        prompt = opt_count(payload, "prompt_eval_count", "line", payload)
        completion = opt_count(payload, "eval_count", "line", payload)
        if prompt is not None or completion is not None:
            total = None if prompt is None or completion is None else prompt + completion
            raw = {key: payload[key] for key in _COUNTERS if key in payload}
            out.append(
                UsageDelta(
                    input_tokens=prompt, output_tokens=completion, total_tokens=total, raw=raw
                )
            )
        reason = opt_str(payload, "done_reason", "line", payload)
        kind: FinishKind = "stop" if reason is None else _DONE_KINDS.get(reason, "other")
        out.append(FinishDelta(raw=reason, kind=kind))
        return out
