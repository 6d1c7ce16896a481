"""``StreamAssembler``: the core assembler, plus costs, structured output and typed previews.

Without ``output=``, ``output_tool=`` or ``tools=`` it is the core :class:`Assembler`
plus one test per feed; with them, every feed's events go through an ``OutputRoute``,
which adds :class:`~toolwire.OutputPreview` events and concludes ``Response.output``.
``prices=`` sets the cost on the usage of the response and of every partial.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._core.assembler import (
    DEFAULT_MAX_ARGUMENT_CHARS,
    DEFAULT_MAX_ID_CHARS,
    DEFAULT_MAX_TEXT_CHARS,
    DEFAULT_MAX_TOOL_CALLS,
    DEFAULT_MAX_USAGE_FIELDS,
    Assembler,
)
from .._core.events import StreamEvent
from .._core.partial_json import MISSING
from .._core.providers import Formats
from .._core.response import Partial, Response
from .._errors import StreamError
from .._providers import FORMATS
from ..accounting.pricing import Prices, check_prices
from ..accounting.token_counting import counter_for
from .structured import OutputRoute

__all__ = ["StreamAssembler"]


class StreamAssembler(Assembler):
    """Assemble one streamed response from provider payloads (sans-IO).

    Everything of :class:`Assembler`, with the output no usage report covered counted by
    tiktoken where it has the model's encoding offline (``toolwire.accounting``), plus
    ``prices`` (a :class:`~toolwire.accounting.Prices` table, default none), which sets
    ``usage.cost`` on the response and on every error's partial, and structured output:
    ``output`` (a pydantic model, a type or a JSON Schema dict) parses the text channel
    as one JSON value: an :class:`~toolwire.OutputPreview` with the typed preview follows
    each text fragment that changed it, and ``Response.output`` is the validated value.
    ``output_tool`` names a forced tool whose arguments are the output instead
    (Anthropic's and Bedrock's classic pattern; that call is not returned as a call).
    ``early_abort=True`` raises an output that can never be valid from ``feed`` at once
    (else ``close()`` raises it). ``tools`` (a :class:`~toolwire.Toolbox`) gives the calls
    of its tools a typed preview (:attr:`~toolwire.ToolCallArguments.typed_preview`).

    ``formats`` is the table of wire formats ``format`` names and the first payload is
    detected by: the built-in formats by default. It is where a test that defines a toy
    format passes its own table (``Formats(TOY, *FORMATS)``); there is no registration.
    """

    __slots__ = ("_out", "_prices")

    def __init__(
        self,
        format: str = "auto",
        *,
        choice: int = 0,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_argument_chars: int = DEFAULT_MAX_ARGUMENT_CHARS,
        max_text_chars: int = DEFAULT_MAX_TEXT_CHARS,
        max_id_chars: int = DEFAULT_MAX_ID_CHARS,
        max_usage_fields: int = DEFAULT_MAX_USAGE_FIELDS,
        prices: Prices | None = None,
        json_events: bool = True,
        output: Any = None,
        output_tool: str | None = None,
        tools: Any = None,
        early_abort: bool = False,
        formats: Formats | None = None,
    ) -> None:
        super().__init__(
            format,
            formats=FORMATS if formats is None else formats,
            choice=choice,
            max_tool_calls=max_tool_calls,
            max_argument_chars=max_argument_chars,
            max_text_chars=max_text_chars,
            max_id_chars=max_id_chars,
            max_usage_fields=max_usage_fields,
            json_events=json_events,
            counter_for=counter_for,
        )
        self._prices = check_prices(prices)
        self._out: OutputRoute | None = None
        if output is not None or output_tool is not None or tools is not None:
            self._out = OutputRoute(
                output,
                output_tool=output_tool,
                tools=tools,
                early_abort=early_abort,
                max_size=max_text_chars,
            )

    def feed(self, payload: Any, *, event: str | None = None) -> list[StreamEvent]:
        events = self._feed(payload, event)
        return events if self._out is None else self._routed(events)

    def feed_bytes(self, data: bytes) -> list[StreamEvent]:
        events = self._feed_bytes(data)
        return events if self._out is None else self._routed(events)

    def feed_eof(self) -> list[StreamEvent]:
        events = self._feed_eof()
        return events if self._out is None else self._routed(events)

    def close(self) -> Response:
        """Finish the stream: the :class:`~toolwire.Response`, or the right
        :class:`~toolwire.StreamError`.

        With ``output=``, ``Response.output`` is the validated output, or the output's
        error is raised (after the stream's own: a cut stream is ``StreamAborted``...).
        """
        route, prices = self._out, self._prices
        if (route is None and prices is None) or self.settled:
            return self._close()
        response = self._close()
        if prices is not None and response.usage is not None:
            response = replace(response, usage=prices.priced(response.usage, response.model))
        if route is not None:
            key = route.tool_call
            parser = self.call_parser(key) if key is not None else None
            try:
                response = route.conclude(response, parser)
            except StreamError as exc:
                raise self.fail_with(exc) from None
        self.settle(response)
        return response

    def partial(self) -> Partial:
        """What has arrived so far, at any time: text, reasoning, every call with its raw
        arguments, usage (priced with ``prices=``), finish reason, ids. Every error's
        partial is this; its calls are never instructions to execute."""
        partial = super().partial()
        prices = self._prices
        if prices is None or partial.usage is None:
            return partial
        return replace(partial, usage=prices.priced(partial.usage, partial.model))

    @property
    def output_preview(self) -> Any:
        """The structured output's typed preview so far (``MISSING`` before anything can
        be shown, or without ``output=``)."""
        return MISSING if self._out is None else self._out.preview()

    def _routed(self, events: list[StreamEvent]) -> list[StreamEvent]:
        assert self._out is not None
        try:
            return self._out.events(events)
        except StreamError as exc:  # early_abort: the output can never be valid
            raise self._fail(exc) from None
