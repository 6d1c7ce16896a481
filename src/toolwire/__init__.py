"""toolwire: streamed LLM tool calls made safe and fast.

``import toolwire`` is cheap: names are loaded from their private modules on first use, so
optional dependencies (pydantic for ``@tool``, redis, psycopg) are imported only by the
code that needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0.dev0"

# name -> private module that defines it
_EXPORTS: dict[str, str] = {
    # errors
    "ApprovalError": "_errors",
    "ArgumentsInvalid": "_errors",
    "ContentFiltered": "_errors",
    "EffectInDoubt": "_errors",
    "IdempotencyKeyError": "_errors",
    "JSONDepthError": "_errors",
    "JSONDuplicateKeyError": "_errors",
    "JSONSizeError": "_errors",
    "JSONSyntaxError": "_errors",
    "OutputError": "_errors",
    "OutputRefused": "_errors",
    "OutputSyntaxError": "_errors",
    "OutputValidationError": "_errors",
    "ProviderError": "_errors",
    "RetryableError": "_errors",
    "SettingsError": "_errors",
    "StoreError": "_errors",
    "StreamAborted": "_errors",
    "StreamError": "_errors",
    "StreamFormatError": "_errors",
    "StreamLimitExceeded": "_errors",
    "StreamTimeout": "_errors",
    "TokenLimitExceeded": "_errors",
    "ToolDefinitionError": "_errors",
    "ToolwireError": "_errors",
    "UnknownFormat": "_errors",
    "UsageError": "_errors",
    # events
    "Finished": "_core.events",
    "OutputPreview": "_core.events",
    "ReasoningDelta": "_core.events",
    "StringAppended": "_core.events",
    "TextDelta": "_core.events",
    "ToolCallArguments": "_core.events",
    "ToolCallEnded": "_core.events",
    "ToolCallRejected": "_core.events",
    "ToolCallStarted": "_core.events",
    "UsageReported": "_core.events",
    "ValueCompleted": "_core.events",
    "ValueStarted": "_core.events",
    # partial JSON
    "MISSING": "_core.partial_json",
    "PartialJSONParser": "_core.partial_json",
    "parse_partial": "_core.partial_json",
    # assembling
    "Partial": "_core.response",
    "PartialCall": "_core.response",
    "RejectedCall": "_core.response",
    "Response": "_core.response",
    "StreamAssembler": "_output.assembler",
    "ToolCall": "_core.response",
    "Usage": "_core.response",
    # driving a live stream
    "AsyncStreamHandle": "_streaming.drivers",
    "StreamHandle": "_streaming.drivers",
    "astream": "_streaming.drivers",
    "stream": "_streaming.drivers",
    # tools and execution
    "AsyncExecutor": "_execution.executor",
    "InvalidCall": "_tools.toolbox",
    "ValidCall": "_tools.toolbox",
    "Executor": "_execution.executor",
    "MemoryStore": "stores.memory",
    "Outcome": "_core.outcome",
    "PendingCall": "_execution.approvals",
    "RunawayCall": "_execution.runaways",
    "SQLiteStore": "stores.sqlite",
    "Tool": "_tools.toolbox",
    "ToolContext": "_tools.context",
    "Toolbox": "_tools.toolbox",
    "MCPToolError": "_tools.mcp",
    "MCPTools": "_tools.mcp",
    "arguments_hash": "_execution.idempotency",
    "tool_results": "_providers._messages",
    "File": "_core.content",
    "Image": "_core.content",
    # a whole turn
    "EarlyAbort": "_turn.early_abort",
    "Turn": "_turn.run",
    "arun_turn": "_turn.run",
    "run_turn": "_turn.run",
    # durable conversations
    "AsyncConversation": "_conversation.conversation",
    "Conversation": "_conversation.conversation",
    "ConversationMismatch": "_errors",
    "Recording": "_core.recording",
    "arecord": "_conversation.recording",
    "record": "_conversation.recording",
    "token_limit_messages": "_conversation.token_limit",
}

# A literal list, so that type checkers see what is re-exported; a test keeps it equal to
# the keys of _EXPORTS.
__all__ = [
    "ApprovalError",
    "ArgumentsInvalid",
    "AsyncConversation",
    "AsyncExecutor",
    "AsyncStreamHandle",
    "ContentFiltered",
    "Conversation",
    "ConversationMismatch",
    "EarlyAbort",
    "EffectInDoubt",
    "Executor",
    "File",
    "Finished",
    "IdempotencyKeyError",
    "Image",
    "InvalidCall",
    "JSONDepthError",
    "JSONDuplicateKeyError",
    "JSONSizeError",
    "JSONSyntaxError",
    "MCPToolError",
    "MCPTools",
    "MISSING",
    "MemoryStore",
    "Outcome",
    "OutputError",
    "OutputPreview",
    "OutputRefused",
    "OutputSyntaxError",
    "OutputValidationError",
    "Partial",
    "PartialCall",
    "PartialJSONParser",
    "PendingCall",
    "ProviderError",
    "ReasoningDelta",
    "Recording",
    "RejectedCall",
    "Response",
    "RetryableError",
    "RunawayCall",
    "SQLiteStore",
    "SettingsError",
    "StoreError",
    "StreamAborted",
    "StreamAssembler",
    "StreamError",
    "StreamFormatError",
    "StreamHandle",
    "StreamLimitExceeded",
    "StreamTimeout",
    "StringAppended",
    "TextDelta",
    "TokenLimitExceeded",
    "Tool",
    "ToolCall",
    "ToolCallArguments",
    "ToolCallEnded",
    "ToolCallRejected",
    "ToolCallStarted",
    "ToolContext",
    "ToolDefinitionError",
    "Toolbox",
    "ToolwireError",
    "Turn",
    "UnknownFormat",
    "Usage",
    "UsageError",
    "UsageReported",
    "ValidCall",
    "ValueCompleted",
    "ValueStarted",
    "arecord",
    "arguments_hash",
    "arun_turn",
    "astream",
    "parse_partial",
    "record",
    "run_turn",
    "stream",
    "token_limit_messages",
    "tool_results",
]


# Names that moved to a public submodule: name -> that submodule.
_MOVED: dict[str, str] = {
    "Cost": "accounting",
    "ModelPrice": "accounting",
    "Prices": "accounting",
    "UsageLedger": "accounting",
    "estimate_tokens": "accounting",
}

# Public submodules that ``toolwire.<name>`` loads on first use.
_SUBMODULES = frozenset({"accounting"})


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f"toolwire.{module}"), name)
        globals()[name] = value  # later lookups skip __getattr__
        return value
    if name in _SUBMODULES:
        return importlib.import_module(f"toolwire.{name}")  # binds toolwire.<name> too
    moved = _MOVED.get(name)
    if moved is not None:
        raise AttributeError(
            f"module 'toolwire' has no attribute {name!r}: it is toolwire.{moved}.{name}"
        )
    raise AttributeError(f"module 'toolwire' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


if TYPE_CHECKING:
    from . import accounting as accounting
    from ._conversation.conversation import AsyncConversation, Conversation
    from ._conversation.recording import arecord, record
    from ._conversation.token_limit import token_limit_messages
    from ._core.content import File, Image
    from ._core.events import (
        Finished,
        OutputPreview,
        ReasoningDelta,
        StringAppended,
        TextDelta,
        ToolCallArguments,
        ToolCallEnded,
        ToolCallRejected,
        ToolCallStarted,
        UsageReported,
        ValueCompleted,
        ValueStarted,
    )
    from ._core.outcome import Outcome
    from ._core.partial_json import MISSING, PartialJSONParser, parse_partial
    from ._core.recording import Recording
    from ._core.response import Partial, PartialCall, RejectedCall, Response, ToolCall, Usage
    from ._errors import (
        ApprovalError,
        ArgumentsInvalid,
        ContentFiltered,
        ConversationMismatch,
        EffectInDoubt,
        IdempotencyKeyError,
        JSONDepthError,
        JSONDuplicateKeyError,
        JSONSizeError,
        JSONSyntaxError,
        OutputError,
        OutputRefused,
        OutputSyntaxError,
        OutputValidationError,
        ProviderError,
        RetryableError,
        SettingsError,
        StoreError,
        StreamAborted,
        StreamError,
        StreamFormatError,
        StreamLimitExceeded,
        StreamTimeout,
        TokenLimitExceeded,
        ToolDefinitionError,
        ToolwireError,
        UnknownFormat,
        UsageError,
    )
    from ._execution.approvals import PendingCall
    from ._execution.executor import AsyncExecutor, Executor
    from ._execution.idempotency import arguments_hash
    from ._execution.runaways import RunawayCall
    from ._output.assembler import StreamAssembler
    from ._providers._messages import tool_results
    from ._streaming.drivers import AsyncStreamHandle, StreamHandle, astream, stream
    from ._tools.context import ToolContext
    from ._tools.mcp import MCPToolError, MCPTools
    from ._tools.toolbox import InvalidCall, Tool, Toolbox, ValidCall
    from ._turn.early_abort import EarlyAbort
    from ._turn.run import Turn, arun_turn, run_turn
    from .stores.memory import MemoryStore
    from .stores.sqlite import SQLiteStore
