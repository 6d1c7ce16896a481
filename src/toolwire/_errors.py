"""Every exception toolwire raises, in one tree.

Bad model output is data (``ToolCallRejected``, ``Response.rejected``, a ``rejected``
outcome); a broken stream, a broken payload or a broken store is an exception.

::

    ToolwireError
    ├── JSONSyntaxError (ValueError)          invalid JSON at .offset
    │   ├── JSONDepthError                    nesting deeper than the parser's max_depth
    │   ├── JSONSizeError                     more input than the parser's max_size
    │   └── JSONDuplicateKeyError             a repeated object key (reject_duplicates); .path
    ├── StreamError                           the peer: the stream did not end properly; .partial
    │   ├── StreamAborted                     no terminal event (cut, EOF, cancelled)
    │   │   └── StreamTimeout (TimeoutError)  a deadline of the driver passed; .kind
    │   ├── TokenLimitExceeded                length / max_tokens / MAX_TOKENS / max_output_tokens
    │   ├── ContentFiltered                   the provider withheld the output
    │   │   └── OutputRefused                 the model refused to answer; .refusal
    │   ├── OutputError                       structured output that is not the value asked for
    │   │   ├── OutputSyntaxError (ValueError)     not JSON at .offset of the output text
    │   │   └── OutputValidationError (ValueError) JSON that violates the target; .errors, .path
    │   ├── ProviderError                     an error event or error payload in the stream
    │   ├── StreamFormatError (ValueError)    a payload that breaks its wire format; .payload
    │   └── StreamLimitExceeded               too many calls, too large arguments or text
    ├── ArgumentsInvalid (ValueError)         the model's arguments do not fit a tool
    ├── IdempotencyKeyError (ValueError)      arguments outside I-JSON, so no canonical hash
    ├── StoreError                            an outage: a store failed or cannot be trusted
    └── UsageError                            a caller mistake: fix the calling code
        ├── ToolDefinitionError (TypeError)   a tool that cannot be described or called
        ├── UnknownFormat (ValueError)        a format name toolwire does not know
        ├── SettingsError (ValueError)        settings of an Executor, stream(), a store, Prices
        ├── ConversationMismatch              a Conversation at odds with what its store holds
        └── ApprovalError (LookupError)       approve/deny of a key no call awaits; .key, .status

    RetryableError                            raised by a tool: nothing happened, may retry
    EffectInDoubt                             raised by a tool: it may have acted; never re-run

An HTTP error of the request itself reaches the caller as the SDK's own exception: it
happens before any stream exists.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._core.response import Partial

__all__ = [
    "ApprovalError",
    "ArgumentsInvalid",
    "ContentFiltered",
    "ConversationMismatch",
    "EffectInDoubt",
    "IdempotencyKeyError",
    "JSONDepthError",
    "JSONDuplicateKeyError",
    "JSONSizeError",
    "JSONSyntaxError",
    "OutputError",
    "OutputRefused",
    "OutputSyntaxError",
    "OutputValidationError",
    "ProviderError",
    "RetryableError",
    "SettingsError",
    "StoreError",
    "StreamAborted",
    "StreamError",
    "StreamFormatError",
    "StreamLimitExceeded",
    "StreamTimeout",
    "TokenLimitExceeded",
    "ToolDefinitionError",
    "ToolwireError",
    "UnknownFormat",
    "UsageError",
]


class ToolwireError(Exception):
    """Base class of every exception that toolwire raises."""


class JSONSyntaxError(ToolwireError, ValueError):
    """The input cannot continue (or end) as valid JSON.

    ``offset`` is the 0-based index, in characters of the whole input fed so far, of the
    first character that cannot continue valid JSON (for incomplete input at ``close()``,
    the length of the input).
    """

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(f"{message} at offset {offset}")
        self.msg = message
        self.offset = offset


class JSONDepthError(JSONSyntaxError):
    """Containers nest deeper than the parser's ``max_depth``."""


class JSONSizeError(JSONSyntaxError):
    """More characters were fed than the parser's ``max_size`` allows."""


class JSONDuplicateKeyError(JSONSyntaxError):
    """An object repeats a key (a parser made with ``reject_duplicates=True``).

    ``path`` is the repeated key's path from the root (its last item is the key, as
    decoded: ``"a"`` and ``"\\u0061"`` are the same key); ``offset`` is where the repeated
    key's opening quote is.
    """

    def __init__(self, message: str, offset: int, path: tuple[str | int, ...]) -> None:
        super().__init__(message, offset)
        self.path = path

    @property
    def key(self) -> str:
        """The repeated key."""
        return str(self.path[-1])


class StreamError(ToolwireError):
    """The stream did not end properly; ``partial`` holds what had arrived.

    A ``StreamError`` never comes with tool calls to execute: the calls in ``partial`` are
    evidence, not instructions. HTTP errors before the body (429, 500...) are not
    ``StreamError`` subclasses: they reach the caller as the SDK's own exceptions
    (``openai.RateLimitError``...), after ``run_turn``'s retries.
    """

    def __init__(self, message: str, partial: Partial | None = None) -> None:
        super().__init__(message)
        self.partial = partial

    def __str__(self) -> str:
        """The message, then the usage so far (reported and estimated), and for a stream
        that was cut, that closing it did not stop the provider's meter."""
        message = super().__str__()
        usage = getattr(self.partial, "usage", None)
        if usage is None:
            return message
        note = _usage_note(usage)
        if isinstance(self, StreamAborted):
            note += "; closing a stream does not stop the provider's meter"
        return f"{message} ({note})"


def _usage_note(usage: Any) -> str:
    """``usage so far: input 450, output ~124 (80 estimated)`` for a ``Usage``."""
    inputs = usage.all_input_tokens
    outputs = usage.all_output_tokens
    text = "usage so far: input " + ("not reported" if inputs is None else str(inputs))
    if outputs is not None:
        if usage.estimated_tokens:
            text += f", output ~{outputs} ({usage.estimated_tokens} estimated)"
        else:
            text += f", output {outputs}"
    cost = usage.cost
    if cost is not None:
        text += f", cost {'>= ' if cost.missing else ''}{cost.total:.6g} {cost.currency}"
    return text


class StreamAborted(StreamError):
    """The stream ended without the provider's terminal event."""


class StreamTimeout(StreamAborted, TimeoutError):
    """A driver deadline passed; ``kind`` is ``"first_event"``, ``"idle"`` or ``"total"``."""

    def __init__(
        self,
        message: str,
        partial: Partial | None = None,
        *,
        kind: Literal["first_event", "idle", "total"],
    ) -> None:
        super().__init__(message, partial)
        self.kind = kind


class TokenLimitExceeded(StreamError):
    """The provider stopped at its token limit (``length``, ``max_tokens``, ...)."""


class ContentFiltered(StreamError):
    """The provider withheld or cut the output (content filter, safety, refusal)."""


class OutputRefused(ContentFiltered):
    """The model refused instead of answering (OpenAI's ``refusal`` channel, Anthropic's
    ``stop_reason: "refusal"``); ``refusal`` is the refusal text (``""`` when the provider
    only said so). Never taken as output or as text."""

    def __init__(self, message: str, partial: Partial | None = None, *, refusal: str = ""):
        super().__init__(message, partial)
        self.refusal = refusal


class OutputError(StreamError):
    """The structured output (``output=``) is not the value asked for; it never becomes
    ``Response.output``."""


class OutputSyntaxError(OutputError, ValueError):
    """The output text is not JSON: ``offset`` is the 0-based index, in characters of the
    output text, of the first character that cannot continue a JSON value."""

    def __init__(self, message: str, partial: Partial | None = None, *, offset: int | None = 0):
        super().__init__(f"{message} at offset {offset}", partial)
        self.offset = offset


class OutputValidationError(OutputError, ValueError):
    """The output is JSON but violates its type or schema. ``errors`` are the validator's
    own (pydantic's error dicts, or toolwire's schema violations), ``path`` the JSON path of
    the completed part that failed (``()``: the whole output)."""

    def __init__(
        self,
        message: str,
        partial: Partial | None = None,
        *,
        errors: list[Any] | None = None,
        path: tuple[str | int, ...] = (),
    ) -> None:
        super().__init__(message, partial)
        self.errors = errors or []
        self.path = path


class ProviderError(StreamError):
    """The stream carried an error event or an error payload.

    ``error`` is the provider's error object as received (a dict where it was JSON).
    """

    def __init__(self, message: str, partial: Partial | None = None, *, error: Any = None) -> None:
        super().__init__(message, partial)
        self.error = error


class StreamFormatError(StreamError, ValueError):
    """A payload breaks the structure of its wire format; ``payload`` is that payload."""

    def __init__(
        self, message: str, partial: Partial | None = None, *, payload: Any = None
    ) -> None:
        super().__init__(message, partial)
        self.payload = payload


class StreamLimitExceeded(StreamError):
    """A configured limit was exceeded; ``limit`` names it and ``value`` is its setting."""

    def __init__(
        self, message: str, partial: Partial | None = None, *, limit: str, value: int
    ) -> None:
        super().__init__(message, partial)
        self.limit = limit
        self.value = value


class ArgumentsInvalid(ToolwireError, ValueError):
    """A tool's arguments do not fit its parameters.

    ``str(exc)`` is a message written for the model (tool, field paths, expected, received);
    ``tool`` is the tool's name and ``violations`` the individual problems.
    """

    def __init__(self, message: str, *, tool: str = "", violations: tuple[Any, ...] = ()):
        super().__init__(message)
        self.message = message
        self.tool = tool
        self.violations = violations


class IdempotencyKeyError(ToolwireError, ValueError):
    """Arguments or identity fields that cannot be turned into a key.

    Raised for arguments outside I-JSON (NaN, infinities, integers beyond 2**53 - 1,
    non-string object keys, lone surrogates, values that are not JSON at all) and for
    identity fields of the wrong type.
    """


class StoreError(ToolwireError):
    """A store failed, or does not enforce the conditional writes toolwire relies on.

    An outage, not a mistake in the calling code: the executor fails closed (the tool does
    not run) and a later attempt may succeed. Bad arguments to a store raise
    :class:`SettingsError` instead.
    """


class UsageError(ToolwireError):
    """The calling code used toolwire in a way it cannot work: a bug to fix, never an
    outage or a fault of the provider, and never worth retrying as it is.

    Raised as itself for a stream handle used out of order (outside its ``with`` block,
    iterated or entered twice, asked for its response before the end), an ``output=`` or
    ``output_tool=`` that cannot be validated, a ``Toolbox`` method or ``tool_results``
    given something of the wrong kind, and the other mistakes no subclass names."""


class ToolDefinitionError(UsageError, TypeError):
    """A tool cannot be turned into a schema, or was registered twice."""


class UnknownFormat(UsageError, ValueError):
    """A wire format name that toolwire does not know."""


class SettingsError(UsageError, ValueError):
    """A toolwire class or function was given a setting it cannot work with: an
    ``Executor`` or ``AsyncExecutor`` option (scope, timeout, lease, heartbeat, retention,
    store), a timeout or source of ``stream()`` / ``astream()``, a ``run_turn()`` toolbox
    that is not the executor's, a store argument (key, lease, DSN), a price table entry, or
    a response ``Executor.run`` cannot key (no response id, no timestamp, synthesised call
    ids and no ``turn=``)."""


class ConversationMismatch(UsageError):
    """A ``Conversation`` used against what its store holds: other initial messages for a
    known conversation id, or a turn whose calls another process is still running."""


class ApprovalError(UsageError, LookupError):
    """``approve`` or ``deny`` of a key under which no call awaits approval: ``status`` is
    ``None`` when the store holds no such call, else what it is (``"approved"``,
    ``"denied"``, ``"recording"`` while another worker is still storing it)."""

    def __init__(self, message: str, *, key: str, status: str | None = None) -> None:
        super().__init__(message)
        self.key = key
        self.status = status


class RetryableError(Exception):
    """Raised by a tool to say: nothing happened, the call may be retried.

    The executor releases the call's claim so that a later attempt runs the tool again.
    Raise it only before any side effect; any other exception is recorded as ``failed``
    and replayed.
    """


class EffectInDoubt(Exception):
    """Raised by a tool to say: the effect is in doubt, the call must not run again.

    For a request that went out and got no answer (the connection dropped, the server
    died): the executor records the call as ``unknown`` and never re-runs it on its own.
    """


# Users see ``toolwire.StreamAborted`` in tracebacks and reprs, not the private module;
# pickling still works because ``toolwire`` resolves every exported name.
for _name in __all__:
    globals()[_name].__module__ = "toolwire"
del _name
