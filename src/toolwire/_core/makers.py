"""Constructors for the frozen, slotted dataclasses built on the path of every executed call.

:func:`maker` gives a constructor whose instances equal the class's own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["maker"]

_T = TypeVar("_T")


def maker(cls: type[_T]) -> Callable[..., _T]:
    """A function that builds ``cls(...)`` from the same arguments, faster (see above)."""
    if not dataclasses.is_dataclass(cls) or "__slots__" not in cls.__dict__:
        return cls
    if hasattr(cls, "__post_init__"):
        return cls
    fields = dataclasses.fields(cls)
    names = [field.name for field in fields]
    if len(names) != len(cls.__dict__["__slots__"]) or any(
        field.default_factory is not dataclasses.MISSING or not field.init for field in fields
    ):
        return cls
    scope: dict[str, Any] = {"_new": object.__new__, "_cls": cls}
    params: list[str] = []
    keyword_only = False
    body = ["    made = _new(_cls)"]
    for i, field in enumerate(fields):
        scope[f"_set{i}"] = cls.__dict__[field.name].__set__
        if field.kw_only and not keyword_only:
            params.append("*")
            keyword_only = True
        if field.default is dataclasses.MISSING:
            params.append(field.name)
        else:
            scope[f"_default{i}"] = field.default
            params.append(f"{field.name}=_default{i}")
        body.append(f"    _set{i}(made, {field.name})")
    body.append("    return made")
    source = f"def make({', '.join(params)}):\n" + "\n".join(body) + "\n"
    exec(source, scope)  # generated from the class's own field names only
    make: Callable[..., _T] = scope["make"]
    make.__qualname__ = f"maker({cls.__qualname__})"
    return make
