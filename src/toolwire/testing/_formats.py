"""The formats the simulator writes, and where it serves them: one literal table.

Each :class:`WireFormat` is the simulator's side of one provider (its encoder, what its
API refuses in a request, its HTTP endpoints and the base URL its SDK takes) beside the
:class:`~toolwire._core.providers.Provider` that reads it. ``WIRES`` lists the built-in
ones once, in the provider table's order; there is no registration: a test that defines a
toy format builds its own table (``WireFormats(TOY_WIRE, *WIRES)``) and passes it to
``Simulator(formats=...)``. Routing asks the table's endpoints in order, first match wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._core.providers import Formats, Provider
from .._errors import UnknownFormat, UsageError
from .._providers import (
    anthropic,
    bedrock_converse,
    cohere,
    gemini,
    ollama,
    openai_chat,
    openai_responses,
)
from ._checks import anthropic as anthropic_checks
from ._checks import bedrock_converse as bedrock_checks
from ._checks import cohere as cohere_checks
from ._checks import gemini as gemini_checks
from ._checks import openai_chat as chat_checks
from ._checks import openai_responses as responses_checks
from ._encoders.anthropic import AnthropicEncoder
from ._encoders.bedrock_converse import BedrockEncoder
from ._encoders.cohere import CohereEncoder
from ._encoders.gemini import GeminiEncoder
from ._encoders.ollama import OllamaEncoder
from ._encoders.openai_chat import OpenAIChatEncoder
from ._encoders.openai_responses import OpenAIResponsesEncoder
from ._endpoints import Endpoint
from ._request_reading import RequestCheck, ServedCalls
from ._scenario_types import Profile
from ._wire_writing import Encoder, Framing

__all__ = [
    "FORMATS",
    "WIRES",
    "ProfileTable",
    "Route",
    "WireFormat",
    "WireFormats",
    "check_request",
    "encoder_for",
    "route",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class WireFormat:
    """The simulator's side of one format.

    - ``provider``: the format's reading side (its names route here);
    - ``encoder()``: a fresh encoder (a scenario to the format's wire shapes);
    - ``check_request(body, served)``: the provider's refusal message for a request body,
      or ``None`` to accept it; ``None``: every request is accepted (Ollama);
    - ``endpoints``: the provider's own HTTP paths, whether they stream, their framing;
    - ``base_path``: what the format's SDK takes as base URL after the server's root.
    """

    provider: Provider
    encoder: Callable[[], Encoder]
    endpoints: tuple[Endpoint, ...]
    check_request: RequestCheck | None = None
    base_path: str = ""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request goes: its format, whether it streams (``None``: the body's
    ``"stream"`` says, ``stream_default`` without one), the model the path names and the
    framing of the stream when the endpoint fixes one."""

    format: str
    stream: bool | None
    model: str | None = None
    framing: Framing | None = None
    stream_default: bool = False


class ProfileTable(Mapping[str, Profile]):
    """Every quirk profile declared by a served format's encoder, by name (read-only)."""

    __slots__ = ("_by_name",)

    def __init__(self, profiles: Iterable[Profile]) -> None:
        self._by_name = {p.name: p for p in profiles}

    def __getitem__(self, name: str) -> Profile:
        """The profile called ``name`` (``KeyError`` for an unknown one)."""
        return self._by_name[name]

    def __iter__(self) -> Iterator[str]:
        """The profile names, format by format in the table's order."""
        return iter(self._by_name)

    def __len__(self) -> int:
        """How many profiles the formats declare."""
        return len(self._by_name)

    def __repr__(self) -> str:
        return f"ProfileTable({sorted(self._by_name)})"


class WireFormats:
    """An immutable table of the formats a simulator writes, in routing order, with the
    quirk profiles their encoders declare."""

    __slots__ = ("_by_name", "_formats", "_profiles", "_wires")

    def __init__(self, *wires: WireFormat) -> None:
        self._wires = wires
        self._formats = Formats(*(w.provider for w in wires))  # names, aliases, suggestions
        self._by_name = {w.provider.name: w for w in wires}
        self._profiles = ProfileTable(p for w in wires for p in w.encoder().profiles)

    def __iter__(self) -> Iterator[WireFormat]:
        """The formats, in routing order."""
        return iter(self._wires)

    def names(self) -> tuple[str, ...]:
        """The canonical names of the formats written, in routing order."""
        return self._formats.names()

    @property
    def profiles(self) -> Mapping[str, Profile]:
        """Every quirk profile the table's encoders declare, by name (read-only)."""
        return self._profiles

    def wire(self, format: str) -> WireFormat:
        """The simulator's side of ``format`` (a name or an alias); ``UnknownFormat`` when
        the table does not write it."""
        try:
            return self._by_name[self._formats.provider(format).name]
        except UnknownFormat:
            known = ", ".join(self.names())
            raise UnknownFormat(
                f"the simulator has no encoder for {format!r}; known: {known}"
            ) from None

    def encoder_for(self, format: str) -> Encoder:
        """A fresh encoder of ``format`` (a name or an alias)."""
        return self.wire(format).encoder()

    def base_urls(self, root: str) -> dict[str, str]:
        """What each format's SDK takes as its base URL, for a server at ``root``."""
        return {w.provider.name: root + w.base_path for w in self._wires}

    def route(self, method: str, path: str, query: str) -> Route | None:
        """The route of a request, or ``None`` when no endpoint takes it (only POST)."""
        if method != "POST":
            return None
        for w in self._wires:
            for endpoint in w.endpoints:
                segments = endpoint.match(path, query)
                if segments is not None:
                    return Route(
                        w.provider.name,
                        endpoint.stream,
                        segments.get("model"),
                        endpoint.framing,
                        endpoint.stream_default,
                    )
        return None

    def check_request(self, format: str, body: Any, served: ServedCalls) -> str | None:
        """The provider's refusal message for ``body``, or ``None`` when it is acceptable.

        ``served(response_id)`` gives the call ids of a response this simulator served (for
        ``previous_response_id``), or ``None`` for an id it never served.
        """
        if not isinstance(body, Mapping):
            return "the request body must be a JSON object"
        check = self.wire(format).check_request
        return None if check is None else check(body, served)

    def parse_profiles(self, spec: str | Sequence[str] | None) -> tuple[Profile, ...]:
        """The profiles named by ``spec`` (one name, a list of names, or ``None``)."""
        if spec is None:
            return ()
        out = []
        for name in [spec] if isinstance(spec, str) else list(spec):
            profile = self._profiles.get(name) if isinstance(name, str) else None
            if profile is None:
                known = ", ".join(sorted(self._profiles))
                raise UsageError(f"unknown quirk profile {name!r}; known: {known}")
            out.append(profile)
        return tuple(out)


def _openai_api(
    provider: Provider, encoder: Callable[[], Encoder], check: RequestCheck, path: str
) -> WireFormat:
    """An OpenAI API: served at ``/v1`` + ``path`` and at ``path`` alone (for clients whose
    base URL ends in ``/v1`` and for those whose base URL is the root), ``/v1`` the base."""
    return WireFormat(
        provider=provider,
        encoder=encoder,
        check_request=check,
        endpoints=(Endpoint(f"/v1{path}"), Endpoint(path)),
        base_path="/v1",
    )


_GEMINI_MODEL = "/{version:v1|v1beta|v1alpha}/models/{model:[^/:]+}"
_GEMINI_STREAM = f"{_GEMINI_MODEL}:streamGenerateContent"

WIRES = WireFormats(
    _openai_api(
        openai_responses.PROVIDER,
        OpenAIResponsesEncoder,
        responses_checks.check_request,
        "/responses",
    ),
    WireFormat(
        provider=anthropic.PROVIDER,
        encoder=AnthropicEncoder,
        check_request=anthropic_checks.check_request,
        endpoints=(Endpoint("/v1/messages"),),
    ),
    WireFormat(
        provider=cohere.PROVIDER,
        encoder=CohereEncoder,
        check_request=cohere_checks.check_request,
        endpoints=(Endpoint("/v2/chat"),),
    ),
    _openai_api(
        openai_chat.PROVIDER, OpenAIChatEncoder, chat_checks.check_request, "/chat/completions"
    ),
    WireFormat(
        provider=gemini.PROVIDER,
        encoder=GeminiEncoder,
        check_request=gemini_checks.check_request,
        endpoints=(
            # Google serves a stream as SSE with ?alt=sse (what the SDKs ask for), else as
            # one JSON array
            Endpoint(_GEMINI_STREAM, stream=True, framing="sse", query={"alt": "sse"}),
            Endpoint(_GEMINI_STREAM, stream=True, framing="json-array"),
            Endpoint(f"{_GEMINI_MODEL}:generateContent", stream=False),
        ),
    ),
    # Ollama matches results to calls by name and order, refusing none; it streams unless
    # told not to
    WireFormat(
        provider=ollama.PROVIDER,
        encoder=OllamaEncoder,
        endpoints=(Endpoint("/api/chat", stream_default=True),),
    ),
    WireFormat(
        provider=bedrock_converse.PROVIDER,
        encoder=BedrockEncoder,
        check_request=bedrock_checks.check_request,
        endpoints=(
            Endpoint("/model/{model}/converse-stream", stream=True),
            Endpoint("/model/{model}/converse", stream=False),
        ),
    ),
)
"""Every built-in format the simulator writes, in the provider table's order."""

FORMATS: tuple[str, ...] = WIRES.names()
"""The names of the built-in formats the simulator writes."""


def encoder_for(format: str) -> Encoder:
    """A fresh encoder of ``format`` (a name or an alias); :class:`~toolwire.UnknownFormat`
    for a name no built-in format has."""
    return WIRES.encoder_for(format)


def route(method: str, path: str, query: str) -> Route | None:
    """The route of a request among the built-in formats (see :meth:`WireFormats.route`)."""
    return WIRES.route(method, path, query)


def check_request(format: str, body: Any, served: ServedCalls) -> str | None:
    """The built-in provider's refusal message for ``body`` (see
    :meth:`WireFormats.check_request`)."""
    return WIRES.check_request(format, body, served)
