"""Early abort: stop reading a response as soon as one of its calls can never run.

:class:`AbortWatch` judges the assembler's events as they arrive (sans-IO);
:func:`continuation` ends the turn with messages the provider accepts. O(1) per event
besides judging each completed value once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._core.events import (
    StreamEvent,
    ToolCallArguments,
    ToolCallRejected,
    ToolCallStarted,
    ValueCompleted,
)
from .._core.jsonpointer import parse_fragment, resolve
from .._core.messages import call_kind
from .._core.outcome import Outcome
from .._core.partial_json import PartialJSONParser
from .._core.response import Partial, PartialCall, RejectedCall, Response, ToolCall
from .._errors import ArgumentsInvalid, JSONSyntaxError, ToolDefinitionError
from .._providers import FORMATS
from .._tools.jsonschema import SchemaValidator, Violation, compile_schema, format_path
from .._tools.toolbox import InvalidCall, Tool, Toolbox, _RawBinding

# AbortWatch, continuation and the constants serve run_turn; the public name is EarlyAbort.
__all__ = ["EarlyAbort"]

CustomInput = Callable[[PartialCall], "str | None"]  # a format's Provider.custom_input

MAX_DEPTH_JUDGED = 8
"""The deepest value (path length) judged before the arguments complete."""

STOPPED_EARLY = "The response was stopped at this call, so nothing in this turn ran."
"""What the offending call's tool result adds after the reason."""

DROPPED = (
    " Calls that had not finished arriving were dropped: make them again if you still need them."
)

AbortKind = Literal["unknown_tool", "invalid_json", "duplicate_key", "invalid_arguments"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EarlyAbort:
    """Why a turn stopped reading its response early (``Turn.aborted``).

    Fields:

    - ``kind``: ``"unknown_tool"``, ``"invalid_json"`` (the arguments stopped being JSON at
      ``offset``), ``"duplicate_key"`` (an object key, at ``path``, repeated at ``offset``)
      or ``"invalid_arguments"`` (a completed value violates the schema at ``path``);
    - ``reason``: what the model is told in the call's tool result;
    - ``call_id``, ``name``, ``index``: the offending call;
    - ``path``: where in the arguments the violation is (``()`` for the whole arguments,
      the repeated key's path for ``"duplicate_key"``, ``None`` for the other kinds);
      ``offset``: the character where the JSON went wrong or the key was repeated;
    - ``partial``: everything that had arrived when reading stopped (usage included).
    """

    kind: AbortKind
    reason: str
    call_id: str
    name: str
    index: int
    path: tuple[str | int, ...] | None = None
    offset: int | None = None
    partial: Partial | None = None


@dataclass(slots=True)
class _Watched:
    tool: Tool
    call_id: str
    index: int
    judge: _Judge | None


class AbortWatch:
    """Judges a response's events as they arrive (sans-IO); :meth:`see` returns the
    verdict once a call can never be valid, and ``None`` until then."""

    __slots__ = ("_calls", "_tools", "verdict")

    def __init__(self, tools: Toolbox) -> None:
        self._tools = tools
        self._calls: dict[int, _Watched] = {}
        self.verdict: EarlyAbort | None = None

    def see(self, event: StreamEvent) -> EarlyAbort | None:
        """Judge one event; the verdict (also kept in :attr:`verdict`) or ``None``."""
        kind = type(event)
        if kind is ToolCallArguments:
            watched = self._calls.get(event.key)  # type: ignore[union-attr]
            if watched is not None and watched.judge is not None:
                for json_event in event.json_events:  # type: ignore[union-attr]
                    if type(json_event) is ValueCompleted:
                        verdict = self._judge(watched, json_event)
                        if verdict is not None:
                            return self._decide(verdict)
        elif kind is ToolCallStarted:
            return self._started(event)  # type: ignore[arg-type]
        elif kind is ToolCallRejected:
            return self._rejected(event)  # type: ignore[arg-type]
        return None

    def _decide(self, verdict: EarlyAbort) -> EarlyAbort:
        self.verdict = verdict
        return verdict

    def _started(self, event: ToolCallStarted) -> EarlyAbort | None:
        tool = self._tools.get(event.name)
        if tool is None:
            probe = ToolCall(id=event.id, name=event.name, arguments={}, raw_arguments="", index=0)
            return self._decide(
                EarlyAbort(kind="unknown_tool", reason=_reason_of(self._tools, probe),
                           call_id=event.id, name=event.name, index=event.index)
            )  # fmt: skip
        self._calls[event.key] = _Watched(tool, event.id, event.index, _judge_for(tool))
        return None

    def _rejected(self, event: ToolCallRejected) -> EarlyAbort | None:
        watched = self._calls.get(event.key)
        name = watched.tool.name if watched is not None else ""
        call_id = watched.call_id if watched is not None else ""
        index = watched.index if watched is not None else event.key
        repeated = event.duplicate_key
        probe = RejectedCall(
            id=call_id, name=name, raw_arguments=event.raw_arguments, reason=event.reason,
            index=index, offset=event.offset, duplicate_key=repeated,
        )  # fmt: skip
        return self._decide(
            EarlyAbort(kind="invalid_json" if repeated is None else "duplicate_key",
                       reason=_reason_of(self._tools, probe), call_id=call_id, name=name,
                       index=index, path=repeated, offset=event.offset)
        )  # fmt: skip

    def _judge(self, watched: _Watched, event: ValueCompleted) -> EarlyAbort | None:
        path = event.path
        tool = watched.tool
        if not path:
            if not isinstance(event.value, dict):
                return None  # the executor says why; nothing more can arrive anyway
            try:
                tool.validate(event.value)
            except ArgumentsInvalid as exc:
                return EarlyAbort(kind="invalid_arguments", reason=exc.message,
                                  call_id=watched.call_id, name=tool.name, index=watched.index,
                                  path=())  # fmt: skip
            return None
        judge = watched.judge
        assert judge is not None
        message = judge.violation(path, event.value)
        if message is None:
            return None
        return EarlyAbort(kind="invalid_arguments", reason=message, call_id=watched.call_id,
                          name=tool.name, index=watched.index, path=path)  # fmt: skip


def _reason_of(tools: Toolbox, call: ToolCall | RejectedCall) -> str:
    verdict = tools.check(call)
    return verdict.reason if isinstance(verdict, InvalidCall) else "This call is invalid."


# ----------------------------------------------------------------- judging one value


class _Judge:
    """One tool's schema walked for early judgement: a path to the one sub-schema that
    must hold there (or ``None``: wait), and that sub-schema's validator."""

    __slots__ = ("_depth", "_document", "_pointers", "_tool", "_validator")

    def __init__(self, tool: Tool, validator: SchemaValidator, depth: int) -> None:
        self._tool = tool
        self._validator = validator
        self._document = validator.schema
        self._depth = depth
        self._pointers: dict[tuple[str | int, ...], tuple[str, ...] | None] = {}

    def violation(self, path: tuple[str | int, ...], value: Any) -> str | None:
        """The message for the model when ``value``, complete at ``path``, can never fit;
        ``None`` when it fits or cannot be judged alone."""
        if value is None or len(path) > self._depth:
            return None
        pointer = self._pointer(path)
        if pointer is None:
            return None
        try:
            sub = self._validator.at(pointer)
        except ToolDefinitionError:
            return None
        if sub.schema is False and pointer[-1:] == ("additionalProperties",):
            found = [self._unknown_property(path, pointer)]
        else:
            found = _violations(sub, path, value)
            if not found:
                return None
        name = self._tool.name
        return (
            f'Invalid arguments for tool "{name}": {"; ".join(found)}. '
            f'Call "{name}" again with corrected arguments.'
        )

    def _unknown_property(self, path: tuple[str | int, ...], pointer: tuple[str, ...]) -> str:
        """What is wrong with a property that its object's schema does not know."""
        parent = resolve(self._document, pointer[:-1])
        names = parent.get("properties") if isinstance(parent, Mapping) else None
        known = ", ".join(f'"{k}"' for k in names or ()) or "none"
        return (
            f"at {format_path(path)}: unknown property (not allowed here); the known "
            f"properties are: {known}"
        )

    def _pointer(self, path: tuple[str | int, ...]) -> tuple[str, ...] | None:
        """The pointer of the one sub-schema that must hold at ``path``, or ``None``."""
        if path in self._pointers:
            return self._pointers[path]
        pointer = _walk(self._document, path)
        if len(self._pointers) < 4096:  # array indexes make paths many: bound the memo
            self._pointers[path] = pointer
        return pointer


def _violations(sub: SchemaValidator, path: tuple[str | int, ...], value: Any) -> list[str]:
    """What is wrong with ``value`` at ``path`` under the sub-schema ``sub`` (the first
    ten violations; none when it is valid)."""
    if isinstance(value, (dict, list)):
        value = sub.strip_optional_nulls(value)
    if sub.is_valid(value):
        return []
    return [str(Violation(path=path + v.path, message=v.message)) for v in sub.errors(value)[:10]]


def _walk(document: Any, path: tuple[str | int, ...]) -> tuple[str, ...] | None:
    """Follow ``path`` through the schema ``document`` by applicators that always apply;
    ``None`` as soon as the way is conditional or unknown (see the module docstring)."""
    pointer: tuple[str, ...] = ()
    node = document
    for step in path:
        found = _deref(document, node, pointer)
        if found is None:
            return None
        node, pointer = found
        if not isinstance(node, Mapping):
            return None  # true / false / not a schema: nothing to learn step by step
        found = (
            _property(node, pointer, step) if isinstance(step, str) else _item(node, pointer, step)
        )
        if found is None:
            return None
        node, pointer = found
    return pointer  # the last schema is judged whole, conditionals included


def _property(
    node: Mapping[str, Any], pointer: tuple[str, ...], name: str
) -> tuple[Any, tuple[str, ...]] | None:
    """The sub-schema that always applies to property ``name`` of an object, or ``None``."""
    properties = node.get("properties")
    if isinstance(properties, Mapping) and name in properties:
        return properties[name], (*pointer, "properties", name)
    if "patternProperties" in node or "additionalProperties" not in node:
        return None
    return node["additionalProperties"], (*pointer, "additionalProperties")


def _item(
    node: Mapping[str, Any], pointer: tuple[str, ...], index: int
) -> tuple[Any, tuple[str, ...]] | None:
    """The sub-schema that always applies to item ``index`` of an array, or ``None``."""
    prefix = node.get("prefixItems")
    items = node.get("items")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index], (*pointer, "prefixItems", str(index))
    if isinstance(items, list):  # draft 2019-09 and older: positional items
        if index < len(items):
            return items[index], (*pointer, "items", str(index))
        if "additionalItems" in node:
            return node["additionalItems"], (*pointer, "additionalItems")
        return None
    if isinstance(items, (Mapping, bool)):
        return items, (*pointer, "items")
    return None


_CONDITIONAL = ("anyOf", "oneOf", "if", "not", "$dynamicRef", "$recursiveRef")


def _deref(
    document: Any, node: Any, pointer: tuple[str, ...]
) -> tuple[Any, tuple[str, ...]] | None:
    """Follow local ``$ref``\\s and lone ``allOf``\\s from ``node``; ``None`` when a
    conditional applicator or a reference that is not a local pointer is in the way."""
    for _ in range(32):  # a reference cycle is not followed forever
        if not isinstance(node, Mapping):
            return node, pointer
        if any(key in node for key in _CONDITIONAL):
            return None
        ref = node.get("$ref")
        if isinstance(ref, str):
            found = _local_ref(document, ref)
            if found is None:
                return None
            node, pointer = found
            continue
        if _lone_all_of(node):
            node, pointer = node["allOf"][0], (*pointer, "allOf", "0")
            continue
        if "allOf" in node:
            return None
        return node, pointer
    return None


def _lone_all_of(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` is only an ``allOf`` of one schema (which is then that schema)."""
    all_of = node.get("allOf")
    return isinstance(all_of, list) and len(all_of) == 1 and len(node) == 1


def _local_ref(document: Any, ref: str) -> tuple[Any, tuple[str, ...]] | None:
    """The schema a local ``$ref`` points to in ``document``, with its pointer; ``None``
    for any other reference or a pointer to nothing."""
    if not ref.startswith("#/") and ref != "#":
        return None  # an $id, an anchor or another document: the engine's to resolve
    try:
        tokens = parse_fragment(ref)
    except ToolDefinitionError:
        return None
    target: Any = document
    for token in tokens:
        if isinstance(target, Mapping) and token in target:
            target = target[token]
        elif isinstance(target, list) and token.isdigit() and int(token) < len(target):
            target = target[int(token)]
        else:
            return None
    return target, tokens


_lock = threading.Lock()
_judges: dict[int, tuple[Tool, _Judge | None]] = {}  # id(tool) -> the tool and its judge


def _judge_for(tool: Tool) -> _Judge | None:
    """The tool's judge, built once per process (``None``: its schema cannot be compiled
    here, so only the whole arguments are judged early)."""
    held = _judges.get(id(tool))
    if held is not None and held[0] is tool:
        return held[1]
    raw = isinstance(tool._binding, _RawBinding)  # see the module docstring: typed tools
    try:
        judge: _Judge | None = _Judge(
            tool, compile_schema(tool.parameters), MAX_DEPTH_JUDGED if raw else 1
        )
    except ToolDefinitionError:  # a pattern only pydantic's regex engine reads...
        judge = None
    with _lock:
        if len(_judges) >= 1024:  # toolboxes made per request: forget, rebuild on demand
            _judges.clear()
        _judges[id(tool)] = (tool, judge)
    return judge


# ------------------------------------------------------------------ the continuation


def continuation(
    partial: Partial, abort: EarlyAbort, tools: Toolbox
) -> tuple[Response, list[Outcome]]:
    """The turn's response and outcomes after an early abort (see the module docstring):
    what arrived, the offending call, the other complete calls; nothing ran."""
    kept: list[tuple[PartialCall, ToolCall | RejectedCall]] = []
    dropped = False
    custom = None if partial.format is None else FORMATS.provider(partial.format).custom_input
    for call in sorted(partial.calls, key=lambda c: c.index):
        if call.index == abort.index:
            kept.append((call, _as_call(call, abort.reason, custom)))
            continue
        arguments = _complete_arguments(call, custom)
        if arguments is None or not call.name:
            dropped = True
            continue
        kept.append(
            (call, ToolCall(
                id=call.id, name=call.name, arguments=arguments,
                raw_arguments=call.raw_arguments, index=call.index, metadata=call.metadata,
                synthetic_id=call.synthetic_id, kind=call_kind(call),
            ))
        )  # fmt: skip
    outcomes: list[Outcome] = []
    for call, repeated in kept:
        if call.index == abort.index:
            text = f"{abort.reason} {STOPPED_EARLY}{DROPPED if dropped else ''}"
            outcomes.append(_rejected(call, text))
            continue
        verdict = tools.check(repeated)
        if isinstance(verdict, InvalidCall):
            outcomes.append(_rejected(call, verdict.reason))
        else:
            outcomes.append(
                Outcome(
                    call_id=call.id, name=call.name, status="skipped",
                    error="not run: the response was stopped at an invalid call",
                )
            )  # fmt: skip
    response = Response(
        text=partial.text,
        reasoning=partial.reasoning,
        tool_calls=[c for _, c in kept if isinstance(c, ToolCall)],
        rejected=[c for _, c in kept if isinstance(c, RejectedCall)],
        finish_reason="tool_calls",
        raw_finish_reason=None,
        usage=partial.usage,
        response_id=partial.response_id,
        model=partial.model,
        format=partial.format,
        created=partial.created,
        parts=list(partial.parts),
    )
    return response, outcomes


def _rejected(call: PartialCall, text: str) -> Outcome:
    return Outcome(call_id=call.id, name=call.name, status="rejected", error=text)


def _complete_arguments(call: PartialCall, custom: CustomInput | None) -> Any:
    """A call's arguments when they arrived whole (a JSON object; a custom tool call's
    input text, read by its format's ``custom``), else ``None``."""
    raw = call.raw_arguments
    text = None if custom is None else custom(call)
    if text is not None:
        return text if call.ended else None
    if not raw.strip():
        return {} if call.ended else None
    return _json_object(raw)


def _as_call(call: PartialCall, reason: str, custom: CustomInput | None) -> ToolCall | RejectedCall:
    """The offending call as the assistant turn repeats it: with its arguments when they
    are a JSON object (or nothing arrived), else as a rejected call with the raw text."""
    raw = call.raw_arguments
    # a custom call's free-form input is repeated as the text that arrived, never as its
    # JSON escape
    arguments: Any = None if custom is None else custom(call)
    if arguments is None:
        arguments = {} if not raw.strip() else _json_object(raw)
    if arguments is not None:
        return ToolCall(
            id=call.id, name=call.name, arguments=arguments, raw_arguments=raw,
            index=call.index, metadata=call.metadata, synthetic_id=call.synthetic_id,
            kind=call_kind(call),
        )  # fmt: skip
    return RejectedCall(
        id=call.id, name=call.name, raw_arguments=raw, reason=reason, index=call.index,
        metadata=call.metadata, synthetic_id=call.synthetic_id,
    )  # fmt: skip


def _json_object(raw: str) -> dict[str, Any] | None:
    """``raw`` as a JSON object, or ``None``: not JSON, not an object, or an object that
    repeats a key (which the assistant turn then carries as raw text, as it arrived)."""
    parser = PartialJSONParser(events=False, max_size=len(raw) or 1, reject_duplicates=True)
    try:
        parser.feed(raw)
        value = parser.close()
    except JSONSyntaxError:
        return None
    return value if isinstance(value, dict) else None
