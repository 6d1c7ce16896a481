"""The provider registry: every wire format toolwire speaks, each one unit, registered once.

A provider is one subpackage of this package (``openai_chat/``, ``gemini/``...). The
``PROVIDER`` (a :class:`Provider`) of its ``__init__`` holds everything toolwire knows
about the format:

- ``detect``: how to recognise the format's first payload (and ``detect_fallback``, a
  weaker hint asked only when no provider recognised the payload);
- ``adapter``: a factory of the adapter that translates its payloads into deltas
  (``toolwire._deltas``);
- ``definition``: one tool in the format's request shape (OpenAI strict mode, shared by
  several providers, lives in ``_definitions``; a dialect of one provider, such as
  Gemini's schema subset, in its package);
- ``tool_results`` and ``assistant_turn``: the messages the provider expects next, the
  tool results and the assistant turn that they answer (``_results`` checks that the two
  agree before either is built);
- ``encoder``: a factory of the simulator's encoder (a scenario to the format's wire
  shapes, ``_wire_writing.Encoder``), declared with :func:`encoder_in`;
- ``check_request``: what the provider refuses in a next request (tool results that answer
  no call, calls left unanswered...), which the simulator answers with the provider's 400,
  declared with :func:`checks_in`;
- ``endpoints`` and ``base_path``: where the simulator serves the format (the provider's
  own HTTP paths, :class:`Endpoint`) and what its SDK takes as a base URL, so that the
  simulator's server routes from this registry.

The last three are the simulator's side (``toolwire.testing`` reads them; the provider
never imports ``toolwire.testing``). Their modules are imported on first use
(:func:`import_later`): reading a stream never imports an encoder or a request check, and
``import toolwire`` imports no provider at all.

Registration: the built-in providers are the public subpackages of this package (names
without a leading underscore), found with :mod:`pkgutil` and imported on the first lookup,
so adding a provider means adding one subpackage (and its tests), nothing else. Tests
register toy providers with :func:`register` and remove them with :func:`unregister`.

A built-in package states only what is particular to its format: it defines ``detect``,
``adapter``, ``definition``, ``tool_results`` and ``assistant_turn`` under those names (a
:class:`ProviderPackage`, which mypy checks the package against) and builds its ``PROVIDER``
with :func:`package_provider`, which derives the rest by convention: the format name from
the package's name, the encoder from its ``encoder`` module, the request check from its
``request_checks`` module. Such a package has no ``__all__``: its public names (those
functions, its adapter class, ``PROVIDER``) are what it exports, and what mypy reads.

Names: each provider has one canonical name (``Response.format`` uses it) and may have
aliases (``"openai"`` is an alias of ``"openai-chat"``, the name everyone tries first).
Unknown names raise :class:`UnknownFormat` suggesting the closest known names.

Detection (:func:`detect`, ``format="auto"``): the providers are asked in a defined order,
by ``detect_rank`` and then name, and the first whose ``detect`` accepts the payload wins;
if none does, their ``detect_fallback`` hooks are asked in the same order. Each ``detect``
looks only at structural markers its format always has on its first event, so it is
O(number of keys). A payload no provider claims raises :class:`StreamFormatError`.

Adding a provider: one subpackage here, laid out like the built-ins::

    <name>/__init__.py        the adapter, detect, definition, tool_results and
                              assistant_turn, and PROVIDER = package_provider(...)
    <name>/encoder.py         the simulator's encoder (the adapter's inverse)
    <name>/request_checks.py  check_request(body, served): what the provider refuses
    <name>/...                anything else only this format knows (Gemini's schema.py,
                              OpenAI chat's quirks.py: the quirk profiles its encoder applies)

plus its tests. The shared pieces are ``_definitions`` (strict mode, OpenAI's function
shape, the pieces of schema rewriting), ``_results`` (result texts, the answer check, how
rejected calls are carried), ``_payload`` (typed reads), ``_openai_shapes``,
``_request_reading`` (what request checks read alike), ``_wire_writing`` (the encoder
interface, framings, fragment splitting, id minting) and ``_scenario_types`` (what an
encoder encodes). The endpoints of a provider must not overlap another's; the simulator
asks them in the registry's order. ``tests/providers/test_adapter_registry.py`` has a toy provider
with every part, defined in the test alone and served by the simulator.

If the format opens calls explicitly (``CallDelta(start=True)``), it must also end them
(``end=True``): the assembler finalises no such call without its end. What ends a call,
per format: Anthropic ``content_block_stop``; Responses ``output_item.done``; Bedrock
``contentBlockStop``; Cohere ``tool-call-end``; Gemini the part itself (a whole call) or
the first ``functionCall`` part without ``willContinue`` (a streamed one); Ollama the line
itself (every call is whole); OpenAI chat has no per-call end, only the finish reason.

Lookups are O(1) after the first; the registry is guarded by a lock so that threads
creating their first assemblers together load it once.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .._deltas import Adapter
from .._errors import StreamFormatError, UnknownFormat, UsageError
from ._endpoints import Endpoint

if TYPE_CHECKING:
    from .._response import Response
    from .._results import ResultText
    from .._toolbox import Tool
    from .._wire_writing import Encoder
    from ._request_reading import RequestCheck

__all__ = [
    "Endpoint",
    "Provider",
    "ProviderPackage",
    "checks_in",
    "detect",
    "encoder_in",
    "import_later",
    "names",
    "package_provider",
    "provider",
    "register",
    "unregister",
]

Detector = Callable[[dict[str, Any], "str | None"], bool]


@dataclass(frozen=True, slots=True, kw_only=True)
class Provider:
    """Everything toolwire knows about one wire format (see the module docstring).

    - ``name``: the canonical format name; ``aliases``: other names accepted for it;
    - ``detect_rank``: where ``detect`` is asked in the detection order (lower first);
    - ``detect(payload, event)``: whether a decoded first payload (and its SSE event
      name) belongs to this format; ``detect_fallback``: the same, asked only after every
      provider's ``detect`` said no;
    - ``adapter(choice)``: a fresh adapter for one stream (``choice`` selects one of
      several choices or candidates where the format has them, else is ignored);
    - ``definition(tool, strict)``: one tool's definition in the request format;
    - ``tool_results(results)``: the messages carrying the given outcomes (each with its
      text, see ``_results.ResultText``), in order;
    - ``assistant_turn(response)``: the assistant turn that those results answer, in the
      provider's request format, with every call of ``response`` (rejected ones
      included) and what the provider needs echoed;
    - ``encoder()``: a fresh encoder for the simulator (scenario -> wire shapes), its
      module imported on the first call; ``None`` for a format the simulator cannot serve;
    - ``check_request(body, served)``: the provider's refusal message for a parsed request
      body, or ``None`` to accept it (``served`` gives the call ids of a response the
      simulator served, by id); ``None``: every request is accepted;
    - ``endpoints``: the provider's HTTP endpoints (paths, streaming, framing) at which the
      simulator serves the format; ``base_path``: the path its SDK's base URL ends with
      (``"/v1"`` for OpenAI's, empty for a client that takes the server's root).
    """

    name: str
    detect_rank: int
    detect: Detector
    adapter: Callable[[int], Adapter]
    definition: Callable[[Tool, bool], dict[str, Any]]
    tool_results: Callable[[Sequence[ResultText]], list[dict[str, Any]]]
    assistant_turn: Callable[[Response], list[dict[str, Any]]]
    detect_fallback: Detector | None = None
    aliases: tuple[str, ...] = ()
    encoder: Callable[[], Encoder] | None = None
    check_request: RequestCheck | None = None
    endpoints: tuple[Endpoint, ...] = ()
    base_path: str = ""


class ProviderPackage(Protocol):
    """A provider package as :func:`package_provider` reads it: the functions it defines
    under these names (a module satisfies a protocol, PEP 544), each the :class:`Provider`
    field of the same name."""

    __name__: str

    def detect(self, payload: dict[str, Any], event: str | None, /) -> bool:
        """Whether a decoded first payload belongs to the package's format."""

    def adapter(self, choice: int, /) -> Adapter:
        """A fresh adapter for one stream."""

    def definition(self, tool: Tool, strict: bool, /) -> dict[str, Any]:
        """One tool's definition in the request format."""

    def tool_results(self, results: Sequence[ResultText], /) -> list[dict[str, Any]]:
        """The messages carrying the given outcomes."""

    def assistant_turn(self, response: Response, /) -> list[dict[str, Any]]:
        """The assistant turn that those results answer."""


def package_provider(
    package: ProviderPackage,
    *,
    aliases: tuple[str, ...] = (),
    detect_rank: int,
    detect_fallback: Detector | None = None,
    encoder: str,
    checks_requests: bool = True,
    endpoints: tuple[Endpoint, ...],
    base_path: str = "",
) -> Provider:
    """The :class:`Provider` of a built-in provider package, from what only it states.

    The rest is read by convention: the functions of ``package`` by their names, the format
    name from the package's (``openai_chat``: ``"openai-chat"``), the encoder as the class
    ``encoder`` of its ``encoder`` module and, unless ``checks_requests`` is false (a
    provider that refuses no request), the request check of its ``request_checks`` module.
    """
    module = package.__name__
    return Provider(
        name=module.rpartition(".")[2].replace("_", "-"),
        aliases=aliases,
        detect_rank=detect_rank,
        detect=package.detect,
        detect_fallback=detect_fallback,
        adapter=package.adapter,
        definition=package.definition,
        tool_results=package.tool_results,
        assistant_turn=package.assistant_turn,
        encoder=encoder_in(module, encoder),
        check_request=checks_in(module) if checks_requests else None,
        endpoints=endpoints,
        base_path=base_path,
    )


def import_later(module: str, name: str) -> Callable[..., Any]:
    """A stand-in for ``module.name`` that imports ``module`` on its first call, then
    calls ``module.name`` with the arguments given.

    How a provider declares its simulator side (``encoder``, ``check_request``) without
    importing it: code that only reads streams never pays for it. A wrong name fails at
    that first call, which each provider's tests make.
    """
    found: list[Callable[..., Any]] = []  # filled once; a race only imports twice

    def call(*args: Any, **kwargs: Any) -> Any:
        if not found:
            found.append(getattr(importlib.import_module(module), name))
        return found[0](*args, **kwargs)

    return call


def encoder_in(package: str, name: str) -> Callable[[], Encoder]:
    """The factory of the encoder class ``name`` of a provider package (its ``encoder``
    module), imported on the first call."""
    factory: Callable[[], Encoder] = import_later(f"{package}.encoder", name)
    return factory


def checks_in(package: str) -> RequestCheck:
    """The request check of a provider package (its ``request_checks`` module's
    ``check_request``), imported on the first call."""
    check: RequestCheck = import_later(f"{package}.request_checks", "check_request")
    return check


_lock = threading.RLock()
_by_name: dict[str, Provider] = {}  # canonical names and aliases -> provider
_ordered: list[Provider] = []  # detection order
_loaded = False


def _load_builtins() -> None:
    """Import and register every public subpackage of this package, once."""
    global _loaded
    with _lock:
        if _loaded:
            return
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            _add(module.PROVIDER)
        _loaded = True


def _add(entry: Provider) -> None:
    taken = [n for n in (entry.name, *entry.aliases) if n in _by_name]
    if taken:
        raise UsageError(f"format name {taken[0]!r} is already registered")
    for name in (entry.name, *entry.aliases):
        _by_name[name] = entry
    _ordered.append(entry)
    _ordered.sort(key=lambda p: (p.detect_rank, p.name))


def register(entry: Provider) -> None:
    """Add a provider; its name and aliases must be new (``UsageError`` otherwise)."""
    _load_builtins()
    with _lock:
        _add(entry)


def unregister(name: str) -> None:
    """Remove the provider named ``name`` (and its aliases); unknown names raise."""
    entry = provider(name)
    with _lock:
        for key in (entry.name, *entry.aliases):
            _by_name.pop(key, None)
        _ordered.remove(entry)


def names() -> tuple[str, ...]:
    """The canonical names of every registered format, in detection order."""
    _load_builtins()
    return tuple(p.name for p in _ordered)


def provider(name: str) -> Provider:
    """The provider called ``name`` (a canonical name or an alias).

    Raises :class:`UnknownFormat` for anything else, naming the closest known names.
    """
    if not _loaded:
        _load_builtins()
    entry = _by_name.get(name) if isinstance(name, str) else None
    if entry is not None:
        return entry
    if not isinstance(name, str):
        raise UnknownFormat(f"a format name is a string, not {type(name).__name__}")
    known = sorted(_by_name)
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.5)
    hint = f" (did you mean {' or '.join(repr(lowered[c]) for c in close)}?)" if close else ""
    raise UnknownFormat(f"unknown format {name!r}{hint}; known: {', '.join(known)}")


def detect(payload: Any, event: str | None = None) -> Provider:
    """The provider whose format ``payload`` (a decoded first event) belongs to.

    Raises :class:`StreamFormatError` when no provider recognises it.
    """
    if type(payload) is not dict:
        raise StreamFormatError(
            f"cannot detect the format of a {type(payload).__name__} payload", payload=payload
        )
    _load_builtins()
    for entry in _ordered:
        if entry.detect(payload, event):
            return entry
    for entry in _ordered:
        if entry.detect_fallback is not None and entry.detect_fallback(payload, event):
            return entry
    shown = ", ".join(sorted(map(str, payload))[:8])
    raise StreamFormatError(
        f"cannot detect the wire format of a payload with keys [{shown}]", payload=payload
    )
