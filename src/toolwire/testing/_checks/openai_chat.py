"""What OpenAI Chat Completions refuses in a request (the simulator's 400): the shared
chat-message rules (``_chat_messages``), worded as OpenAI words them. O(size of the body).
"""

from __future__ import annotations

from ._chat_messages import check_request

__all__ = ["check_request"]
