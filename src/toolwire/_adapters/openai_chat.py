"""OpenAI Chat Completions chunks (and every OpenAI-compatible server) -> deltas.

Strategy: one pass over the chunk dict, reading only the fields that carry meaning and
checking each one's type on the way (a wrong type where an object, list or string belongs
raises :class:`StreamFormatError` naming the payload). The adapter does no correlation:
each ``tool_calls[]`` entry becomes one :class:`CallDelta` with ``start=None`` and the
assembler's id -> index -> latest rules decide where it goes.

Quirks handled here: ``choices`` empty or missing (Azure content-filter chunks, usage-only
final chunks); ``delta`` null; ``role``/``type`` null; ``arguments`` null, absent or a JSON
object (serialised); empty ``id`` / ``name`` (treated as absent); ``index`` absent,
sparse or reused (passed on as a hint); ``reasoning_content`` / ``reasoning`` as reasoning;
usage at top level or in Groq's ``x_groq``; an ``{"error": ...}`` payload or an SSE
``event: error``; ``n > 1`` (only the chosen choice is read). Within one chunk the order
is text, reasoning, tool calls, usage, finish, so a last fragment sent in the finish chunk
lands before the finish.

Complexity: O(size of the chunk) per chunk; state is two flags.
"""

from __future__ import annotations

import json
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
from .._errors import StreamFormatError
from ._payload import error_message, openai_usage

__all__ = ["OpenAIChatAdapter", "chat_usage"]

_FINISH_KINDS: dict[str, FinishKind] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    # values that OpenAI-compatible servers send for the same ends
    "eos": "stop",
    "eos_token": "stop",
    "stop_sequence": "stop",
    "end_turn": "stop",
    "tool_use": "tool_calls",
    "length": "length",
    "model_length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
    "error": "error",
}


def _bad(payload: Any, what: str) -> StreamFormatError:
    return StreamFormatError(f"openai-chat payload: {what}", payload=payload)


def chat_usage(usage: dict[str, Any]) -> UsageDelta:
    """Read a Chat ``usage`` object (prompt/completion/total tokens and their details)."""
    return openai_usage(usage, input_key="prompt_tokens", output_key="completion_tokens")


class OpenAIChatAdapter:
    """Translate ``chat.completion.chunk`` payloads; ``choice`` picks one of ``n`` choices."""

    format = "openai-chat"

    __slots__ = ("_choice", "_meta_sent")

    def __init__(self, *, choice: int = 0) -> None:
        self._choice = choice
        self._meta_sent = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """Turn one chunk into deltas (``[]`` for chunks that carry nothing)."""
        out: list[Delta] = []
        if not self._meta_sent:
            rid = payload.get("id")
            model = payload.get("model")
            rid = rid if isinstance(rid, str) and rid else None
            model = model if isinstance(model, str) and model else None
            if rid or model:
                out.append(MetaDelta(response_id=rid, model=model))
                self._meta_sent = True

        error = payload.get("error")
        if event == "error" or error is not None:
            err = error if error is not None else payload
            out.append(ErrorDelta(message=error_message(err), error=err))
            return out

        choices = payload.get("choices")
        finish: FinishDelta | None = None
        if choices is not None:
            if type(choices) is not list:
                raise _bad(payload, "'choices' is not a list")
            for choice in choices:
                if type(choice) is not dict:
                    raise _bad(payload, "a choice is not an object")
                cidx = choice.get("index", 0)
                if cidx is None:
                    cidx = 0
                elif type(cidx) is not int:
                    raise _bad(payload, "a choice's 'index' is not an integer")
                if cidx != self._choice:
                    continue
                finish = self._choice_deltas(payload, choice, out)

        usage = payload.get("usage")
        if usage is None:
            x_groq = payload.get("x_groq")
            if type(x_groq) is dict:
                usage = x_groq.get("usage")
        if usage is not None:
            if type(usage) is not dict:
                raise _bad(payload, "'usage' is not an object")
            out.append(chat_usage(usage))
        if finish is not None:
            out.append(finish)
        return out

    def fragment(self, payload: dict[str, Any]) -> tuple[int, str] | None:
        """Fast path: ``(index, text)`` when ``payload`` is nothing but one argument
        fragment of the chosen choice (no id, name, text, usage, finish), else ``None``.

        Pure (no state change), so the assembler may fall back to :meth:`translate`.
        The shape checked is the one big calls stream in: ``{"choices": [{"index": c,
        "delta": {"tool_calls": [{"index": i, "function": {"arguments": "..."}}]},
        "finish_reason": null}]}`` plus response-level fields.
        """
        if not self._meta_sent:
            return None
        choices = payload.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if (
            type(choice) is not dict
            or choice.get("finish_reason") is not None
            or choice.get("index", 0) != self._choice
        ):
            return None
        delta = choice.get("delta")
        if type(delta) is not dict or len(delta) != 1:
            return None
        calls = delta.get("tool_calls")
        if type(calls) is not list or len(calls) != 1:
            return None
        call = calls[0]
        if type(call) is not dict or len(call) != 2:
            return None
        index = call.get("index")
        function = call.get("function")
        if type(index) is not int or type(function) is not dict or len(function) != 1:
            return None
        args = function.get("arguments")
        if type(args) is not str or not args:
            return None
        if (
            payload.get("usage") is not None
            or payload.get("error") is not None
            or "x_groq" in payload
        ):
            return None
        return index, args

    def _choice_deltas(
        self, payload: dict[str, Any], choice: dict[str, Any], out: list[Delta]
    ) -> FinishDelta | None:
        delta = choice.get("delta")
        if delta is not None:
            if type(delta) is not dict:
                raise _bad(payload, "'delta' is not an object")
            content = delta.get("content")
            if content:
                if type(content) is not str:
                    raise _bad(payload, "'content' is not a string")
                out.append(TextPart(text=content))
            for key in ("reasoning_content", "reasoning"):
                reasoning = delta.get(key)
                if reasoning:
                    if type(reasoning) is not str:
                        raise _bad(payload, f"{key!r} is not a string")
                    out.append(ReasoningPart(text=reasoning))
            calls = delta.get("tool_calls")
            if calls is not None:
                if type(calls) is not list:
                    raise _bad(payload, "'tool_calls' is not a list")
                for call in calls:
                    out.append(self._call(payload, call))
            legacy = delta.get("function_call")
            if legacy is not None:
                out.append(self._function(payload, legacy, None, None))
        reason = choice.get("finish_reason")
        if reason is None:
            return None
        if type(reason) is not str:
            raise _bad(payload, "'finish_reason' is not a string")
        return FinishDelta(raw=reason, kind=_FINISH_KINDS.get(reason, "other"))

    def _call(self, payload: dict[str, Any], call: Any) -> CallDelta:
        if type(call) is not dict:
            raise _bad(payload, "a tool call is not an object")
        index = call.get("index")
        if index is not None and type(index) is not int:
            raise _bad(payload, "a tool call's 'index' is not an integer")
        call_id = call.get("id")
        if call_id is not None and type(call_id) is not str:
            raise _bad(payload, "a tool call's 'id' is not a string")
        function = call.get("function")
        if function is None:
            return CallDelta(id=call_id or None, index=index)
        return self._function(payload, function, call_id or None, index)

    @staticmethod
    def _function(
        payload: dict[str, Any], function: Any, call_id: str | None, index: int | None
    ) -> CallDelta:
        if type(function) is not dict:
            raise _bad(payload, "'function' is not an object")
        name = function.get("name")
        if name is not None and type(name) is not str:
            raise _bad(payload, "a function 'name' is not a string")
        args = function.get("arguments")
        if args is None:
            args = ""
        elif type(args) is not str:
            if type(args) is dict:
                # some servers (Ollama-style) send the arguments as an object
                args = json.dumps(args, ensure_ascii=False)
            else:
                raise _bad(payload, "function 'arguments' is not a string")
        return CallDelta(id=call_id, index=index, name=name or None, arguments=args)
