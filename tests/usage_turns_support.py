"""A streamed turn whose usage carries the counts beyond input and output (1-hour cache
writes, web searches): read by the usage tests (``tests/core``) and priced by the pricing
tests (``tests/accounting``)."""

from __future__ import annotations

from typing import Any

# A streamed Anthropic turn that wrote to both cache lifetimes and ran two web searches,
# its usage objects shaped like the Messages API reference.
ANTHROPIC_SEARCH_TURN: list[dict[str, Any]] = [
    {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-20250514",
            "content": [],
            "stop_reason": None,
            "usage": {
                "input_tokens": 50,
                "cache_creation_input_tokens": 3000,
                "cache_read_input_tokens": 0,
                "cache_creation": {
                    "ephemeral_5m_input_tokens": 1000,
                    "ephemeral_1h_input_tokens": 2000,
                },
                "output_tokens": 1,
            },
        },
    },
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny"}},
    {"type": "content_block_stop", "index": 0},
    {
        "type": "message_delta",
        "delta": {"stop_reason": "end_turn", "stop_sequence": None},
        "usage": {"output_tokens": 120, "server_tool_use": {"web_search_requests": 2}},
    },
    {"type": "message_stop"},
]
