"""Public docstrings point at public names: no ``toolwire._private`` module in the docstring
of a name that ``toolwire`` or a public subpackage exports, or of its public members."""

from __future__ import annotations

import importlib
import inspect
import re
from collections.abc import Iterator
from typing import Any

PUBLIC_MODULES = (
    "toolwire",
    "toolwire.accounting",
    "toolwire.stores",
    "toolwire.stores.memory",
    "toolwire.stores.sqlite",
    "toolwire.stores.postgres",
    "toolwire.stores.redis",
    "toolwire.testing",
    "toolwire.integrations",
)
PRIVATE = re.compile(r"toolwire(?:\.[A-Za-z0-9]+)*\._[A-Za-z]\w*")


def _docstrings() -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of each public module, its exported names and their
    public members."""
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        yield module_name, module.__doc__ or ""
        for name in getattr(module, "__all__", []):
            value: Any = getattr(module, name)
            if inspect.ismodule(value) or not (inspect.isclass(value) or callable(value)):
                continue
            yield f"{module_name}.{name}", inspect.getdoc(value) or ""
            if not inspect.isclass(value):
                continue
            for member, attribute in vars(value).items():
                if member.startswith("_") and member != "__init__":
                    continue
                target = getattr(attribute, "__func__", attribute)
                if isinstance(target, property):
                    target = target.fget
                doc = getattr(target, "__doc__", None)
                if isinstance(doc, str):
                    yield f"{module_name}.{name}.{member}", doc


def test_no_public_docstring_names_a_private_module() -> None:
    """Every ``toolwire._...`` mention in a public docstring is a bug: the reader cannot
    import what it names, or should not."""
    found = [
        f"{where}: {match}"
        for where, doc in _docstrings()
        for match in sorted(set(PRIVATE.findall(doc)))
    ]
    assert found == []


def test_the_check_sees_a_private_mention() -> None:
    """The pattern finds the spellings used in docstrings (``~toolwire._x.y`` roles)."""
    assert PRIVATE.findall(":class:`~toolwire.stores._clock.ClockReading`") == [
        "toolwire.stores._clock"
    ]
    assert PRIVATE.findall("see toolwire._streaming.flow") == ["toolwire._streaming"]
    assert PRIVATE.findall("toolwire.stores.Record") == []
