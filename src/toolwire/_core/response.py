"""What one streamed response finished as: ``Response`` and its parts, or ``Partial``.

``Response`` exists only for streams that ended properly; every ``StreamError`` carries a
``Partial`` instead, whose calls are evidence of what arrived and never instructions.
Every class documents each of its fields in its docstring, so ``help()`` shows them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .json_safe import DICT_VERSION, check_version, jsonable, plain_map, read

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
    """What a response cost, from a :class:`~toolwire.accounting.Prices` table (prices per
    million tokens).

    Fields: ``input`` (the uncached input tokens at the input price), ``output`` (every
    generated token, reasoning included, at the output price), ``cache_read`` and
    ``cache_write`` (prompt-cache reads and writes at their prices, the input price where
    the table has none; 1-hour writes at their own price), ``web_search`` (server-side web
    searches at the table's price per 1,000), ``total`` (their sum), ``currency`` (the
    table's), ``model`` (the table entry that matched), ``estimated`` (part of the counts
    priced were estimated, see :attr:`Usage.estimated_fields`), ``missing`` (counts whose
    cost is not in ``total``, because the usage lacks them (``("input_tokens",)`` for a
    stream cut before the provider reported its input) or the table has no price for them
    (``"web_search_requests"``); the total is then a lower bound).
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
    web_search: float = 0.0


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
    cache_write_1h_tokens: int | None = None
    web_search_requests: int | None = None


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
    - ``cache_write_1h_tokens``: the part of ``cache_write_tokens`` written to the 1-hour
      cache, which costs more than the default 5-minute one (Anthropic's
      ``cache_creation.ephemeral_1h_input_tokens``);
    - ``web_search_requests``: web searches the provider ran server-side and bills per
      request (Anthropic's ``server_tool_use.web_search_requests``);
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

    def __post_init__(self) -> None:
        # The stream assembler merges the reports' counts by a fixed list of names that
        # predates these two; until it merges them too, they are read back from the merged
        # raw report (the provider's names, as its adapter reads them).
        if self.cache_write_1h_tokens is None:
            found = _raw_count(self.raw, "cache_creation", "ephemeral_1h_input_tokens")
            object.__setattr__(self, "cache_write_1h_tokens", found)
        if self.web_search_requests is None:
            found = _raw_count(self.raw, "server_tool_use", "web_search_requests")
            object.__setattr__(self, "web_search_requests", found)

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


def _raw_count(raw: Mapping[str, Any], group: str, name: str) -> int | None:
    """``raw[group][name]`` when it is a count, else ``None``."""
    inner = raw.get(group) if isinstance(raw, Mapping) else None
    value = inner.get(name) if isinstance(inner, Mapping) else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # some encoders write counts as 12.0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


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
    - ``synthetic_id``: true when the provider sent no id and ``id`` was synthesised;
    - ``kind``: what the application answers: ``"function"`` (a function tool, the
      common case) or the provider's own kind of call it must answer (Responses
      ``"custom_tool_call"``, ``"computer_call"``, ``"shell_call"``...).
    """

    id: str
    name: str
    arguments: Any
    raw_arguments: str
    index: int
    metadata: Mapping[str, Any] = field(default_factory=dict)
    synthetic_id: bool = False
    kind: str = "function"


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
      without ``output=`` and for a tool turn that carries no output text;
    - ``paused``: the provider paused the turn (Anthropic ``pause_turn``): the next
      request, with this turn echoed as it is, lets the model go on;
    - ``done_marker_finish``: the stream sent no finish reason and its ``[DONE]`` marker
      was taken as the finish, which only a provider profile that opts in allows.
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
    paused: bool = False
    done_marker_finish: bool = False

    def to_dict(self) -> dict[str, Any]:
        """This response as a JSON-safe, versioned dict (``Response.from_dict`` reads it
        back equal; a structured ``output`` is kept as its JSON value)."""
        return response_to_dict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Response:
        """The response :meth:`to_dict` wrote; ``UsageError`` for anything else."""
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


# ------------------------------------------------- JSON-safe dicts, and back


def _cost_to_dict(cost: Cost) -> dict[str, Any]:
    return {
        "input": cost.input,
        "output": cost.output,
        "cache_read": cost.cache_read,
        "cache_write": cost.cache_write,
        "total": cost.total,
        "currency": cost.currency,
        "model": cost.model,
        "estimated": cost.estimated,
        "missing": list(cost.missing),
        "web_search": cost.web_search,
    }


def _cost_from_dict(data: dict[str, Any]) -> Cost:
    return Cost(**{**data, "missing": tuple(data.get("missing", ()))})


_COUNTS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
    "cache_write_1h_tokens",
    "web_search_requests",
)


def usage_to_dict(usage: Usage | None) -> dict[str, Any] | None:
    """The dict of a :class:`Usage` (``None`` stays ``None``)."""
    if usage is None:
        return None
    out: dict[str, Any] = {name: getattr(usage, name) for name in _COUNTS}
    out.update(
        raw=plain_map(usage.raw),
        estimated=usage.estimated,
        estimated_fields=list(usage.estimated_fields),
        estimated_tokens=usage.estimated_tokens,
        estimate_method=usage.estimate_method,
        format=usage.format,
        cost=None if usage.cost is None else _cost_to_dict(usage.cost),
    )
    return out


def usage_from_dict(data: dict[str, Any] | None) -> Usage | None:
    """The :class:`Usage` :func:`usage_to_dict` wrote."""
    if data is None:
        return None
    cost = data.get("cost")
    return Usage(
        **{name: data.get(name) for name in _COUNTS},
        raw=dict(data.get("raw") or {}),
        estimated=bool(data.get("estimated", False)),
        estimated_fields=tuple(data.get("estimated_fields", ())),
        estimated_tokens=int(data.get("estimated_tokens", 0)),
        estimate_method=data.get("estimate_method"),
        format=data.get("format"),
        cost=None if cost is None else _cost_from_dict(cost),
    )


# ------------------------------------------------------------------- the parts


def _call_to_dict(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "raw_arguments": call.raw_arguments,
        "index": call.index,
        "metadata": plain_map(call.metadata),
        "synthetic_id": call.synthetic_id,
        "kind": call.kind,
    }


def _rejected_to_dict(call: RejectedCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "raw_arguments": call.raw_arguments,
        "reason": call.reason,
        "index": call.index,
        "offset": call.offset,
        "metadata": plain_map(call.metadata),
        "synthetic_id": call.synthetic_id,
        "duplicate_key": None if call.duplicate_key is None else list(call.duplicate_key),
    }


def _rejected_from_dict(data: dict[str, Any]) -> RejectedCall:
    key = data.get("duplicate_key")
    return RejectedCall(**{**data, "duplicate_key": None if key is None else tuple(key)})


def _partial_call_to_dict(call: PartialCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "raw_arguments": call.raw_arguments,
        "index": call.index,
        "ended": call.ended,
        "synthetic_id": call.synthetic_id,
        "metadata": plain_map(call.metadata),
    }


def _part_to_dict(part: ContentPart) -> dict[str, Any]:
    return {"kind": part.kind, "text": part.text, "call": part.call, "data": plain_map(part.data)}


# ------------------------------------------------------------------- the wholes


def response_to_dict(response: Response) -> dict[str, Any]:
    """The JSON-safe dict of a :class:`Response` (see :meth:`Response.to_dict`)."""
    return {
        "version": DICT_VERSION,
        "text": response.text,
        "reasoning": response.reasoning,
        "tool_calls": [_call_to_dict(call) for call in response.tool_calls],
        "rejected": [_rejected_to_dict(call) for call in response.rejected],
        "finish_reason": response.finish_reason,
        "raw_finish_reason": response.raw_finish_reason,
        "usage": usage_to_dict(response.usage),
        "response_id": response.response_id,
        "model": response.model,
        "format": response.format,
        "created": response.created,
        "parts": [_part_to_dict(part) for part in response.parts],
        "output": jsonable(response.output),
        "paused": response.paused,
        "done_marker_finish": response.done_marker_finish,
    }


def response_from_dict(data: Any) -> Response:
    """The :class:`Response` :func:`response_to_dict` wrote."""
    data = check_version(data, "Response")
    return Response(
        text=data["text"],
        reasoning=data["reasoning"],
        tool_calls=[ToolCall(**call) for call in data["tool_calls"]],
        rejected=[_rejected_from_dict(call) for call in data["rejected"]],
        finish_reason=data["finish_reason"],
        raw_finish_reason=data.get("raw_finish_reason"),
        usage=usage_from_dict(data.get("usage")),
        response_id=data.get("response_id"),
        model=data.get("model"),
        format=data.get("format"),
        created=data.get("created"),
        parts=[ContentPart(**part) for part in data.get("parts", ())],
        output=data.get("output"),
        paused=bool(data.get("paused", False)),
        done_marker_finish=bool(data.get("done_marker_finish", False)),
    )


def partial_to_dict(partial: Partial) -> dict[str, Any]:
    """The JSON-safe dict of a :class:`Partial`."""
    return {
        "version": DICT_VERSION,
        "text": partial.text,
        "reasoning": partial.reasoning,
        "calls": [_partial_call_to_dict(call) for call in partial.calls],
        "usage": usage_to_dict(partial.usage),
        "raw_finish_reason": partial.raw_finish_reason,
        "response_id": partial.response_id,
        "model": partial.model,
        "format": partial.format,
        "created": partial.created,
        "parts": [_part_to_dict(part) for part in partial.parts],
    }


def partial_from_dict(data: Any) -> Partial:
    """The :class:`Partial` :func:`partial_to_dict` wrote."""
    data = check_version(data, "Partial")
    return Partial(
        text=data["text"],
        reasoning=data["reasoning"],
        calls=[PartialCall(**call) for call in data["calls"]],
        usage=usage_from_dict(data.get("usage")),
        raw_finish_reason=data.get("raw_finish_reason"),
        response_id=data.get("response_id"),
        model=data.get("model"),
        format=data.get("format"),
        created=data.get("created"),
        parts=[ContentPart(**part) for part in data.get("parts", ())],
    )
