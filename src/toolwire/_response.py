"""What one streamed response finished as: ``Response`` and its parts, or ``Partial``.

``Response`` exists only for streams that ended properly; every ``StreamError`` carries a
``Partial`` instead, whose calls are evidence of what arrived and never instructions.
Every class documents each of its fields in its docstring, so ``help()`` shows them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token usage as the provider reported it, merged over the stream.

    Fields (a count the provider did not report is ``None``):

    - ``input_tokens``: prompt tokens (OpenAI ``prompt_tokens``/``input_tokens``, Gemini
      ``promptTokenCount``, Bedrock ``inputTokens``, Ollama ``prompt_eval_count``...);
    - ``output_tokens``: generated tokens, reasoning included where the provider counts it;
    - ``total_tokens``: as reported, or input plus output where the provider gives both
      but no total (Ollama, Cohere);
    - ``cache_read_tokens`` / ``cache_write_tokens``: prompt tokens read from / written to
      the provider's prompt cache;
    - ``reasoning_tokens``: the part of the output spent on reasoning, where reported;
    - ``raw``: the provider's usage objects by their own field names, later reports
      overriding earlier ones key by key (at most ``StreamAssembler``'s
      ``max_usage_fields`` keys).
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """One finished tool call whose arguments are complete JSON.

    Fields:

    - ``id``: the provider's call id, or a deterministic synthesised ``call_...`` one when
      the provider sent none (then ``synthetic_id`` is true); what a tool result echoes;
    - ``name``: the tool's name as the model wrote it;
    - ``arguments``: ``json.loads(raw_arguments)``, or ``{}`` when the provider sent no
      argument text at all (validation decides whether that is acceptable for the tool);
    - ``raw_arguments``: the argument text exactly as assembled from the fragments;
    - ``index``: the call's position in the response (0, 1, 2... in order of appearance,
      rejected calls included);
    - ``metadata``: what must be echoed back to the provider with the call (Gemini
      ``thought_signature``, Responses ``item_id``, the provider's own ``provider_index``);
    - ``synthetic_id``: true when the provider sent no id and ``id`` was synthesised.
    """

    id: str
    name: str
    arguments: Any
    raw_arguments: str
    index: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class RejectedCall:
    """A call that can never be valid: arguments that are not JSON, or an empty name.

    Fields: ``id``, ``name``, ``raw_arguments``, ``index``, ``metadata`` and
    ``synthetic_id`` as for :class:`ToolCall`; ``reason``, why the call was rejected (a
    sentence); ``offset``, where in ``raw_arguments`` the JSON went wrong (``None`` when
    the reason is not a syntax error). A rejected call is still part of the assistant
    turn: its result tells the model what was wrong.
    """

    id: str
    name: str
    raw_arguments: str
    reason: str
    index: int
    offset: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class ContentPart:
    """One piece of the assistant's output, in the order the provider sent it.

    Fields:

    - ``kind``: ``"text"`` (a run of visible text), ``"reasoning"`` (a run of reasoning
      text, an Anthropic ``thinking`` block...), ``"call"`` (a tool call) or ``"item"``
      (provider output that is neither, kept to be sent back as it is: Anthropic
      ``redacted_thinking``, a Responses reasoning item...);
    - ``text``: the text of a text or reasoning part (``""`` for the others);
    - ``call``: for a call part, the call's ``index`` (in ``Response.tool_calls`` or
      ``Response.rejected``);
    - ``data``: what the provider needs echoed with this part (Anthropic ``signature``,
      Gemini ``thoughtSignature``, a Responses item's ``id`` or the whole item).

    The parts are what lets the next request repeat the assistant turn faithfully.
    """

    kind: Literal["text", "reasoning", "call", "item"]
    text: str = ""
    call: int | None = None
    data: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """A streamed response that ended properly (the provider's terminal event arrived).

    Fields:

    - ``text``: the visible text, all of it;
    - ``reasoning``: reasoning / thinking text (never part of ``text``; Cohere's tool plan
      is here);
    - ``tool_calls``: the finished calls (:class:`ToolCall`), in order;
    - ``rejected``: calls that can never be valid (:class:`RejectedCall`);
    - ``finish_reason``: normalised: ``"tool_calls"`` when calls are present, else
      ``"stop"`` (other ends raise a ``StreamError`` instead);
    - ``raw_finish_reason``: the provider's own value (``"end_turn"``, ``"STOP"``...);
    - ``usage``: the merged :class:`Usage`, or ``None`` when none was reported;
    - ``response_id``: the provider's response id, where it sends one;
    - ``model``: the model name as the provider reported it;
    - ``format``: the wire format that was read (``"openai-chat"``...);
    - ``created``: the provider's creation timestamp as sent, where it sends one (Ollama
      ``created_at``, OpenAI chat ``created``, Vertex ``createTime``);
    - ``parts``: the output in order (:class:`ContentPart`), what the assistant turn of
      the next request is built from;
    - ``output``: the structured output, validated (``StreamAssembler(output=...)``): an
      instance of the model, a value of the type, or the JSON value for a schema; ``None``
      without ``output=`` and for a tool turn that carries no output text.
    """

    text: str
    reasoning: str
    tool_calls: list[ToolCall]
    rejected: list[RejectedCall]
    finish_reason: str
    raw_finish_reason: str | None
    usage: Usage | None
    response_id: str | None
    model: str | None
    format: str | None = None
    created: str | None = None
    parts: list[ContentPart] = field(default_factory=list)
    output: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialCall:
    """A call as far as it arrived in a stream that did not end properly.

    Fields: ``id``, ``name``, ``raw_arguments``, ``index`` and ``synthetic_id`` as for
    :class:`ToolCall` (``name`` is ``""`` when it never arrived); ``ended``, whether the
    provider ended this call on its own (which still does not make it final).
    """

    id: str
    name: str
    raw_arguments: str
    index: int
    ended: bool
    synthetic_id: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Partial:
    """What had arrived when a stream failed: the evidence a ``StreamError`` carries.

    Fields: ``text``, ``reasoning``, ``usage``, ``response_id``, ``model``, ``format`` and
    ``created`` as for :class:`Response`; ``calls``, every call so far as a
    :class:`PartialCall` (never instructions to execute); ``raw_finish_reason``, the
    provider's finish value if one arrived.
    """

    text: str
    reasoning: str
    calls: list[PartialCall]
    usage: Usage | None
    raw_finish_reason: str | None
    response_id: str | None
    model: str | None
    format: str | None = None
    created: str | None = None
