"""What to tell the model after its answer was cut at the output token limit, so the
conversation goes on instead of asking the same request again."""

from __future__ import annotations

from typing import Any

from .._core.response import ContentPart, Response
from .._errors import TokenLimitExceeded, UsageError
from .._providers import FORMATS
from .._providers._messages import assistant_turn

__all__ = ["token_limit_messages"]

TOKEN_LIMIT_NOTE = (
    "Your previous answer was cut off at the output token limit before it was complete, "
    "so none of its tool calls was run. Answer again in fewer tokens: be brief, and split "
    "large tool arguments into several smaller calls."
)
"""The user note :func:`token_limit_messages` appends."""

_CUT = "(my answer was cut off at the output token limit)"


def token_limit_messages(
    error: TokenLimitExceeded, format: str, *, note: str = TOKEN_LIMIT_NOTE
) -> list[dict[str, Any]]:
    """The messages that continue a conversation after ``error``: the assistant turn with
    the text that arrived (a placeholder when none did; its calls are left out, none ran)
    and a user message saying what happened (``note``), in ``format``. Append them and
    make the next request."""
    if not isinstance(error, TokenLimitExceeded):
        raise UsageError(f"token_limit_messages() takes a TokenLimitExceeded, not {error!r}")
    entry = FORMATS.provider(format)  # UnknownFormat for a format no provider has
    partial = error.partial
    text = partial.text if partial is not None and partial.text.strip() else _CUT
    said = Response(
        text=text,
        reasoning="",
        tool_calls=[],
        rejected=[],
        finish_reason="stop",
        raw_finish_reason=None,
        usage=None,
        response_id=None,
        model=None,
        format=format,
        parts=[ContentPart(kind="text", text=text)],
    )
    return [*assistant_turn(said, [], format), entry.user_message(note)]
