"""The simulator's thinking signatures: a seal over the thinking text and the blocks before it.

Anthropic signs each thinking block and refuses a request whose echoed thinking, or the
blocks before it in the assistant message, differ from what it sent. The simulator's
signature is ``twsim1.<nonce>.<digest>``, the digest a SHA-256 over the nonce, the thinking
text and the canonical JSON of the blocks before it (keys sorted, ``None`` values dropped,
as an SDK's re-serialisation may add them), so a request check can verify it without state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["PREFIX", "seal", "unsealed"]

PREFIX = "twsim1."


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _digest(nonce: str, thinking: str, before: Sequence[Any]) -> str:
    text = json.dumps([nonce, thinking, _plain(list(before))], sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:40]


def seal(nonce: str, thinking: str, before: Sequence[Any] = ()) -> str:
    """The signature of a thinking block of text ``thinking`` after the blocks ``before``."""
    return f"{PREFIX}{nonce}.{_digest(nonce, thinking, before)}"


def unsealed(signature: str, thinking: Any, before: Sequence[Any]) -> bool:
    """Whether ``signature`` is one of the simulator's that does not match this thinking
    text and these blocks before it (a signature the simulator did not make: ``False``)."""
    if not signature.startswith(PREFIX):
        return False
    nonce, _, digest = signature[len(PREFIX) :].partition(".")
    return not isinstance(thinking, str) or digest != _digest(nonce, thinking, before)
