"""Structured output: the model's text (or a forced tool's arguments) read as one typed value.

``Response.output`` exists only for a stream that ended properly with complete JSON that
validates (equal to ``model_validate_json`` for a pydantic target); otherwise the stream
ends with an ``OutputError``. Amortised O(len) per fragment plus one final validation.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._core.events import (
    OutputPreview,
    StreamEvent,
    TextDelta,
    ToolCallArguments,
    ToolCallEnded,
    ToolCallRejected,
    ToolCallStarted,
)
from .._core.jsonpointer import format_pointer
from .._core.partial_json import MISSING, PartialJSONParser
from .._errors import (
    JSONDuplicateKeyError,
    JSONSyntaxError,
    OutputSyntaxError,
    OutputValidationError,
    StreamError,
    TokenLimitExceeded,
    ToolDefinitionError,
    UsageError,
)
from .shapes import (
    Invalid,
    Shape,
    annotated,
    pydantic_shape,
    schema_shape,
    too_deep_for_pydantic,
    validate_by_parts,
)
from .typed_preview import TypedPreview

if TYPE_CHECKING:
    from .._core.response import Response

__all__ = ["OutputParser", "OutputRoute", "OutputSpec", "compile_output", "tool_shape"]


class OutputSpec:
    """A compiled output target: its preview shapes and its exact final validation.

    ``target`` is what was given; ``kind`` is ``"pydantic"`` or ``"schema"``.
    ``final(text, raw)`` validates the whole output (``text`` its JSON text, ``raw`` the
    same as ``json.loads`` gives it) and raises :class:`Invalid`.
    """

    __slots__ = ("final", "kind", "shape", "target")

    def __init__(
        self, target: Any, kind: str, shape: Shape, final: Callable[[str, Any], Any]
    ) -> None:
        self.target = target
        self.kind = kind
        self.shape = shape
        self.final = final

    def __repr__(self) -> str:
        return f"OutputSpec({self.target!r})"


_COMPILED: dict[Any, OutputSpec] = {}


def compile_output(target: Any) -> OutputSpec:
    """Compile ``output=``: a pydantic model or other type, or a JSON Schema ``dict``.

    Raises :class:`~toolwire.UsageError` for anything else, or for a schema or
    type that cannot be used.
    """
    if isinstance(target, OutputSpec):
        return target
    if isinstance(target, (dict, bool)):
        return _schema_spec(target)
    try:
        found = _COMPILED.get(target)
    except TypeError:
        found = None
    if found is not None:
        return found
    spec = _pydantic_spec(target)
    with contextlib.suppress(TypeError):
        _COMPILED[target] = spec
    return spec


def _schema_spec(schema: Any) -> OutputSpec:
    from .._tools.jsonschema import compile_schema

    try:
        validator = compile_schema(schema)
    except ToolDefinitionError as exc:
        raise UsageError(f"output schema: {exc}") from None

    def final(text: str, raw: Any) -> Any:
        found = validator.errors(raw)
        if found:
            raise Invalid("; ".join(str(v) for v in found), found)
        return raw

    return OutputSpec(schema, "schema", schema_shape(validator), final)


def _pydantic_spec(target: Any) -> OutputSpec:
    import pydantic

    if isinstance(target, str) or target is None:
        raise UsageError(
            f"output= takes a pydantic model, a type or a JSON Schema dict, not {target!r}"
        )
    try:
        shape, adapter = pydantic_shape(target)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError, TypeError) as e:
        raise UsageError(f"output={target!r} cannot be validated: {e}") from None

    def final(text: str, raw: Any) -> Any:
        try:
            return adapter.validate_json(text)
        except pydantic.ValidationError as exc:
            if not too_deep_for_pydantic(exc):
                raise Invalid(str(exc), list(exc.errors(include_url=False))) from None
        # deeper than pydantic reads JSON: validated part by part, as the preview does
        return validate_by_parts(shape, raw)

    return OutputSpec(target, "pydantic", shape, final)


class OutputParser:
    """One structured output, fed piece by piece (sans-IO; see the module docstring).

    :meth:`feed` takes output text; :meth:`feed_events` takes the JSON events another
    parser made of the text (a forced tool's call) together with that text. Both return
    whether the typed preview changed, and raise :class:`~toolwire.OutputSyntaxError` or
    :class:`~toolwire.OutputValidationError`. :meth:`preview` is the typed preview,
    :meth:`finish` the validated value.
    """

    __slots__ = ("_chunks", "_feed", "_feed_string", "_parser", "_typed", "preview", "spec")

    def __init__(self, spec: OutputSpec, *, max_size: int | None = None) -> None:
        self.spec = spec
        self._chunks: list[str] = []
        self._parser = (
            PartialJSONParser(reject_duplicates=True)
            if max_size is None
            else PartialJSONParser(max_size=max_size, reject_duplicates=True)
        )
        self._typed = TypedPreview(spec.shape, self._final)
        self._feed = self._parser.feed
        self._feed_string = self._parser.feed_string
        self.preview: Callable[[], Any] = self._typed.preview
        """The typed, monotonic preview (``MISSING`` before anything can be shown)."""

    def _final(self, raw: Any) -> Any:
        chunks = self._chunks
        if len(chunks) > 1:
            chunks[:] = ["".join(chunks)]
        return self.spec.final(chunks[0] if chunks else "", raw)

    @property
    def text(self) -> str:
        """The output text so far."""
        return "".join(self._chunks)

    @property
    def complete(self) -> bool:
        """Whether the whole value arrived and validated."""
        return self._typed.complete

    def feed(self, text: str) -> bool:
        """Parse the next piece of output text; return whether the preview changed."""
        self._chunks.append(text)
        typed = self._typed
        if typed.growing:
            # the common case of a long value: a piece that only continues the open string
            # goes to the typed preview without building an event
            piece = self._feed_string(text)
            if piece is not None:
                if piece:
                    typed.grow(piece)
                    return True
                return False
        try:
            events = self._feed(text)
        except JSONDuplicateKeyError as exc:
            raise _repeated(exc.path) from None
        except JSONSyntaxError as exc:
            raise OutputSyntaxError(
                f"the output is not JSON: {exc.msg}", offset=exc.offset
            ) from None
        if not events:
            return False
        try:
            return self._typed.apply(events)
        except Invalid as exc:
            raise _invalid(exc) from None

    def feed_events(self, text: str, events: tuple[Any, ...]) -> bool:
        """Take the events another parser made of ``text``; return whether it changed."""
        self._chunks.append(text)
        return self._apply(events) if events else False

    def _apply(self, events: Any) -> bool:
        try:
            return self._typed.apply(events)
        except Invalid as exc:
            raise _invalid(exc) from None

    def finish(self, *, parser: PartialJSONParser | None = None) -> Any:
        """The validated value; raises when the output is unterminated or invalid.

        ``parser``: the parser that read the text, when it is not this one's own (a forced
        tool's call).
        """
        typed = self._typed
        if typed.complete:
            return typed.value
        own = parser or self._parser
        if own.offset and not own.failed:
            try:
                raw = own.close()  # only a top-level number completes here
            except JSONSyntaxError as exc:
                raise TokenLimitExceeded(
                    f"the output is unterminated ({exc.msg}): it was cut"
                ) from None
            try:
                return typed.finish_root(raw)
            except Invalid as exc:
                raise _invalid(exc) from None
        raise OutputSyntaxError("there is no output: expected a JSON value", offset=0)


def _repeated(path: tuple[str | int, ...]) -> OutputValidationError:
    """A repeated key (at ``path``): the preview showed its first value, ``json.loads``
    keeps the last, so the output is refused."""
    return OutputValidationError(
        f"the output repeats the key {path[-1]!r} at {format_pointer(path)} (each key may "
        "appear only once in an object)",
        path=path,
    )


def _invalid(exc: Invalid) -> OutputValidationError:
    path = tuple(getattr(exc, "path", ()))
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path) or "the output"
    where = where.lstrip(".")
    return OutputValidationError(
        f"{where} does not fit the output type: {exc.message}", errors=exc.errors, path=path
    )


# ------------------------------------------------------------------- tool arguments


def tool_shape(tool: Any) -> Shape | None:
    """The shape of a registered tool's arguments (``None`` for a tool without one).

    A typed tool's preview is an instance of a model whose fields are the parameters by
    their own names (the user's model for a whole-model tool); a raw-schema tool's is the
    JSON value, checked against its schema part by part.
    """
    binding = getattr(tool, "_binding", None)
    cached = getattr(binding, "_preview_shape", MISSING)
    if cached is not MISSING:
        return cached  # type: ignore[no-any-return]
    spec = getattr(binding, "_spec", None)
    validator = getattr(binding, "_validator", None)
    shape: Shape | None = None
    if spec is not None:
        model = spec.model if spec.whole else _named_model(spec)
        shape = pydantic_shape(model)[0]
    elif validator is not None:
        shape = schema_shape(validator)
    with contextlib.suppress(AttributeError, TypeError):
        object.__setattr__(binding, "_preview_shape", shape)
    return shape


def _named_model(spec: Any) -> Any:
    """A model like the tool's own, with the parameters' names as field names (the tool's
    model names its fields ``p0``, ``p1``... behind aliases)."""
    import pydantic

    fields: dict[str, Any] = {}
    for param, private in spec.fields.items():
        info = spec.model.model_fields[private]
        annotation = annotated(info.annotation, list(info.metadata))
        default = ... if info.is_required() else info.get_default(call_default_factory=True)
        fields[param] = (annotation, default)
    try:
        return pydantic.create_model(
            spec.model.__name__, __config__=pydantic.ConfigDict(strict=True), **fields
        )
    except (pydantic.PydanticUserError, NameError, TypeError, ValueError):
        return spec.model


# ---------------------------------------------------------------------------- route


class OutputRoute:
    """The assembler's output path (see the module docstring): events in, events out.

    ``early_abort``: an output that can never be valid raises from :meth:`events` at once
    instead of at :meth:`conclude`.
    """

    __slots__ = (
        "_calls",
        "_early",
        "_error",
        "_max_size",
        "_parser",
        "_spec",
        "_tool",
        "_tool_call",
        "_tool_parser",
        "_tools",
        "_typed_calls",
    )

    def __init__(
        self,
        output: Any = None,
        *,
        output_tool: str | None = None,
        tools: Any = None,
        early_abort: bool = False,
        max_size: int | None = None,
    ) -> None:
        if output_tool is not None and output is None:
            raise UsageError("output_tool= needs output= (the type of the output)")
        if output_tool is not None and not isinstance(output_tool, str):
            raise UsageError("output_tool= is the name of the forced tool (a str)")
        self._spec = compile_output(output) if output is not None else None
        self._tool = output_tool
        self._tools = tools
        self._early = bool(early_abort)
        self._max_size = max_size
        self._parser: OutputParser | None = None
        self._error: StreamError | None = None
        self._tool_call: int | None = None  # the key of the forced tool's call
        self._tool_parser: Any = None
        self._calls: dict[int, str] = {}
        self._typed_calls: dict[int, TypedPreview] = {}

    @property
    def tool_call(self) -> int | None:
        """The key of the forced tool's call, once it started."""
        return self._tool_call

    @property
    def error(self) -> StreamError | None:
        """The output's error, once it can never be valid (kept until ``conclude``)."""
        return self._error

    def preview(self) -> Any:
        """The output's typed preview (``MISSING`` before anything can be shown)."""
        return MISSING if self._parser is None else self._parser.preview()

    def _output(self) -> OutputParser:
        parser = self._parser
        if parser is None:
            assert self._spec is not None
            parser = self._parser = OutputParser(self._spec, max_size=self._max_size)
        return parser

    def events(self, events: list[StreamEvent]) -> list[StreamEvent]:
        """The assembler's events with the output's added (or the forced tool's turned
        into ``OutputPreview``)."""
        if not events:
            return events
        out: list[StreamEvent] = []
        for ev in events:
            t = type(ev)
            if t is TextDelta:
                out.append(ev)
                if self._spec is not None and self._tool is None:
                    self._on_output(ev.text, None, out)  # type: ignore[union-attr]
            elif t is ToolCallArguments:
                key = ev.key  # type: ignore[union-attr]
                if key == self._tool_call:
                    self._on_output(ev.delta, ev.json_events, out)  # type: ignore[union-attr]
                    continue
                typed = self._typed_calls.get(key)
                if typed is not None:
                    ev = self._typed_arguments(key, typed, ev)  # type: ignore[arg-type]
                out.append(ev)
            elif t is ToolCallStarted:
                name = ev.name  # type: ignore[union-attr]
                if self._tool is not None and name == self._tool and self._tool_call is None:
                    self._tool_call = ev.key  # type: ignore[union-attr]
                    continue
                self._on_call_started(ev)  # type: ignore[arg-type]
                out.append(ev)
            elif t is ToolCallEnded and ev.key == self._tool_call:  # type: ignore[union-attr]
                continue
            elif t is ToolCallRejected and ev.key == self._tool_call:  # type: ignore[union-attr]
                repeated = ev.duplicate_key  # type: ignore[union-attr]
                self._record(
                    OutputSyntaxError(
                        f"the output is not JSON: {ev.reason}",  # type: ignore[union-attr]
                        offset=ev.offset,  # type: ignore[union-attr]
                    )
                    if repeated is None
                    else _repeated(repeated)
                )
            else:
                out.append(ev)
        return out

    def _on_output(self, text: str, json_events: Any, out: list[StreamEvent]) -> None:
        if self._error is not None or not text:
            return
        parser = self._output()
        try:
            if json_events is None:
                changed = parser.feed(text)
            else:
                changed = parser.feed_events(text, json_events)
        except StreamError as exc:
            self._record(exc)
            return
        if changed:
            out.append(OutputPreview(delta=text, complete=parser.complete, _preview=parser.preview))

    def _record(self, exc: StreamError) -> None:
        if self._error is None:
            self._error = exc
        if self._early:
            raise exc

    def _on_call_started(self, ev: ToolCallStarted) -> None:
        tools = self._tools
        if tools is None:
            return
        tool = tools.get(ev.name) if hasattr(tools, "get") else None
        shape = tool_shape(tool) if tool is not None else None
        if shape is not None:
            self._typed_calls[ev.key] = TypedPreview(shape)

    def _typed_arguments(
        self, key: int, typed: TypedPreview, ev: ToolCallArguments
    ) -> ToolCallArguments:
        """``ev`` with the call's typed preview (a copy, built by its constructor)."""
        try:
            typed.apply(ev.json_events)
        except Invalid:
            # the arguments can never be valid: validation will say why; the preview
            # keeps its last state
            del self._typed_calls[key]
        return ev._replace(_typed=typed.preview)

    def conclude(self, response: Response, tool_parser: Any = None) -> Response:
        """The response with ``output`` set (the forced tool's call taken out of
        ``tool_calls`` and ``parts``), or the output's ``StreamError``."""
        if self._error is not None:
            raise self._error
        if self._spec is None:
            return response
        if self._tool is not None:
            return self._conclude_tool(response, tool_parser)
        parser = self._parser
        if parser is None or not parser.text.strip():
            if response.tool_calls or response.rejected:
                return response  # a tool turn: the output comes in a later turn
            raise OutputSyntaxError("there is no output: expected a JSON value", offset=0)
        try:
            value = parser.finish()
        except TokenLimitExceeded:
            raise TokenLimitExceeded(
                f"the output is unterminated under finish reason "
                f"{response.raw_finish_reason!r}: it was cut"
            ) from None
        return dataclasses.replace(response, output=value)

    def _conclude_tool(self, response: Response, tool_parser: Any) -> Response:
        key = self._tool_call
        if key is None:
            raise OutputSyntaxError(
                f"the model did not call the output tool {self._tool!r}", offset=0
            )
        if tool_parser is None or not tool_parser.offset:
            raise OutputSyntaxError("the output tool's arguments are empty", offset=0)
        try:
            value = self._output().finish(parser=tool_parser)
        except TokenLimitExceeded:
            raise TokenLimitExceeded(
                "the output tool's arguments are unterminated: the output was cut"
            ) from None
        calls = [c for c in response.tool_calls if c.index != key]
        parts = [p for p in response.parts if not (p.kind == "call" and p.call == key)]
        finish = response.finish_reason
        if not calls and not response.rejected and finish == "tool_calls":
            finish = "stop"
        return dataclasses.replace(
            response, tool_calls=calls, parts=parts, output=value, finish_reason=finish
        )
