"""The formats the simulator writes, and where it serves them: one explicit table.

Each :class:`WireFormat` is the simulator's side of one provider (its encoder, what its
API refuses in a request, its HTTP endpoints and the base URL its SDK takes); the reading
side of the same format is its provider package. A format is served when both sides are
registered; tests add a toy format with :func:`register_wire`. Routing asks every served
format's endpoints in the provider table's order, first match wins.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._core.providers import names, provider
from .._errors import UnknownFormat, UsageError
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
from ._wire_writing import Encoder, Framing

__all__ = [
    "FORMATS",
    "Route",
    "WireFormat",
    "base_urls",
    "check_request",
    "encoder_for",
    "register_wire",
    "route",
    "served",
    "served_formats",
    "unregister_wire",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class WireFormat:
    """The simulator's side of one format.

    - ``encoder()``: a fresh encoder (a scenario to the format's wire shapes);
    - ``check_request(body, served)``: the provider's refusal message for a request body,
      or ``None`` to accept it; ``None``: every request is accepted (Ollama);
    - ``endpoints``: the provider's own HTTP paths, whether they stream, their framing;
    - ``base_path``: what the format's SDK takes as base URL after the server's root.
    """

    encoder: Callable[[], Encoder]
    endpoints: tuple[Endpoint, ...]
    check_request: RequestCheck | None = None
    base_path: str = ""


_GEMINI_MODEL = "/{version:v1|v1beta|v1alpha}/models/{model:[^/:]+}"
_GEMINI_STREAM = f"{_GEMINI_MODEL}:streamGenerateContent"

_WIRE: dict[str, WireFormat] = {
    "openai-chat": WireFormat(
        encoder=OpenAIChatEncoder,
        check_request=chat_checks.check_request,
        endpoints=(Endpoint("/v1/chat/completions"), Endpoint("/chat/completions")),
        base_path="/v1",
    ),
    "openai-responses": WireFormat(
        encoder=OpenAIResponsesEncoder,
        check_request=responses_checks.check_request,
        endpoints=(Endpoint("/v1/responses"), Endpoint("/responses")),
        base_path="/v1",
    ),
    "anthropic": WireFormat(
        encoder=AnthropicEncoder,
        check_request=anthropic_checks.check_request,
        endpoints=(Endpoint("/v1/messages"),),
    ),
    "gemini": WireFormat(
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
    "bedrock-converse": WireFormat(
        encoder=BedrockEncoder,
        check_request=bedrock_checks.check_request,
        endpoints=(
            Endpoint("/model/{model}/converse-stream", stream=True),
            Endpoint("/model/{model}/converse", stream=False),
        ),
    ),
    "cohere": WireFormat(
        encoder=CohereEncoder,
        check_request=cohere_checks.check_request,
        endpoints=(Endpoint("/v2/chat"),),
    ),
    # Ollama matches results to calls by name and order, refusing none; it streams unless
    # told not to
    "ollama": WireFormat(
        encoder=OllamaEncoder, endpoints=(Endpoint("/api/chat", stream_default=True),)
    ),
}


def register_wire(name: str, wire: WireFormat) -> None:
    """Serve the registered provider ``name`` with ``wire`` (a new name only)."""
    canonical = provider(name).name
    if canonical in _WIRE:
        raise UsageError(f"the simulator already writes {canonical!r}")
    _WIRE[canonical] = wire


def unregister_wire(name: str) -> None:
    """Stop serving ``name`` (registered with :func:`register_wire`)."""
    del _WIRE[provider(name).name]


def wire(format: str) -> WireFormat:
    """The simulator's side of ``format`` (a name or an alias); ``UnknownFormat`` when the
    simulator does not serve it."""
    try:
        entry = _WIRE.get(provider(format).name)
    except UnknownFormat:
        entry = None
    if entry is None:
        known = ", ".join(served_formats())
        raise UnknownFormat(f"the simulator has no encoder for {format!r}; known: {known}")
    return entry


def served_formats() -> tuple[str, ...]:
    """The canonical names of every registered format that has an encoder, now."""
    return tuple(name for name in names() if name in _WIRE)


FORMATS: tuple[str, ...] = served_formats()
"""The built-in formats the simulator writes (:func:`served_formats` is the live list)."""


def served(format: str) -> WireFormat:
    """The simulator's side of ``format`` if it serves it; ``UnknownFormat`` otherwise."""
    return wire(format)


def encoder_for(format: str) -> Encoder:
    """A fresh encoder of ``format`` (a name or an alias); :class:`~toolwire.UnknownFormat`
    for a name no provider has or a provider without an encoder."""
    return wire(format).encoder()


def base_urls(root: str) -> dict[str, str]:
    """What each served format's SDK takes as its base URL, for a server at ``root``."""
    return {name: root + _WIRE[name].base_path for name in served_formats()}


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


def route(method: str, path: str, query: str) -> Route | None:
    """The route of a request, or ``None`` when no served endpoint takes it (only POST)."""
    if method != "POST":
        return None
    for name in served_formats():
        for endpoint in _WIRE[name].endpoints:
            segments = endpoint.match(path, query)
            if segments is not None:
                return Route(
                    name,
                    endpoint.stream,
                    segments.get("model"),
                    endpoint.framing,
                    endpoint.stream_default,
                )
    return None


def check_request(format: str, body: Any, served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body``, or ``None`` when it is acceptable.

    ``served(response_id)`` gives the call ids of a response this simulator served (for
    ``previous_response_id``), or ``None`` for an id it never served.
    """
    if not isinstance(body, Mapping):
        return "the request body must be a JSON object"
    check = wire(format).check_request
    return None if check is None else check(body, served)
