"""The next request's messages in a named format: the table's provider writes them.

``format`` is any name of the table (``FORMATS`` unless the caller passes ``formats``);
an unknown one raises :class:`UnknownFormat` before the outcomes are read. Linear in the
number of calls and outcomes and the size of their texts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._core.messages import check_answers, outcome_list, result_texts
from .._core.outcome import Outcome
from .._core.providers import Formats
from .._core.response import Response
from . import FORMATS

__all__ = ["tool_results"]  # assistant_turn and turn_messages are private until run_turn


def tool_results(
    outcomes: Iterable[Outcome], format: str, *, response: Response | None = None
) -> list[dict[str, Any]]:
    """The messages that carry ``outcomes`` back to the model in ``format``.

    ``format`` is any format name ``StreamAssembler`` accepts (``"openai-chat"``, its
    alias ``"openai"``, ``"openai-responses"``, ``"anthropic"``, ``"gemini"``,
    ``"bedrock-converse"``, ``"ollama"``, ``"cohere"``). Each completed or replayed
    outcome sends its result: a ``str`` as plain text, an ``Image``/``File`` (or a list
    mixing them with text) as the format's content blocks (a text note such as
    ``[image/png, 1234 bytes]`` where the format has none: OpenAI chat, Ollama, Cohere),
    anything else as its JSON text; every other status a text for the model,
    marked as an error where the format can. Raises :class:`UnknownFormat` for a format it
    does not know and :class:`InvalidOutcome` for input that is not a list of outcomes.

    ``response``, the response whose calls the outcomes answer, tells each result the kind
    of its call (``ToolCall.kind``): a Responses custom tool call is answered with a
    ``custom_tool_call_output`` item, not ``function_call_output``. Without it every
    outcome answers a function call.
    """
    return _results(FORMATS, outcomes, format, response)


def _results(
    formats: Formats, outcomes: Iterable[Outcome], format: str, response: Response | None
) -> list[dict[str, Any]]:
    entry = formats.provider(format)
    return entry.tool_results(result_texts(outcomes, response))


def assistant_turn(
    response: Response, outcomes: Iterable[Outcome], format: str, *, formats: Formats = FORMATS
) -> list[dict[str, Any]]:
    """The assistant turn repeating ``response`` in ``format``, for the results of
    ``outcomes`` to answer: every call has exactly one outcome and every outcome a call
    (else :class:`InvalidOutcome`). ``formats``: the table ``format`` is looked up in."""
    entry = formats.provider(format)
    check_answers(response, outcome_list(outcomes))
    return entry.assistant_turn(response)


def turn_messages(
    response: Response, outcomes: Iterable[Outcome], format: str, *, formats: Formats = FORMATS
) -> list[dict[str, Any]]:
    """The assistant turn and then the tool results: what the next request appends.
    ``formats``: the table ``format`` is looked up in (a test passes its own)."""
    items = outcome_list(outcomes)
    turn = assistant_turn(response, items, format, formats=formats)
    return turn + _results(formats, items, format, response)
