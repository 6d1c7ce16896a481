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
    "ArgumentsInvalid": "_errors",
    "ContentFiltered": "_errors",
    "DriverSettingsError": "_errors",
    "DriverUsageError": "_errors",
    "ExecutorSettingsError": "_errors",
    "IdempotencyKeyError": "_errors",
    "InvalidOutcome": "_errors",
    "JSONDepthError": "_errors",
    "JSONSizeError": "_errors",
    "JSONSyntaxError": "_errors",
    "OutputDefinitionError": "_errors",
    "OutputError": "_errors",
    "OutputRefused": "_errors",
    "OutputSyntaxError": "_errors",
    "OutputValidationError": "_errors",
    "PriceTableError": "_errors",
    "ProviderError": "_errors",
    "RetryableError": "_errors",
    "StoreError": "_errors",
    "StoreSettingsError": "_errors",
    "StreamAborted": "_errors",
    "StreamError": "_errors",
    "StreamFormatError": "_errors",
    "StreamLimitExceeded": "_errors",
    "StreamTimeout": "_errors",
    "TokenLimitExceeded": "_errors",
    "ToolDefinitionError": "_errors",
    "ToolwireError": "_errors",
    "ToolboxInputError": "_errors",
    "UnknownFormat": "_errors",
    "UsageError": "_errors",
    # events
    "Finished": "_events",
    "OutputPreview": "_events",
    "ReasoningDelta": "_events",
    "StringAppended": "_events",
    "TextDelta": "_events",
    "ToolCallArguments": "_events",
    "ToolCallEnded": "_events",
    "ToolCallRejected": "_events",
    "ToolCallStarted": "_events",
    "UsageReported": "_events",
    "ValueCompleted": "_events",
    "ValueStarted": "_events",
    # §1 partial JSON
    "MISSING": "_partial_json",
    "PartialJSONParser": "_partial_json",
    "parse_partial": "_partial_json",
    # §2 assembling
    "Partial": "_response",
    "PartialCall": "_response",
    "RejectedCall": "_response",
    "Response": "_response",
    "StreamAssembler": "_assembler",
    "ToolCall": "_response",
    "Usage": "_response",
    # usage, cost and accounting
    "Cost": "_response",
    "ModelPrice": "_pricing",
    "Prices": "_pricing",
    "UsageLedger": "_ledger",
    "estimate_tokens": "_usage_estimate",
    # §4 driving a live stream
    "AsyncStreamHandle": "_drivers",
    "StreamHandle": "_drivers",
    "astream": "_drivers",
    "stream": "_drivers",
    # §3 tools and execution
    "AsyncExecutor": "_executor",
    "InvalidCall": "_toolbox",
    "ValidCall": "_toolbox",
    "Executor": "_executor",
    "MemoryStore": "stores.memory",
    "Outcome": "_outcome",
    "RunawayCall": "_runaways",
    "SQLiteStore": "stores.sqlite",
    "Tool": "_toolbox",
    "ToolContext": "_context",
    "Toolbox": "_toolbox",
    "arguments_hash": "_idempotency",
    "tool_results": "_results",
    # §5 a whole turn
    "EarlyAbort": "_early_abort",
    "RetryPolicy": "_retrying",
    "Turn": "_turn",
    "arun_turn": "_turn",
    "run_turn": "_turn",
}

# A literal list, so that type checkers see what is re-exported; a test keeps it equal to
# the keys of _EXPORTS.
__all__ = [
    "ArgumentsInvalid",
    "AsyncExecutor",
    "AsyncStreamHandle",
    "ContentFiltered",
    "Cost",
    "DriverSettingsError",
    "DriverUsageError",
    "EarlyAbort",
    "Executor",
    "ExecutorSettingsError",
    "Finished",
    "IdempotencyKeyError",
    "InvalidCall",
    "InvalidOutcome",
    "JSONDepthError",
    "JSONSizeError",
    "JSONSyntaxError",
    "MISSING",
    "MemoryStore",
    "ModelPrice",
    "Outcome",
    "OutputDefinitionError",
    "OutputError",
    "OutputPreview",
    "OutputRefused",
    "OutputSyntaxError",
    "OutputValidationError",
    "Partial",
    "PartialCall",
    "PartialJSONParser",
    "PriceTableError",
    "Prices",
    "ProviderError",
    "ReasoningDelta",
    "RejectedCall",
    "Response",
    "RetryPolicy",
    "RetryableError",
    "RunawayCall",
    "SQLiteStore",
    "StoreError",
    "StoreSettingsError",
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
    "ToolboxInputError",
    "ToolwireError",
    "Turn",
    "UnknownFormat",
    "Usage",
    "UsageError",
    "UsageLedger",
    "UsageReported",
    "ValidCall",
    "ValueCompleted",
    "ValueStarted",
    "arguments_hash",
    "arun_turn",
    "astream",
    "estimate_tokens",
    "parse_partial",
    "run_turn",
    "stream",
    "tool_results",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolwire' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"toolwire.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


if TYPE_CHECKING:
    from ._assembler import StreamAssembler
    from ._context import ToolContext
    from ._drivers import AsyncStreamHandle, StreamHandle, astream, stream
    from ._early_abort import EarlyAbort
    from ._errors import (
        ArgumentsInvalid,
        ContentFiltered,
        DriverSettingsError,
        DriverUsageError,
        ExecutorSettingsError,
        IdempotencyKeyError,
        InvalidOutcome,
        JSONDepthError,
        JSONSizeError,
        JSONSyntaxError,
        OutputDefinitionError,
        OutputError,
        OutputRefused,
        OutputSyntaxError,
        OutputValidationError,
        PriceTableError,
        ProviderError,
        RetryableError,
        StoreError,
        StoreSettingsError,
        StreamAborted,
        StreamError,
        StreamFormatError,
        StreamLimitExceeded,
        StreamTimeout,
        TokenLimitExceeded,
        ToolboxInputError,
        ToolDefinitionError,
        ToolwireError,
        UnknownFormat,
        UsageError,
    )
    from ._events import (
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
    from ._executor import AsyncExecutor, Executor
    from ._idempotency import arguments_hash
    from ._ledger import UsageLedger
    from ._outcome import Outcome
    from ._partial_json import MISSING, PartialJSONParser, parse_partial
    from ._pricing import ModelPrice, Prices
    from ._response import (
        Cost,
        Partial,
        PartialCall,
        RejectedCall,
        Response,
        ToolCall,
        Usage,
    )
    from ._results import tool_results
    from ._retrying import RetryPolicy
    from ._toolbox import InvalidCall, Tool, Toolbox, ValidCall
    from ._turn import Turn, arun_turn, run_turn
    from ._usage_estimate import estimate_tokens
    from .stores.memory import MemoryStore
    from .stores.sqlite import SQLiteStore
