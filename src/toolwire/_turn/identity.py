"""Keys across turns: which identity ``run_turn`` gives the executor for each turn.

The executor keys a call by ``(scope, response id, provider timestamp, turn, tool name,
call id)`` plus the canonical hash of its arguments (``_idempotency``). Across turns:

* **Providers with a response id** (OpenAI chat and Responses, Anthropic, Gemini, Cohere):
  the response id names the generation. A new request gets a new generation, a new id,
  new keys; the same generation read again (a replayed recording, a resumed background
  response, a proxy's cache) gets the same keys, so a call that ran is replayed, never
  run again. ``run_turn`` adds nothing: the provider's identity is the strongest there is,
  and a turn read back through another request (a Responses stream resumed with ``GET``)
  keeps its keys.
* **Providers without one** (Ollama's native API; Bedrock ConverseStream, whose tool-use
  ids are random per generation anyway): the turn's identity comes from the request that
  produced it, :func:`request_identity`: the SHA-256 of the HTTP method, the URL path and
  the body bytes. Two turns of a conversation never share it (each request repeats the
  whole conversation, the previous turn's messages included, so the bodies differ), and
  the same request made again after a crash has it again. Headers (credentials, the SDKs'
  retry counters) and the query string (Gemini's ``key=``) are left out. The body is
  taken from the ``httpx.Request`` the source exposes: the ``openai`` and ``anthropic``
  SDK streams and managers keep their ``httpx.Response``, whose ``.request.content`` is
  the JSON body they sent; an ``httpx.Response`` the same. A source that hides its
  request (google-genai's generator, boto3's ``EventStream``, the ``ollama`` client, an
  iterable) needs ``run_turn(..., turn=...)``: any string naming the request (a turn
  counter of the conversation, a digest of the messages). A ``turn=`` given is always
  used, with or without a response id. A response that carries no response id, no
  timestamp and synthesised call ids, with no identity from either place, is refused
  before anything runs.

What a retried turn does. Replayed: the same request, answered with the same response
identity (and, for id-less providers, the same timestamp and bytes): every call that
completed returns its stored result and runs nothing. Not replayed: a new generation. A
provider answering the same request again generates a new response, new call ids, new
keys: those calls are new calls and may run again, even when the model repeats the same
arguments. A tool whose effect must not happen twice across generations should forward
``ctx.idempotency_key`` downstream **and** dedupe on its own business key (the arguments
that name the effect: an order number, a transfer reference), or the application should
persist each turn's messages before it runs the next.

Cost: one SHA-256 over the request body per turn (the body is already in memory).
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
