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
from .._format_parts import text_user_message
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
_EMPTY_MEMBERS = ("content", "reasoning_content", "reasoning", "refusal", "reasoning_details")
# the reasoning members of a delta, and what each is echoed as on the assistant message:
# DeepSeek and Kimi want ``reasoning_content`` back after a tool call in thinking mode;
# ``reasoning`` (OpenRouter, Groq, vLLM) is not a documented request field, so it is not
_REASONING_KEYS = ("reasoning_content", "reasoning")
# the summed string members of a streamed OpenRouter reasoning_details entry
_DETAIL_TEXT = ("text", "summary", "data")
_ABSENT = (None, "")  # an id or name that translate() reads as not sent


def _optional(
    payload: dict[str, Any], holder: dict[str, Any], key: str, kind: type, problem: str
) -> Any:
    """``holder[key]``: ``None`` when absent or null, else a value of exactly ``kind``."""
    value = holder.get(key)
    if value is not None and type(value) is not kind:
        raise _bad(payload, problem)
    return value


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


def _gives_identity(payload: dict[str, Any]) -> bool:
    """Whether a chunk gives the response's identity (so it is not a bare fragment until
    the identity was given once). A minimal chunk has none of the members: reading them
    through ``_meta`` would only find three Nones."""
    return ("id" in payload or "model" in payload or "created" in payload) and _meta(
        payload
    ) is not None


def _opens_or_annotates(call: dict[str, Any]) -> bool:
    """Whether a ``tool_calls`` entry with more than ``index`` and ``function`` carries an
    id (it may open a call) or ``extra_content`` (Gemini's thought signature)."""
    return call.get("id") not in _ABSENT or call.get("extra_content") is not None


def _reports_more(payload: dict[str, Any]) -> bool:
    """Whether a chunk reports usage, an error or Groq's ``x_groq`` (its usage) beside its
    fragment: then it is not a bare fragment."""
    return (
        payload.get("usage") is not None
        or payload.get("error") is not None
        or ("x_groq" in payload)
    )


def _carries_more(delta: dict[str, Any]) -> bool:
    """Whether a delta with more than its ``tool_calls`` carries something a bare argument
    fragment may not: a legacy ``function_call``, or text or reasoning that is not empty."""
    if delta.get("function_call") is not None:
        return True
    for key in _EMPTY_MEMBERS:
        value = delta.get(key)
        if value is not None and value != "":
            return True
    return False


class OpenAIChatAdapter:
    """Translate ``chat.completion.chunk`` payloads; ``choice`` picks one of ``n`` choices."""

    format = "openai-chat"

    __slots__ = ("_choice", "_details", "_meta_sent", "_reasoning_field")

    fragment_start = None  # Chat never says whether a fragment opens a call

    def __init__(self, *, choice: int = 0) -> None:
        self._choice = choice
        self._meta_sent = False
        self._reasoning_field: str | None = None  # the member reasoning came in, once seen
        self._details: list[dict[str, Any]] = []  # OpenRouter reasoning_details, merged

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
            self._flush_details(out)
            out.append(finish)
        return out

    def done_marker(self) -> list[d.Delta]:
        """What ``[DONE]`` says under the ``openai-chat-done-marker`` profile, when no
        finish reason came: the finish (``raw`` ``"[DONE]"``)."""
        out: list[d.Delta] = []
        self._flush_details(out)
        out.append(d.FinishDelta(raw="[DONE]", kind="stop"))
        return out

    def _flush_details(self, out: list[d.Delta]) -> None:
        if self._details:
            # the whole reasoning_details list, once, as the assistant message echoes it
            out.append(d.PartDelta(kind="item", data={"reasoning_details": self._details}))
            self._details = []

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
        stream of minimal chunks, which never give one, takes this path too). The
        ``openai`` SDK's ``ChatCompletionChunk`` is read the same way, each nested object
        through :func:`~toolwire._core.deltas.payload_fields`.
        """
        if not self._meta_sent and _gives_identity(payload):
            return None
        try:  # the members a fragment must have are read by subscript: a missing one is None
            choices = payload["choices"]
            if type(choices) is not list or len(choices) != 1:
                return None
            choice = choices[0]
            if type(choice) is not dict and (choice := d.payload_fields(choice)) is None:
                return None
            if choice.get("finish_reason") is not None:
                return None
            cidx = choice.get("index", 0)
            if type(cidx) is not int or cidx != self._choice:
                return None
            delta = choice["delta"]
            if type(delta) is not dict and (delta := d.payload_fields(delta)) is None:
                return None
            calls = delta["tool_calls"]
            if type(calls) is not list or len(calls) != 1:
                return None
            # only beside other members can text, reasoning or a legacy call come along
            if len(delta) > 1 and _carries_more(delta):
                return None
            call = calls[0]
            if type(call) is not dict and (call := d.payload_fields(call)) is None:
                return None
            index = call["index"]
            function = call["function"]
            if type(index) is not int:
                return None
            # beside index and function (the common entry), an id or extra_content may come
            if len(call) > 2 and _opens_or_annotates(call):
                return None
            if type(function) is not dict and (function := d.payload_fields(function)) is None:
                return None
            args = function["arguments"]
        except KeyError:
            return None
        if type(args) is not str or not args:
            return None
        if len(function) > 1 and function.get("name") not in _ABSENT:
            return None
        if _reports_more(payload):
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
                if type(content) is list:
                    self._content_chunks(payload, content, out)
                elif type(content) is not str:
                    raise _bad(payload, "'content' is neither a string nor a list of chunks")
                else:
                    out.append(d.TextPart(text=content))
            refusal = delta.get("refusal")
            if refusal:
                if type(refusal) is not str:
                    raise _bad(payload, "'refusal' is not a string")
                out.append(d.RefusalPart(text=refusal))
            for key in _REASONING_KEYS:
                reasoning = delta.get(key)
                if reasoning:
                    if type(reasoning) is not str:
                        raise _bad(payload, f"{key!r} is not a string")
                    self._reasoning(key, reasoning, out)
            details = delta.get("reasoning_details")
            if details:
                if type(details) is not list:
                    raise _bad(payload, "'reasoning_details' is not a list")
                for entry in details:
                    self._detail(payload, entry)
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

    def _reasoning(self, field: str, text: str, out: list[d.Delta]) -> None:
        """Reasoning text; the first of the stream first says which member it came in."""
        if self._reasoning_field is None:
            self._reasoning_field = field
            out.append(d.PartDelta(kind="reasoning", data={"field": field}))
        out.append(d.ReasoningPart(text=text))

    def _content_chunks(
        self, payload: dict[str, Any], chunks: list[Any], out: list[d.Delta]
    ) -> None:
        """Mistral's content as a list of chunks: ``text`` is text, ``thinking`` (a list of
        text chunks) is reasoning, any other chunk is kept to be echoed as it came."""
        for chunk in chunks:
            if type(chunk) is not dict:
                raise _bad(payload, "a content chunk is not an object")
            kind = chunk.get("type")
            if kind == "text":
                text = chunk.get("text")
                if type(text) is not str:
                    raise _bad(payload, "a text chunk's 'text' is not a string")
                if text:
                    out.append(d.TextPart(text=text))
            elif kind == "thinking":
                inner = chunk.get("thinking")
                if type(inner) is not list:
                    raise _bad(payload, "a thinking chunk's 'thinking' is not a list")
                for piece in inner:
                    text = piece.get("text") if type(piece) is dict else None
                    if type(text) is not str or piece.get("type", "text") != "text":
                        raise _bad(payload, "a thinking chunk holds a non-text chunk")
                    if text:
                        self._reasoning("content", text, out)
            elif type(kind) is str and kind:
                out.append(d.PartDelta(kind="item", data={"content_chunk": dict(chunk)}))
            else:
                raise _bad(payload, "a content chunk has no 'type'")

    def _detail(self, payload: dict[str, Any], entry: Any) -> None:
        """Merge one streamed OpenRouter ``reasoning_details`` entry: an entry with the
        ``index`` and ``type`` of the last one continues it (its strings appended, its other
        non-null members set), anything else is a new entry."""
        if type(entry) is not dict or type(entry.get("type")) is not str:
            raise _bad(payload, "a reasoning_details entry is not an object with a 'type'")
        last = self._details[-1] if self._details else None
        index = entry.get("index")
        if (
            last is None
            or index is None
            or last.get("index") != index
            or last["type"] != entry["type"]
        ):
            self._details.append({k: v for k, v in entry.items() if v is not None})
            return
        for key, value in entry.items():
            if value is None:
                continue
            if key in _DETAIL_TEXT and type(value) is str and type(last.get(key)) is str:
                last[key] += value
            else:
                last[key] = value

    def _call(self, payload: dict[str, Any], call: Any) -> d.CallDelta:
        if type(call) is not dict:
            raise _bad(payload, "a tool call is not an object")
        index = _optional(payload, call, "index", int, "a tool call's 'index' is not an integer")
        call_id = _optional(payload, call, "id", str, "a tool call's 'id' is not a string")
        extra = _optional(
            payload, call, "extra_content", dict, "a tool call's 'extra_content' is not an object"
        )
        # Gemini's OpenAI-compatible endpoint: extra_content.google.thought_signature,
        # which must go back on the call (Gemini 3 answers its absence with a 400)
        metadata = {"extra_content": extra} if extra else None
        function = call.get("function")
        if function is None:
            return d.CallDelta(id=call_id or None, index=index, metadata=metadata)
        delta = self._function(payload, function, call_id or None, index)
        if metadata is None:
            return delta
        return d.CallDelta(
            id=delta.id,
            index=index,
            name=delta.name,
            arguments=delta.arguments,
            metadata=metadata,
        )

    @staticmethod
    def _function(
        payload: dict[str, Any], function: Any, call_id: str | None, index: int | None
    ) -> d.CallDelta:
        if type(function) is not dict:
            raise _bad(payload, "'function' is not an object")
        name = _optional(payload, function, "name", str, "a function 'name' is not a string")
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
    """The assistant message: text (``None`` when there is none) and every call, with
    the reasoning the server wants back: ``reasoning_content`` (DeepSeek, Kimi),
    ``reasoning_details`` (OpenRouter), or Mistral's content chunks (``thinking`` and
    ``text``, in order) when the content came as chunks."""
    message: dict[str, Any] = {"role": "assistant", "content": response.text or None}
    field = next(
        (p.data["field"] for p in response.parts if p.kind == "reasoning" and "field" in p.data),
        None,
    )
    chunks = [p.data["content_chunk"] for p in response.parts if "content_chunk" in p.data]
    if field == "content" or chunks:
        message["content"] = _content_chunks(response)
    elif field == "reasoning_content" and response.tool_calls:
        # after a tool call only: that is where thinking mode needs it back
        message["reasoning_content"] = response.reasoning
    for part in response.parts:
        if part.kind == "item" and "reasoning_details" in part.data:
            message["reasoning_details"] = part.data["reasoning_details"]
    entries = [function_call_entry(call) for _, call in turn_parts(response) if call is not None]
    if entries:
        message["tool_calls"] = entries
    return [message]


def _content_chunks(response: Response) -> list[dict[str, Any]]:
    """Mistral's assistant content: its parts in order as ``thinking`` and ``text`` chunks
    and the other chunks as they came."""
    out: list[dict[str, Any]] = []
    for part in response.parts:
        if part.kind == "reasoning" and part.text:
            out.append({"type": "thinking", "thinking": [{"type": "text", "text": part.text}]})
        elif part.kind == "text" and part.text:
            out.append({"type": "text", "text": part.text})
        elif part.kind == "item" and "content_chunk" in part.data:
            out.append(dict(part.data["content_chunk"]))
    return out


user_message = text_user_message

PROVIDER = Provider(
    name="openai-chat",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
    detect_fallback=_detect_error,
    aliases=("openai",),
    # for servers whose streams end with [DONE] and no finish reason (Snowflake Cortex,
    # some OpenRouter routes): format="openai-chat-done-marker" takes the marker as the
    # finish (Response.done_marker_finish); a stream cut before it is still refused. The
    # openai SDK's Stream swallows the marker, so the raw body must be fed.
    done_marker_names=("openai-chat-done-marker",),
)
