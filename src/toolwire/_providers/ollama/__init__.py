"""Ollama's native ``/api/chat``: the ``"ollama"`` provider.

Every call arrives whole, its arguments an object; results are matched by name and order.
(Ollama's OpenAI-compatible ``/v1`` endpoint is ``"openai-chat"``.) Linear in each line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..._core import deltas as d
from ..._core.messages import ResultText, object_arguments, turn_parts, wire_name
from ..._core.providers import Provider
from ..._core.response import Response
from .. import _payload as read
from .._definitions import function_definition
from .._format_parts import text_user_message

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_DONE_KINDS = d.finish_kinds(stop=("stop",), length=("length",))
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

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """The deltas of one NDJSON line (``event`` is unused)."""
        payload = read.ensure_dict(payload, "an Ollama line", payload)
        if "error" in payload:
            error = payload["error"]
            if isinstance(error, dict):
                text = read.opt_str(error, "message", "error", payload) or "Ollama error"
            elif isinstance(error, str):
                text = error
            else:
                raise read.fail(f"error must be a string, got {read.type_name(error)}", payload)
            return [d.ErrorDelta(message=text, error=error)]
        out: list[d.Delta] = []
        model = read.opt_str(payload, "model", "line", payload)
        if model and model != self._model:
            self._model = model
            # Ollama sends no ids: its first line's timestamp is what tells two responses
            # apart (the assembler seeds synthesised call ids with it)
            created = read.opt_str(payload, "created_at", "line", payload)
            out.append(d.MetaDelta(model=model, created=created or None))
        message = read.opt_dict(payload, "message", "line", payload)
        if message is not None:
            out.extend(self._message(message, payload))
        if read.opt_bool(payload, "done", "line", payload):
            out.extend(self._done(payload))
        return out

    def _message(self, message: dict[str, Any], payload: dict[str, Any]) -> list[d.Delta]:
        out: list[d.Delta] = []
        thinking = read.opt_str(message, "thinking", "message", payload)
        if thinking:
            out.append(d.ReasoningPart(text=thinking))
        content = read.opt_str(message, "content", "message", payload)
        if content:
            out.append(d.TextPart(text=content))
        for item in read.opt_list(message, "tool_calls", "message", payload) or ():
            call = read.ensure_dict(item, "message.tool_calls[]", payload)
            function = read.req_dict(call, "function", "message.tool_calls[]", payload)
            where = "message.tool_calls[].function"
            name = read.opt_str(function, "name", where, payload)
            if name is None:
                raise read.fail(f"{where}.name is missing", payload)
            read.opt_count(function, "index", where, payload)  # validated, not used (see above)
            arguments = function.get("arguments")
            if arguments is None:
                text = ""
            elif isinstance(arguments, str):
                text = arguments
            elif isinstance(arguments, dict):
                text = read.dump_arguments(arguments, f"{where}.arguments", payload)
            else:
                raise read.fail(
                    f"{where}.arguments must be an object, got {read.type_name(arguments)}", payload
                )
            call_id = read.opt_str(call, "id", "message.tool_calls[]", payload) or None
            out.append(
                d.CallDelta(
                    id=call_id, index=self._calls, name=name, arguments=text, start=True, end=True
                )
            )
            self._calls += 1
        return out

    def _done(self, payload: dict[str, Any]) -> list[d.Delta]:
        if self._finished:
            raise read.fail("a second line with done: true", payload)
        self._finished = True
        out: list[d.Delta] = []
        prompt = read.opt_count(payload, "prompt_eval_count", "line", payload)
        completion = read.opt_count(payload, "eval_count", "line", payload)
        if prompt is not None or completion is not None:
            total = None if prompt is None or completion is None else prompt + completion
            raw = {key: payload[key] for key in _COUNTERS if key in payload}
            out.append(
                d.UsageDelta(
                    input_tokens=prompt, output_tokens=completion, total_tokens=total, raw=raw
                )
            )
        reason = read.opt_str(payload, "done_reason", "line", payload)
        kind: d.FinishKind = "stop" if reason is None else _DONE_KINDS.get(reason, "other")
        out.append(d.FinishDelta(raw=reason, kind=kind))
        return out


# ------------------------------------------------------------------- the provider


def adapter(choice: int) -> OllamaAdapter:
    """A fresh adapter for one stream (``choice`` is ignored: an Ollama stream has one choice)."""
    return OllamaAdapter()


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is an Ollama chat line (``done`` with a message or a model)."""
    return "done" in payload and ("message" in payload or "model" in payload)


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """OpenAI's function shape; ``strict`` has no meaning for Ollama and is ignored."""
    return function_definition(tool, False)


def tool_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One ``{"role": "tool", "tool_name", "content"}`` message per result."""
    return [{"role": "tool", "tool_name": r.name, "content": r.text} for r in results]


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The assistant message: text, thinking, and every call with object arguments."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text}
    if response.reasoning:
        message["thinking"] = response.reasoning
    calls: list[dict[str, Any]] = []
    for _, call in turn_parts(response):
        if call is None:
            continue
        function = {"name": wire_name(call.name), "arguments": object_arguments(call)}
        entry: dict[str, Any] = {"function": function}
        if not call.synthetic_id:
            entry["id"] = call.id
        calls.append(entry)
    if calls:
        message["tool_calls"] = calls
    return [message]


user_message = text_user_message

PROVIDER = Provider(
    name="ollama",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
)
