"""Shapes: where in a JSON document each sub-type or sub-schema of an output applies.

A target (pydantic type or JSON Schema) compiles lazily into :class:`Shape` nodes that
validate each completed subtree from its members' validated values, in O(members).
"""

from __future__ import annotations

import enum
import json
import types
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar, Final, Literal, Union

from .._core.json_types import json_type
from .._core.jsonpointer import parse_fragment, resolve

__all__ = [
    "ALL_KINDS",
    "FREE",
    "DictShape",
    "FreeShape",
    "Invalid",
    "LeafShape",
    "ListShape",
    "ModelShape",
    "ObjectShape",
    "Shape",
    "UnionShape",
    "annotated",
    "json_kind",
    "pydantic_shape",
    "schema_shape",
    "too_deep_for_pydantic",
    "validate_by_parts",
]

# The JSON kinds, by JSON Schema's names (toolwire._core.json_types)
ALL_KINDS: frozenset[str] = frozenset({"object", "array", "string", "number", "boolean", "null"})
_KIND_OF_EVENT = {"true": "boolean", "false": "boolean"}


class Invalid(Exception):
    """A completed value does not fit its shape; ``message`` says why (internal)."""

    def __init__(self, message: str, errors: list[Any]) -> None:
        super().__init__(message)
        self.message = message
        self.errors = errors


def json_kind(event_kind: str) -> str:
    """The kind of a ``ValueStarted`` event as shapes name them (``true`` and ``false``
    are ``boolean``)."""
    return _KIND_OF_EVENT.get(event_kind, event_kind)


class Shape:
    """One node of the tree: what applies to a value at one place of the document.

    ``kinds`` are the JSON kinds the node accepts (for union resolution); ``grows`` is true
    when a string still being streamed may be shown here (its type is ``str``); ``container``
    is ``"object"``, ``"array"`` or ``None`` (a leaf, shown only once complete).
    """

    __slots__ = ("container", "grows", "kinds")

    container: str | None
    grows: bool
    kinds: frozenset[str]

    def resolve(self, kind: str) -> Shape:
        """The shape that applies to a value of JSON ``kind`` (a union picks its branch)."""
        return self

    def child(self, key: str | int) -> Shape | None:
        """The shape of the member at ``key``; ``None``: validated only with this node."""
        return None

    def validate(self, value: Any, raw: Any) -> Any:
        """The typed value of a completed value: ``value`` holds validated members, ``raw``
        is the same value as ``json.loads`` gives it. Raises :class:`Invalid`."""
        raise NotImplementedError

    def build(self, members: Any) -> Any:
        """The preview object of an open container from its shown members (a dict of
        field names or keys, or a list)."""
        return members


# ------------------------------------------------------------------------- pydantic


def _pydantic_message(exc: Exception) -> tuple[str, list[Any]]:
    errors = getattr(exc, "errors", None)
    listed: list[Any] = []
    if callable(errors):
        try:
            listed = list(errors(include_url=False))
        except TypeError:
            listed = list(errors())
    return str(exc), listed


def _checked(primary: Callable[[Any], Any], by_json: Callable[[str], Any]) -> Any:
    """A validate function: Python rules on the built value, JSON rules on failure."""
    import pydantic

    def validate(value: Any, raw: Any) -> Any:
        try:
            return primary(value)
        except pydantic.ValidationError as exc:
            refused = exc
        try:
            text = json.dumps(raw, ensure_ascii=False, allow_nan=False)
        except RecursionError:  # deeper than pydantic reads JSON anyway
            text = None
        except (TypeError, ValueError) as exc:  # pragma: no cover - raw is JSON
            raise Invalid(str(exc), []) from None
        if text is not None:
            try:
                return by_json(text)
            except pydantic.ValidationError as exc:
                if not too_deep_for_pydantic(exc):
                    message, errors = _pydantic_message(exc)
                    raise Invalid(message, errors) from None
        # too deep for pydantic's JSON reader: the Python rules' verdict stands
        message, errors = _pydantic_message(refused)
        if any(e.get("type") == "recursion_depth_exceeded" for e in errors):
            message = f"the value nests deeper than pydantic validates it whole: {message}"
        raise Invalid(message, errors) from None

    return validate


def too_deep_for_pydantic(exc: Any) -> bool:
    """Whether pydantic refused a JSON text (that toolwire's parser accepted) only for its
    nesting: jiter, its JSON reader, stops at 201 nested containers."""
    errors = exc.errors(include_url=False)
    return (
        len(errors) == 1
        and errors[0]["type"] == "json_invalid"
        and "recursion limit exceeded" in errors[0]["msg"]
    )


class _Adapters:
    """``TypeAdapter`` per annotation, built once (building one is costly)."""

    def __init__(self) -> None:
        self._cache: dict[Any, Any] = {}

    def get(self, annotation: Any) -> Any:
        from pydantic import TypeAdapter

        try:
            found = self._cache.get(annotation)
        except TypeError:  # an unhashable annotation: not cached
            return TypeAdapter(annotation)
        if found is None:
            found = self._cache[annotation] = TypeAdapter(annotation)
        return found


class LeafShape(Shape):
    """A value shown only once complete (a string also while it grows, when ``grows``),
    then validated as a whole."""

    __slots__ = ("_validate",)

    def __init__(
        self, validate: Callable[[Any, Any], Any], kinds: frozenset[str], grows: bool
    ) -> None:
        self._validate = validate
        self.kinds = kinds
        self.grows = grows
        self.container = None

    def validate(self, value: Any, raw: Any) -> Any:
        """Validate the whole value (see :class:`Shape`)."""
        return self._validate(value, raw)


class UnionShape(Shape):
    """A union: the branch that alone accepts the value's JSON kind, else a leaf."""

    __slots__ = ("_branches", "_by_kind", "_leaf")

    def __init__(self, branches: list[Shape], leaf: LeafShape) -> None:
        self._branches = branches
        self._leaf = leaf
        self.kinds = frozenset().union(*(b.kinds for b in branches))
        self.grows = False
        self.container = None
        self._by_kind: dict[str, Shape] = {}
        for kind in ALL_KINDS:
            accepting = [b for b in branches if kind in b.kinds]
            self._by_kind[kind] = accepting[0] if len(accepting) == 1 else leaf

    def resolve(self, kind: str) -> Shape:
        """The one branch accepting ``kind``, resolved further; else the whole union."""
        found = self._by_kind.get(kind, self._leaf)
        return found if found is self._leaf else found.resolve(kind)

    def validate(self, value: Any, raw: Any) -> Any:
        """Validate by the union's own adapter."""
        return self._leaf.validate(value, raw)


class _UniformShape(Shape):
    """A container whose members all have one shape, built on first use (a recursive
    type asks for itself)."""

    __slots__ = ("_make", "_member", "_validate")

    _CONTAINER: ClassVar[str]  # the JSON kind of the container: "array" or "object"

    def __init__(
        self, make_member: Callable[[], Shape | None], validate: Callable[[Any, Any], Any]
    ) -> None:
        self._make = make_member
        self._member: Any = _UNBUILT
        self._validate = validate
        self.kinds = frozenset({self._CONTAINER})
        self.grows = False
        self.container = self._CONTAINER

    def child(self, key: str | int) -> Shape | None:
        """Every member has the member shape."""
        member = self._member
        if member is _UNBUILT:
            member = self._member = self._make()
        return member  # type: ignore[no-any-return]

    def validate(self, value: Any, raw: Any) -> Any:
        """Validate the container of validated members (O(members))."""
        return self._validate(value, raw)


class ListShape(_UniformShape):
    """``list[T]``: every item has ``T``'s shape; the preview is a ``list``."""

    __slots__ = ()
    _CONTAINER = "array"


class DictShape(_UniformShape):
    """``dict[str, T]`` (or a schema object): every value has ``T``'s shape."""

    __slots__ = ()
    _CONTAINER = "object"


_UNBUILT: Any = object()


def _accept(value: Any, raw: Any) -> Any:
    return value


class FreeShape(Shape):
    """Anything goes (a schema of ``true``): shown as it arrives, strings growing,
    containers as plain ``dict`` and ``list``; nothing to validate."""

    __slots__ = ("_array", "_object")

    def __init__(self) -> None:
        self.kinds = ALL_KINDS
        self.grows = True
        self.container = None
        self._object = DictShape(lambda: self, _accept)
        self._array = ListShape(lambda: self, _accept)

    def resolve(self, kind: str) -> Shape:
        """A free container for a container, else this leaf."""
        if kind == "object":
            return self._object
        if kind == "array":
            return self._array
        return self

    def validate(self, value: Any, raw: Any) -> Any:
        """Accept the value as it is."""
        return value


FREE: Final = FreeShape()
"""The shape of a part that nothing constrains."""


class ModelShape(Shape):
    """A pydantic model: members by validation alias; the preview is an instance built
    without validation (``model_construct``'s way) whose unset fields are ``None``."""

    __slots__ = ("_blank", "_children", "_cls", "_fields", "_validate")

    def __init__(
        self,
        cls: Any,
        fields: dict[str, tuple[str, Callable[[], Shape | None]]],
        validate: Callable[[Any, Any], Any],
    ) -> None:
        self._cls = cls
        self._fields = fields
        self._children: dict[str, tuple[str, Shape | None]] = {}
        self._validate = validate
        self._blank = dict.fromkeys(cls.model_fields)
        self.kinds = frozenset({"object"})
        self.grows = False
        self.container = "object"

    def field(self, key: str) -> tuple[str, Shape | None] | None:
        """``(field name, shape)`` for the JSON key ``key``; ``None`` for an unknown key."""
        found = self._children.get(key)
        if found is None:
            spec = self._fields.get(key)
            if spec is None:
                return None
            found = self._children[key] = (spec[0], spec[1]())
        return found

    def child(self, key: str | int) -> Shape | None:
        """The field's shape (``None`` for unknown keys and fields with validators)."""
        found = self.field(key) if isinstance(key, str) else None
        return None if found is None else found[1]

    def validate(self, value: Any, raw: Any) -> Any:
        """Validate the members (by alias) into the model."""
        return self._validate(value, raw)

    def build(self, members: Any) -> Any:
        """An instance holding ``members`` (field name -> preview); other fields ``None``
        (never a default that the model may still override), built unvalidated by the
        model's own ``model_construct``; ``model_fields_set`` names the members."""
        values = {**self._blank, **members}
        return self._cls.model_construct(_fields_set=set(members), **values)


def _kinds_of_literal(values: tuple[Any, ...]) -> frozenset[str]:
    kinds: set[str] = set()
    for v in values:
        if isinstance(v, enum.Enum):
            v = v.value
        if v is None:
            kinds.add("null")
        elif isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, (int, float)):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            return ALL_KINDS
    return frozenset(kinds)


# Bare types whose validation returns a JSON value of exactly that type unchanged, in
# strict and lax mode alike (a leaf's adapter is the bare type's own, without a model's
# config): such a value skips pydantic.
_IDENTITY: tuple[type, ...] = (str, int, float, bool)

_SIMPLE_KINDS: dict[Any, frozenset[str]] = {
    str: frozenset({"string"}),
    int: frozenset({"number"}),
    float: frozenset({"number"}),
    bool: frozenset({"boolean"}),
    type(None): frozenset({"null"}),
}


def _opaque_model(cls: Any) -> bool:
    """Whether a model's input cannot be mapped onto its fields member by member."""
    from pydantic import AliasChoices, AliasPath, RootModel

    if issubclass(cls, RootModel):
        return True
    decorators = cls.__pydantic_decorators__
    if any(d.info.mode in ("before", "wrap") for d in decorators.model_validators.values()):
        return True
    if "__get_pydantic_core_schema__" in vars(cls):
        return True
    return any(
        isinstance(f.validation_alias, (AliasChoices, AliasPath)) for f in cls.model_fields.values()
    )


class _PydanticShapes:
    """Builds (and caches) the shapes of one pydantic target."""

    def __init__(self) -> None:
        self._adapters = _Adapters()
        self._models: dict[Any, Shape] = {}

    def leaf(self, annotation: Any, strict: bool | None) -> Callable[[Any, Any], Any]:
        adapter = self._adapters.get(annotation)
        validate: Callable[[Any, Any], Any] = _checked(
            # the core validator itself: ``TypeAdapter.validate_python``'s wrapper costs
            # four times the validation of a scalar
            lambda value: adapter.validator.validate_python(value, strict=strict),
            lambda text: adapter.validate_json(text, strict=strict),
        )
        if annotation not in _IDENTITY:
            return validate
        exact = annotation

        def identity(value: Any, raw: Any) -> Any:
            return value if type(value) is exact else validate(value, raw)

        return identity

    def shape(self, annotation: Any, strict: bool | None = None) -> Shape:
        """The shape for ``annotation`` (constraints in ``Annotated`` kept for validation)."""
        bare = annotation
        while typing.get_origin(bare) is Annotated:
            bare = typing.get_args(bare)[0]
        origin = typing.get_origin(bare)
        args = typing.get_args(bare)
        validate = self.leaf(annotation, strict)
        if isinstance(bare, type) and _is_model(bare):
            if bare is annotation:
                return self.model(bare)
            if _opaque_model(bare):
                return LeafShape(validate, frozenset({"object"}), False)
            inner = self.model(bare)
            if not isinstance(inner, ModelShape):
                return inner
            return ModelShape(inner._cls, inner._fields, validate)
        if origin is list and len(args) == 1:
            item = args[0]
            return ListShape(lambda: self.shape(item, strict), validate)
        if origin is dict and len(args) == 2 and args[0] is str:
            value = args[1]
            return DictShape(lambda: self.shape(value, strict), validate)
        if origin is Union or origin is types.UnionType:
            branches = [self.shape(a, strict) for a in args]
            return UnionShape(branches, LeafShape(validate, ALL_KINDS, False))
        if origin is Literal:
            return LeafShape(validate, _kinds_of_literal(args), False)
        if isinstance(bare, type) and issubclass(bare, enum.Enum):
            return LeafShape(validate, _kinds_of_literal(tuple(bare)), False)
        kinds = _SIMPLE_KINDS.get(bare)
        if kinds is not None:
            return LeafShape(validate, kinds, bare is str)
        return LeafShape(validate, ALL_KINDS, False)

    def model(self, cls: Any) -> Shape:
        found = self._models.get(cls)
        if found is not None:
            return found
        adapter = self._adapters.get(cls)
        validate = _checked(
            # the core validator (what ``model_validate`` calls, without its wrapper)
            lambda value: cls.__pydantic_validator__.validate_python(value),
            lambda text: adapter.validate_json(text),
        )
        if _opaque_model(cls):
            found = LeafShape(validate, frozenset({"object"}), False)
            self._models[cls] = found
            return found
        strict = True if cls.model_config.get("strict") else None
        by_name = bool(
            cls.model_config.get("validate_by_name") or cls.model_config.get("populate_by_name")
        )
        by_alias = cls.model_config.get("validate_by_alias", True)
        with_validators: set[str] = set()
        for dec in cls.__pydantic_decorators__.field_validators.values():
            names = dec.info.fields
            with_validators.update(cls.model_fields if "*" in names else names)
        fields: dict[str, tuple[str, Callable[[], Shape | None]]] = {}
        for name, info in cls.model_fields.items():
            maker = self._field_maker(info, strict, name in with_validators)
            alias = info.validation_alias if isinstance(info.validation_alias, str) else None
            alias = alias or info.alias
            if alias is not None and by_alias:
                fields[alias] = (name, maker)
            if alias is None or by_name:
                fields.setdefault(name, (name, maker))
        found = ModelShape(cls, fields, validate)
        self._models[cls] = found
        return found

    def _field_maker(
        self, info: Any, strict: bool | None, validated: bool
    ) -> Callable[[], Shape | None]:
        if validated:
            return lambda: None
        from pydantic import Field

        metadata = list(info.metadata)
        if info.discriminator is not None:
            metadata.append(Field(discriminator=info.discriminator))
        annotation = annotated(info.annotation, metadata)
        return lambda: self.shape(annotation, strict)


def annotated(annotation: Any, metadata: list[Any]) -> Any:
    """``Annotated[annotation, *metadata]`` (just ``annotation`` without metadata)."""
    if not metadata:
        return annotation
    params = (annotation, *metadata)
    return Annotated[params]


def _is_model(cls: type) -> bool:
    from pydantic import BaseModel

    return issubclass(cls, BaseModel)


def pydantic_shape(target: Any) -> tuple[Shape, Any]:
    """The root shape of a pydantic target and its ``TypeAdapter`` (for the final value)."""
    shapes = _PydanticShapes()
    return shapes.shape(target), shapes._adapters.get(target)


def validate_by_parts(shape: Shape, raw: Any) -> Any:
    """``raw`` (a JSON value) validated bottom-up as a typed preview validates a streamed
    document: each container that has a shape from its members' validated values, every
    other part whole. Iterative, so it works at depths where pydantic's own readers stop
    (201 nested containers in JSON mode, 255 nested models in Python mode). Raises
    :class:`Invalid` with ``path``."""
    stack: list[tuple[Shape, Any, Any, Any]] = []  # (shape, raw, members, validated members)
    path: list[Any] = []  # the keys from the root to the value in hand
    current: Shape | None = shape
    value = raw
    while True:
        opened = False
        typed = value
        if current is not None:
            kind = json_type(value)
            current = current.resolve(kind)
            if current.container is not None and current.container == kind:
                members = iter(value.items()) if kind == "object" else enumerate(value)
                stack.append((current, value, members, {} if kind == "object" else []))
                opened = True
            else:
                typed = _validate_at(current, value, value, path)
        if not opened:
            if not stack:
                return typed
            _add_member(stack[-1][3], path.pop(), typed)
        while True:  # the next member of the innermost open container, closing finished ones
            parent, container, members, data = stack[-1]
            member = next(members, None)
            if member is not None:
                key, value = member
                current = parent.child(key)
                path.append(key)
                break
            stack.pop()
            typed = _validate_at(parent, data, container, path)
            if not stack:
                return typed
            _add_member(stack[-1][3], path.pop(), typed)


def _add_member(data: Any, key: Any, typed: Any) -> None:
    if type(data) is list:
        data.append(typed)
    else:
        data[key] = typed


def _validate_at(shape: Shape, value: Any, raw: Any, path: list[Any]) -> Any:
    try:
        return shape.validate(value, raw)
    except Invalid as exc:
        exc.path = tuple(path)  # type: ignore[attr-defined]
        raise


# ---------------------------------------------------------------------------- schemas

# Keywords that only annotate: they change nothing about validity.
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "$comment",
        "examples",
        "default",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
        "$schema",
        "$defs",
        "definitions",
        "nullable",
    }
)
# Keywords that judge a container by its own members (no sub-schema): kept in the shallow
# schema, which costs O(members) to run on a container whose members were validated.
_OBJECT_OWN = frozenset(
    {"type", "required", "minProperties", "maxProperties", "properties", "additionalProperties"}
)
_ARRAY_OWN = frozenset({"type", "minItems", "maxItems", "uniqueItems", "items"})


class ObjectShape(Shape):
    """A schema object with ``properties`` (and maybe an ``additionalProperties`` schema)."""

    __slots__ = ("_extra", "_made", "_props", "_validate")

    def __init__(
        self,
        props: dict[str, Callable[[], Shape | None]],
        extra: Callable[[], Shape | None] | None,
        validate: Callable[[Any, Any], Any],
    ) -> None:
        self._props = props
        self._extra = extra
        self._made: dict[str, Shape | None] = {}
        self._validate = validate
        self.kinds = frozenset({"object"})
        self.grows = False
        self.container = "object"

    def child(self, key: str | int) -> Shape | None:
        """The property's shape, or the ``additionalProperties`` shape."""
        if not isinstance(key, str):
            return None
        try:
            return self._made[key]
        except KeyError:
            pass
        maker = self._props.get(key, self._extra)
        found = self._made[key] = maker() if maker is not None else None
        return found

    def validate(self, value: Any, raw: Any) -> Any:
        """Run the shallow schema on the object of validated members."""
        return self._validate(value, raw)


class _SchemaShapes:
    """Builds (and caches) the shapes of one JSON Schema document."""

    def __init__(self, validator: Any) -> None:
        self._root = validator
        self._document = validator._prepared
        self._shapes: dict[tuple[str | int, ...], Shape] = {}

    def _errors_of(self, validator: Any) -> Callable[[Any, Any], Any]:
        def validate(value: Any, raw: Any) -> Any:
            if validator.is_valid(value):
                return value
            found = validator.errors(value)
            message = "; ".join(str(v) for v in found) or "the value does not fit the schema"
            raise Invalid(message, found)

        return validate

    def shape(self, pointer: tuple[str | int, ...]) -> Shape | None:
        found = self._shapes.get(pointer)
        if found is not None:
            return found
        schema = resolve(self._document, [str(p) for p in pointer])
        found = self._build(schema, pointer)
        if found is not None:
            self._shapes[pointer] = found
        return found

    def _build(self, schema: Any, pointer: tuple[str | int, ...]) -> Shape | None:
        if schema is True or schema == {}:
            return FREE  # anything goes: nothing to validate, shown as it arrives
        if not isinstance(schema, Mapping):
            return LeafShape(self._errors_of(self._root.at(pointer)), ALL_KINDS, True)
        keys = set(schema) - _ANNOTATIONS
        ref = schema.get("$ref")
        if keys == {"$ref"} and isinstance(ref, str) and ref.startswith("#"):
            try:
                target = parse_fragment(ref)
                resolve(self._document, target)
            except Exception:
                target = None
            if target is not None and target != pointer:
                return self.shape(tuple(target))
        types_ = schema.get("type")
        type_set = {types_} if isinstance(types_, str) else set(types_ or ())
        leaf = LeafShape(self._errors_of(self._root.at(pointer)), ALL_KINDS, True)
        if keys <= _OBJECT_OWN and "properties" in schema and type_set <= {"object", "null"}:
            props = schema.get("properties")
            extra = schema.get("additionalProperties", True)
            if not isinstance(props, Mapping) or not isinstance(extra, (bool, Mapping)):
                return leaf
            shallow = {k: v for k, v in schema.items() if k in _OBJECT_OWN or k == "$schema"}
            shallow["properties"] = dict.fromkeys(props, True)
            if isinstance(extra, Mapping):
                shallow["additionalProperties"] = True
            validate = self._shallow(shallow, leaf)
            makers: dict[str, Callable[[], Shape | None]] = {
                name: self._maker((*pointer, "properties", name)) for name in props
            }
            extra_maker: Callable[[], Shape | None] | None = None
            if isinstance(extra, Mapping):
                extra_maker = lambda: self.shape((*pointer, "additionalProperties"))  # noqa: E731
            elif extra is True:
                extra_maker = lambda: FREE  # noqa: E731
            return ObjectShape(makers, extra_maker, validate)
        if keys <= _ARRAY_OWN and isinstance(schema.get("items"), (Mapping, bool)):
            if not type_set <= {"array", "null"}:
                return leaf
            shallow = {k: v for k, v in schema.items() if k in _ARRAY_OWN or k == "$schema"}
            shallow["items"] = True
            return ListShape(lambda: self.shape((*pointer, "items")), self._shallow(shallow, leaf))
        return leaf

    def _maker(self, pointer: tuple[str | int, ...]) -> Callable[[], Shape | None]:
        return lambda: self.shape(pointer)

    def _shallow(self, schema: dict[str, Any], leaf: LeafShape) -> Callable[[Any, Any], Any]:
        from .._tools.jsonschema import compile_schema

        if "$schema" not in schema and isinstance(self._document, Mapping):
            draft = self._document.get("$schema")
            if draft is not None:
                schema["$schema"] = draft
        shallow = compile_schema(schema)

        def validate(value: Any, raw: Any) -> Any:
            if shallow.is_valid(value):
                return value
            return leaf.validate(value, raw)  # the full check says what is wrong

        return validate


def schema_shape(validator: Any) -> Shape:
    """The root shape of a compiled JSON Schema."""
    return _SchemaShapes(validator).shape(()) or FREE
