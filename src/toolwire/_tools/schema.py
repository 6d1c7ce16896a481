"""Turn a Python function's signature into a JSON Schema and a pydantic validator.

All work happens once, at registration; unusable signatures raise
:class:`ToolDefinitionError`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import docstring_parser
import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema

from .._errors import ToolDefinitionError
from .context import ToolContext

__all__ = ["FunctionSpec", "describe_function", "parse_docstring"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FunctionSpec:
    """What :func:`describe_function` (or :func:`describe_model`) learnt about a tool.

    ``model`` validates the arguments (keys are parameter names); ``fields`` maps each
    parameter name to the model's private field name; ``ctx_param`` is the name of the
    ``ToolContext`` parameter, if any; ``required`` lists the parameters without defaults.

    ``whole`` is true when ``model`` is the user's own model and *is* the arguments (its
    fields are the tool's parameters); the function then receives the model instance, by
    the name ``model_param`` (``None``: as its first positional argument), and ``fields``
    is empty. ``extra_allowed`` is the model's own ``extra="allow"``; otherwise unknown
    top-level arguments are rejected.
    """

    description: str
    parameters: dict[str, Any]
    model: type[BaseModel]
    fields: dict[str, str]
    ctx_param: str | None
    required: tuple[str, ...]
    whole: bool = False
    model_param: str | None = None
    extra_allowed: bool = False


class _NoFieldTitles(GenerateJsonSchema):
    """Leave out the per-field ``title`` pydantic derives from each name (pure noise)."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        """Never add derived field titles; explicit ``Field(title=...)`` are kept."""
        return False


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into the description (first paragraph) and parameter docs.

    The description is the first paragraph with its lines joined by spaces. Parameter
    documentation is read by ``docstring_parser`` in whichever style the docstring is
    written: Google (``Args:``), NumPy (``Parameters``), Sphinx/reST (``:param name:``) or
    Epydoc (``@param name:``); each text has its whitespace collapsed to single spaces.
    A docstring the parser cannot read gives its first paragraph and no parameter docs.
    """
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    try:
        parsed = docstring_parser.parse(text)
    except docstring_parser.ParseError:
        return _squash(text.split("\n\n", 1)[0]), {}
    return _squash(_first_paragraph(parsed)), _parameter_docs(parsed)


def _first_paragraph(parsed: docstring_parser.Docstring) -> str:
    description = parsed.short_description or ""
    if description and not parsed.blank_after_short_description and parsed.long_description:
        # the first paragraph ran on past its first line
        description += " " + parsed.long_description.split("\n\n", 1)[0]
    return description


def _parameter_docs(parsed: docstring_parser.Docstring) -> dict[str, str]:
    params: dict[str, str] = {}
    for param in parsed.params:
        said = _squash(param.description or "")
        if said and param.args[0] != "attribute":  # a class's attributes are not arguments
            params.setdefault(param.arg_name.lstrip("*"), said)
    return params


def _squash(text: str) -> str:
    return " ".join(text.split())


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext


def _split_annotated(annotation: Any) -> tuple[Any, list[Any]]:
    if typing.get_origin(annotation) is Annotated:
        args = typing.get_args(annotation)
        return args[0], list(args[1:])
    return annotation, []


def describe_function(
    fn: Callable[..., Any],
    *,
    name: str,
    localns: dict[str, Any] | None = None,
    args_model: bool = False,
) -> FunctionSpec:
    """Read ``fn``'s signature and docstring into a :class:`FunctionSpec`.

    Raises :class:`ToolDefinitionError` for what cannot be described (see the module
    docstring). ``name`` is only used in messages and as the model's title; ``localns``
    (the registering frame's locals) resolves string annotations of local types.
    ``args_model=True``: ``fn`` has one parameter (besides a ``ToolContext``), annotated
    with a pydantic model, and that model is the whole arguments (:func:`describe_model`).
    """
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool {name!r}: cannot read the signature: {exc}") from None
    try:
        hints = typing.get_type_hints(_annotated_target(fn), localns=localns, include_extras=True)
    except Exception as exc:  # NameError, TypeError... from user annotations
        raise ToolDefinitionError(
            f"tool {name!r}: its type annotations do not resolve: {exc}"
        ) from None
    description, param_docs = parse_docstring(inspect.getdoc(fn))
    found = _Parameters()
    for position, param in enumerate(signature.parameters.values()):
        found.read(param, position, hints, param_docs, name)
    if args_model:
        return _whole_model_spec(fn, name, found.whole_params, found.ctx_param, description)
    model, schema = _arguments_model(name, found.definitions)
    return FunctionSpec(
        description=description,
        parameters=schema,
        model=model,
        fields=found.fields,
        ctx_param=found.ctx_param,
        required=tuple(found.required),
    )


@dataclass
class _Parameters:
    """What :func:`describe_function` learns from a signature, one parameter at a time.

    ``definitions`` are the pydantic fields (named ``p<position>``, aliased to the
    parameter's name); ``fields`` maps each parameter to its field; ``whole_params`` keeps
    (name, annotation, default) for ``args_model=True``.
    """

    definitions: dict[str, Any] = dataclasses.field(default_factory=dict)
    whole_params: list[tuple[str, Any, Any]] = dataclasses.field(default_factory=list)
    fields: dict[str, str] = dataclasses.field(default_factory=dict)
    required: list[str] = dataclasses.field(default_factory=list)
    ctx_param: str | None = None

    def read(
        self,
        param: inspect.Parameter,
        position: int,
        hints: dict[str, Any],
        param_docs: dict[str, str],
        name: str,
    ) -> None:
        """Add ``param``: the ``ToolContext`` slot, or one field of the arguments model."""
        where = f"tool {name!r}, parameter {param.name!r}"
        _check_parameter(param, hints, where)
        annotation = hints[param.name]
        if _is_context(annotation):
            if self.ctx_param is not None:
                raise ToolDefinitionError(f"{where}: only one ToolContext parameter is allowed")
            self.ctx_param = param.name
            return
        base, field_type, text = _field_type(annotation)
        doc = text if text is not None else param_docs.get(param.name)
        info, is_required = _field_info(param, doc, where)
        self.definitions[f"p{position}"] = (field_type, info)
        self.fields[param.name] = f"p{position}"
        if is_required:
            self.required.append(param.name)
        self.whole_params.append((param.name, base, param.default))


_UNNAMEABLE: dict[inspect._ParameterKind, str] = {
    inspect.Parameter.VAR_POSITIONAL: "*args cannot be described as JSON arguments",
    inspect.Parameter.VAR_KEYWORD: "**kwargs cannot be described as JSON arguments",
    inspect.Parameter.POSITIONAL_ONLY: "positional-only parameters cannot be passed by name",
}


def _field_type(annotation: Any) -> tuple[Any, Any, str | None]:
    """The bare type of ``annotation``, the type of its field (with the ``Annotated``
    metadata that is not text) and its first text metadata (the parameter's doc)."""
    base, metadata = _split_annotated(annotation)
    texts = [m for m in metadata if isinstance(m, str)]
    others = [m for m in metadata if not isinstance(m, str)]
    # a subscript with a tuple, which every supported Python accepts (3.13's
    # Annotated no longer has a __class_getitem__ to call directly)
    annotated_args = (base, *others)
    field_type: Any = Annotated[annotated_args] if others else base
    return base, field_type, texts[0] if texts else None


def _check_parameter(param: inspect.Parameter, hints: dict[str, Any], where: str) -> None:
    """Refuse a parameter that cannot be passed a JSON argument by name, or has no type."""
    problem = _UNNAMEABLE.get(param.kind)
    if problem is not None:
        raise ToolDefinitionError(f"{where}: {problem}")
    if param.name not in hints:
        raise ToolDefinitionError(
            f"{where}: missing type annotation (annotate it; use typing.Any to accept "
            "any JSON value)"
        )


def _field_info(param: inspect.Parameter, doc: str | None, where: str) -> tuple[FieldInfo, bool]:
    """The pydantic field of ``param`` (its own ``Field(...)`` default merged in), and
    whether it is required."""
    default = param.default
    if not isinstance(default, FieldInfo):
        info_kwargs: dict[str, Any] = {"alias": param.name}
        if doc is not None:
            info_kwargs["description"] = doc
        is_required = default is inspect.Parameter.empty
        if not is_required:
            info_kwargs["default"] = default
        return Field(**info_kwargs), is_required
    if default.alias is not None:
        raise ToolDefinitionError(f"{where}: Field(alias=...) is not supported")
    overrides: dict[str, Any] = {
        "alias": param.name,
        "validation_alias": param.name,
        "serialization_alias": param.name,
        "alias_priority": 2,
    }
    if doc and default.description is None:
        overrides["description"] = doc
    merged = FieldInfo.merge_field_infos(default, **overrides)
    return merged, merged.is_required()


def _arguments_model(name: str, definitions: dict[str, Any]) -> tuple[type[BaseModel], Any]:
    """The pydantic model of the arguments, and its JSON Schema (no title)."""
    config = ConfigDict(
        extra="forbid",
        strict=True,
        protected_namespaces=(),
        populate_by_name=False,
        arbitrary_types_allowed=False,
    )
    try:
        model = pydantic.create_model(_model_name(name), __config__=config, **definitions)
        schema = model.model_json_schema(schema_generator=_NoFieldTitles)
    except ToolDefinitionError:
        raise
    except Exception as exc:  # pydantic's schema generation and user types
        raise ToolDefinitionError(
            f"tool {name!r}: its parameters cannot be described as JSON Schema: {exc}"
        ) from None
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return model, schema


def _whole_model_spec(
    fn: Callable[..., Any],
    name: str,
    params: list[tuple[str, Any, Any]],
    ctx_param: str | None,
    description: str,
) -> FunctionSpec:
    where = f"tool {name!r}"
    if len(params) != 1:
        raise ToolDefinitionError(
            f"{where}: args_model=True needs exactly one parameter (besides a ToolContext), "
            f"annotated with a pydantic model; it has {len(params)}"
        )
    param, annotation, default = params[0]
    if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
        raise ToolDefinitionError(
            f"{where}, parameter {param!r}: args_model=True needs a pydantic model "
            f"(a BaseModel subclass), not {annotation!r}"
        )
    if default is not inspect.Parameter.empty:
        raise ToolDefinitionError(
            f"{where}, parameter {param!r}: the arguments model cannot have a default "
            "(the model is always built from the arguments)"
        )
    spec = describe_model(annotation, name=name, description=description or None)
    return dataclasses.replace(spec, ctx_param=ctx_param, model_param=param)


def describe_model(
    model: Any, *, name: str, description: str | None = None, ctx_param: str | None = None
) -> FunctionSpec:
    """A :class:`FunctionSpec` whose arguments are the fields of the pydantic ``model``.

    The schema is the model's own JSON Schema (derived field titles and the top-level title
    left out, ``additionalProperties: false`` at the top unless the model sets
    ``extra="allow"``); the description is ``description``, else the first paragraph of the
    model's own docstring. Raises :class:`ToolDefinitionError` for anything but a model
    class, or a model pydantic cannot describe.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise ToolDefinitionError(
            f"tool {name!r}: the arguments model must be a pydantic BaseModel subclass, "
            f"not {model!r}"
        )
    try:
        schema = model.model_json_schema(schema_generator=_NoFieldTitles)
    except Exception as exc:  # pydantic's schema generation and user types
        raise ToolDefinitionError(
            f"tool {name!r}: the model {model.__name__} cannot be described as JSON Schema: {exc}"
        ) from None
    schema.pop("title", None)
    own_doc = schema.pop("description", None)
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    extra_allowed = model.model_config.get("extra") == "allow"
    if not extra_allowed:
        schema["additionalProperties"] = False
    if description is None:
        # The class's own docstring only (pydantic already ignores an inherited one).
        description = parse_docstring(own_doc)[0] if isinstance(own_doc, str) else ""
    return FunctionSpec(
        description=description,
        parameters=schema,
        model=model,
        fields={},
        ctx_param=ctx_param,
        required=tuple(schema.get("required", [])),
        whole=True,
        extra_allowed=extra_allowed,
    )


def _annotated_target(fn: Callable[..., Any]) -> Any:
    """The object whose annotations describe ``fn``'s parameters."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.isroutine(fn) or inspect.isclass(fn):
        return fn
    # A callable object: its __call__ carries the annotations.
    return type(fn).__call__


def _model_name(name: str) -> str:
    cleaned = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return f"{cleaned}_arguments"
