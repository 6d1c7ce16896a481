"""Keys across turns: which identity ``run_turn`` gives the executor for each turn.

The provider's response id when there is one; otherwise the SHA-256 of the request
(method, path, body), or ``turn=``. O(size of the request body) per turn.
"""

from __future__ import annotations

import hashlib
from typing import Any

from .._core.response import Response

__all__ = ["needs_identity", "request_identity", "turn_identity"]

PREFIX = "request-sha256:"


def request_identity(request: Any) -> str | None:
    """``"request-sha256:<hex>"`` of an ``httpx.Request``'s method, URL path and body, or
    ``None`` when there is no request or its body cannot be read without consuming it (a
    streamed upload)."""
    if request is None:
        return None
    try:
        body = request.content
        method = str(request.method)
        path = str(request.url.path)
    except Exception:  # httpx.RequestNotRead, or not an httpx request at all
        return None
    if not isinstance(body, bytes):
        return None
    digest = hashlib.sha256()
    digest.update(method.encode("ascii", "replace") + b" ")
    digest.update(path.encode("utf-8", "surrogatepass") + b"\n")
    digest.update(body)
    return PREFIX + digest.hexdigest()


def needs_identity(response: Response) -> bool:
    """Whether the executor can key ``response`` only with a turn identity: no response
    id, no provider timestamp and call ids synthesised by toolwire."""
    return (
        response.response_id is None
        and response.created is None
        and any(call.synthetic_id for call in response.tool_calls)
    )


def turn_identity(response: Response, given: str | None, request: Any) -> str | None:
    """The ``turn=`` for ``executor.run``: the caller's, else for a response without a
    response id the request's identity, else ``None`` (see the module docstring)."""
    if given is not None:
        return given
    if response.response_id is not None:
        return None
    return request_identity(request)
