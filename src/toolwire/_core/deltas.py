"""The normalised deltas that provider adapters hand to the assembler, and the adapter contract.

An adapter only translates one wire format's payloads into deltas (``translate``, ``[]``
for unknown events, ``StreamFormatError`` for a broken payload); the assembler alone
correlates fragments and decides how the response finished.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .events import ReasoningDelta, TextDelta
from .response import _UsageCounts

FinishKind = Literal["stop", "tool_calls", "length", "content_filter", "error", "other"]

Fragment = tuple[str | None, int | None, str]
"""What a fragment fast path recognised: ``(ref, index, text)``, one argument fragment for
the call whose ``ref`` (or, when ``ref`` is ``None``, whose provider ``index``) is given."""


class Adapter(Protocol):
    """What the assembler needs from a provider's adapter (one instance per stream).

    One optional fast path, looked up with ``getattr``: ``fragment(payload)`` recognises a
    payload that is nothing but one argument fragment of an open call (the bulk of a big
    call) and returns ``(ref, index, text)``, else ``None``. ``payload`` is a decoded dict
    or, for an SDK event object, :func:`payload_fields` of it; the fast path reads every
    nested object through :func:`payload_fields` too, so one reader serves both. It must
    mean exactly what ``translate`` would give for the payload,
    ``[CallDelta(ref=ref or None, index=index, arguments=text)]`` routed to the same call,
    and may change the adapter's state only as ``translate`` would; on ``None`` the
    assembler takes the general path (an SDK object is dumped first).
    """

    format: str

    def translate(self, payload: dict[str, Any], event: str | None = None) -> list[Delta]:
        """Translate one payload (``event`` is its SSE event name, if any)."""
        ...


def payload_fields(node: Any) -> dict[str, Any] | None:
    """The members of one object of a payload, as the fragment fast path reads them: a
    dict as it is; an SDK event object's (a pydantic model's) field values with its extra
    members, read without ``model_dump`` (a field the payload lacked reads as its default,
    ``None``, which the fast paths treat like an absent member); ``None`` for anything
    else. Read-only: it may be the object's own ``__dict__``. O(1) without extra members,
    else O(members)."""
    if type(node) is dict:
        return node
    try:
        fields = node.__dict__
        extra = node.__pydantic_extra__
    except AttributeError:
        return None
    if type(fields) is not dict:
        return None
    return {**fields, **extra} if extra else fields


@dataclass(frozen=True, slots=True, kw_only=True)
class MetaDelta:
    """Response-level identity: the provider's response id, the model name, and the
    provider's creation timestamp as sent (Ollama's ``created_at``, OpenAI's ``created``,
    Vertex's ``createTime``), which tells two responses apart where the provider sends no
    ids."""

    response_id: str | None = None
    model: str | None = None
    created: str | None = None


# Visible text and reasoning text: the public events themselves (``toolwire.TextDelta``,
# ``toolwire.ReasoningDelta``), so that the assembler hands an adapter's delta on as the
# event, without a copy per chunk. The adapter-side names say what an adapter emits.
TextPart = TextDelta
ReasoningPart = ReasoningDelta


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalPart:
    """Refusal text: the model declined to answer (OpenAI chat ``delta.refusal``, Responses
    ``response.refusal.delta``). Never text and never output: a response that carries one
    ends with ``OutputRefused``."""

    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PartDelta:
    """A boundary in the ordered output, or provider data that the next request must echo.

    The assembler keeps the response's output as ordered parts (``Response.parts``): runs
    of text, runs of reasoning, calls, and opaque provider items. Consecutive text (or
    reasoning) deltas join the last part when it has that kind; calls open their own part.

    - ``kind="text"`` / ``"reasoning"`` with ``start=True``: a new part of that kind begins
      here (Anthropic ``content_block_start``, a new Bedrock block index), with ``data``;
    - the same with ``start=False``: ``data`` belongs to the current part of that kind
      (Anthropic ``signature_delta``, Gemini ``thoughtSignature`` on a text part); merged
      into the last part when it has that kind, else a new part carries it;
    - ``kind="item"``: a provider item that is neither text nor a call of this response
      but must be sent back as it is (Anthropic ``redacted_thinking``, a Responses
      reasoning or built-in tool item); always a new part.
    """

    kind: Literal["text", "reasoning", "item"]
    data: Mapping[str, Any] | None = None
    start: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CallDelta:
    """A piece of one tool call.

    - ``id``: the provider's public call id (what a tool result must echo), ``None`` when
      absent or empty.
    - ``ref``: a correlation id that is not the public id (Responses ``item_id``);
      routing uses ``ref`` when set, else ``id``.
    - ``index``: the provider's index hint (Chat ``index``, Anthropic block index,
      Responses ``output_index``); may be missing, sparse, or reused.
    - ``name``: set once per call; ``None`` or ``""`` when this piece does not carry it.
    - ``arguments``: a fragment of the JSON argument text (``""`` when none).
    - ``final_arguments``: the complete argument text as the provider states it whole
      (Responses ``function_call_arguments.done``; a non-empty Anthropic, Bedrock or
      Gemini start input, restated by the adapter with the call's end); the assembler
      feeds what is missing, accepts complete fragments of the same JSON value, and
      rejects the call if they say anything else.
    - ``start``: ``True`` when the format says explicitly that this piece opens a new call
      (``content_block_start``, ``output_item.added``, ``contentBlockStart``, a whole
      Gemini or Ollama call); ``False`` when the format says it must continue an open
      call (a delta for a block that never started is then a format error); ``None`` when
      the format does not say (OpenAI Chat: the assembler's correlation rules decide).
      A format that opens calls explicitly also ends them explicitly: a call opened with
      ``start=True`` is final only once a piece with ``end=True`` arrived.
    - ``end``: the provider says the call's arguments are complete after this piece.
    - ``metadata``: values to keep and echo back (Gemini ``thought_signature``,
      Responses ``item_id``); merged into the call's metadata. Its ``"kind"`` key, when
      set, is the call's ``ToolCall.kind`` (a call the application answers other than as
      a function call: Responses ``"custom_tool_call"``...).
    """

    id: str | None = None
    ref: str | None = None
    index: int | None = None
    name: str | None = None
    arguments: str = ""
    final_arguments: str | None = None
    start: bool | None = None
    end: bool = False
    metadata: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageDelta(_UsageCounts):
    """Usage counts reported by this payload; ``None`` means not reported here. Later
    reports override earlier ones field by field (providers send running totals)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishDelta:
    """The format's terminal event: the turn is over.

    ``kind`` is the adapter's reading of ``raw`` (``"stop"`` for ``stop`` / ``end_turn`` /
    ``STOP`` / ``completed``...; ``"tool_calls"`` for ``tool_calls`` / ``tool_use``;
    ``"length"``; ``"content_filter"``; ``"error"``). Emitted once, at the event after
    which the response is complete (OpenAI Chat: the choice's ``finish_reason``;
    Anthropic: ``message_stop``; Responses: ``response.completed`` / ``.incomplete`` /
    ``.failed``; Gemini: a candidate's ``finishReason``; Bedrock: ``messageStop``;
    Ollama: ``done: true``; Cohere: ``message-end``).
    """

    raw: str | None
    kind: FinishKind
    paused: bool = False  # the provider paused the turn (Anthropic ``pause_turn``)


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorDelta:
    """An error event or error payload inside the stream."""

    message: str
    error: Any = None


Delta = (
    MetaDelta
    | TextPart
    | ReasoningPart
    | RefusalPart
    | PartDelta
    | CallDelta
    | UsageDelta
    | FinishDelta
    | ErrorDelta
)


def finish_kinds(
    *,
    stop: tuple[str, ...] = (),
    tool_calls: tuple[str, ...] = (),
    length: tuple[str, ...] = (),
    content_filter: tuple[str, ...] = (),
    error: tuple[str, ...] = (),
) -> dict[str, FinishKind]:
    """A provider's table from its raw finish reasons to :data:`FinishKind`, written as the
    groups it documents; a reason in no group reads as ``"other"`` (which fails closed)."""
    table: dict[str, FinishKind] = {}
    groups: tuple[tuple[FinishKind, tuple[str, ...]], ...] = (
        ("stop", stop),
        ("tool_calls", tool_calls),
        ("length", length),
        ("content_filter", content_filter),
        ("error", error),
    )
    for kind, reasons in groups:
        for reason in reasons:
            table[reason] = kind
    return table
