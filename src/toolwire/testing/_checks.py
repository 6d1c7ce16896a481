"""Request checks: refuse, with the provider's 400, what the provider itself would refuse.

The simulator is a test of the messages a client builds, so each endpoint checks the
conversation the way its provider does, and answers a request the real API would refuse
with a 400 and the provider's error body (the SDK then raises its ``BadRequestError``).
What each provider refuses is its own knowledge, in its package
(``_providers/<name>/request_checks.py``, declared as ``Provider.check_request``): tool
results must answer the calls of the assistant turn before them, and every call must be
answered (OpenAI chat and Responses, Anthropic, Gemini, Bedrock, Cohere); Ollama, which
matches results by position and name, declares no check and refuses nothing. This module
only dispatches: a body that is not a JSON object is refused whatever the format.

Each check reads the request once: O(size of the body). A check returns the provider's
error message, or ``None`` when the request is acceptable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._providers import provider
from .._providers._request_reading import ServedCalls

__all__ = ["check_request"]


def check_request(format: str, body: Any, served: ServedCalls) -> str | None:
    """The provider's refusal message for ``body``, or ``None`` when it is acceptable.

    ``served(response_id)`` gives the call ids of a response this simulator served (for
    ``previous_response_id``), or ``None`` for an id it never served.
    """
    if not isinstance(body, Mapping):
        return "the request body must be a JSON object"
    check = provider(format).check_request
    return None if check is None else check(body, served)
