"""OpenAI Chat Completions (and every OpenAI-compatible server): the ``"openai-chat"`` provider.

Also known as ``"openai"``. Call fragments carry no correlation of their own here: the
assembler's id, index and latest-call rules route them. O(size of the chunk) per chunk.
"""

from __future__ import annotations

import json
from typing import Any

from ..._core import deltas as d
from ..._core.messages import turn_parts
from ..._core.providers import Provider
from ..._core.response import Response
from ..._errors import StreamFormatError
from .._definitions import function_definition
from .._openai_shapes import error_message, function_call_entry, openai_usage, tool_messages

# OpenAI's own reasons, then what OpenAI-compatible servers send for the same ends
_FINISH_KINDS = d.finish_kinds(
    stop=("stop", "eos", "eos_token", "stop_sequence", "end_turn"),
    tool_calls=("tool_calls", "function_call", "tool_use"),
    length=("length", "model_length", "max_tokens"),
    content_filter=("content_filter",),
    error=("error",),
)
# delta members that translate() reads besides tool_calls: a fragment-only chunk has them
# null or empty (content "" is skipped there too; function_call must be absent)
_EMPTY_MEMBERS = ("content", "reasoning_content", "reasoning", "refusal")
_ABSENT = (None, "")  # an id or name that translate() reads as not sent


def _bad(payload: Any, what: str) -> StreamFormatError:
    return StreamFormatError(f"openai-chat payload: {what}", payload=payload)


def chat_usage(usage: dict[str, Any]) -> d.UsageDelta:
    """Read a Chat ``usage`` object (prompt/completion/total tokens and their details)."""
    return openai_usage(usage, input_key="prompt_tokens", output_key="completion_tokens")


def _meta(payload: dict[str, Any]) -> d.MetaDelta | None:
    """The chunk's identity (response id, model, creation time), or ``None`` when it has
    none: a minimal chunk, as some OpenAI-compatible servers send, carries only choices."""
    rid = payload.get("id")
    model = payload.get("model")
    rid = rid if isinstance(rid, str) and rid else None
    model = model if isinstance(model, str) and model else None
    created = payload.get("created")
    stamp = str(created) if type(created) is int and created > 0 else None
    if rid or model or stamp:
        return d.MetaDelta(response_id=rid, model=model, created=stamp)
    return None


class OpenAIChatAdapter:
    """Translate ``chat.completion.chunk`` payloads; ``choice`` picks one of ``n`` choices."""

    format = "openai-chat"

    __slots__ = ("_choice", "_meta_sent")

    fragment_start = None  # Chat never says whether a fragment opens a call

    def __init__(self, *, choice: int = 0) -> None:
        self._choice = choice
        self._meta_sent = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """Turn one chunk into deltas (``[]`` for chunks that carry nothing)."""
        out: list[d.Delta] = []
        if not self._meta_sent:
            meta = _meta(payload)
            if meta is not None:
                out.append(meta)
                self._meta_sent = True

        error = payload.get("error")
        if event == "error" or error is not None:
            err = error if error is not None else payload
            out.append(d.ErrorDelta(message=error_message(err), error=err))
            return out

        choices = payload.get("choices")
        finish: d.FinishDelta | None = None
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

    def fragment(self, payload: dict[str, Any]) -> d.Fragment | None:
        """Fast path: ``(None, index, text)`` when ``payload`` is nothing but one argument
        fragment of the chosen choice (no id, name, text, reasoning, usage, finish), else
        ``None``.

        Pure (no state change), so the assembler may fall back to :meth:`translate`.
        The shape checked is the one big calls stream in: ``{"choices": [{"index": c,
        "delta": {"tool_calls": [{"index": i, "function": {"arguments": "..."}}]},
        "finish_reason": null}]}`` plus response-level fields, members that ``translate``
        ignores (``role``, ``type``, ``logprobs``...) and null or empty ones. Until a chunk
        gave the response's identity, a chunk that would give it is not a fragment (so a
        stream of minimal chunks, which never give one, takes this path too).
        """
        if not self._meta_sent and _meta(payload) is not None:
            return None
        choices = payload.get("choices")
        if type(choices) is not list or len(choices) != 1:
            return None
        choice = choices[0]
        if type(choice) is not dict or choice.get("finish_reason") is not None:
            return None
        cidx = choice.get("index", 0)
        if type(cidx) is not int or cidx != self._choice:
            return None
        delta = choice.get("delta")
        if type(delta) is not dict:
            return None
        calls = delta.get("tool_calls")
        if type(calls) is not list or len(calls) != 1:
            return None
        if len(delta) > 1:  # only then can text, reasoning or a legacy call come along
            if delta.get("function_call") is not None:
                return None
            for key in _EMPTY_MEMBERS:
                value = delta.get(key)
                if value is not None and value != "":
                    return None
        call = calls[0]
        if type(call) is not dict or call.get("id") not in _ABSENT:
            return None
        index = call.get("index")
        function = call.get("function")
        if type(index) is not int or type(function) is not dict:
            return None
        if function.get("name") not in _ABSENT:
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
        return None, index, args

    def object_fragment(self, obj: Any) -> d.Fragment | None:
        """:meth:`fragment` for the ``openai`` SDK's ``ChatCompletionChunk``, read by
        attribute access (``model_dump`` per chunk would cost more than the assembly).

        Anything that is not such a chunk, or carries more than one fragment, gives
        ``None`` and goes through ``model_dump`` and :meth:`translate` instead.
        """
        if not self._meta_sent:
            return None
        try:
            extra = obj.model_extra
            if obj.usage is not None or (extra and ("x_groq" in extra or "error" in extra)):
                return None
            choices = obj.choices
            if type(choices) is not list or len(choices) != 1:
                return None
            choice = choices[0]
            if choice.finish_reason is not None or choice.index != self._choice:
                return None
            delta = choice.delta
            if delta.content or delta.function_call is not None:
                return None
            if getattr(delta, "refusal", None):
                return None
            extra = delta.model_extra
            if extra and any(extra.get(key) for key in _EMPTY_MEMBERS):
                return None
            calls = delta.tool_calls
            if type(calls) is not list or len(calls) != 1:
                return None
            call = calls[0]
            function = call.function
            index = call.index
            if call.id or type(index) is not int or function is None or function.name:
                return None
            args = function.arguments
        except AttributeError:
            return None
        if type(args) is not str or not args:
            return None
        return None, index, args

    def _choice_deltas(
        self, payload: dict[str, Any], choice: dict[str, Any], out: list[d.Delta]
    ) -> d.FinishDelta | None:
        delta = choice.get("delta")
        if delta is not None:
            if type(delta) is not dict:
                raise _bad(payload, "'delta' is not an object")
            content = delta.get("content")
            if content:
                if type(content) is not str:
                    raise _bad(payload, "'content' is not a string")
                out.append(d.TextPart(text=content))
            refusal = delta.get("refusal")
            if refusal:
                if type(refusal) is not str:
                    raise _bad(payload, "'refusal' is not a string")
                out.append(d.RefusalPart(text=refusal))
            for key in ("reasoning_content", "reasoning"):
                reasoning = delta.get(key)
                if reasoning:
                    if type(reasoning) is not str:
                        raise _bad(payload, f"{key!r} is not a string")
                    out.append(d.ReasoningPart(text=reasoning))
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
        return d.FinishDelta(raw=reason, kind=_FINISH_KINDS.get(reason, "other"))

    def _call(self, payload: dict[str, Any], call: Any) -> d.CallDelta:
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
            return d.CallDelta(id=call_id or None, index=index)
        return self._function(payload, function, call_id or None, index)

    @staticmethod
    def _function(
        payload: dict[str, Any], function: Any, call_id: str | None, index: int | None
    ) -> d.CallDelta:
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
        return d.CallDelta(id=call_id, index=index, name=name or None, arguments=args)


# ------------------------------------------------------------------- the provider


def adapter(choice: int) -> OpenAIChatAdapter:
    """A fresh adapter for one stream, reading its choice number ``choice``."""
    return OpenAIChatAdapter(choice=choice)


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a chat completion chunk (``choices`` or ``object``)."""
    return "choices" in payload or payload.get("object") == "chat.completion.chunk"


def _detect_error(payload: dict[str, Any], event: str | None) -> bool:
    # OpenAI-compatible servers (Groq, vLLM...) send a bare {"error": {...}}
    return "error" in payload


definition = function_definition  # the format's own function shape, strict mode included
tool_results = tool_messages  # one ``tool`` message per result


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The assistant message: text (``None`` when there is none) and every call."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    entries = [function_call_entry(call) for _, call in turn_parts(response) if call is not None]
    if entries:
        message["tool_calls"] = entries
    return [message]


PROVIDER = Provider(
    name="openai-chat",
    detect_rank=40,
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    detect_fallback=_detect_error,
    aliases=("openai",),
)
