"""What a person sees of ``toolwire replay``: the stream as it arrives, then the verdict.

The verdict and final rows are computed from the outcome alone, so the live (rich) and the
plain view say the same thing; a redraw costs O(visible previews), bounded by its rate.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TextIO

from .._core import events as _events
from .._core.partial_json import MISSING
from .._core.response import PartialCall, RejectedCall, Response, ToolCall, Usage
from .._errors import ProviderError, StreamError
from .subcommand import visible

if TYPE_CHECKING:
    from collections.abc import Callable

    from rich.console import Console, RenderableType
    from rich.live import Live
    from rich.text import Text

    from .._core.events import StreamEvent

__all__ = [
    "MAX_REDRAWS_PER_SECOND",
    "FinalCall",
    "LiveView",
    "PlainView",
    "ReplayModel",
    "ShownCall",
    "final_calls",
    "summary_rows",
    "usage_text",
    "verdict",
]

MAX_REDRAWS_PER_SECOND = 30.0
FINAL_ARGUMENT_LINES = 40  # lines of one call's final arguments in the final picture
FINAL_REASONING_LINES = 30  # the last lines of reasoning in the final picture

CallStatus = Literal["streaming", "ended", "rejected", "finished"]
Outcome = Response | StreamError


# ------------------------------------------------------------------------------- model


@dataclass(slots=True, kw_only=True)
class ShownCall:
    """One tool call as shown while the stream arrives.

    ``raw`` holds the argument fragments as they came (``chars`` their length);
    ``last`` the latest ``ToolCallArguments`` event, whose ``preview`` is the call's
    monotonic argument preview at the time it is read; ``status`` is ``streaming``,
    ``ended`` (the provider ended the call), ``rejected`` (``reason`` says why) or
    ``finished`` (the response's terminal event arrived while it was open).
    """

    key: int
    name: str
    id: str
    raw: list[str] = field(default_factory=list)
    chars: int = 0
    last: _events.ToolCallArguments | None = None
    status: CallStatus = "streaming"
    reason: str | None = None

    def raw_text(self) -> str:
        """The argument text so far, exactly as it arrived."""
        if len(self.raw) > 1:
            self.raw[:] = ["".join(self.raw)]
        return self.raw[0] if self.raw else ""

    def preview_text(self) -> str:
        """The argument preview as indented JSON (``""`` before anything can be shown);
        a rejected call shows its raw text instead, since it will never parse."""
        if self.status == "rejected":
            return self.raw_text()
        preview = self.last.preview if self.last is not None else MISSING
        if preview is MISSING:
            return ""
        return json.dumps(preview, indent=2, ensure_ascii=False)


class ReplayModel:
    """The display state of one replay: fed stream events, read by the views."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, ShownCall] = {}
        self.usage: Usage | None = None
        self.finished: _events.Finished | None = None
        self.format: str | None = None
        self.payloads = 0

    def apply(self, event: StreamEvent) -> None:
        """Fold one event into the display state."""
        fold = _FOLDS.get(type(event))
        if fold is not None:
            fold(self, event)

    def _text(self, event: _events.TextDelta) -> None:
        self.text.append(event.text)

    def _reasoning(self, event: _events.ReasoningDelta) -> None:
        self.reasoning.append(event.text)

    def _started(self, event: _events.ToolCallStarted) -> None:
        self.calls[event.key] = ShownCall(key=event.key, name=event.name, id=event.id)

    def _arguments(self, event: _events.ToolCallArguments) -> None:
        call = self._call(event.key)
        call.raw.append(event.delta)
        call.chars += len(event.delta)
        call.last = event

    def _ended(self, event: _events.ToolCallEnded) -> None:
        call = self._call(event.key)
        if call.status == "streaming":
            call.status = "ended"

    def _rejected(self, event: _events.ToolCallRejected) -> None:
        call = self._call(event.key)
        call.status = "rejected"
        call.reason = event.reason
        call.raw[:] = [event.raw_arguments]
        call.chars = len(event.raw_arguments)

    def _usage(self, event: _events.UsageReported) -> None:
        self.usage = event.usage

    def _finished(self, event: _events.Finished) -> None:
        self.finished = event
        for call in self.calls.values():
            if call.status == "streaming":
                call.status = "finished"

    def _call(self, key: int) -> ShownCall:
        # A call is announced before its other events; this only guards the display
        # against an event order no adapter produces.
        call = self.calls.get(key)
        if call is None:
            call = self.calls[key] = ShownCall(key=key, name="", id="")
        return call

    def joined_text(self) -> str:
        """The visible text so far."""
        if len(self.text) > 1:
            self.text[:] = ["".join(self.text)]
        return self.text[0] if self.text else ""

    def joined_reasoning(self) -> str:
        """The reasoning text so far."""
        if len(self.reasoning) > 1:
            self.reasoning[:] = ["".join(self.reasoning)]
        return self.reasoning[0] if self.reasoning else ""


# ----------------------------------------------------------------------------- verdict


# how ReplayModel folds each kind of event; other events do not change the display
_FOLDS: dict[type[StreamEvent], Callable[[ReplayModel, Any], None]] = {
    _events.TextDelta: ReplayModel._text,
    _events.ReasoningDelta: ReplayModel._reasoning,
    _events.ToolCallStarted: ReplayModel._started,
    _events.ToolCallArguments: ReplayModel._arguments,
    _events.ToolCallEnded: ReplayModel._ended,
    _events.ToolCallRejected: ReplayModel._rejected,
    _events.UsageReported: ReplayModel._usage,
    _events.Finished: ReplayModel._finished,
}


def _calls(n: int) -> str:
    return f"{n} call" if n == 1 else f"{n} calls"


def verdict(outcome: Outcome) -> tuple[bool, str]:
    """Whether the response may be executed, and the sentence that says so and why.

    Only a ``Response`` with calls and no rejected call is executable (the executor runs
    none of a response's calls when any was rejected); a ``StreamError`` never is, and the
    sentence says what arrived, which will not run.
    """
    if isinstance(outcome, StreamError):
        n = len(outcome.partial.calls) if outcome.partial is not None else 0
        if n == 0:
            arrived = "no call arrived"
        elif n == 1:
            arrived = "1 call arrived and will not run"
        else:
            arrived = f"{n} calls arrived, none will run"
        return False, f"not executable: {outcome}; {arrived}"
    calls, rejected = outcome.tool_calls, outcome.rejected
    if rejected:
        total = len(calls) + len(rejected)
        first = rejected[0]
        return False, (
            f"not executable: {len(rejected)} of {_calls(total)} rejected (call {first.index}"
            f"{' ' + first.name if first.name else ''}: {first.reason}); a response with a "
            "rejected call runs none of its calls"
        )
    if not calls:
        return True, "finished properly: text only, no tool call to run"
    names = ", ".join(c.name for c in calls)
    return True, f"executable: {_calls(len(calls))} finalised ({names})"


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalCall:
    """One call of the outcome as the final picture shows it: ``body`` is the final
    arguments as indented JSON (or the raw text of a call that never became final),
    ``state`` a few words, ``runs`` whether the call is part of an executable response."""

    key: int
    name: str
    id: str
    body: str
    raw: str
    state: str
    runs: bool


def _final(
    call: ToolCall | RejectedCall | PartialCall, state: str, body: str | None = None
) -> FinalCall:
    """``call`` as shown at the end: its arguments as ``body`` (the raw text unless given),
    ``state``; it runs only when ready."""
    return FinalCall(
        key=call.index,
        name=call.name,
        id=call.id,
        body=call.raw_arguments if body is None else body,
        raw=call.raw_arguments,
        state=state,
        runs=state == "ready",
    )


def final_calls(outcome: Outcome) -> list[FinalCall]:
    """The calls of ``outcome`` in stream order: finished, rejected, or (for a
    ``StreamError``) what arrived of them."""
    if isinstance(outcome, StreamError):
        partial = outcome.partial
        return [
            _final(c, "ended, not final" if c.ended else "not ended")
            for c in (partial.calls if partial is not None else [])
        ]
    state = "ready" if not outcome.rejected else "skipped (another call was rejected)"
    shown = [
        _final(c, state, json.dumps(c.arguments, indent=2, ensure_ascii=False))
        for c in outcome.tool_calls
    ]
    shown += [_final(c, f"rejected: {c.reason}") for c in outcome.rejected]
    return sorted(shown, key=lambda c: c.key)


def usage_text(usage: Usage | None) -> str:
    """Token usage in a few words: ``input 12 · output 30 · total 42``."""
    if usage is None:
        return "not reported"
    parts = [
        f"{label} {value}"
        for label, value in (
            ("input", usage.input_tokens),
            ("output", usage.output_tokens),
            ("total", usage.total_tokens),
            ("cache read", usage.cache_read_tokens),
            ("cache write", usage.cache_write_tokens),
            ("reasoning", usage.reasoning_tokens),
        )
        if value is not None
    ]
    if getattr(usage, "estimated", False):
        parts.append("(output estimated)")
    return " · ".join(parts) if parts else "reported without counts"


def summary_rows(outcome: Outcome) -> list[tuple[str, str]]:
    """The final ``(label, value)`` rows after the calls: finish, usage, the error of a
    stream that did not end properly, and the verdict (always last)."""
    rows: list[tuple[str, str]] = []
    if isinstance(outcome, StreamError):
        partial = outcome.partial
        raw = partial.raw_finish_reason if partial is not None else None
        rows.append(("finish", f"provider said {raw!r}" if raw else "none arrived"))
        rows.append(("usage", usage_text(partial.usage if partial is not None else None)))
        error = f"{type(outcome).__name__}: {outcome}"
        if isinstance(outcome, ProviderError) and outcome.error is not None:
            error += f" ({json.dumps(outcome.error, ensure_ascii=False, default=str)})"
        rows.append(("error", error))
    else:
        rows.append(("finish", f"{outcome.finish_reason} (provider: {outcome.raw_finish_reason})"))
        rows.append(("usage", usage_text(outcome.usage)))
    rows.append(("verdict", verdict(outcome)[1]))
    return rows


# -------------------------------------------------------------------------- plain view


def _quoted(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _flat(line: str) -> str:
    """One line: line feeds inside it (a tool name, a provider's message) escaped."""
    return line.replace("\n", "\\n")


# PlainView's line for each kind of stream event
_PLAIN_LINES = {
    _events.TextDelta: lambda e: f"text {_quoted(e.text)}",
    _events.ReasoningDelta: lambda e: f"reasoning {_quoted(e.text)}",
    _events.ToolCallStarted: lambda e: f"call {e.key} started {e.name} id={e.id}",
    _events.ToolCallArguments: lambda e: f"call {e.key} arguments {_quoted(e.delta)}",
    _events.ToolCallEnded: lambda e: f"call {e.key} ended",
    _events.ToolCallRejected: lambda e: f"call {e.key} rejected: {e.reason}",
    _events.UsageReported: lambda e: f"usage {usage_text(e.usage)}",
    _events.Finished: lambda e: f"finished {e.finish_reason} (provider: {e.raw_finish_reason})",
}


class PlainView:
    """Line-oriented output for pipes and logs: one line per event, then the result."""

    def __init__(self, out: TextIO, source: str) -> None:
        self._out = out
        self._source = source
        self._started = False

    def start(self) -> None:
        """Nothing yet: the first line waits for the first payload, so that input which
        turns out not to be a stream leaves stdout empty."""

    def update(self, events: list[StreamEvent], model: ReplayModel) -> None:
        """Write one line per event of the payload just fed (``model`` has them)."""
        lines: list[str] = []
        if not self._started:
            self._started = True
            lines.append(f"replay {_flat(self._source)}")
            lines.append(f"format {model.format}")
        lines.extend(_flat(self._line(event)) for event in events)
        if lines:
            self._write("\n".join(lines))

    @staticmethod
    def _line(event: StreamEvent) -> str:
        say = _PLAIN_LINES.get(type(event))
        if say is None:
            return type(event).__name__  # an event kind this view does not know yet
        return say(event)

    def finish(self, outcome: Outcome, model: ReplayModel) -> None:
        """Write the result: each call on one line, then finish, usage and verdict."""
        lines = ["result"]
        for call in final_calls(outcome):
            name = call.name or "(no name)"
            what = (
                f"arguments={json.dumps(json.loads(call.body), ensure_ascii=False)}"
                if isinstance(outcome, Response) and call.runs
                else f"raw={_quoted(call.raw)}"
            )
            lines.append(_flat(f"call {call.key} {call.state}: {name} id={call.id} {what}"))
        lines.extend(_flat(f"{label} {value}") for label, value in summary_rows(outcome))
        self._write("\n".join(lines))

    def abort(self) -> None:
        """Stop without a result (unusable input, Ctrl-C): nothing more to write."""
        self._out.flush()

    def _write(self, text: str) -> None:
        # Every line stays one line and shows, never acts: names, ids and messages come
        # from the stream (deltas are JSON-quoted already).
        lines = [visible(line).replace("\n", "\\n") for line in text.split("\n")]
        self._out.write("\n".join(lines) + "\n")
        self._out.flush()


# --------------------------------------------------------------------------- live view


_STATUS_STYLE = {
    "streaming": "yellow",
    "ended": "cyan",
    "finished": "cyan",
    "rejected": "red",
}


def _tail(console: Console, text: str, width: int, lines: int, style: str = "") -> Text:
    """The last ``lines`` lines of ``text`` wrapped at ``width``, wrapping only the end of
    ``text`` that can reach the screen (each wrapped line holds at most ``width``
    characters plus its line end)."""
    from rich.text import Text

    if lines <= 0 or not text:
        return Text("", style=style)
    end = visible(text[-(lines * (width + 1)) :])
    wrapped = Text(end, style=style).wrap(console, max(1, width), overflow="fold")
    return Text("\n", style=style).join(list(wrapped)[-lines:])


def _head(text: str, lines: int, width: int) -> tuple[str, str]:
    """The beginning of ``text`` that fills at most ``lines`` lines of ``width``
    characters, and what was left out, in words (``""`` when nothing was)."""
    parts = text.split("\n", lines)
    if len(parts) > lines:
        more = text.count("\n") - lines + 1
        return "\n".join(parts[:lines]), f"{more} more lines"
    limit = lines * max(1, width)  # one long line (an escaped string) wraps to many
    if len(text) > limit:
        return text[:limit], f"{len(text) - limit} more characters"
    return text, ""


class LiveView:
    """The terminal view: a live area redrawn as payloads arrive, then the final picture."""

    def __init__(self, console: Console, source: str) -> None:
        self._console = console
        self._source = source
        self._live: Live | None = None
        self._model: ReplayModel | None = None
        self._drawn = 0.0

    def start(self) -> None:
        """Open the live area."""
        from rich.live import Live

        self._live = Live(
            self._header(None),
            console=self._console,
            auto_refresh=False,
            transient=True,  # replaced by the final picture, printed once
            vertical_overflow="crop",
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def update(self, events: list[StreamEvent], model: ReplayModel) -> None:
        """Redraw after a payload, at most ``MAX_REDRAWS_PER_SECOND`` times a second."""
        self._model = model
        now = time.monotonic()
        if self._live is None or now - self._drawn < 1.0 / MAX_REDRAWS_PER_SECOND:
            return
        self._drawn = now
        self._live.update(self._live_picture(model), refresh=True)

    def finish(self, outcome: Outcome, model: ReplayModel) -> None:
        """Replace the live area by the final picture."""
        if self._live is not None:
            self._live.update(self._live_picture(model), refresh=True)
            self._live.stop()
            self._live = None
        self._console.print(self._final_picture(outcome, model))

    def abort(self) -> None:
        """Close the live area without a result."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    # -- pictures

    def _header(self, model: ReplayModel | None) -> Text:
        from rich.text import Text

        header = Text.assemble(("toolwire replay ", "bold"), visible(self._source))
        header.no_wrap, header.overflow = True, "ellipsis"  # always one line of the budget
        if model is not None:
            header.append(f"  ·  {model.format or 'detecting the format'}", style="cyan")
            header.append(f"  ·  {model.payloads} payloads", style="dim")
        return header

    def _live_picture(self, model: ReplayModel) -> RenderableType:
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        console = self._console
        width = max(10, console.size.width - 4)  # inside a panel's border and padding
        room = max(6, console.size.height - 3)  # header, finish line, one spare
        calls = list(model.calls.values())
        parts: list[RenderableType] = [self._header(model)]
        reasoning, text = model.joined_reasoning(), model.joined_text()
        if reasoning:
            cap = max(1, room // 6) if calls or text else max(1, room // 2)
            shown = _tail(console, reasoning, width, cap, "dim italic")
            parts.append(Panel(shown, title="reasoning", title_align="left", style="dim"))
            room -= len(shown.plain.split("\n")) + 2
        if text:
            cap = max(2, room // 3) if calls else max(2, room - 2)
            shown = _tail(console, text, width, cap)
            parts.append(Panel(shown, title="text", title_align="left"))
            room -= len(shown.plain.split("\n")) + 2
        panels: list[RenderableType] = []
        each = max(2, room // max(1, min(len(calls), 3)) - 2)
        for call in reversed(calls):  # the newest calls are the ones that grow
            if room < 3:
                break
            body = _tail(console, call.preview_text(), width, min(each, room - 2))
            if call.status == "rejected":
                body.append(f"\nrejected: {visible(call.reason or '')}", style="bold red")
            style = _STATUS_STYLE[call.status]
            panels.append(
                Panel(
                    body,
                    title=_title(call.key, call.name or "(no name yet)", call.id),
                    title_align="left",
                    subtitle=f"{call.status} · {call.chars} chars",
                    subtitle_align="right",
                    border_style=style,
                )
            )
            room -= len(body.plain.split("\n")) + 2
        hidden = len(calls) - len(panels)
        if hidden:
            parts.append(Text(f"… {_calls(hidden)} above", style="dim"))
        parts.extend(reversed(panels))
        if model.finished is not None:
            parts.append(
                Text(
                    visible(
                        f"finished: {model.finished.finish_reason} "
                        f"(provider: {model.finished.raw_finish_reason})"
                    ),
                    style="bold",
                )
            )
        return Group(*parts)

    def _final_picture(self, outcome: Outcome, model: ReplayModel) -> RenderableType:
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        parts: list[RenderableType] = [self._header(model)]
        reasoning, more = _last_lines(model.joined_reasoning(), FINAL_REASONING_LINES)
        if reasoning:
            title = f"reasoning (last {FINAL_REASONING_LINES} lines)" if more else "reasoning"
            shown = Text(visible(reasoning), style="dim italic")
            parts.append(Panel(shown, title=title, title_align="left", style="dim"))
        text = model.joined_text()
        if text:
            parts.append(Panel(Text(visible(text)), title="text", title_align="left"))
        width = self._console.size.width - 4
        parts.extend(_final_call_panel(call, width) for call in final_calls(outcome))
        parts.append(_summary_grid(outcome))
        return Group(*parts)


def _final_call_panel(call: FinalCall, width: int) -> RenderableType:
    """A call's panel in the final picture: its first arguments' lines and its state."""
    from rich.panel import Panel
    from rich.text import Text

    body, hidden = _head(call.body, FINAL_ARGUMENT_LINES, width)
    shown = Text(visible(body))
    if hidden:
        shown.append(f"\n… {hidden} (--json shows all)", style="dim")
    return Panel(
        shown,
        title=_title(call.key, call.name or "(no name)", call.id),
        title_align="left",
        subtitle=Text(visible(call.state)),
        subtitle_align="right",
        border_style="green" if call.runs else "red",
    )


def _summary_grid(outcome: Outcome) -> RenderableType:
    """The summary rows under the final picture, the verdict green or red."""
    from rich.table import Table
    from rich.text import Text

    ok = verdict(outcome)[0]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    for label, value in summary_rows(outcome):
        if label == "verdict":
            style = "bold green" if ok else "bold red"
            grid.add_row(label, Text(visible(value), style=style))
        else:
            grid.add_row(label, Text(visible(value)))
    return grid


def _title(key: int, name: str, call_id: str) -> Text:
    """A call panel's title, as text (a name is never read as rich markup)."""
    from rich.text import Text

    return Text(visible(f"call {key} · {name} · {call_id}"))


def _last_lines(text: str, lines: int) -> tuple[str, bool]:
    """The last ``lines`` lines of ``text``, and whether some were left out."""
    parts = text.rsplit("\n", lines)
    if len(parts) <= lines:
        return text, False
    return "\n".join(parts[1:]), True
