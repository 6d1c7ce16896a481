"""What Cohere v2 chat refuses in a request's messages (the simulator's 400).

Cohere's v2 messages copy OpenAI chat's, and so does its rule: ``tool`` messages answer
the ``tool_calls`` ids of the assistant message before them, and every call is answered
(``_chat_messages``, shared with OpenAI chat); Cohere words the refusal ``invalid request: ...``.
O(size of the body).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._request_reading import ServedCalls
from ._chat_messages import check_request as check_chat

__all__ = ["check_request"]


def check_request(body: Mapping[str, Any], served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body`` (see the module docstring), or
    ``None`` when it would accept it."""
    problem = check_chat(body, served)
    return None if problem is None else f"invalid request: {problem}"
