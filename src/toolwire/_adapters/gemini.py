"""Gemini (Gemini API and Vertex AI) ``GenerateContentResponse`` chunks -> normalised deltas.

Strategy: each streamed chunk is a whole ``GenerateContentResponse``; only the candidate
whose ``index`` is ``choice`` (0 by default; a candidate without ``index`` counts by its
position) is translated. Its parts are read in order:

- ``text`` parts become ``TextPart`` (empty texts are dropped), ``thought: true`` parts
  ``ReasoningPart``;
- a ``functionCall`` part with ``name`` and no ``willContinue`` is a whole call: one
  ``CallDelta`` with ``start=True`` and ``end=True`` whose arguments are ``args``
  serialised as compact JSON (``ensure_ascii=False``); a call without ``args`` has ``{}``;
- Vertex's streamed arguments: ``{name, willContinue: true}`` opens a call, parts with
  ``partialArgs`` (``jsonPath`` plus one of ``stringValue``/``numberValue``/``boolValue``/
  ``nullValue``, string pieces continued by ``willContinue``) add to it, bare
  ``{willContinue: true}`` parts keep it alive, and the first ``functionCall`` without
  ``willContinue`` (usually ``{}``, or the last ``partialArgs`` part) ends it.

Streamed arguments are **translated into JSON text as they arrive**, not buffered: a small
writer keeps the stack of open containers and emits, per ``partialArgs`` entry, the
closers, separators, keys and value text that take the document from the previous path
to the new one. So the assembler's incremental parser (and the live preview) sees the
arguments grow exactly as for a provider that streams JSON text, and the text of a
streamed call equals the compact serialisation of the same object sent whole. This works
because Vertex emits paths in document order (every recording does: a field, its
siblings, then the next array element). A path that would reopen a container already
closed, skip an array index, repeat a field or index an object as an array cannot be
expressed as a continuation of the text already emitted and is a ``StreamFormatError``.
The writer closes containers only when the provider ends the call: a stream cut while a
call is open leaves its text unterminated, so it can never be finalised by accident. (A
string piece marked ``willContinue`` that is followed by another path is taken as ended:
the provider has moved on, and the call still needs its own end.)

``thoughtSignature`` on a function-call part is kept as ``metadata["thought_signature"]``
(it must be echoed back with the call); on a text part it is dropped, as deltas have no
place for it. Calls carry the provider's ``id`` when present and
an ``index`` that is their position among this stream's calls (Gemini has none).

``finishReason`` gives one ``FinishDelta`` (later restatements are ignored): ``STOP`` is
``stop`` (the assembler promotes it to a tool turn when calls arrived), ``MAX_TOKENS``
``length``, the safety family (``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
``PROHIBITED_CONTENT``, ``SPII``, image variants) ``content_filter``, the function-call
failures (``MALFORMED_FUNCTION_CALL``, ``UNEXPECTED_TOOL_CALL``, ``TOO_MANY_TOOL_CALLS``)
``error``, anything else ``other``. ``promptFeedback.blockReason`` (the prompt itself was
blocked, no candidates) finishes as ``content_filter``. ``usageMetadata`` counts become
``UsageDelta``; ``responseId``/``modelVersion`` a ``MetaDelta`` whenever they change; an
``error`` object (what Google returns inside a streamed array) an ``ErrorDelta``.

Each chunk is translated in time linear in its size; the writer's state is the depth of
the current path.
"""

from __future__ import annotations

import json
import math
import re
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
    escape_surrogates,
    fail,
    opt_bool,
    opt_count,
    opt_dict,
    opt_list,
    opt_str,
    type_name,
)

__all__ = ["GeminiAdapter"]

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


def _finish_kind(reason: str) -> FinishKind:
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
    return escape_surrogates(json.dumps(text, ensure_ascii=False)[1:-1])


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
        where = "functionCall.partialArgs[]"
        raw_path = opt_str(entry, "jsonPath", where, payload)
        if raw_path is None:
            raise fail(f"{where}.jsonPath is missing", payload)
        path = parse_json_path(raw_path)
        if not path:
            raise fail(f"{where}.jsonPath {raw_path!r} is not a path to an argument", payload)
        more = opt_bool(entry, "willContinue", where, payload) is True
        out: list[str] = []
        if self._open_string is not None:
            if path == self._open_string:
                piece = entry.get("stringValue")
                if not isinstance(piece, str):
                    raise fail(f"{raw_path}: a string continues with {type_name(piece)}", payload)
                out.append(self._string_piece(piece))
                if not more:
                    out.append(self._close_string())
                return "".join(out)
            # A new path means the provider moved on: the open string has ended.
            out.append(self._close_string())
        out.append(self._enter(path, raw_path, payload))
        if "stringValue" in entry:
            piece = entry["stringValue"]
            if not isinstance(piece, str):
                raise fail(f"{raw_path}: stringValue must be a string", payload)
            out.append('"')
            out.append(self._string_piece(piece))
            if more:
                self._open_string = path
            else:
                out.append('"')
        elif "numberValue" in entry:
            number = entry["numberValue"]
            valid = isinstance(number, (int, float)) and not isinstance(number, bool)
            if not valid or not math.isfinite(number):
                raise fail(f"{raw_path}: numberValue must be a finite number", payload)
            out.append(json.dumps(number))
        elif "boolValue" in entry:
            flag = entry["boolValue"]
            if not isinstance(flag, bool):
                raise fail(f"{raw_path}: boolValue must be a boolean", payload)
            out.append("true" if flag else "false")
        elif "nullValue" in entry:
            out.append("null")
        else:
            raise fail(f"{raw_path}: partialArgs entry carries no value", payload)
        return "".join(out)

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
                raise fail(f"{raw}: member {segment!r} of an array", payload)
            if segment != frame.count - 1:
                raise fail(
                    f"{raw}: array element {segment} out of order "
                    f"(expected {frame.count - 1}); partialArgs must arrive in document order",
                    payload,
                )
            return comma
        if isinstance(segment, int):
            raise fail(f"{raw}: index [{segment}] into an object", payload)
        if segment in frame.keys:
            raise fail(
                f"{raw}: field {segment!r} written twice; partialArgs must arrive in "
                "document order",
                payload,
            )
        frame.keys.add(segment)
        return comma + _json_key(segment) + ":"


def _json_key(key: str) -> str:
    return escape_surrogates(json.dumps(key, ensure_ascii=False))


# --------------------------------------------------------------------------- adapter


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
        self._meta: tuple[str | None, str | None] = (None, None)
        self._finished = False

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """The deltas of one ``GenerateContentResponse`` chunk (``event`` is unused)."""
        payload = ensure_dict(payload, "a Gemini chunk", payload)
        out: list[Delta] = []
        error = payload.get("error")
        if error is not None:
            return [self._error(error, payload)]
        response_id = opt_str(payload, "responseId", "chunk", payload)
        model = opt_str(payload, "modelVersion", "chunk", payload)
        if (response_id or model) and (response_id, model) != self._meta:
            self._meta = (response_id, model)
            out.append(MetaDelta(response_id=response_id, model=model))
        finish: FinishDelta | None = None
        candidate = self._candidate(payload)
        if candidate is not None:
            content = opt_dict(candidate, "content", "candidate", payload)
            if content is not None:
                for part in opt_list(content, "parts", "candidate.content", payload) or ():
                    out.extend(self._part(part, payload))
            reason = opt_str(candidate, "finishReason", "candidate", payload)
            if reason is not None:
                finish = FinishDelta(raw=reason, kind=_finish_kind(reason))
        feedback = opt_dict(payload, "promptFeedback", "chunk", payload)
        if feedback is not None and finish is None:
            blocked = opt_str(feedback, "blockReason", "promptFeedback", payload)
            if blocked is not None:
                finish = FinishDelta(raw=blocked, kind="content_filter")
        usage = opt_dict(payload, "usageMetadata", "chunk", payload)
        if usage is not None:
            delta = self._usage(usage, payload)
            if delta is not None:
                out.append(delta)
        if finish is not None and not self._finished:
            self._finished = True
            out.append(finish)
        return out

    def _candidate(self, payload: dict[str, Any]) -> dict[str, Any] | None:
        """The candidate numbered ``choice`` (by ``index``, else by position), if any."""
        for position, item in enumerate(opt_list(payload, "candidates", "chunk", payload) or ()):
            candidate = ensure_dict(item, "candidates[]", payload)
            index = opt_count(candidate, "index", "candidate", payload)
            if (position if index is None else index) == self._choice:
                return candidate
        return None

    @staticmethod
    def _error(error: Any, payload: dict[str, Any]) -> ErrorDelta:
        if isinstance(error, dict):
            message = opt_str(error, "message", "error", payload)
            status = opt_str(error, "status", "error", payload)
            text = message or status or "Gemini error"
            if message and status:
                text = f"{status}: {message}"
            return ErrorDelta(message=text, error=error)
        if isinstance(error, str):
            return ErrorDelta(message=error, error=error)
        raise fail(f"error must be an object, got {type_name(error)}", payload)

    @staticmethod
    def _usage(usage: dict[str, Any], payload: dict[str, Any]) -> UsageDelta | None:
        where = "usageMetadata"
        counts = {
            "input_tokens": opt_count(usage, "promptTokenCount", where, payload),
            "output_tokens": opt_count(usage, "candidatesTokenCount", where, payload),
            "total_tokens": opt_count(usage, "totalTokenCount", where, payload),
            "reasoning_tokens": opt_count(usage, "thoughtsTokenCount", where, payload),
            "cache_read_tokens": opt_count(usage, "cachedContentTokenCount", where, payload),
        }
        if all(value is None for value in counts.values()):
            return None  # Vertex repeats a count-less usageMetadata on every chunk
        return UsageDelta(raw=dict(usage), **counts)

    def _part(self, item: Any, payload: dict[str, Any]) -> list[Delta]:
        part = ensure_dict(item, "content.parts[]", payload)
        call = opt_dict(part, "functionCall", "part", payload)
        if call is not None:
            signature = opt_str(part, "thoughtSignature", "part", payload)
            metadata = {"thought_signature": signature} if signature else None
            return self._function_call(call, metadata, payload)
        text = opt_str(part, "text", "part", payload)
        if not text:
            return []  # empty text parts, and parts toolwire does not translate
        if opt_bool(part, "thought", "part", payload):
            return [ReasoningPart(text=text)]
        return [TextPart(text=text)]

    def _function_call(
        self, call: dict[str, Any], metadata: dict[str, Any] | None, payload: dict[str, Any]
    ) -> list[Delta]:
        """A whole call, the start of a streamed one, or a piece of the open one."""
        where = "functionCall"
        name = opt_str(call, "name", where, payload)
        more = opt_bool(call, "willContinue", where, payload) is True
        entries = opt_list(call, "partialArgs", where, payload)
        if self._writer is not None:
            if name:
                raise fail(
                    f"functionCall {name!r} started while a streamed call is still open",
                    payload,
                )
            if call.get("args") is not None:
                raise fail("functionCall.args inside a streamed call", payload)
            text = self._write(self._writer, entries, payload)
            if not more:
                text += self._writer.finish()
                self._writer = None
            elif not text and not metadata:
                return []  # a keep-alive part: the call goes on, nothing to add
            return [
                CallDelta(
                    index=self._open_index,
                    arguments=text,
                    start=False,
                    end=not more,
                    metadata=metadata,
                )
            ]
        if not name:
            raise fail(
                "functionCall without a name, and no streamed call is open to continue", payload
            )
        call_id = opt_str(call, "id", where, payload) or None
        index = self._calls
        self._calls += 1
        if more or entries:
            writer = _ArgumentWriter()
            text = self._write(writer, entries, payload)
            if more:
                self._writer, self._open_index = writer, index
            else:
                text += writer.finish()
        else:
            args = call.get("args")
            if args is None:
                args = {}
            elif not isinstance(args, dict):
                raise fail(f"functionCall.args must be an object, got {type_name(args)}", payload)
            text = dump_arguments(args, "functionCall.args", payload)
        return [
            CallDelta(
                id=call_id,
                index=index,
                name=name,
                arguments=text,
                start=True,
                end=not more,
                metadata=metadata,
            )
        ]

    @staticmethod
    def _write(writer: _ArgumentWriter, entries: list[Any] | None, payload: Any) -> str:
        return "".join(
            writer.write(ensure_dict(entry, "functionCall.partialArgs[]", payload), payload)
            for entry in entries or ()
        )
