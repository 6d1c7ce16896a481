"""Renders ``docs/api.md``, the API reference, from the docstrings of the public names.

``PYTHONPATH=src python docs/api_reference.py`` rewrites the page; ``--check`` only says
whether it is current (``tests/project/test_api_reference.py`` runs that check). Covered:
``toolwire.__all__`` and the ``__all__`` of every public subpackage; for each name its
signature and the first paragraph of its docstring, and the same for the public methods
and properties a class defines itself.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

PAGE = Path(__file__).resolve().parent / "api.md"
REGENERATE = "PYTHONPATH=src python docs/api_reference.py"

HEADER = f"""# API reference

Generated from the docstrings by `docs/api_reference.py`; do not edit by hand. After a
change to a public name, a signature or a docstring's first paragraph, run
`{REGENERATE}`: a test fails until the page is current.
The guides are listed in [README.md](README.md).
"""

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_ROLE = re.compile(r":(?:class|func|meth|attr|mod|exc|data|obj):`(~?)([\w.]+)`")


def _markdown(text: str) -> str:
    """Sphinx roles as code spans: ``:class:`~toolwire.Prices``` becomes ```Prices```."""
    return _ROLE.sub(lambda m: f"``{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}``", text)


class _Annotation:
    """An annotation shown as written in the source (``from __future__ import
    annotations`` keeps it a string; ``inspect`` would quote it)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def public_modules() -> list[ModuleType]:
    """``toolwire`` and each public subpackage that declares ``__all__``."""
    import toolwire

    modules = [toolwire]
    for info in sorted(pkgutil.iter_modules(toolwire.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"toolwire.{info.name}")
        if hasattr(module, "__all__"):
            modules.append(module)
    return modules


def first_paragraph(obj: Any) -> str:
    """The first paragraph of ``obj``'s own docstring, on one line ('' without one)."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return ""
    paragraph = inspect.cleandoc(doc).split("\n\n", 1)[0]
    return _markdown(" ".join(line.strip() for line in paragraph.splitlines()))


def _default_text(value: Any) -> str:
    """A default value as a reader would write it: a class or function by its name."""
    if isinstance(value, type):
        return (
            value.__name__
            if value.__module__ == "builtins"
            else f"{value.__module__}.{value.__qualname__}"
        )
    if isinstance(value, tuple):
        items = [_default_text(item) for item in value]
        return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
    if callable(value) and hasattr(value, "__qualname__"):
        return str(value.__qualname__)
    return _ADDRESS.sub("", repr(value))


def _annotation_text(annotation: Any) -> Any:
    if annotation is inspect.Parameter.empty:
        return annotation
    if isinstance(annotation, str):
        return _Annotation(annotation)
    return _Annotation(inspect.formatannotation(annotation))


def signature(obj: Any, *, drop_first: bool = False) -> str | None:
    """``obj``'s signature as the source spells it, or ``None`` where it has none worth
    showing (a builtin's, or a bare ``(*args, **kwargs)``)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    if drop_first and params:
        params = params[1:]
    kinds = [p.kind for p in params]
    if kinds == [inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD]:
        return None
    sig = sig.replace(
        parameters=[
            p.replace(
                annotation=_annotation_text(p.annotation),
                default=p.default
                if p.default is inspect.Parameter.empty
                else _Annotation(_default_text(p.default)),
            )
            for p in params
        ],
        return_annotation=_annotation_text(sig.return_annotation),
    )
    return str(sig)


def _private_toolwire(cls: type) -> bool:
    return cls.__name__.startswith("_") and cls.__module__.startswith("toolwire")


def _members(cls: type) -> list[tuple[str, str, str]]:
    """(name, signature, first paragraph) of the public methods and properties that
    ``cls`` defines itself, in source order."""
    rows: list[tuple[str, str, str]] = []
    fields = {f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else set()
    seen: set[str] = set()
    # what a private base defines is part of the class's surface too
    owners = [cls, *(base for base in cls.__mro__[1:] if _private_toolwire(base))]
    for name, member in (item for owner in owners for item in owner.__dict__.items()):
        if name.startswith("_") or name in fields or name in seen:
            continue
        seen.add(name)
        if isinstance(member, property):
            rows.append((name, "", first_paragraph(member)))
        elif isinstance(member, (staticmethod, classmethod)):
            function = member.__func__
            drop = isinstance(member, classmethod)
            rows.append(
                (name, signature(function, drop_first=drop) or "", first_paragraph(function))
            )
        elif inspect.isfunction(member):
            rows.append((name, signature(member, drop_first=True) or "", first_paragraph(member)))
    return rows


def _value(name: str, value: Any) -> list[str]:
    """A constant: its value where it is short, else its type and keys."""
    kind = type(value)
    if isinstance(value, (str, int, float)) or (
        isinstance(value, tuple) and all(isinstance(item, str) for item in value)
    ):
        lines = [f"`{name} = {value!r}`"]
    elif isinstance(value, Mapping) or hasattr(value, "keys"):
        keys = ", ".join(f"`{key}`" for key in value)
        lines = [f"`{name}`: {kind.__name__}, keys {keys}"]
    else:
        lines = [f"`{name}`: `{kind.__name__}`"]
    if kind.__module__.startswith("toolwire"):
        text = first_paragraph(kind)
        if text:
            lines.append(text)
    return lines


def _entry(module: ModuleType, name: str) -> list[str]:
    obj = getattr(module, name)
    lines = [f"### `{name}`", ""]
    if isinstance(obj, type):
        shown = [b for b in obj.__bases__ if b is not object and not _private_toolwire(b)]
        bases = ", ".join(base.__name__ for base in shown)
        head = f"class {name}({bases})" if bases else f"class {name}"
        sig = signature(obj)
        lines.append(f"`{head}`" + (f", called as `{name}{sig}`" if sig else ""))
        text = first_paragraph(obj)
        if text:
            lines += ["", text]
        members = _members(obj)
        if members:
            lines.append("")
            for member, member_sig, member_text in members:
                shown = f"`{member}{member_sig}`" if member_sig else f"`{member}`"
                lines.append(f"- {shown}" + (f": {member_text}" if member_text else ""))
    elif inspect.isfunction(obj) or inspect.isbuiltin(obj):
        lines.append(f"`{name}{signature(obj) or '(...)'}`")
        text = first_paragraph(obj)
        if text:
            lines += ["", text]
    elif getattr(obj, "__module__", None) == "typing":
        lines.append(f"`{name} = {inspect.formatannotation(obj)}`")
    else:
        lines += _value(name, obj)
    return [*lines, ""]


def render() -> str:
    """The whole page."""
    out = [HEADER]
    for module in public_modules():
        out += [f"## `{module.__name__}`", ""]
        text = first_paragraph(module)
        if text:
            out += [text, ""]
        for name in module.__all__:
            out += _entry(module, name)
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str]) -> int:
    """Write the page, or with ``--check`` report whether it is current (exit 1 if not)."""
    text = render()
    if "--check" in argv:
        current = PAGE.is_file() and PAGE.read_text("utf-8") == text
        if not current:
            print(f"{PAGE} is out of date: run `{REGENERATE}`", file=sys.stderr)
        return 0 if current else 1
    PAGE.write_text(text, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
