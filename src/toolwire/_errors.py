"""Every exception toolwire raises, in one tree.

Bad model output is data (``ToolCallRejected``, ``Response.rejected``, a ``rejected``
outcome); a broken stream, a broken payload or a broken store is an exception.

::

    ToolwireError
    ├── JSONSyntaxError (ValueError)        invalid JSON at .offset
    │   ├── JSONDepthError                  nesting deeper than the parser's max_depth
    │   └── JSONSizeError                   more input than the parser's max_size
    ├── StreamError                         the stream did not end properly; .partial
    │   ├── StreamAborted                   no terminal event (cut, EOF, cancelled)
    │   │   └── StreamTimeout (TimeoutError) a deadline of the driver passed; .kind
    │   ├── TokenLimitExceeded              length / max_tokens / MAX_TOKENS / max_output_tokens
    │   ├── ContentFiltered                 the provider withheld the output
    │   ├── ProviderError                   an error event or error payload in the stream
    │   ├── StreamFormatError (ValueError)  a payload that breaks its wire format; .payload
    │   └── StreamLimitExceeded             too many calls, too large arguments or text
    ├── ToolDefinitionError (TypeError)     a tool that cannot be described or called
    ├── ToolboxInputError (TypeError)       a Toolbox method given something of the wrong kind
    ├── ArgumentsInvalid (ValueError)       arguments that do not fit a tool (Tool.validate)
    ├── IdempotencyKeyError (ValueError)    arguments outside I-JSON, so no canonical hash
    ├── ExecutorSettingsError (TypeError, ValueError)  unusable Executor settings
    ├── DriverSettingsError (TypeError, ValueError)    stream()/astream(): bad timeout or source
    ├── DriverUsageError (RuntimeError)     a stream handle used outside ``with``, iterated twice
    ├── InvalidOutcome (ValueError)         tool_results() given something not an Outcome
    ├── UnknownFormat (ValueError)          a format name toolwire does not know
    └── StoreError                          a store that failed or cannot be trusted

    RetryableError                          raised by a tool: nothing happened, may retry

``RetryableError`` is deliberately not a ``ToolwireError``: tools raise it, toolwire never
does. The errors of the tools layer and the executor live beside the code that raises them
(``_toolbox``, ``_idempotency``, ``_executor``, ``_results``, ``_drivers``); all are exported from
``toolwire``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ._response import Partial

__all__ = [
    "ContentFiltered",
    "JSONDepthError",
    "JSONSizeError",
    "JSONSyntaxError",
    "ProviderError",
    "RetryableError",
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


class StreamError(ToolwireError):
    """The stream did not end properly; ``partial`` holds what had arrived.

    A ``StreamError`` never comes with tool calls to execute: the calls in ``partial`` are
    evidence, not instructions.
    """

    def __init__(self, message: str, partial: Partial | None = None) -> None:
        super().__init__(message)
        self.partial = partial


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


class ToolDefinitionError(ToolwireError, TypeError):
    """A tool cannot be turned into a schema, or was registered twice."""


class UnknownFormat(ToolwireError, ValueError):
    """A wire format name that toolwire does not know."""


class StoreError(ToolwireError):
    """A store failed, or does not enforce the conditional writes toolwire relies on."""


class RetryableError(Exception):
    """Raised by a tool to say: nothing happened, the call may be retried.

    The executor releases the call's claim so that a later attempt runs the tool again.
    Raise it only before any side effect; any other exception is recorded as ``failed``
    and replayed.
    """
