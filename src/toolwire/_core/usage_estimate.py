"""Estimating output tokens from what a stream delivered, for streams whose usage is missing.

Estimates are flagged and never replace a reported count; ``tiktoken`` is used only when
its encoding is available offline. Pure; O(size of the text), bounded for large texts.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["estimate_tokens"]

# One match is about one token of a BPE tokeniser (o200k, cl100k, Claude's, Gemini's);
# see the module docstring for each alternative.
# The common ASCII classes come first (a regex tries alternatives in order); a CJK
# character must be tried before the other letters, which include it.
_PIECES = re.compile(
    r"[A-Za-z]{1,8}"
    r"|[^\w\s]{1,3}"
    r"|\d{1,3}"
    r"|\n+|[ \t]{2,}"
    r"|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]"
    r"|[^\W\d_A-Za-z]{1,3}"
)
_SAMPLE_ABOVE = 8_192  # characters counted exactly; longer texts are sampled
_WINDOWS = 8
_WINDOW = 1_024

CALL_OVERHEAD: dict[str, tuple[int, int]] = {
    # format: (tokens per call, extra tokens once when a response has 2+ calls)
    "openai-chat": (10, 10),
    "openai-responses": (11, 14),
    "anthropic": (40, 0),
    "gemini": (8, 0),
    "bedrock-converse": (20, 0),
    "cohere": (25, 0),
    "ollama": (10, 10),
}
"""Tokens a provider spends on a tool call's framing, by wire format (calibrated on the
corpus; formats not listed use ``openai-chat``'s)."""

# Formats whose output count leaves reasoning out (Gemini's thoughtsTokenCount): estimated
# reasoning goes to reasoning_tokens there, to output_tokens everywhere else.
REASONING_APART = frozenset({"gemini"})

HEURISTIC = "heuristic"


def heuristic_tokens(text: str) -> int:
    """About how many tokens ``text`` is for a modern BPE tokeniser (see the module
    docstring); deterministic, O(len(text)) up to 8,192 characters and bounded above."""
    n = len(text)
    if n <= _SAMPLE_ABOVE:
        return len(_PIECES.findall(text)) if n else 0
    # Evenly spaced windows, scaled: the cost stays bounded and the count deterministic.
    step = (n - _WINDOW) / (_WINDOWS - 1)
    counted = 0
    for i in range(_WINDOWS):
        start = int(i * step)
        counted += len(_PIECES.findall(text, start, start + _WINDOW))
    return max(1, round(counted * n / (_WINDOWS * _WINDOW)))


# ------------------------------------------------------------------------ tiktoken

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

Counter = Callable[[str], int]

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
    ``"heuristic"``), remembered per model."""
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
        from .._errors import UsageError

        raise UsageError(f"estimate_tokens() takes a str, not {type(text).__name__}")
    if not text:
        return 0
    count, _ = counter_for(model)
    return count(text)


# ------------------------------------------------------------------- output estimate


@dataclass(frozen=True, slots=True)
class OutputEstimate:
    """Estimated tokens of content that no usage report covered: ``output`` goes to
    ``Usage.output_tokens``, ``reasoning`` to ``Usage.reasoning_tokens`` (only for formats
    that count reasoning apart from the output), ``method`` names the counter."""

    output: int
    reasoning: int
    method: str


def estimate_output(
    *,
    format: str | None,
    model: str | None,
    text: str,
    reasoning: str,
    new_calls: Sequence[tuple[str, str]],
    more_arguments: Sequence[str],
    calls_in_response: int,
) -> OutputEstimate:
    """Estimate the tokens of content that arrived after the last usage report.

    ``new_calls`` are the ``(name, argument text)`` of calls that began after it (each
    costs its framing overhead); ``more_arguments`` the argument text that calls begun
    before it received since; ``calls_in_response`` the calls of the whole response (the
    wrapper of parallel calls is charged once, with the call that makes them two).
    """
    count, method = counter_for(model)
    per_call, parallel = CALL_OVERHEAD.get(format or "", CALL_OVERHEAD["openai-chat"])
    output = count(text) if text else 0
    for name, arguments in new_calls:
        output += per_call + (count(name) if name else 0) + (count(arguments) if arguments else 0)
    for arguments in more_arguments:
        if arguments:
            output += count(arguments)
    before = calls_in_response - len(new_calls)
    if new_calls and before < 2 <= calls_in_response:
        output += parallel
    thought = count(reasoning) if reasoning else 0
    if format in REASONING_APART:
        return OutputEstimate(output=output, reasoning=thought, method=method)
    return OutputEstimate(output=output + thought, reasoning=0, method=method)
