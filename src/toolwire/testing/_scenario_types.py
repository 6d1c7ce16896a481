"""What a scripted model turn is made of, in no wire format: the plain frozen data the
encoders read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Literal

__all__ = [
    "Fault",
    "Finish",
    "Profile",
    "ScenarioCall",
    "ScenarioResponse",
    "ScenarioServerTool",
    "ScenarioUsage",
]

Finish = Literal["auto", "stop", "tool_calls", "length", "pause"]


@dataclass(frozen=True, slots=True)
class Fault:
    """One parsed fault: its ``kind`` and its value (``None`` for faults without one)."""

    kind: str
    value: float | int | None = None

    def __str__(self) -> str:
        if self.value is None:
            return self.kind
        return (
            f"{self.kind}:{self.value:g}"
            if isinstance(self.value, float)
            else (f"{self.kind}:{self.value}")
        )


@dataclass(frozen=True, slots=True)
class Profile:
    """One quirk: its ``name``, the ``formats`` it shapes, the ``quirks`` numbers it
    reproduces, ``servers`` seen doing it, and whether it is a ``truncation`` (a stream that
    must be refused, not assembled)."""

    name: str
    formats: tuple[str, ...]
    quirks: tuple[int, ...]
    servers: str
    description: str
    truncation: bool = False
    sequential: bool = False  # calls are streamed one after another, never interleaved


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioServerTool:
    """A tool the provider runs itself (Anthropic ``server_tool_use``): ``name``
    (``web_search``, ``web_fetch``, ``code_execution``...), its ``input`` object, and the
    ``result`` content of its ``<name>_tool_result`` block, or ``None`` for a call still
    pending (what a paused turn carries). ``id`` ``None``: minted under the seed."""

    name: str
    input: Any
    result: Any = None
    id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioCall:
    """One tool call: ``name`` and ``raw_arguments`` (the argument text to stream).

    ``arguments`` is the parsed value when ``raw_arguments`` is valid JSON (``None`` when
    it is not: such a call can only be served by formats that stream argument text).
    ``id`` is the provider call id to send; ``None`` lets each encoder mint one in its
    provider's style, deterministically under the seed.
    """

    name: str
    raw_arguments: str
    arguments: Any = None
    id: str | None = None

    @property
    def valid_json(self) -> bool:
        """Whether ``raw_arguments`` parses as JSON (an empty text counts as ``{}``)."""
        if not self.raw_arguments:
            return True
        try:
            json.loads(self.raw_arguments)
        except ValueError:
            return False
        return True

    def object_arguments(self) -> dict[str, Any] | None:
        """The arguments as a JSON object (``{}`` for empty text), ``None`` if they are not one."""
        if not self.raw_arguments:
            return {}
        try:
            value = json.loads(self.raw_arguments)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioUsage:
    """Token counts to report, each in the provider's own way."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class ScenarioResponse:
    """One scripted model turn, in no particular wire format.

    ``finish="auto"`` means ``tool_calls`` when there are calls and ``stop`` otherwise;
    ``"length"`` is the provider's token-limit finish, ``"pause"`` a turn the provider paused
    (Anthropic ``pause_turn``). ``server_tools`` are calls the provider ran itself (Anthropic
    ``server_tool_use`` blocks, with their results), served after the text. ``refusal`` is
    text of a model that declined (OpenAI's ``refusal`` channel, Anthropic's
    ``stop_reason: "refusal"``, Gemini's ``SAFETY`` finish; formats without one cannot serve
    it). ``usage=None`` reports an estimate (about four characters per token).
    ``response_id`` and ``model`` default to what the encoder mints and what the request
    asked for. ``faults`` and ``profiles`` are applied
    when the response is served.
    """

    text: str = ""
    reasoning: str = ""
    tool_calls: tuple[ScenarioCall, ...] = ()
    finish: Finish = "auto"
    usage: ScenarioUsage | None = None
    response_id: str | None = None
    model: str | None = None
    faults: tuple[Fault, ...] = ()
    profiles: tuple[Profile, ...] = ()
    refusal: str = ""
    server_tools: tuple[ScenarioServerTool, ...] = ()

    @property
    def finish_kind(self) -> Literal["stop", "tool_calls", "length"]:
        """The finish this turn ends with (``auto`` resolved; a pause ends as ``stop``)."""
        if self.finish == "auto":
            return "tool_calls" if self.tool_calls else "stop"
        return "stop" if self.finish == "pause" else self.finish

    def reported_usage(self) -> ScenarioUsage:
        """The usage to report: the given one, or a deterministic estimate."""
        if self.usage is not None:
            return self.usage
        produced = len(self.text) + len(self.reasoning)
        produced += sum(len(c.name) + len(c.raw_arguments) for c in self.tool_calls)
        return ScenarioUsage(input_tokens=12, output_tokens=max(1, produced // 4))

    def with_changes(self, **changes: Any) -> ScenarioResponse:
        """A copy with some fields replaced."""
        return replace(self, **changes)
