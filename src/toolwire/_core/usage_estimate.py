"""Estimating output tokens from what a stream delivered, for streams whose usage is missing.

Estimates are flagged and never replace a reported count. The counter is the caller's
(``toolwire.accounting`` passes tiktoken's where it is offline); the default is the
heuristic here. Pure; O(size of the text), bounded for large texts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Counter", "CounterFinder", "estimate_output", "heuristic_counter", "heuristic_tokens"]

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


Counter = Callable[[str], int]
"""Counts the tokens of a text."""

CounterFinder = Callable[[str | None], tuple[Counter, str]]
"""The counter for a model name (``None``: unknown) and the name of its method
(``"heuristic"``, ``"tiktoken:o200k_base"``), which ``Usage.estimate_method`` reports."""


def heuristic_counter(model: str | None) -> tuple[Counter, str]:
    """The heuristic for every model: the counter the core uses unless given another."""
    return heuristic_tokens, HEURISTIC


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
    counter_for: CounterFinder = heuristic_counter,
) -> OutputEstimate:
    """Estimate the tokens of content that arrived after the last usage report.

    ``new_calls`` are the ``(name, argument text)`` of calls that began after it (each
    costs its framing overhead); ``more_arguments`` the argument text that calls begun
    before it received since; ``calls_in_response`` the calls of the whole response (the
    wrapper of parallel calls is charged once, with the call that makes them two).
    ``counter_for`` gives the counter for ``model`` (default: the heuristic).
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
