"""What a person sees of ``toolwire demo``: a live rich view on a terminal, plain lines elsewhere.

Both views show the same outcome lines; a redraw costs O(visible previews), bounded by
:data:`MAX_REDRAWS_PER_SECOND`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TextIO

from ..._core.events import StreamEvent, TextDelta, ToolCallArguments, ToolCallStarted
from ..._core.outcome import Outcome
from ..._core.partial_json import MISSING
from ..subcommand import visible

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

    from ..._turn.run import Turn

__all__ = [
    "MAX_REDRAWS_PER_SECOND",
    "Cell",
    "LiveView",
    "Pace",
    "PlainView",
    "TurnModel",
    "call_text",
    "outcome_text",
]

MAX_REDRAWS_PER_SECOND = 20.0
LONG_STRING = 80  # a string preview longer than this (or with a line feed) gets a panel
SHOWN_CHARS = 40  # a short string argument is shown up to this many characters
PANEL_LINES = 12  # lines of a growing long string in its live panel
PLAIN_WIDTH = 120  # a plain table wider than this is written one block per row

Tone = Literal["", "good", "bad", "dim", "bold"]
Cell = tuple[str, Tone]
"""A table cell: its text and its tone (plain views ignore tones)."""

_STYLE = {"": "", "good": "green", "bad": "bold red", "dim": "dim", "bold": "bold"}


# ------------------------------------------------------------------------------ the model


@dataclass(slots=True)
class ShownCall:
    """One call as shown while it streams: ``preview`` is the latest argument preview
    (``MISSING`` before anything can be shown), ``chars`` the argument text that arrived."""

    name: str
    preview: Any = MISSING
    chars: int = 0
    reported: int = 0  # the plain view's last reported length of the call's long string


@dataclass(slots=True)
class TurnModel:
    """A turn's display state, fed stream events."""

    number: int
    text: list[str] = field(default_factory=list)
    calls: dict[int, ShownCall] = field(default_factory=dict)

    def apply(self, event: StreamEvent) -> ShownCall | None:
        """Fold ``event`` in; return the call it changed, if any."""
        if isinstance(event, TextDelta):
            self.text.append(event.text)
        elif isinstance(event, ToolCallStarted):
            self.calls[event.key] = ShownCall(event.name)
        elif isinstance(event, ToolCallArguments):
            call = self.calls.setdefault(event.key, ShownCall(event.name))
            call.chars += len(event.delta)
            if event.preview_changed:
                call.preview = event.preview  # read while handling the event (see its doc)
            return call
        return None

    def joined_text(self) -> str:
        """The turn's text so far."""
        if len(self.text) > 1:
            self.text[:] = ["".join(self.text)]
        return self.text[0] if self.text else ""


def _fields(preview: Any) -> list[tuple[str, Any]]:
    """The shown fields of an argument preview: a dict's items, or a typed preview's
    fields that have arrived (a pydantic model's ``model_fields_set``)."""
    if isinstance(preview, dict):
        return list(preview.items())
    shown = getattr(preview, "model_fields_set", None)
    if shown is not None:
        return [
            (name, getattr(preview, name)) for name in type(preview).model_fields if name in shown
        ]
    return []


def long_string(preview: Any) -> tuple[str, str] | None:
    """The first argument whose value is a long or multi-line string, as ``(name,
    value)``: what a live panel shows growing."""
    for name, value in _fields(preview):
        if isinstance(value, str) and (len(value) > LONG_STRING or "\n" in value):
            return name, value
    return None


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        if len(value) > SHOWN_CHARS or "\n" in value:
            return f"<{len(value):,} characters>"
        return repr(value)
    if isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
    return repr(value) if not hasattr(value, "isoformat") else repr(value.isoformat())


def call_text(name: str, preview: Any) -> str:
    """A call as one line, ``read_file(path='notes/sales.md')``, from its argument preview
    (a dict, or a typed preview): every field shown so far, long strings by length."""
    args = ", ".join(f"{key}={_value_text(value)}" for key, value in _fields(preview))
    return visible(f"{name}({args})")


def outcome_text(outcome: Outcome) -> str:
    """An outcome's status and, for a completed or replayed call, its value in short."""
    if outcome.status in ("completed", "replayed") and outcome.result_json is not None:
        result = outcome.result_json
        if len(result) > SHOWN_CHARS:
            result = result[: SHOWN_CHARS - 1] + "…"
        return visible(f"{outcome.status} → {result}")
    return visible(f"{outcome.status}: {outcome.error}" if outcome.error else outcome.status)


def _turn_lines(number: int, turn: Turn) -> list[tuple[str, Tone]]:
    """The persistent lines of a finished turn: its text, then each call and its outcome."""
    lines: list[tuple[str, Tone]] = []
    text = " ".join(turn.response.text.split())
    lines.append((f"turn {number}  {visible(text)}" if text else f"turn {number}", "bold"))
    for call, outcome in zip(turn.response.tool_calls, turn.outcomes, strict=False):
        tone: Tone = "good" if outcome.status in ("completed", "replayed") else "bad"
        lines.append((f"  {call_text(call.name, call.arguments)}  {outcome_text(outcome)}", tone))
    return lines


# ------------------------------------------------------------------------------- the pace


class Pace:
    """Display pacing for the live view: each stream (the text, each call) is shown at
    :data:`START` characters a second at first, faster as it grows (``START + GROWTH *
    shown`` a second), so a short call takes a fraction of a second and an 11 KB argument
    about 3.5 s instead of the minutes a model's real speed would take. Deadlines are
    absolute, so slow rendering never adds up. ``--fast``: no pace at all."""

    START = 80.0
    GROWTH = 1.5

    def __init__(self, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._due: float | None = None
        self._shown: dict[object, int] = {}

    def wait(self, stream: object, chars: int) -> None:
        """Wait until ``chars`` more characters of ``stream`` are due."""
        now = time.monotonic()
        before = self._shown.get(stream, 0)
        after = self._shown[stream] = before + chars
        # the time to show characters before..after at a rate of START + GROWTH * shown
        step = (
            math.log(self.START + self.GROWTH * after) - math.log(self.START + self.GROWTH * before)
        ) / self.GROWTH
        self._due = max(self._due or now, now - 0.25) + step  # never bank more than 0.25 s
        if self._due > now:
            self._sleep(self._due - now)


# ------------------------------------------------------------------------- the plain view


class PlainView:
    """Line-oriented output for pipes, logs and ``--plain``."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self._turn: TurnModel | None = None

    def part(self, number: int, title: str, lines: Sequence[str] = ()) -> None:
        """A part's heading and what it shows."""
        self._write("", f"{number} · {title}", *(f"  {line}" for line in lines))

    def line(self, text: str, tone: Tone = "") -> None:
        """One line of output."""
        self._write(text)

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
        """Rows of cells as aligned columns (a cell's line feeds become ``; ``); a table of
        three columns or more too wide for :data:`PLAIN_WIDTH` as one block per row: its
        first cell, then each other cell on its own line after its column's name."""
        texts = [[cell.replace("\n", "; ") for cell, _ in row] for row in rows]
        widths = [max(len(row[i]) for row in [list(columns), *texts]) for i in range(len(columns))]
        if len(columns) > 2 and sum(widths) + 2 * len(widths) > PLAIN_WIDTH:
            for row in texts:
                self._write(f"  {row[0]}")
                self._write(
                    *(f"    {c}: {cell}" for c, cell in zip(columns[1:], row[1:], strict=True))
                )
            return
        for row in [list(columns), *texts] if any(columns) else texts:
            line = "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))
            self._write("  " + line.rstrip())

    def turn_started(self, number: int) -> None:
        """A turn's stream begins."""
        self._turn = TurnModel(number)

    def event(self, event: StreamEvent) -> None:
        """One stream event: a long string's growth is reported as its length doubles."""
        assert self._turn is not None
        call = self._turn.apply(event)
        if call is None:
            return
        found = long_string(call.preview)
        if found is not None and len(found[1]) >= max(1024, 2 * call.reported):
            call.reported = len(found[1])
            self._write(
                f"turn {self._turn.number} streaming: {call.name} {found[0]}, "
                f"{len(found[1]):,} characters so far"
            )

    def turn_done(self, number: int, turn: Turn) -> None:
        """A turn ended properly: its outcome lines."""
        self._turn = None
        self._write(*(text for text, _ in _turn_lines(number, turn)))

    def turn_failed(self) -> None:
        """A turn's stream ended with an error (the caller reports it)."""
        self._turn = None

    def close(self) -> None:
        """Flush."""
        self._out.flush()

    def _write(self, *lines: str) -> None:
        self._out.write("".join(line + "\n" for line in lines))
        self._out.flush()


# -------------------------------------------------------------------------- the live view


class LiveView:
    """The terminal view: live turns, rich tables."""

    def __init__(self, console: Console, *, pace: Pace | None) -> None:
        self._console = console
        self._pace = pace
        self._live: Live | None = None
        self._turn: TurnModel | None = None
        self._drawn = 0.0

    def part(self, number: int, title: str, lines: Sequence[str] = ()) -> None:
        """A part's heading (a rule) and what it shows."""
        from rich.rule import Rule
        from rich.text import Text

        self._console.print()
        self._console.print(Rule(Text(f"{number} · {title}", style="bold cyan"), align="left"))
        for line in lines:
            self._console.print(Text(line, style="dim"))

    def line(self, text: str, tone: Tone = "") -> None:
        """One line of output."""
        from rich.text import Text

        self._console.print(Text(text, style=_STYLE[tone]))

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
        """A table with a header row."""
        from rich.table import Table
        from rich.text import Text

        table = Table(box=None, padding=(0, 2, 0, 0), show_edge=False, header_style="bold")
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(Text(text, style=_STYLE[tone]) for text, tone in row))
        self._console.print(table)

    def turn_started(self, number: int) -> None:
        """Open the live area of a turn."""
        from rich.live import Live

        self._turn = TurnModel(number)
        self._live = Live(
            self._picture(self._turn),
            console=self._console,
            auto_refresh=False,
            transient=True,  # replaced by the turn's outcome lines
            vertical_overflow="crop",
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self._live.start()

    def event(self, event: StreamEvent) -> None:
        """One stream event: fold it in, pace it, redraw if it is time."""
        turn = self._turn
        assert turn is not None
        turn.apply(event)
        if self._pace is not None:
            if isinstance(event, TextDelta):
                self._pace.wait((turn.number, "text"), len(event.text))
            elif isinstance(event, ToolCallArguments):
                self._pace.wait((turn.number, event.key), len(event.delta))
        now = time.monotonic()
        if self._live is not None and now - self._drawn >= 1.0 / MAX_REDRAWS_PER_SECOND:
            self._drawn = now
            self._live.update(self._picture(turn), refresh=True)

    def turn_done(self, number: int, turn: Turn) -> None:
        """Replace the live area with the turn's outcome lines."""
        self._stop()
        for text, tone in _turn_lines(number, turn):
            self.line(text, tone)

    def turn_failed(self) -> None:
        """Close the live area of a turn whose stream failed."""
        self._stop()

    def close(self) -> None:
        """Close the live area, if one is open."""
        self._stop()

    def _stop(self) -> None:
        if self._live is not None:
            if self._turn is not None:
                self._live.update(self._picture(self._turn), refresh=True)
            self._live.stop()
            self._live = None
        self._turn = None

    def _picture(self, turn: TurnModel) -> RenderableType:
        from rich.console import Group
        from rich.panel import Panel
        from rich.text import Text

        width = max(20, self._console.size.width - 4)
        parts: list[RenderableType] = [Text(f"turn {turn.number} · streaming", style="bold")]
        text = turn.joined_text()
        if text:
            parts.append(Text(visible(" ".join(text.split())), overflow="ellipsis", no_wrap=True))
        for call in turn.calls.values():
            found = long_string(call.preview)
            if found is None:
                parts.append(Text("  " + call_text(call.name, call.preview), style="yellow"))
                continue
            name, value = found
            tail = value[-(PANEL_LINES * (width + 1)) :]
            lines = [visible(line)[:width] for line in tail.split("\n")][-PANEL_LINES:]
            parts.append(
                Panel(
                    Text("\n".join(lines)),
                    title=call_text(call.name, call.preview),
                    title_align="left",
                    subtitle=f"{name}: {len(value):,} characters",
                    subtitle_align="right",
                    border_style="yellow",
                )
            )
        return Group(*parts)
