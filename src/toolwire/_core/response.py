"""What one streamed response finished as: ``Response`` and its parts, or ``Partial``.

``Response`` exists only for streams that ended properly; every ``StreamError`` carries a
``Partial`` instead, whose calls are evidence of what arrived and never instructions.
Every class documents each of its fields in its docstring, so ``help()`` shows them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

# Formats whose input count leaves the prompt cache out (Anthropic's input_tokens and
# Bedrock's inputTokens are the uncached part); everywhere else the input count includes the
# cached tokens (OpenAI prompt_tokens, Gemini promptTokenCount...). The reported totals
# decide where they can (see Usage.all_input_tokens).
_CACHE_APART = frozenset({"anthropic", "bedrock-converse"})
# Formats whose output count leaves reasoning out (Gemini candidatesTokenCount without
# thoughtsTokenCount); xAI's OpenAI-compatible stream does too, which only its total shows.
_REASONING_APART = frozenset({"gemini"})


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """What a response cost, from a :class:`~toolwire.Prices` table (per million tokens).

    Fields: ``input`` (the uncached input tokens at the input price), ``output`` (every
    generated token, reasoning included, at the output price), ``cache_read`` and
    ``cache_write`` (prompt-cache reads and writes at their prices, the input price where
    the table has none), ``total`` (their sum), ``currency`` (the table's), ``model`` (the
    table entry that matched), ``estimated`` (part of the counts priced were estimated, see
    :attr:`Usage.estimated_fields`), ``missing`` (counts the usage lacks, so their cost is
    not in ``total``: ``("input_tokens",)`` for a stream cut before the provider reported
    its input; the total is then a lower bound).
    """

    input: float
    output: float
    cache_read: float
    cache_write: float
    total: float
    currency: str
    model: str
    estimated: bool = False
    missing: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class _UsageCounts:
    """The counts a usage report carries, by toolwire's names (``None``: not reported),
    and the provider's own usage objects (``raw``): what an adapter reports in a
    ``UsageDelta`` and what :class:`Usage` holds merged over the stream (which documents
    each count)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage(_UsageCounts):
    """Token usage of one response: what the provider reported, merged over the stream,
    plus an estimate (flagged) of output that no report covered.

    Fields (a count that is neither reported nor estimated is ``None``):

    - ``input_tokens``: prompt tokens as the provider counts them (OpenAI
      ``prompt_tokens``/``input_tokens``, Gemini ``promptTokenCount``, Bedrock
      ``inputTokens``, Ollama ``prompt_eval_count``...). Anthropic and Bedrock leave the
      cached tokens out of it, the others include them: :attr:`all_input_tokens` is the
      same figure for every provider. Never estimated: toolwire does not see the request;
      ``None`` when the stream was cut before the provider reported it.
    - ``output_tokens``: generated tokens, reasoning included where the provider counts it
      there (:attr:`all_output_tokens` always includes it);
    - ``total_tokens``: as reported, or input plus output where the provider gives both
      but no total (Ollama, Cohere);
    - ``cache_read_tokens`` / ``cache_write_tokens``: prompt tokens read from / written to
      the provider's prompt cache;
    - ``reasoning_tokens``: the part of the output spent on reasoning, where reported;
    - ``raw``: the provider's usage objects by their own field names, later reports
      overriding earlier ones key by key (at most ``StreamAssembler``'s
      ``max_usage_fields`` keys); shared between successive reports, so treat it as
      read-only;
    - ``estimated``: some counts are toolwire's estimate, not the provider's report: the
      stream ended (or was cut) after content that no usage report covered. Closing a
      stream does not stop the provider's meter: the estimate is what was generated up to
      where toolwire stopped reading, not what the provider bills after;
    - ``estimated_fields``: which counts hold an estimate (``"output_tokens"``, and
      ``"total_tokens"`` / ``"reasoning_tokens"`` where they were extended by it);
    - ``estimated_tokens``: how many of the output tokens (reasoning included) are the
      estimate; the rest was reported;
    - ``estimate_method``: how they were counted (``"tiktoken:o200k_base"``,
      ``"heuristic"``), ``None`` when nothing was estimated;
    - ``format``: the wire format the counts come from, which says how to read them (see
      ``input_tokens``); ``None`` for a usage built by hand or summed over formats;
    - ``cost``: the :class:`Cost` when a price table was given (``StreamAssembler``,
      ``stream()`` or ``UsageLedger`` with ``prices=``) and it knows the model.
    """

    estimated: bool = False
    estimated_fields: tuple[str, ...] = ()
    estimated_tokens: int = 0
    estimate_method: str | None = None
    format: str | None = None
    cost: Cost | None = None

    @property
    def all_input_tokens(self) -> int | None:
        """Every prompt token, cached ones included, for every provider (what
        OpenTelemetry's ``gen_ai.usage.input_tokens`` means); ``None`` when the input was
        not reported."""
        if self.input_tokens is None:
            return None
        if self._cache_apart():
            cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
            return self.input_tokens + cached
        return self.input_tokens

    @property
    def uncached_input_tokens(self) -> int | None:
        """The prompt tokens that were neither read from nor written to the cache (those
        billed at the full input price); ``None`` when the input was not reported."""
        every = self.all_input_tokens
        if every is None:
            return None
        return max(0, every - (self.cache_read_tokens or 0) - (self.cache_write_tokens or 0))

    @property
    def all_output_tokens(self) -> int | None:
        """Every generated token, reasoning included, for every provider (what
        OpenTelemetry's ``gen_ai.usage.output_tokens`` means); ``None`` when unknown."""
        if self.output_tokens is None:
            return None
        if self._reasoning_apart():
            return self.output_tokens + (self.reasoning_tokens or 0)
        return self.output_tokens

    def _cache_apart(self) -> bool:
        cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
        if not cached:
            return False
        total, given = self.total_tokens, self.input_tokens
        if total is not None and given is not None and self.output_tokens is not None:
            # The total tells which way the provider counts, where it is given.
            outputs = self.output_tokens + (self.reasoning_tokens or 0)
            if total in (given + cached + self.output_tokens, given + cached + outputs):
                return True
            if total in (given + self.output_tokens, given + outputs):
                return False
        return self.format in _CACHE_APART

    def _reasoning_apart(self) -> bool:
        reasoning = self.reasoning_tokens or 0
        if not reasoning:
            return False
        total, given, output = self.total_tokens, self.input_tokens, self.output_tokens
        if total is not None and given is not None and output is not None:
            cached = (self.cache_read_tokens or 0) + (self.cache_write_tokens or 0)
            for inputs in {given, given + cached}:
                if total == inputs + output + reasoning:
                    return True
                if total == inputs + output:
                    return False
        if reasoning > (self.output_tokens or 0):
            return True  # a part cannot exceed its whole
        return self.format in _REASONING_APART


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
    """A call that can never be valid: arguments that are not JSON or that repeat an
    object key, or an empty name.

    Fields: ``id``, ``name``, ``raw_arguments``, ``index``, ``metadata`` and
    ``synthetic_id`` as for :class:`ToolCall`; ``reason``, why the call was rejected (a
    sentence); ``offset``, where in ``raw_arguments`` the JSON went wrong or a key was
    repeated (``None`` for the other reasons); ``duplicate_key``, the repeated key's path
    in the arguments (its last item is the key; ``None`` unless a key was repeated: the
    preview showed the first value, ``json.loads`` would keep the last). A rejected call is
    still part of the assistant turn: its result tells the model what was wrong.
    """

    id: str
    name: str
    raw_arguments: str
    reason: str
    index: int
    offset: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False
    duplicate_key: tuple[str | int, ...] | None = None


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
    - ``usage``: the merged :class:`Usage`, with an estimate of output tokens that no usage
      report covered (flagged ``estimated``); the assembler always sets it (``None`` only
      in a response built by hand);
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

    def to_dict(self) -> dict[str, Any]:
        """This response as a JSON-safe, versioned dict (``Response.from_dict`` reads it
        back equal; a structured ``output`` is kept as its JSON value)."""
        from .dicts import response_to_dict

        return response_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Response:
        """The response :meth:`to_dict` wrote; ``UsageError`` for anything else."""
        from .dicts import read, response_from_dict

        return read(response_from_dict, data, "Response")


@dataclass(frozen=True, slots=True, kw_only=True)
class PartialCall:
    """A call as far as it arrived in a stream that did not end properly.

    Fields: ``id``, ``name``, ``raw_arguments``, ``index``, ``metadata`` and
    ``synthetic_id`` as for :class:`ToolCall` (``name`` is ``""`` when it never arrived);
    ``ended``, whether the provider ended this call on its own (which still does not make
    it final).
    """

    id: str
    name: str
    raw_arguments: str
    index: int
    ended: bool
    synthetic_id: bool = False
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Partial:
    """What had arrived when a stream failed: the evidence a ``StreamError`` carries.

    Fields: ``text``, ``reasoning``, ``usage``, ``response_id``, ``model``, ``format``,
    ``created`` and ``parts`` as for :class:`Response` (``parts`` as far as they arrived:
    what a turn stopped early repeats to the model, thinking signatures included);
    ``calls``, every call so far as a :class:`PartialCall` (never instructions to
    execute); ``raw_finish_reason``, the provider's finish value if one arrived.

    ``usage`` holds what the provider reported before the stream failed, plus an estimate
    of the output that arrived after its last report (``usage.estimated``); the input
    tokens stay ``None`` if the provider never reported them. The provider's meter does
    not stop when a stream is closed: account for this usage (``UsageLedger``).
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
    parts: list[ContentPart] = field(default_factory=list)
