"""Signatures that list forwarded keywords.

A function that takes its optional keywords as ``**options: Unpack[SomeOptions]`` (a
``TypedDict``) states them once, and type checkers and editors see each keyword with its
type. ``inspect.signature`` and ``help()`` would show only ``**options``; :func:`spelled_out`
gives such a function a ``__signature__`` that lists the keywords, with their annotations
from the ``TypedDict`` and their defaults from where they live (a mapping, or the function
the keywords are forwarded to), so a reader sees the same parameters the code accepts.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

__all__ = ["check_keywords", "defaults_of", "spelled_out"]

F = TypeVar("F", bound=Callable[..., Any])


def defaults_of(func: Callable[..., Any]) -> dict[str, Any]:
    """The default value of each parameter of ``func`` that has one."""
    return {
        name: parameter.default
        for name, parameter in inspect.signature(func).parameters.items()
        if parameter.default is not inspect.Parameter.empty
    }


def check_keywords(options: Any, given: Mapping[str, Any], where: str) -> None:
    """Raise the ``TypeError`` Python raises for a keyword ``where`` does not take, for the
    first key of ``given`` that the ``TypedDict`` ``options`` does not declare."""
    for name in given:
        if name not in options.__optional_keys__ and name not in options.__required_keys__:
            raise TypeError(f"{where}() got an unexpected keyword argument {name!r}")


def spelled_out(options: type, defaults: Mapping[str, Any]) -> Callable[[F], F]:
    """Decorate a function whose last parameter is ``**options: Unpack[options]``: its
    ``__signature__`` lists each key of the ``TypedDict`` ``options`` as a keyword-only
    parameter instead, annotated as there, with its default from ``defaults`` (``None``
    for a key ``defaults`` does not name). The function itself is returned unchanged."""

    def decorate(func: F) -> F:
        signature = inspect.signature(func)
        parameters = list(signature.parameters.values())
        if not parameters or parameters[-1].kind is not inspect.Parameter.VAR_KEYWORD:
            raise TypeError(f"{func.__qualname__} does not end with **options")
        keywords = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=defaults.get(name),
                # a string annotation, as the rest of the signature shows it
                annotation=getattr(annotation, "__forward_arg__", annotation),
            )
            for name, annotation in options.__annotations__.items()
        ]
        func.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*parameters[:-1], *keywords]
        )
        return func

    return decorate
