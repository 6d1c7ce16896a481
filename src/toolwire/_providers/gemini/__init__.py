"""Gemini (Gemini API and Vertex AI): the ``"gemini"`` provider.

Calls arrive whole, or (Vertex) as streamed ``partialArgs`` written into JSON text as they
arrive and ended by the provider; ``thoughtSignature`` goes back in the part it came in.
Linear in the size of each chunk.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..._core import deltas as d
from ..._core.content import File, Image, b64
from ..._core.messages import Call, ResultText, object_arguments, turn_parts, wire_name
from ..._core.providers import Provider
from ..._core.response import ContentPart, Response
from ..._errors import ToolDefinitionError, UsageError
from .. import _payload as read
from .schema import gemini_json_schema, subset_schema

if TYPE_CHECKING:
    from ..._core.providers import ToolSpec


_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_FAILED = frozenset({"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"})


def _blocked(feedback: dict[str, Any], payload: dict[str, Any]) -> d.FinishDelta | None:
    """The finish of a prompt the API blocked, if it did."""
    blocked = read.opt_str(feedback, "blockReason", "promptFeedback", payload)
    if blocked is None:
        return None
    return d.FinishDelta(raw=blocked, kind="content_filter")


def _finish_kind(reason: str) -> d.FinishKind:
    if reason == "STOP":
        return "stop"
    if reason == "MAX_TOKENS":
        return "length"
    if reason in _FILTERED:
        return "content_filter"
    if reason in _FAILED:
        return "error"
    return "other"


# ------------------------------------------------------------------------ JSON paths

Segment = str | int  # an object key or an array index

_SEGMENT = re.compile(
    r"""\.(?P<name>[^.\[\]]+)             # .name
      | \[(?P<index>[0-9]+)\]             # [3]
      | \['(?P<squoted>(?:[^'\\]|\\.)*)'\]  # ['name with . or spaces']
      | \["(?P<dquoted>(?:[^"\\]|\\.)*)"\]  # ["name"]
    """,
    re.VERBOSE,
)
_QUOTED_ESCAPE = re.compile(r"\\(.)")


def parse_json_path(path: str) -> tuple[Segment, ...] | None:
    """The segments of a ``partialArgs`` JSON path (``$.a[2]['b c']``), or ``None``.

    Only the subset Vertex uses is accepted: the root ``$`` followed by member names (dot
    or bracket-quoted) and array indexes. Wildcards, slices and filters are not paths to
    one value and give ``None``.
    """
    if not path.startswith("$"):
        return None
    segments: list[Segment] = []
    pos = 1
    while pos < len(path):
        match = _SEGMENT.match(path, pos)
        if match is None:
            return None
        if match.group("name") is not None:
            segments.append(match.group("name"))
        elif match.group("index") is not None:
            segments.append(int(match.group("index")))
        else:
            quoted = match.group("squoted")
            if quoted is None:
                quoted = match.group("dquoted")
            segments.append(_QUOTED_ESCAPE.sub(r"\1", quoted))
        pos = match.end()
    return tuple(segments)


def _string_body(text: str) -> str:
    """``text`` JSON-escaped, without the surrounding quotes."""
    return read.escape_surrogates(json.dumps(text, ensure_ascii=False)[1:-1])


_ENTRY = "functionCall.partialArgs[]"


def _entry_path(entry: dict[str, Any], payload: Any) -> tuple[str, tuple[Segment, ...]]:
    """An entry's ``jsonPath``, as written and parsed; it must name an argument."""
    raw_path = read.opt_str(entry, "jsonPath", _ENTRY, payload)
    if raw_path is None:
        raise read.fail(f"{_ENTRY}.jsonPath is missing", payload)
    path = parse_json_path(raw_path)
    if not path:
        raise read.fail(f"{_ENTRY}.jsonPath {raw_path!r} is not a path to an argument", payload)
    return raw_path, path


def _scalar_text(entry: dict[str, Any], raw_path: str, payload: Any) -> str:
    """The JSON text of an entry's number, boolean or null value."""
    if "numberValue" in entry:
        number = entry["numberValue"]
        valid = isinstance(number, (int, float)) and not isinstance(number, bool)
        if not valid or not math.isfinite(number):
            raise read.fail(f"{raw_path}: numberValue must be a finite number", payload)
        return json.dumps(number)
    if "boolValue" in entry:
        flag = entry["boolValue"]
        if not isinstance(flag, bool):
            raise read.fail(f"{raw_path}: boolValue must be a boolean", payload)
        return "true" if flag else "false"
    if "nullValue" in entry:
        return "null"
    raise read.fail(f"{raw_path}: partialArgs entry carries no value", payload)


class _Frame:
    """One open container of the arguments being written."""

    __slots__ = ("count", "is_array", "keys")

    def __init__(self, is_array: bool) -> None:
        self.is_array = is_array
        self.count = 0
        self.keys: set[str] = set()


class _ArgumentWriter:
    """Turns ``partialArgs`` entries, in document order, into a stream of JSON text.

    Invariant: the text emitted so far is a prefix of the compact serialisation of the
    arguments received so far, and ``finish()`` returns the text that completes it. Work
    per entry is proportional to the path depth plus the value's length.
    """

    def __init__(self) -> None:
        self._frames: list[_Frame] = []  # frames[0] is the argument object once opened
        self._path: list[Segment] = []  # the segment under which frames[i + 1] sits
        self._open_string: tuple[Segment, ...] | None = None
        self._held = ""  # a trailing high surrogate waiting for its pair

    def write(self, entry: dict[str, Any], payload: Any) -> str:
        """The JSON text that entry adds."""
        raw_path, path = _entry_path(entry, payload)
        more = read.opt_bool(entry, "willContinue", _ENTRY, payload) is True
        out: list[str] = []
        if self._open_string is not None:
            if path == self._open_string:
                return self._continue_string(entry.get("stringValue"), raw_path, more, payload)
            # A new path means the provider moved on: the open string has ended.
            out.append(self._close_string())
        out.append(self._enter(path, raw_path, payload))
        if "stringValue" in entry:
            out.append(self._start_string(entry["stringValue"], path, raw_path, more, payload))
        else:
            out.append(_scalar_text(entry, raw_path, payload))
        return "".join(out)

    def _continue_string(self, piece: Any, raw_path: str, more: bool, payload: Any) -> str:
        """The next piece of the open string, and its closing quote when it is the last."""
        if not isinstance(piece, str):
            raise read.fail(f"{raw_path}: a string continues with {read.type_name(piece)}", payload)
        text = self._string_piece(piece)
        return text if more else text + self._close_string()

    def _start_string(
        self, piece: Any, path: tuple[Segment, ...], raw_path: str, more: bool, payload: Any
    ) -> str:
        """A string value's opening quote and first piece, left open when more follows."""
        if not isinstance(piece, str):
            raise read.fail(f"{raw_path}: stringValue must be a string", payload)
        text = '"' + self._string_piece(piece)
        if more:
            self._open_string = path
            return text
        return text + '"'

    @property
    def opened(self) -> bool:
        """Whether any entry was written (the argument object is open)."""
        return bool(self._frames)

    def finish(self) -> str:
        """The text that closes everything still open (``{}`` when nothing was written)."""
        if not self._frames:
            return "{}"
        out = [self._close_string()] if self._open_string is not None else []
        while self._frames:
            out.append("]" if self._frames.pop().is_array else "}")
        self._path.clear()
        return "".join(out)

    def _string_piece(self, piece: str) -> str:
        if self._held:
            if piece and "\udc00" <= piece[0] <= "\udfff":
                # The two halves of a pair arrived in two pieces: join them into one
                # code point, as json.loads would have for the unsplit string.
                pair = (self._held + piece[0]).encode("utf-16-le", "surrogatepass")
                piece = pair.decode("utf-16-le") + piece[1:]
            else:
                piece = self._held + piece
            self._held = ""
        # A pair split across two pieces must not be emitted half: hold the high half.
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return _string_body(piece)

    def _close_string(self) -> str:
        held, self._held = self._held, ""
        self._open_string = None
        return _string_body(held) + '"'

    def _enter(self, path: tuple[Segment, ...], raw: str, payload: Any) -> str:
        """Text moving from the current position to a new value at ``path``."""
        out: list[str] = []
        if not self._frames:
            out.append("{")
            self._frames.append(_Frame(is_array=False))
        parent = path[:-1]
        common = 0
        limit = min(len(self._path), len(parent))
        while common < limit and self._path[common] == parent[common]:
            common += 1
        while len(self._frames) - 1 > common:
            out.append("]" if self._frames.pop().is_array else "}")
            self._path.pop()
        for depth in range(common, len(path)):
            segment = path[depth]
            out.append(self._member(segment, raw, payload))
            if depth == len(path) - 1:
                break
            opens_array = isinstance(path[depth + 1], int)
            out.append("[" if opens_array else "{")
            self._frames.append(_Frame(is_array=opens_array))
            self._path.append(segment)
        return "".join(out)

    def _member(self, segment: Segment, raw: str, payload: Any) -> str:
        """Separator (and key) for a new child of the innermost open container."""
        frame = self._frames[-1]
        comma = "," if frame.count else ""
        frame.count += 1
        if frame.is_array:
            if not isinstance(segment, int):
                raise read.fail(f"{raw}: member {segment!r} of an array", payload)
            if segment != frame.count - 1:
                raise read.fail(
                    f"{raw}: array element {segment} out of order "
                    f"(expected {frame.count - 1}); partialArgs must arrive in document order",
                    payload,
                )
            return comma
        if isinstance(segment, int):
            raise read.fail(f"{raw}: index [{segment}] into an object", payload)
        if segment in frame.keys:
            raise read.fail(
                f"{raw}: field {segment!r} written twice; partialArgs must arrive in "
                "document order",
                payload,
            )
        frame.keys.add(segment)
        return comma + _json_key(segment) + ":"


def _json_key(key: str) -> str:
    return read.escape_surrogates(json.dumps(key, ensure_ascii=False))


# --------------------------------------------------------------------------- adapter

# the members a part without text may have and still say nothing (else it is echoed whole)
_EMPTY_KEYS = frozenset({"thought", "thoughtSignature"})


class GeminiAdapter:
    """Translates one Gemini / Vertex ``streamGenerateContent`` stream (``"gemini"``).

    ``choice`` selects the candidate to assemble when ``candidateCount`` > 1.
    """

    format: str = "gemini"

    def __init__(self, choice: int = 0) -> None:
        self._choice = choice
        self._calls = 0  # calls started so far: the next call's index
        self._writer: _ArgumentWriter | None = None  # the streamed call being written
        self._open_index = 0
        self._open_args: str | None = None  # the streamed call's non-empty start args, as JSON
        self._meta: tuple[str | None, str | None, str | None] = (None, None, None)
        self._finished = False
        self._run: tuple[str, bool] | None = None  # kind of the text run, and if signed

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[d.Delta]:
        """The deltas of one ``GenerateContentResponse`` chunk (``event`` is unused)."""
        payload = read.ensure_dict(payload, "a Gemini chunk", payload)
        out: list[d.Delta] = []
        error = payload.get("error")
        if error is not None:
            return [self._error(error, payload)]
        self._meta_delta(payload, out)
        finish = self._candidate_deltas(payload, out)
        feedback = read.opt_dict(payload, "promptFeedback", "chunk", payload)
        if feedback is not None and finish is None:
            finish = _blocked(feedback, payload)
        usage = read.opt_dict(payload, "usageMetadata", "chunk", payload)
        if usage is not None:
            delta = self._usage(usage, payload)
            if delta is not None:
                out.append(delta)
        if finish is not None and not self._finished:
            self._finished = True
            out.append(finish)
        return out

    def _meta_delta(self, payload: dict[str, Any], out: list[d.Delta]) -> None:
        """Add a ``MetaDelta`` when the chunk's id, model or time is new."""
        response_id = read.opt_str(payload, "responseId", "chunk", payload)
        model = read.opt_str(payload, "modelVersion", "chunk", payload)
        created = read.opt_str(payload, "createTime", "chunk", payload)
        meta = (response_id, model, created)
        if any(meta) and meta != self._meta:
            self._meta = meta
            out.append(d.MetaDelta(response_id=response_id, model=model, created=created))

    def _candidate_deltas(
        self, payload: dict[str, Any], out: list[d.Delta]
    ) -> d.FinishDelta | None:
        """Add the deltas of the chosen candidate's parts; return its finish, if any."""
        candidate = self._candidate(payload)
        if candidate is None:
            return None
        content = read.opt_dict(candidate, "content", "candidate", payload)
        if content is not None:
            for part in read.opt_list(content, "parts", "candidate.content", payload) or ():
                out.extend(self._part(part, payload))
        reason = read.opt_str(candidate, "finishReason", "candidate", payload)
        if reason is None:
            return None
        return d.FinishDelta(raw=reason, kind=_finish_kind(reason))

    def _candidate(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The candidate numbered ``choice`` (by ``index``, else by position), if any."""
        for position, item in enumerate(
            read.opt_list(payload, "candidates", "chunk", payload) or ()
        ):
            candidate = read.ensure_dict(item, "candidates[]", payload)
            index = read.opt_count(candidate, "index", "candidate", payload)
            if (position if index is None else index) == self._choice:
                return candidate
        return None

    @staticmethod
    def _error(error: Any, payload: dict[str, Any]) -> d.ErrorDelta:
        if isinstance(error, dict):
            text = read.error_text(error, "status", "Gemini error", payload)
            return d.ErrorDelta(message=text, error=error)
        if isinstance(error, str):
            return d.ErrorDelta(message=error, error=error)
        raise read.fail(f"error must be an object, got {read.type_name(error)}", payload)

    @staticmethod
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> d.UsageDelta | None:
        where = "usageMetadata"
        prompt = read.opt_count(usage, "promptTokenCount", where, payload)
        # The prompt of built-in tools (search, code execution results) is input too: the
        # total counts it beside promptTokenCount, and it is billed at the input price.
        tool_prompt = read.opt_count(usage, "toolUsePromptTokenCount", where, payload)
        if tool_prompt is not None:
            prompt = (prompt or 0) + tool_prompt
        counts = {
            "input_tokens": prompt,
            "output_tokens": read.opt_count(usage, "candidatesTokenCount", where, payload),
            "total_tokens": read.opt_count(usage, "totalTokenCount", where, payload),
            "reasoning_tokens": read.opt_count(usage, "thoughtsTokenCount", where, payload),
            "cache_read_tokens": read.opt_count(usage, "cachedContentTokenCount", where, payload),
        }
        if all(value is None for value in counts.values()):
            return None  # Vertex repeats a count-less usageMetadata on every chunk
        return d.UsageDelta(raw=dict(usage), **counts)

    def _part(self, item: Any, payload: dict[str, Any]) -> list[d.Delta]:
        part = read.ensure_dict(item, "content.parts[]", payload)
        call = read.opt_dict(part, "functionCall", "part", payload)
        signature = read.opt_str(part, "thoughtSignature", "part", payload)
        if call is not None:
            self._run = None
            metadata = {"thought_signature": signature} if signature else None
            return self._function_call(call, metadata, payload)
        text = read.opt_str(part, "text", "part", payload)
        if text is None:
            return self._item(part, signature)
        return self._text(part, text, signature, payload)

    def _item(self, part: dict[str, Any], signature: str | None) -> list[d.Delta]:
        """A part that is neither a call nor text: nothing when it is empty, else itself."""
        if not any(key not in _EMPTY_KEYS for key in part) and not signature:
            return []  # an empty part
        # executableCode, codeExecutionResult, a server-side toolCall / toolResponse
        # (the API ran it: never a client call), inlineData, a signature alone, or a
        # part type toolwire does not know: echoed as it came, in its place
        self._run = None
        return [d.PartDelta(kind="item", data=dict(part))]

    def _text(
        self, part: dict[str, Any], text: str, signature: str | None, payload: dict[str, Any]
    ) -> list[d.Delta]:
        """A text or thought part; a signature starts a signed run (a new part after
        another signed one)."""
        thought = read.opt_bool(part, "thought", "part", payload)
        kind: Literal["text", "reasoning"] = "reasoning" if thought else "text"
        out: list[d.Delta] = []
        run = self._run
        if signature:
            # a run holds one signature: a second one starts a new part
            start = run is not None and run == (kind, True)
            out.append(d.PartDelta(kind=kind, start=start, data={"thoughtSignature": signature}))
            self._run = (kind, True)
        elif run is None or run[0] != kind:
            self._run = (kind, False)
        if text:
            out.append(d.TextPart(text=text) if kind == "text" else d.ReasoningPart(text=text))
        return out

    def _function_call(
        self, call: dict[str, Any], metadata: dict[str, Any] | None, payload: dict[str, Any]
    ) -> list[d.Delta]:
        """A whole call, the start of a streamed one, or a piece of the open one."""
        where = "functionCall"
        name = read.opt_str(call, "name", where, payload)
        more = read.opt_bool(call, "willContinue", where, payload) is True
        entries = read.opt_list(call, "partialArgs", where, payload)
        if self._writer is not None:
            return self._continue_call(self._writer, call, name, more, entries, metadata, payload)
        if not name:
            raise read.fail(
                "functionCall without a name, and no streamed call is open to continue", payload
            )
        call_id = read.opt_str(call, "id", where, payload) or None
        index = self._calls
        self._calls += 1
        args = call.get("args")
        if args is None:
            args = {}
        elif not isinstance(args, dict):
            raise read.fail(
                f"functionCall.args must be an object, got {read.type_name(args)}", payload
            )
        final = None
        if more or entries:
            if args:  # stated at the start: never dropped, checked at the call's end
                final = read.dump_arguments(args, "functionCall.args", payload)
            writer = _ArgumentWriter()
            text = self._write(writer, entries, payload)
            if more:
                self._writer, self._open_index, self._open_args = writer, index, final
                final = None
            else:
                text += writer.finish()
        else:
            text = read.dump_arguments(args, "functionCall.args", payload)
        return [
            d.CallDelta(
                id=call_id,
                index=index,
                name=name,
                arguments=text,
                final_arguments=final,
                start=True,
                end=not more,
                metadata=metadata,
            )
        ]

    def _continue_call(
        self,
        writer: _ArgumentWriter,
        call: dict[str, Any],
        name: str | None,
        more: bool,
        entries: list[Any] | None,
        metadata: dict[str, Any] | None,
        payload: dict[str, Any],
    ) -> list[d.Delta]:
        """A piece of the open streamed call, its end when nothing more follows."""
        if name:
            raise read.fail(
                f"functionCall {name!r} started while a streamed call is still open",
                payload,
            )
        if call.get("args") is not None:
            raise read.fail("functionCall.args inside a streamed call", payload)
        text = self._write(writer, entries, payload)
        final = None
        if not more:
            final = self._open_args
            if final is None or writer.opened:  # else the start args are the call
                text += writer.finish()
            self._writer, self._open_args = None, None
        elif not text and not metadata:
            return []  # a keep-alive part: the call goes on, nothing to add
        return [
            d.CallDelta(
                index=self._open_index,
                arguments=text,
                final_arguments=final,
                start=False,
                end=not more,
                metadata=metadata,
            )
        ]

    @staticmethod
    def _write(writer: _ArgumentWriter, entries: list[Any] | None, payload: Any) -> str:
        return "".join(
            writer.write(read.ensure_dict(entry, "functionCall.partialArgs[]", payload), payload)
            for entry in entries or ()
        )


# ------------------------------------------------------------------- the provider

_DETECT_KEYS = ("candidates", "promptFeedback", "usageMetadata")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$")


def adapter(choice: int) -> GeminiAdapter:
    """A fresh adapter for one stream, reading its candidate number ``choice``."""
    return GeminiAdapter(choice=choice)


def detect(payload: dict[str, Any], event: str | None) -> bool:
    """Whether a first payload is a Gemini response (one of its top-level keys)."""
    return any(key in payload for key in _DETECT_KEYS)


def definition(tool: ToolSpec, strict: bool) -> dict[str, Any]:
    """One function declaration, ``{"name", "description", "parameters"}`` with the
    parameters in Gemini's OpenAPI subset, or ``"parametersJsonSchema"`` (JSON Schema)
    instead when the subset cannot say the schema: a recursive type, or an object with
    arbitrary keys (``dict[str, X]``). ``strict`` has no meaning for Gemini and is
    ignored; a tool without parameters gets neither key (Gemini rejects an ``OBJECT``
    with empty ``properties``). :func:`group_definitions` puts them in one ``Tool``."""
    where = f"tool {tool.name!r}"
    if not _NAME.match(tool.name):
        raise ToolDefinitionError(f"{where}: Gemini function names must start with a letter or '_'")
    declaration: dict[str, Any] = {"name": tool.name, "description": tool.description}
    parameters = subset_schema(tool.parameters, where=where)
    if parameters is not None:
        if parameters.get("properties"):
            declaration["parameters"] = parameters
        return declaration
    declaration["parametersJsonSchema"] = gemini_json_schema(tool.parameters, where=where)
    return declaration


def group_definitions(declarations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``tools=`` takes: ``[{"functionDeclarations": [...]}]``, one ``Tool`` holding
    every declaration (``[]`` for no tools)."""
    return [{"functionDeclarations": declarations}] if declarations else []


def tool_results(results: Sequence[ResultText]) -> list[dict[str, Any]]:
    """One user message of ``functionResponse`` parts (``id`` left out when the call id
    is empty); no results give ``[]``. A JSON object result is the ``response``, any other
    value ``{"result": value}`` (a ``str`` result as its text); a rich result's images
    and files are the ``functionResponse``'s own ``parts`` (``inlineData``, base64), its
    text ``{"result": text}``."""
    if not results:
        return []
    parts = []
    for r in results:
        function_response: dict[str, Any] = {"name": r.name}
        if r.outcome.call_id:
            function_response["id"] = r.outcome.call_id
        if r.error:
            function_response["response"] = {"error": r.text}
        elif r.plain:
            function_response["response"] = {"result": r.text}
        else:
            function_response["response"] = _response_value(r)
        if r.parts is not None and not r.error:
            inline = [_inline(p, n) for n, p in enumerate(r.parts) if not isinstance(p, str)]
            function_response["parts"] = inline
        parts.append({"functionResponse": function_response})
    return [{"role": "user", "parts": parts}]


def _response_value(result: ResultText) -> dict[str, Any]:
    try:
        value = json.loads(result.text)
    except ValueError:
        call_id = result.outcome.call_id
        raise UsageError(
            f"outcome {call_id!r}: result_json is not JSON, so Gemini cannot get it"
        ) from None
    if isinstance(value, dict):
        return value
    return {"result": value}


def _inline(part: Image | File, position: int) -> dict[str, Any]:
    name = part.filename if isinstance(part, File) and part.filename else f"part-{position + 1}"
    blob = {"mimeType": part.media_type, "data": b64(part), "displayName": name}
    return {"inlineData": blob}


def assistant_turn(response: Response) -> list[dict[str, Any]]:
    """The model turn: the parts in order, each with its ``thoughtSignature`` (see the
    module docstring); code execution, server-side tool and unknown parts as they came.
    A response without parts gives ``[]``."""
    parts: list[dict[str, Any]] = []
    for part, call in turn_parts(response):
        if call is not None:
            parts.append(_call_part(call))
        elif part.kind in ("text", "reasoning"):
            parts.extend(_text_part(part))
        elif part.kind == "item":
            parts.append(dict(part.data))
    return [{"role": "model", "parts": parts}] if parts else []


def _call_part(call: Call) -> dict[str, Any]:
    """A ``functionCall`` part, with the call's ``thoughtSignature``."""
    function: dict[str, Any] = {"name": wire_name(call.name)}
    function["args"] = object_arguments(call)
    if call.id:
        function["id"] = call.id
    entry: dict[str, Any] = {"functionCall": function}
    signature = call.metadata.get("thought_signature")
    if signature:
        entry["thoughtSignature"] = signature
    return entry


def _text_part(part: ContentPart) -> list[dict[str, Any]]:
    """A text or thought part with its ``thoughtSignature``; none for an empty one."""
    signature = part.data.get("thoughtSignature")
    if not part.text and not signature:
        return []
    entry: dict[str, Any] = {"text": part.text}
    if part.kind == "reasoning":
        entry["thought"] = True
    if signature:
        entry["thoughtSignature"] = signature
    return [entry]


def user_message(text: str) -> dict[str, Any]:
    """A user message holding ``text`` (what toolwire itself tells the model)."""
    return {"role": "user", "parts": [{"text": text}]}


# Google serves a stream as SSE with ?alt=sse (what the SDKs ask for), else as one JSON array


PROVIDER = Provider(
    name="gemini",
    detect=detect,
    adapter=adapter,
    definition=definition,
    tool_results=tool_results,
    assistant_turn=assistant_turn,
    user_message=user_message,
    group_definitions=group_definitions,
)
