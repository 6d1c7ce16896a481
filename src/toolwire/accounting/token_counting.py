"""Token counting for a model: tiktoken where it knows the model and has the encoding
offline, else the core's heuristic (``_core.usage_estimate``).

Reads the environment and probes tiktoken's cache directory, never the network. Counters
are remembered per model (256 models) behind a lock; counting is O(size of the text).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from typing import Any

from .._core.usage_estimate import HEURISTIC, Counter, heuristic_tokens
from .._errors import UsageError

__all__ = ["estimate_tokens"]

# Where tiktoken keeps each encoding's file (tiktoken_ext/openai_public.py).
_BLOBS = {
    "r50k_base": "r50k_base",
    "p50k_base": "p50k_base",
    "p50k_edit": "p50k_base",
    "cl100k_base": "cl100k_base",
    "o200k_base": "o200k_base",
    "o200k_harmony": "o200k_base",
}
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"

_counters: dict[str, tuple[Counter, str]] = {}
_counters_lock = threading.Lock()
_MAX_MODELS = 256  # remembered models; a stream of invented names costs no memory


def _offline(encoding: str) -> bool:
    """Whether tiktoken can load ``encoding`` without the network: already loaded in this
    process, or its file is in tiktoken's cache directory (tiktoken/load.py's rule)."""
    import tiktoken.registry

    if encoding in tiktoken.registry.ENCODINGS:
        return True
    blob = _BLOBS.get(encoding)
    if blob is None:
        return False
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache:
        return False  # caching disabled: every load downloads
    key = hashlib.sha1(_BLOB_URL.format(blob).encode()).hexdigest()
    return os.path.exists(os.path.join(cache, key))


def _tiktoken_counter(model: str) -> tuple[Counter, str] | None:
    """tiktoken's count for ``model`` when tiktoken is installed, knows the model and has
    its encoding offline; ``None`` otherwise (never raises, never downloads)."""
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        name = tiktoken.encoding_name_for_model(model)
        if not _offline(name):
            return None
        encoding: Any = tiktoken.get_encoding(name)
    except Exception:  # an unknown model, a broken cache: the heuristic will do
        return None

    def count(text: str) -> int:
        # disallowed_special=(): a model may write "<|endoftext|>" as text; count it so
        return len(encoding.encode(text, disallowed_special=()))

    return count, f"tiktoken:{name}"


def counter_for(model: str | None) -> tuple[Counter, str]:
    """The token counter for ``model`` and its name (``"tiktoken:o200k_base"`` or
    ``"heuristic"``), remembered per model: what ``StreamAssembler`` hands the core
    assembler to estimate output no usage report covered."""
    if not model:
        return heuristic_tokens, HEURISTIC
    found = _counters.get(model)
    if found is not None:
        return found
    found = _tiktoken_counter(model) or (heuristic_tokens, HEURISTIC)
    with _counters_lock:
        if len(_counters) >= _MAX_MODELS:
            _counters.clear()
        _counters[model] = found
    return found


def estimate_tokens(text: str, *, model: str | None = None) -> int:
    """About how many tokens ``text`` is for ``model``.

    Uses tiktoken when it is installed, knows ``model`` and has its encoding offline (it
    never downloads one), else toolwire's heuristic (a BPE-like count by script; see
    docs/usage-and-cost.md). Useful for what toolwire cannot see, such as the input
    tokens of a request whose stream was cut before the provider reported usage.
    """
    if not isinstance(text, str):
        raise UsageError(f"estimate_tokens() takes a str, not {type(text).__name__}")
    if not text:
        return 0
    count, _ = counter_for(model)
    return count(text)
