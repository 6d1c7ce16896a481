"""Tools: registration, JSON Schemas, validation of the model's arguments, invocation.

Strict JSON types, unknown arguments rejected, reasons written for the model. Checking a
call is linear in the size of its arguments; a checked call is validated exactly once.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import inspect
import json
import math
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

import pydantic
import pydantic_core

from .._core.content import needs_wrapping, rich_json, rich_parts, wrap
from .._core.jsonpointer import format_pointer
from .._core.response import RejectedCall, Response, ToolCall
from .._errors import ArgumentsInvalid, ToolDefinitionError, UsageError
from .._providers import FORMATS
from .context import ToolContext
from .definitions import tool_definitions
from .jsonschema import (
    MAX_DEPTH,
    SchemaValidator,
    Violation,
    compile_schema,
    describe_value,
    scan_json,
)
from .schema import FunctionSpec, describe_function, describe_model, parse_docstring

if TYPE_CHECKING:
    from .mcp import MCPTools

__all__ = [
    "InvalidCall",
    "Tool",
    "Toolbox",
    "ValidCall",
]

F = TypeVar("F", bound=Callable[..., Any])
Approval = bool | Callable[["ValidCall"], bool]
"""A tool's ``requires_approval``: always, never, or a predicate on the validated call."""

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_MAX_VIOLATIONS = 10


@dataclass(frozen=True, slots=True, kw_only=True)
class ValidCall:
    """A call whose tool exists and whose arguments validated; ``arguments`` are JSON values.

    ``built`` is what validation built from them (a typed tool's pydantic model, a raw
    tool's arguments): :meth:`invoke` runs the tool on it, so a checked call is validated
    once. Treat ``arguments`` as read-only.
    """

    call: ToolCall
    tool: Tool
    arguments: Any
    built: Any = dataclasses.field(default=None, repr=False, compare=False)

    def invoke(self, ctx: ToolContext) -> Any:
        """Call the tool with what :meth:`Toolbox.check` built, without validating again
        (for an ``async def`` tool, the coroutine, not yet awaited)."""
        if self.built is None:  # a ValidCall built by hand: validate its arguments
            return self.tool.invoke(self.arguments, ctx)
        return self.tool._call(self.built, ctx)


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidCall:
    """A call that cannot run; ``reason`` is written for the model to read and act on."""

    call: ToolCall | RejectedCall
    reason: str


class _Binding:
    """How one tool validates and calls: a typed function or a raw schema plus callable.

    ``_fn`` is the tool's function, which every binding calls.
    """

    __slots__ = ("_fn",)

    _fn: Callable[..., Any]

    # The deepest arguments this binding can validate (containers, the object included).
    max_depth: int = MAX_DEPTH

    def build(self, tool: str, arguments: dict[str, Any]) -> Any:
        """What the function is called with, from scanned arguments, or ``ArgumentsInvalid``."""
        raise NotImplementedError

    def dump(self, tool: str, built: Any) -> dict[str, Any]:
        """The deterministic, JSON-compatible arguments of what :meth:`build` built."""
        raise NotImplementedError

    def call(self, built: Any, ctx: ToolContext) -> Any:
        """Call the tool's function with what :meth:`build` built (and ``ctx`` where declared)."""
        raise NotImplementedError


# pydantic reads JSON with jiter, which refuses more than 201 nested containers.
_PYDANTIC_JSON_DEPTH = 200


class _TypedBinding(_Binding):
    """Validation by a pydantic model: the one built from a function's signature, or the
    user's own model when it is the whole arguments (``args_model``, ``add_model``)."""

    __slots__ = ("_known", "_nulls", "_spec")

    max_depth = _PYDANTIC_JSON_DEPTH

    def __init__(self, fn: Callable[..., Any], spec: FunctionSpec) -> None:
        self._fn = fn
        self._spec = spec
        # Only used to strip optional nulls; pydantic does the validation. A schema the
        # engine refuses (a pattern only pydantic's regex engine reads) loses the stripping.
        try:
            self._nulls: SchemaValidator | None = compile_schema(spec.parameters)
        except ToolDefinitionError:
            self._nulls = None
        self._known = (
            list(spec.parameters.get("properties", {})) if spec.whole else list(spec.fields)
        )

    def _model(self, tool: str, arguments: Any) -> pydantic.BaseModel:
        stripped = arguments if self._nulls is None else self._nulls.strip_optional_nulls(arguments)
        if self._spec.whole and not self._spec.extra_allowed:
            # The user's model may ignore unknown keys (pydantic's default); toolwire's rule
            # is that a hallucinated argument is an error, so the top level is closed here.
            extra = [key for key in stripped if key not in self._known]
            if extra:
                violations = tuple(
                    Violation(path=(key,), message=_unknown_message(self._known)) for key in extra
                )
                raise ArgumentsInvalid(
                    _invalid_message(tool, violations), tool=tool, violations=violations
                )
        try:
            return self._spec.model.model_validate_json(json.dumps(stripped), strict=True)
        except pydantic.ValidationError as exc:
            violations = _from_pydantic(exc, stripped, self._known)
            raise ArgumentsInvalid(
                _invalid_message(tool, violations), tool=tool, violations=violations
            ) from None

    def build(self, tool: str, arguments: dict[str, Any]) -> pydantic.BaseModel:
        """The pydantic model of ``arguments`` (validated once)."""
        return self._model(tool, arguments)

    def dump(self, tool: str, built: Any) -> dict[str, Any]:
        """The model dumped as plain JSON values (defaults filled in)."""
        dumped: dict[str, Any] = built.model_dump(mode="python", by_alias=True)
        if _plain_json(dumped):  # fresh containers of JSON values: already what json_value makes
            return dumped
        try:
            result: dict[str, Any] = json_value(dumped)
        except TypeError as exc:  # a default that JSON cannot carry
            raise ToolDefinitionError(f"tool {tool!r}: {exc}") from None
        return result

    def call(self, built: Any, ctx: ToolContext) -> Any:
        """Call the function with the model's fields (or the model itself)."""
        model = built
        spec = self._spec
        kwargs: dict[str, Any]
        if not spec.whole:
            kwargs = {param: getattr(model, field) for param, field in spec.fields.items()}
        elif spec.model_param is not None:
            kwargs = {spec.model_param: model}
        else:
            kwargs = {}
        if spec.ctx_param is not None:
            kwargs[spec.ctx_param] = ctx
        if spec.whole and spec.model_param is None:
            return self._fn(model, **kwargs)
        return self._fn(**kwargs)


class _RawBinding(_Binding):
    """Validation by a compiled raw JSON Schema; the callable gets ``**arguments``."""

    __slots__ = ("_pass_ctx", "_validator")

    def __init__(self, fn: Callable[..., Any], validator: SchemaValidator, pass_ctx: bool):
        self._fn = fn
        self._validator = validator
        self._pass_ctx = pass_ctx

    def build(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check against the compiled schema; return the arguments without optional nulls."""
        stripped: dict[str, Any] = self._validator.strip_optional_nulls(arguments)
        # Tool._precheck has scanned the arguments (JSON, within the depth limit).
        violations = tuple(self._validator.errors(stripped, scanned=True))
        if violations:
            raise ArgumentsInvalid(
                _invalid_message(tool, violations), tool=tool, violations=violations
            )
        return stripped

    def dump(self, tool: str, built: Any) -> dict[str, Any]:
        """A copy of the checked arguments (they are JSON values already)."""
        return dict(built)

    def call(self, built: Any, ctx: ToolContext) -> Any:
        """Call ``fn(**arguments)`` (with ``ctx=`` where the callable declares it)."""
        if self._pass_ctx:
            return self._fn(**built, ctx=ctx)
        return self._fn(**built)


class _DictBinding(_RawBinding):
    """A raw schema whose callable takes the arguments as one dict: ``fn(arguments, ctx)``
    (so an argument may have any name, ``ctx`` included)."""

    __slots__ = ()

    def call(self, built: Any, ctx: ToolContext) -> Any:
        """``fn(arguments, ctx)``."""
        return self._fn(built, ctx)


def _approved(arguments: dict[str, Any], ctx: ToolContext) -> str:
    """The default handler of an approved MCP call: nothing runs here (the server runs it)."""
    return "approved"


def _answers(tool: Tool, call: ToolCall) -> bool:
    """Whether ``tool`` runs ``call``: a handler only the calls of its kind, a function
    tool function calls and custom tool calls."""
    if tool.kind == "function":
        return call.kind in ("function", "custom_tool_call")
    return tool.kind == call.kind


class _TextBinding(_Binding):
    """A custom tool's free-form input: the callable gets the text, ``fn(text, ctx)``
    (``ctx`` when it declares it)."""

    __slots__ = ("_pass_ctx",)

    def __init__(self, fn: Callable[..., Any], pass_ctx: bool):
        self._fn = fn
        self._pass_ctx = pass_ctx

    def build(self, tool: str, arguments: Any) -> Any:
        """The text itself (``Tool._precheck`` made sure it is one)."""
        return arguments

    def dump(self, tool: str, built: Any) -> Any:
        """The text."""
        return built

    def call(self, built: Any, ctx: ToolContext) -> Any:
        """``fn(text)`` or ``fn(text, ctx=ctx)``."""
        return self._fn(built, ctx=ctx) if self._pass_ctx else self._fn(built)


class Tool:
    """One registered tool; immutable after registration.

    ``parameters`` is the JSON Schema of the arguments (do not mutate it; the definitions
    toolwire produces are copies). ``idempotent`` says the tool is safe to repeat (reads);
    ``timeout`` is its own timeout in seconds (``None``: the executor's default);
    ``is_async`` is true for an ``async def`` tool; ``required`` names the required
    parameters; ``fn`` is the registered function. ``requires_approval`` is ``False``,
    ``True`` (every call waits for a person's decision before it runs) or a predicate on
    the :class:`ValidCall` saying whether this call does (see :meth:`needs_approval`).
    ``kind`` is ``"function"``, or the kind of provider call a handler registered with
    :meth:`Toolbox.handle` answers (such a tool has no definition of its own).
    """

    __slots__ = (
        "_binding",
        "description",
        "fn",
        "idempotent",
        "is_async",
        "kind",
        "name",
        "parameters",
        "required",
        "requires_approval",
        "timeout",
    )

    name: str
    description: str
    parameters: dict[str, Any]
    idempotent: bool
    timeout: float | None
    is_async: bool
    required: tuple[str, ...]
    fn: Callable[..., Any]
    requires_approval: Approval
    kind: str
    _binding: _Binding

    def __init__(
        self,
        *,
        name: str,
        description: str,
        parameters: dict[str, Any],
        fn: Callable[..., Any],
        binding: _Binding,
        required: tuple[str, ...],
        idempotent: bool = False,
        timeout: float | None = None,
        requires_approval: Approval = False,
        kind: str = "function",
    ) -> None:
        _check_name(name)
        _check_options(name, idempotent, timeout)
        _check_approval(name, requires_approval)
        values = {
            "name": name,
            "description": description,
            "parameters": parameters,
            "fn": fn,
            "_binding": binding,
            "required": required,
            "idempotent": idempotent,
            "timeout": None if timeout is None else float(timeout),
            "is_async": _is_async(fn),
            "requires_approval": requires_approval,
            "kind": kind,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, key: str, value: Any) -> None:
        """Refuse: a registered tool never changes."""
        raise AttributeError(f"Tool {self.name!r} is immutable after registration")

    def __delattr__(self, key: str) -> None:
        """Refuse: a registered tool never changes."""
        raise AttributeError(f"Tool {self.name!r} is immutable after registration")

    def __repr__(self) -> str:
        """``Tool(name=..., idempotent=..., timeout=...)``."""
        return f"Tool(name={self.name!r}, idempotent={self.idempotent}, timeout={self.timeout})"

    def needs_approval(self, call: ValidCall) -> bool:
        """Whether ``call`` (a validated call of this tool) waits for approval before it
        runs. A predicate that raises counts as "yes": a call is never run unapproved
        because its check failed."""
        rule = self.requires_approval
        if rule is True or rule is False:
            return rule
        try:
            return bool(rule(call))
        except Exception:
            return True

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Validate ``arguments``; return them as deterministic JSON-compatible values.

        The result is a fresh ``dict`` of JSON values (defaults filled in for a typed
        tool). Raises :class:`ArgumentsInvalid` with a message for the model when they do
        not fit.
        """
        return self._validated(arguments)[0]

    def invoke(self, arguments: Any, ctx: ToolContext) -> Any:
        """Validate ``arguments`` and call the function with them in its declared types.

        Arguments that do not fit raise :class:`ArgumentsInvalid` before the function is
        called (:meth:`ValidCall.invoke` runs a checked call without validating again).
        ``ctx`` is passed to a parameter annotated ``ToolContext`` (``ctx=`` for a raw
        tool whose callable declares ``ctx``). For an ``async def`` tool this returns the
        coroutine, not yet awaited.
        """
        self._precheck(arguments)
        return self._binding.call(self._binding.build(self.name, arguments), ctx)

    def _validated(self, arguments: Any) -> tuple[dict[str, Any], Any]:
        """The validated JSON arguments and what validation built from them."""
        self._precheck(arguments)
        built = self._binding.build(self.name, arguments)
        return self._binding.dump(self.name, built), built

    def _call(self, built: Any, ctx: ToolContext) -> Any:
        """Call the function with what :meth:`_validated` built."""
        return self._binding.call(built, ctx)

    def _precheck(self, arguments: Any) -> None:
        # JSON values only, nested no deeper than the validator reads, and an object at the
        # top: everything after relies on it. The scan is iterative: any depth is safe.
        limit = self._binding.max_depth
        problem, _ = scan_json(arguments, limit)
        if problem is not None and problem.message.startswith("the value is nested too deeply"):
            problem = Violation(
                path=(),
                message=f"the arguments are nested too deeply (more than {limit} levels)",
            )
        if self.kind == "custom_tool_call":
            if problem is None and not isinstance(arguments, str):
                problem = Violation(
                    path=(), message=f"expected the input text, got {describe_value(arguments)}"
                )
        elif problem is None and not isinstance(arguments, dict):
            problem = Violation(
                path=(),
                message="expected a JSON object of named arguments, got "
                f"{describe_value(arguments)}",
            )
        if problem is not None:
            violations = (problem,)
            raise ArgumentsInvalid(
                _invalid_message(self.name, violations), tool=self.name, violations=violations
            )

    def result_json(self, value: Any) -> str:
        """The JSON text of a return value, the same bytes for equal values.

        Pydantic models, dataclasses, enums, sets (sorted), tuples, dates and whatever
        pydantic can serialise are turned into JSON; keys are sorted, separators compact,
        non-ASCII kept. An ``Image``, a ``File`` or a list mixing them with text is stored
        in toolwire's rich-result form (docs/providers.md) (a plain value that could be read as
        one is stored wrapped). Raises ``TypeError`` for a value JSON cannot carry
        (including NaN and infinities).
        """
        parts = rich_parts(value)
        if parts is not None:
            return _result_text(rich_json(parts, single=not isinstance(value, (list, tuple))))
        try:
            plain = json_value(value)
        except RecursionError:
            raise TypeError("the return value is nested too deeply for JSON") from None
        except pydantic_core.PydanticSerializationError as exc:
            raise TypeError(f"the return value cannot be serialised: {exc}") from None
        return _result_text(wrap(plain) if needs_wrapping(plain) else plain)


def _is_async(fn: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(fn):
        return True
    # An object whose __call__ is ``async def`` is an async tool too.
    return not inspect.isroutine(fn) and inspect.iscoroutinefunction(type(fn).__call__)


def _context_parameter(fn: Callable[..., Any]) -> str | None:
    """The parameter of ``fn`` that takes the ToolContext: annotated so, or named ``ctx``."""
    try:
        parameters = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return None
    for param in parameters.values():
        if param.annotation is ToolContext or param.annotation == "ToolContext":
            return param.name
    return "ctx" if "ctx" in parameters else None


def _check_name(name: Any) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError(
            f"invalid tool name {name!r}: names must be 1 to 64 characters of letters, "
            "digits, '_' or '-' (what OpenAI, Anthropic and Gemini all accept)"
        )


def _check_approval(name: str, requires_approval: Any) -> None:
    if not isinstance(requires_approval, bool) and not callable(requires_approval):
        raise ToolDefinitionError(
            f"tool {name!r}: requires_approval must be True, False or a callable taking the "
            f"validated call, not {requires_approval!r}"
        )


def _check_options(name: str, idempotent: Any, timeout: Any) -> None:
    if not isinstance(idempotent, bool):
        raise ToolDefinitionError(f"tool {name!r}: idempotent must be True or False")
    if timeout is not None and (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise ToolDefinitionError(
            f"tool {name!r}: timeout must be a positive number of seconds or None, not {timeout!r}"
        )


def _raw_schema(name: str, parameters: Any) -> tuple[dict[str, Any], SchemaValidator]:
    """A private copy of a raw JSON Schema of arguments, and its compiled validator."""
    if not isinstance(parameters, dict):
        raise ToolDefinitionError(
            f"tool {name!r}: parameters must be a JSON Schema dict, not {parameters!r}"
        )
    kind = parameters.get("type", "object")
    if kind != "object" and not (isinstance(kind, list) and kind == ["object"]):
        raise ToolDefinitionError(
            f'tool {name!r}: the parameters schema must have "type": "object", not {kind!r}'
        )
    try:
        json.dumps(parameters, allow_nan=False)
        # A private copy: later changes to the caller's dict must not change the tool.
        schema = copy.deepcopy(parameters)
        if "type" not in schema:
            schema = {"type": "object", **schema}
        validator = compile_schema(schema)
    except ToolDefinitionError:
        raise  # already says what is wrong with the schema
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(
            f"tool {name!r}: the parameters schema is not JSON: {exc}"
        ) from None
    except RecursionError:
        raise ToolDefinitionError(
            f"tool {name!r}: the parameters schema is nested too deeply"
        ) from None
    return schema, validator


class Toolbox:
    """The tools an application offers the model, by name.

    Register with ``@tools.tool`` (from type hints) or :meth:`add` (a raw JSON Schema plus
    a callable); check a finished response with :meth:`check_response`; describe the tools
    for a provider with :meth:`definitions`.
    """

    def __init__(self) -> None:
        self._tools: dict[str, Tool] = {}

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        fn: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        timeout: float | None = None,
        args_model: bool = False,
        requires_approval: Approval = False,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        timeout: float | None = None,
        args_model: bool = False,
        requires_approval: Approval = False,
    ) -> Any:
        """Register a function as a tool; usable as ``@tools.tool`` and ``@tools.tool(...)``.

        The schema comes from the type hints, the description from the docstring's first
        paragraph (or ``description``), the name from the function (or ``name``). Returns
        the original function, unchanged.

        Each parameter is one argument: ``def create_user(user: NewUser)`` takes
        ``{"user": {...}}``. With ``args_model=True`` the function's one parameter (besides
        a ``ToolContext``) must be a pydantic model, and that model is the whole arguments:
        the model sees ``{"name": ..., "email": ...}`` and the function receives a
        ``NewUser`` instance (as openai's ``pydantic_function_tool`` describes a model).

        ``requires_approval=True`` (or a predicate on the :class:`ValidCall`, e.g.
        ``lambda call: call.arguments["amount"] > 100``) makes the executor store such a
        call as awaiting approval instead of running it, until ``approve`` or ``deny``.
        """

        def register(func: F, depth: int = 1) -> F:
            # The caller's locals resolve string annotations (``from __future__ import
            # annotations``) of types defined inside a function, as pydantic does.
            localns = dict(sys._getframe(depth).f_locals)
            if not callable(func):
                raise ToolDefinitionError(f"a tool must be a function, not {func!r}")
            tool_name = self._new_name(func, name, description, idempotent, timeout)
            _check_approval(tool_name, requires_approval)
            if not isinstance(args_model, bool):
                raise ToolDefinitionError(f"tool {tool_name!r}: args_model must be True or False")
            spec = describe_function(func, name=tool_name, localns=localns, args_model=args_model)
            text = spec.description if description is None else description
            self._add_typed(tool_name, func, spec, text, idempotent, timeout, requires_approval)
            return func

        if fn is None:
            return register
        return register(fn, 2)

    def _new_name(
        self,
        fn: Callable[..., Any],
        name: str | None,
        description: str | None,
        idempotent: bool,
        timeout: float | None,
    ) -> str:
        """The name of a tool about to be registered (``name``, else ``fn``'s), once it
        and the options every tool takes are checked and the name is free."""
        tool_name = name if name is not None else getattr(fn, "__name__", None)
        if tool_name is None:
            raise ToolDefinitionError(f"{fn!r} has no __name__: register it with name=...")
        _check_name(tool_name)
        assert isinstance(tool_name, str)
        self._check_free(tool_name)
        _check_options(tool_name, idempotent, timeout)
        if description is not None and not isinstance(description, str):
            raise ToolDefinitionError(f"tool {tool_name!r}: description must be a string")
        return tool_name

    def add_model(
        self,
        model: type[pydantic.BaseModel],
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        idempotent: bool = False,
        timeout: float | None = None,
        requires_approval: Approval = False,
    ) -> Tool:
        """Register a tool whose whole arguments are the pydantic ``model``.

        The tool's schema is the model's own JSON Schema: its fields are the tool's
        parameters (not nested under a parameter name), as with openai's
        ``pydantic_function_tool``. ``fn`` is called with the validated model instance as
        its first argument, plus the context by name when it declares a parameter
        annotated ``ToolContext`` or named ``ctx``. ``name`` defaults to ``fn``'s name;
        ``description`` to the first paragraph of ``fn``'s docstring, else the model's.
        Unknown top-level arguments are rejected unless the model sets ``extra="allow"``.
        """
        if not callable(fn):
            raise ToolDefinitionError(f"tool {name!r}: fn must be callable, not {fn!r}")
        tool_name = self._new_name(fn, name, description, idempotent, timeout)
        fn_doc = parse_docstring(inspect.getdoc(fn) if inspect.isroutine(fn) else None)[0]
        spec = describe_model(
            model,
            name=tool_name,
            description=description if description is not None else (fn_doc or None),
            ctx_param=_context_parameter(fn),
        )
        _check_approval(tool_name, requires_approval)
        return self._add_typed(
            tool_name, fn, spec, spec.description, idempotent, timeout, requires_approval
        )

    def _add_typed(
        self,
        name: str,
        fn: Callable[..., Any],
        spec: FunctionSpec,
        description: str,
        idempotent: bool,
        timeout: float | None,
        requires_approval: Approval = False,
    ) -> Tool:
        """Register tool ``name``: ``fn``, its arguments validated and bound as ``spec``
        (the schema learnt from a signature or a pydantic model) says."""
        binding = _TypedBinding(fn, spec)
        runs = (idempotent, timeout, requires_approval)
        return self._register(name, description, spec.parameters, binding, spec.required, runs)

    def add(
        self,
        name: str,
        parameters: dict[str, Any],
        fn: Callable[..., Any],
        *,
        description: str = "",
        idempotent: bool = False,
        timeout: float | None = None,
        requires_approval: Approval = False,
    ) -> Tool:
        """Register a tool from a raw JSON Schema of its arguments plus a callable.

        The schema must describe an object (``"type": "object"`` or ``properties``); it is
        compiled once (see ``_jsonschema.py`` for the keywords). ``fn`` is called with
        ``**arguments``, plus ``ctx=`` when it declares a ``ctx`` parameter.
        """
        _check_name(name)
        self._check_free(name)
        _check_options(name, idempotent, timeout)
        _check_approval(name, requires_approval)
        _check_function(name, fn, description)
        schema, validator = _raw_schema(name, parameters)
        binding = _RawBinding(fn, validator, _takes_ctx(fn))
        required = tuple(schema.get("required", []))
        runs = (idempotent, timeout, requires_approval)
        return self._register(name, description, schema, binding, required, runs)

    def custom(
        self,
        name: str,
        fn: Callable[..., Any],
        *,
        description: str = "",
        grammar: dict[str, Any] | None = None,
        idempotent: bool = False,
        timeout: float | None = None,
        requires_approval: Approval = False,
    ) -> Tool:
        """Register a custom tool (OpenAI Responses): the model writes free-form text, not
        JSON, and ``fn(text)`` (``fn(text, ctx=ctx)`` when it declares ``ctx``) gets it.

        ``grammar`` constrains the text: ``{"syntax": "lark" | "regex", "definition":
        ...}`` (``None``: any text). ``definitions("openai-responses")`` writes ``{"type":
        "custom", "name", "description", "format"}``; the other formats have no custom
        tools (``ToolDefinitionError``). Its calls are ``ToolCall`` of kind
        ``"custom_tool_call"`` answered with ``custom_tool_call_output``.
        """
        _check_name(name)
        self._check_free(name)
        _check_function(name, fn, description)
        text_format: dict[str, Any] = {"type": "text"}
        if grammar is not None:
            syntax = grammar.get("syntax") if isinstance(grammar, dict) else None
            definition = grammar.get("definition") if isinstance(grammar, dict) else None
            if syntax not in ("lark", "regex") or not isinstance(definition, str):
                raise ToolDefinitionError(
                    f'tool {name!r}: grammar must be {{"syntax": "lark" or "regex", '
                    f'"definition": text}}, not {grammar!r}'
                )
            text_format = {"type": "grammar", "syntax": syntax, "definition": definition}
        parameters = {"type": "custom", "format": text_format}
        binding = _TextBinding(fn, _takes_ctx(fn))
        runs = (idempotent, timeout, requires_approval)
        return self._register(
            name, description, parameters, binding, (), runs, kind="custom_tool_call"
        )

    def handle(
        self,
        kind: str,
        fn: Callable[..., Any] | None = None,
        *,
        idempotent: bool = False,
        timeout: float | None = None,
        requires_approval: Approval = False,
    ) -> Tool:
        """Register ``fn(arguments, ctx)`` as the handler of a provider's own calls of
        ``kind``: Responses ``"computer_call"``, ``"shell_call"``, ``"local_shell_call"``
        or ``"apply_patch_call"``. It is the tool named as those calls are
        (``"computer"``, ``"shell"``, ``"local_shell"``, ``"apply_patch"``), gets the
        call's action (for apply_patch its operation) as a dict, and runs under the
        executor like any tool; its return value is the answer (for a computer call an
        ``Image`` or image URL: the screenshot; for a shell call a list of ``{"stdout",
        "stderr", "outcome"}`` chunks or text). It has no definition: the request declares
        the built-in tool as the provider documents it. A call of a kind with no handler
        gets an error answered with that kind's output item.

        ``"mcp_approval_request"`` (an MCP server's call the Responses API asks the client
        to approve; arguments ``{"server_label", "name", "arguments"}``) always needs
        approval (``requires_approval`` may narrow it with a predicate): the call waits as
        ``awaiting_approval`` (answered with nothing yet) until ``executor.approve`` /
        ``executor.deny`` decide; then ``fn`` (by default none: nothing to run) runs and
        the call is answered with ``mcp_approval_response`` (``approve`` true, or false
        with the person's ``reason``).
        """
        carried = FORMATS.client_run_call(kind) if isinstance(kind, str) else None
        if carried is None:
            known = ", ".join(FORMATS.client_run_kinds())
            raise ToolDefinitionError(f"no provider call of kind {kind!r} (known: {known})")
        if carried.approval:
            fn = fn or _approved
            requires_approval = requires_approval or True
        name = carried.tool
        self._check_free(name)
        if fn is None or not callable(fn):
            raise ToolDefinitionError(f"handler for {kind!r}: fn must be callable, not {fn!r}")
        schema, validator = _raw_schema(name, {"type": "object"})
        binding = _DictBinding(fn, validator, True)
        runs = (idempotent, timeout, requires_approval)
        return self._register(name, "", schema, binding, (), runs, kind=kind)

    async def add_mcp(self, session: Any, *, prefix: str | None = None) -> MCPTools:
        """Add every tool of an MCP server; the :class:`MCPTools` that holds them.

        ``session`` is an initialised ``mcp.ClientSession`` (extra ``toolwire[mcp]``). Each
        tool keeps the server's name (``prefix + "_" + name`` with ``prefix``), its
        ``inputSchema`` is validated like :meth:`add`'s, and a call goes through the
        session (run it with an :class:`AsyncExecutor` on the session's event loop). A
        name already taken raises :class:`ToolDefinitionError` and adds nothing.
        """
        from .mcp import MCPTools

        tools = MCPTools(self, session, prefix)
        await tools.refresh()
        return tools

    @staticmethod
    def _raw_tool(name: str, parameters: Any, description: str, fn: Callable[..., Any]) -> Tool:
        """A tool, not registered, from a raw schema; ``fn(arguments, ctx)`` runs it."""
        _check_name(name)
        schema, validator = _raw_schema(name, parameters)
        return Tool(
            name=name,
            description=description,
            parameters=schema,
            fn=fn,
            binding=_DictBinding(fn, validator, True),
            required=tuple(schema.get("required", [])),
        )

    def _register(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any],
        binding: _Binding,
        required: tuple[str, ...],
        runs: tuple[bool, float | None, Approval],
        kind: str = "function",
    ) -> Tool:
        """Build tool ``name`` (its name checked free) and register it; its function is the
        one ``binding`` calls. ``runs``: how it runs, ``(idempotent, timeout,
        requires_approval)``."""
        idempotent, timeout, requires_approval = runs
        tool = Tool(
            name=name,
            description=description,
            parameters=parameters,
            fn=binding._fn,
            binding=binding,
            required=required,
            idempotent=idempotent,
            timeout=timeout,
            requires_approval=requires_approval,
            kind=kind,
        )
        self._tools[name] = tool
        return tool

    def _check_free(self, name: str) -> None:
        if name in self._tools:
            raise ToolDefinitionError(f"a tool named {name!r} is already registered")

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name) if isinstance(name, str) else None

    def __contains__(self, name: object) -> bool:
        """Whether a tool called ``name`` is registered."""
        return isinstance(name, str) and name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        """The tools, in registration order."""
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        """How many tools are registered."""
        return len(self._tools)

    def __repr__(self) -> str:
        """``Toolbox(name, name, ...)``."""
        return f"Toolbox({', '.join(self._tools)})"

    def check(self, call: ToolCall | RejectedCall) -> ValidCall | InvalidCall:
        """Decide whether one call can run: a :class:`ValidCall` or an :class:`InvalidCall`.

        Unknown tools, argument text that was not JSON (a ``RejectedCall``), empty
        arguments for a tool with required parameters and schema violations give an
        ``InvalidCall`` whose ``reason`` is meant for the model. Raises
        :class:`UsageError` for anything that is not a ``ToolCall`` or ``RejectedCall``.
        """
        if isinstance(call, RejectedCall):
            return InvalidCall(call=call, reason=self._rejected_reason(call))
        if not isinstance(call, ToolCall):
            raise UsageError(
                f"Toolbox.check takes a ToolCall or RejectedCall, not {type(call).__name__}"
            )
        tool = self._tools.get(call.name)
        if tool is None or not _answers(tool, call):
            return InvalidCall(call=call, reason=self._unknown_reason(call.name))
        # Empty argument text (and nothing parsed from it) is the "" rule: {} or an error.
        empty = _has_no_arguments(call)
        if empty and tool.required:
            return InvalidCall(call=call, reason=_empty_arguments_reason(tool))
        arguments = {} if empty else call.arguments
        try:
            validated, built = tool._validated(arguments)
        except ArgumentsInvalid as exc:
            return InvalidCall(call=call, reason=exc.message)
        return ValidCall(call=call, tool=tool, arguments=validated, built=built)

    def check_response(self, response: Response) -> list[ValidCall | InvalidCall]:
        """Check every call of ``response`` (valid and rejected ones), ordered by index."""
        if not isinstance(response, Response):
            raise UsageError(
                f"Toolbox.check_response takes a Response, not {type(response).__name__}"
            )
        calls: list[ToolCall | RejectedCall] = [*response.tool_calls, *response.rejected]
        calls.sort(key=lambda c: c.index)
        return [self.check(c) for c in calls]

    def definitions(self, format: str, *, strict: bool = False) -> list[dict[str, Any]]:
        """The tool definitions for a provider's request, as fresh dicts that its SDK's
        ``tools=`` takes as they are: one per tool, and for ``"gemini"`` one ``Tool``
        holding every declaration (``[{"functionDeclarations": [...]}]``).

        ``format``: ``"openai-chat"``, ``"openai-responses"``, ``"anthropic"``,
        ``"gemini"``, ``"bedrock-converse"``, ``"ollama"`` or ``"cohere"``. ``strict=True``
        makes the schemas strict-mode compatible (OpenAI, Anthropic). Raises
        ``UnknownFormat``, and ``ToolDefinitionError`` for a schema the format cannot say.
        """

        tools = [t for t in self._tools.values() if t.kind == "function"]
        out = tool_definitions(tools, format, strict=strict)
        custom = [t for t in self._tools.values() if t.kind == "custom_tool_call"]
        if custom:
            # in registration order among the function tools
            order = {t.name: i for i, t in enumerate(self._tools.values())}
            out += _custom_definitions(custom, format)
            out.sort(key=lambda d: order.get(d.get("name", ""), 0))
        return out

    def _known(self) -> str:
        if not self._tools:
            return "There are no tools available."
        return "The available tools are: " + ", ".join(f'"{n}"' for n in self._tools) + "."

    def _unknown_reason(self, name: str) -> str:
        return f'There is no tool named "{name}". {self._known()}'

    def _rejected_reason(self, call: RejectedCall) -> str:
        if not call.name:
            return f"The tool call has no tool name, so it cannot run. {self._known()}"
        repeated = call.duplicate_key
        if call.name not in self._tools:
            problem = (
                f"were not valid JSON: {call.reason}"
                if repeated is None
                else f'give the key "{repeated[-1]}" more than once'
            )
            return (
                f'There is no tool named "{call.name}" (and its arguments {problem}). '
                + self._known()
            )
        if repeated is not None:
            key = repeated[-1]
            return (
                f'The arguments of the call to tool "{call.name}" give the key "{key}" more '
                f"than once in the same object (at {format_pointer(repeated)}), so "
                "it is unclear which value was meant and the call cannot run. Call it again "
                "with each key given only once."
            )
        return (
            f'The arguments of the call to tool "{call.name}" are not valid JSON '
            f"({call.reason}). Call it again with the arguments as one complete JSON object."
        )


def _check_function(name: str, fn: Any, description: Any) -> None:
    if not callable(fn):
        raise ToolDefinitionError(f"tool {name!r}: fn must be callable, not {fn!r}")
    if not isinstance(description, str):
        raise ToolDefinitionError(f"tool {name!r}: description must be a string")


def _takes_ctx(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` declares a ``ctx`` parameter (to be passed the context by name)."""
    try:
        return "ctx" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _has_no_arguments(call: ToolCall) -> bool:
    return call.arguments in ({}, None) and not call.raw_arguments.strip()


def _empty_arguments_reason(tool: Tool) -> str:
    listing = ", ".join(f'"{r}"' for r in tool.required)
    return (
        f'The call to tool "{tool.name}" had empty arguments, but "{tool.name}" '
        f"requires {listing}. Call it again with a JSON object holding them."
    )


def _custom_definitions(custom: list[Tool], format: str) -> list[dict[str, Any]]:
    """The definitions of the custom tools ``custom`` in ``format``, which must have them."""
    write = FORMATS.provider(format).custom_definition
    if write is None:
        having = ", ".join(p.name for p in FORMATS if p.custom_definition is not None)
        raise ToolDefinitionError(
            f"custom tools ({', '.join(t.name for t in custom)}) exist only in "
            f"{having}, not {format}"
        )
    return [write(t) for t in custom]


def _invalid_message(tool: str, violations: tuple[Violation, ...]) -> str:
    lines = "; ".join(str(v) for v in violations[:_MAX_VIOLATIONS])
    return (
        f'Invalid arguments for tool "{tool}": {lines}. '
        f'Call "{tool}" again with corrected arguments.'
    )


def _unknown_message(known: list[str]) -> str:
    listing = ", ".join(f'"{k}"' for k in known) or "none"
    return f"unknown property (not allowed here); the known properties are: {listing}"


def _from_pydantic(
    exc: pydantic.ValidationError, arguments: Any, known: list[str]
) -> tuple[Violation, ...]:
    grouped: dict[tuple[str | int, ...], list[str]] = {}
    for error in exc.errors(include_url=False):
        path = _walk_loc(arguments, error["loc"], error["type"] == "missing")
        message = _pydantic_message(error, path, known)
        messages = grouped.setdefault(path, [])
        if message not in messages:
            messages.append(message)
    violations: list[Violation] = []
    for path, messages in grouped.items():
        violations.extend(Violation(path=path, message=m) for m in _join_alternatives(messages))
    return tuple(violations[:_MAX_VIOLATIONS])


def _pydantic_message(
    error: pydantic_core.ErrorDetails, path: tuple[str | int, ...], known: list[str]
) -> str:
    """One pydantic error in the words of the JSON-Schema validator's messages."""
    kind = error["type"]
    if kind == "missing":
        return "this required property is missing"
    if kind == "extra_forbidden":
        if len(path) == 1:  # a top-level argument: name the real parameters
            return _unknown_message(known)
        return "unknown property (not allowed here)"
    text = str(error["msg"])
    if text.startswith("Input should be "):
        text = "expected " + text[len("Input should be ") :]
    else:
        text = text[:1].lower() + text[1:]
    return f"{text}, got {describe_value(error.get('input'))}"


def _join_alternatives(messages: list[str]) -> list[str]:
    """The messages of one place; the branches of a union failing on their types become one
    sentence, "expected X or Y, got Z"."""
    if len(messages) < 2 or not all(m.startswith("expected ") for m in messages):
        return messages
    got = messages[0].rsplit(", got ", 1)[-1]
    wanted = " or ".join(m[len("expected ") :].rsplit(", got ", 1)[0] for m in messages)
    return [f"expected {wanted}, got {got}"]


def _walk_loc(arguments: Any, loc: tuple[str | int, ...], missing: bool) -> tuple[str | int, ...]:
    # pydantic's ``loc`` mixes real keys with union member tags ("int", "list[str]");
    # only the parts that exist in the input (or the missing key itself) are a path.
    path: list[str | int] = []
    current = arguments
    for i, part in enumerate(loc):
        if _holds(current, part):
            path.append(part)
            current = current[part]
        elif i == len(loc) - 1 and isinstance(part, str) and (missing or isinstance(current, dict)):
            path.append(part)
    return tuple(path)


def _holds(container: Any, part: str | int) -> bool:
    """Whether ``part`` is a key of the dict, or an index of the list, ``container``."""
    if isinstance(container, dict):
        return isinstance(part, str) and part in container
    return isinstance(container, list) and isinstance(part, int) and 0 <= part < len(container)


# The text of a return value: sorted keys, compact, non-ASCII kept (one encoder for all).
_result_text = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode
_JSON_SCALARS = frozenset({str, int, bool, type(None)})


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is made only of exact JSON types (``dict`` with ``str`` keys,
    ``list``, ``str``, ``int``, finite ``float``, ``bool``, ``None``): :func:`json_value`
    would return an equal copy of it. One pass, no paths built."""
    scalars = _JSON_SCALARS
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            for key, child in item.items():
                if type(key) is not str:
                    return False
                stack.append(child)
        elif kind is list:
            stack.extend(item)
        elif kind is float:
            if not math.isfinite(item):
                return False
        elif kind not in scalars:
            return False
    return True


def json_value(value: Any, _path: str = "the value") -> Any:
    """Turn ``value`` into plain JSON values deterministically (sets sorted, enums unwrapped).

    Raises ``TypeError`` naming the part that JSON cannot carry.
    """
    if type(value) in _JSON_SCALARS:
        return value
    if type(value) is float:
        return _json_float(value, _path)
    if isinstance(value, enum.Enum):
        return json_value(value.value, _path)
    if isinstance(value, (str, bool, int)):  # subclasses (IntEnum handled above)
        return json_value(type(value).__mro__[-2](value), _path)
    if isinstance(value, float):
        return _json_float(float(value), _path)
    if isinstance(value, dict):
        return _json_object(value, _path)
    if isinstance(value, (list, tuple)):
        return [json_value(item, f"{_path}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (set, frozenset)):
        return _json_set(value, _path)
    return _json_other(value, _path)


def _json_float(value: float, path: str) -> float:
    if not math.isfinite(value):
        raise TypeError(f"{path} is {value!r}, which JSON cannot represent")
    return value


def _json_object(value: dict[Any, Any], path: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        text = _json_key(key, path)
        out[str(text)] = json_value(item, f"{path}[{text!r}]")
    return out


def _json_key(key: Any, path: str) -> str:
    """The JSON object key of the dict key ``key`` (an enum by its value; numbers, booleans
    and ``None`` as their JSON text)."""
    if isinstance(key, enum.Enum):
        key = key.value
    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    if isinstance(key, (int, float)):
        return json.dumps(json_value(key, path))
    if not isinstance(key, str):
        raise TypeError(f"{path} has the key {key!r}, which JSON cannot represent")
    return key


def _json_set(value: set[Any] | frozenset[Any], path: str) -> list[Any]:
    items = [json_value(item, f"{path} (a set item)") for item in value]
    # Set iteration order changes between processes (hash randomisation): sort by
    # canonical text so equal sets give the same bytes everywhere.
    items.sort(key=lambda v: json.dumps(v, sort_keys=True, separators=(",", ":")))
    return items


def _json_other(value: Any, _path: str) -> Any:
    """A pydantic model, a dataclass, or what pydantic can turn into JSON values."""
    if isinstance(value, pydantic.BaseModel):
        return json_value(value.model_dump(mode="python", by_alias=True), _path)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json_value(
            {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}, _path
        )
    try:
        converted = pydantic_core.to_jsonable_python(value)
    except pydantic_core.PydanticSerializationError:
        raise TypeError(
            f"{_path} is of type {type(value).__name__}, which cannot be turned into JSON"
        ) from None
    return json_value(converted, _path)
