"""``toolwire replay FILE``: a recorded provider stream shown as it arrives, then judged.

The recording is framed by the library's own decoder and fed to a ``StreamAssembler``, so
the verdict is the one the library gives for the same bytes. Exit status: 0 a stream that
ended properly, 3 a ``StreamError``, 2 unusable input, 130 interrupted.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from .._core.events import StreamEvent
from .._core.framing import DONE, FrameDecoder
from .._core.response import Response
from .._errors import StreamAborted, StreamError, UnknownFormat
from .._output.assembler import StreamAssembler
from .._providers import FORMATS
from .json_documents import dumps, error_document
from .replay_view import LiveView, PlainView, ReplayModel
from .subcommand import (
    EXIT_OK,
    EXIT_STREAM_ERROR,
    EXIT_USAGE,
    add_subcommand,
    fail,
    run_alone,
    tolerant_output,
)

__all__ = [
    "PAYLOAD_INTERVAL",
    "Pace",
    "Replayed",
    "add_parser",
    "main",
    "payloads",
    "replay",
    "run",
    "unwrap_envelope",
]

PAYLOAD_INTERVAL = 0.04
"""Seconds between two payloads at the recorded pace (``--speed 1``)."""

_READ_SLICE = 64 * 1024  # bytes framed at a time, so a big recording is framed lazily

_EPILOG = """\
pace: recordings have no timestamps; the recorded pace is one payload (SSE event, NDJSON
line, array element, event-stream message) every 40 ms. --speed 2 is twice as fast,
--speed 0 has no pauses. Without --speed, only the live terminal view pauses.

llama-stack recordings (a JSON array of {"__type__": ..., "__data__": chunk}) are
unwrapped: each chunk is fed as the provider sent it.

exit status: 0 the stream ended properly; 3 it did not (a StreamError: cut, token limit,
content filter, error event...); 2 unusable input (unreadable file, no payload of a known
provider format); 130 interrupted.
"""


# ----------------------------------------------------------------------------- reading


def unwrap_envelope(payload: Any) -> Any:
    """The chunk inside a recorder's ``{"__type__": ..., "__data__": chunk}`` envelope,
    or ``payload`` itself when it is not one."""
    if type(payload) is dict and "__data__" in payload and payload.keys() <= _ENVELOPE:
        return payload["__data__"]
    return payload


_ENVELOPE = frozenset({"__type__", "__data__"})


def payloads(data: bytes) -> Iterator[tuple[str | None, Any]]:
    """The ``(SSE event name, payload)`` pairs of a recorded body, framed as
    ``StreamAssembler.feed_bytes`` frames them, recorder envelopes unwrapped; a last
    payload that lacks only its terminator included. Framing errors propagate as the
    ``StreamError`` the framing raises."""
    decoder = FrameDecoder()
    for start in range(0, len(data), _READ_SLICE):
        for event, payload in decoder.feed(data[start : start + _READ_SLICE]):
            yield event, _unwrapped(decoder, payload)
    for event, payload in decoder.close():
        yield event, _unwrapped(decoder, payload)


def _unwrapped(decoder: FrameDecoder, payload: Any) -> Any:
    return unwrap_envelope(payload) if decoder.framing == "json-array" else payload


class Pace:
    """Absolute deadlines for payloads: payload *n* is due ``n * interval`` seconds after
    the first (``interval`` 0: never wait)."""

    def __init__(
        self,
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._start: float | None = None
        self._count = 0

    def wait(self) -> None:
        """Wait until the next payload is due."""
        if self.interval <= 0:
            return
        now = self._clock()
        if self._start is None:
            self._start = now
        due = self._start + self._count * self.interval
        self._count += 1
        if due > now:
            self._sleep(due - now)


class _Watcher(Protocol):
    def __call__(self, events: list[StreamEvent], asm: StreamAssembler) -> None: ...


@dataclass(frozen=True, slots=True)
class Replayed:
    """What a replay gave: the ``outcome`` (a ``Response`` or a ``StreamError``) and how
    many payloads the assembler ``accepted`` (0: nothing in the input was a stream)."""

    outcome: Response | StreamError
    accepted: int


def replay(
    data: bytes,
    *,
    format: str = "auto",
    pace: Pace | None = None,
    watch: _Watcher | None = None,
) -> Replayed:
    """Feed a recorded body to a new ``StreamAssembler`` payload by payload, waiting for
    ``pace`` before each and handing each accepted payload's events to ``watch`` (the
    ``[DONE]`` sentinel is fed but not watched); then close it."""
    asm = StreamAssembler(format=format)
    accepted = 0
    try:
        for event, payload in payloads(data):
            if pace is not None:
                pace.wait()
            events = asm.feed(payload, event=event)
            if payload is DONE:
                continue  # the OpenAI sentinel: nothing to show, no provider payload
            accepted += 1
            if watch is not None:
                watch(events, asm)
        return Replayed(asm.close(), accepted)
    except StreamError as exc:
        if exc.partial is None:  # a framing error, raised before the assembler saw it
            exc.partial = asm.partial()
        return Replayed(exc, accepted)


# ------------------------------------------------------------------------ command line


def _speed(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def _format(text: str) -> str:
    if text == "auto":
        return text
    try:
        return FORMATS.provider(text).name
    except UnknownFormat as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``toolwire replay`` on the ``toolwire`` command's subparsers."""
    parser = add_subcommand(
        commands,
        "replay",
        run,
        help="show a recorded stream as it arrives, then its calls and verdict",
        description=(
            "Replay a recorded LLM provider stream (SSE, NDJSON, JSON array or AWS\n"
            "event-stream; the format is detected from the content): text and reasoning as\n"
            "they stream, each tool call's arguments growing, then the final calls, the\n"
            "finish, the usage and whether the response may be executed."
        ),
        epilog=_EPILOG,
    )
    parser.add_argument(
        "file", metavar="FILE", help="the recorded response body (- reads standard input)"
    )
    parser.add_argument(
        "--speed",
        type=_speed,
        default=None,
        metavar="FACTOR",
        help="pace relative to the recorded pace (25 payloads/s); 0: no pauses",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print only the final Response (or the StreamError) as JSON on stdout",
    )
    parser.add_argument(
        "--format",
        type=_format,
        default="auto",
        metavar="NAME",
        help="read the stream as this wire format "
        f"(default auto: {', '.join(sorted(FORMATS.names()))})",
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="line-oriented output even on a terminal (the default into pipes and files)",
    )


def _live_console() -> Any:
    """A rich console on stdout when stdout is a terminal and rich is installed."""
    if not sys.stdout.isatty():
        return None
    try:
        from rich.console import Console
    except ImportError:  # the `cli` extra is not installed: plain lines will do
        return None
    return Console(highlight=False)


def run(args: argparse.Namespace) -> int:
    """Replay ``args.file``; return the exit status (the table of ``_cli.subcommand``)."""
    tolerant_output(sys.stdout)
    try:
        data = sys.stdin.buffer.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as exc:
        return fail("replay", f"cannot read {args.file}: {exc.strerror or exc}", EXIT_USAGE)
    console = None if args.json or args.plain else _live_console()
    model = ReplayModel()
    view = None if args.json else _view(console, args.file)

    def watch(events: list[StreamEvent], asm: StreamAssembler) -> None:
        model.payloads += 1
        model.format = asm.format
        for event in events:
            model.apply(event)
        if view is not None:
            view.update(events, model)

    try:
        if view is not None:
            view.start()
        result = replay(data, format=args.format, pace=_pace(args.speed, console), watch=watch)
        return _conclude(args, result, view, model)
    except KeyboardInterrupt:
        if view is not None:
            view.abort()
        raise


def _view(console: Any, file: str) -> LiveView | PlainView:
    """The live view on a terminal with rich, else plain lines."""
    return LiveView(console, file) if console is not None else PlainView(sys.stdout, file)


def _pace(speed: float | None, console: Any) -> Pace:
    """The replay's pace: real time by default on a live view, at once otherwise."""
    if speed is None:
        speed = 1.0 if console is not None else 0.0
    return Pace(PAYLOAD_INTERVAL / speed if speed > 0 else 0.0)


def _conclude(
    args: argparse.Namespace,
    result: Replayed,
    view: LiveView | PlainView | None,
    model: ReplayModel,
) -> int:
    """Show the replay's outcome (a JSON document, or the view's last picture) and return
    the exit status."""
    if result.accepted == 0 and isinstance(result.outcome, StreamError):
        if view is not None:
            view.abort()
        return fail("replay", f"{args.file}: {_unusable(result.outcome)}", EXIT_USAGE)
    outcome = result.outcome
    if args.json:
        document = error_document(outcome) if isinstance(outcome, StreamError) else outcome
        sys.stdout.write(dumps(document) + "\n")
        sys.stdout.flush()
    elif view is not None:
        view.finish(outcome, model)
    return EXIT_STREAM_ERROR if isinstance(outcome, StreamError) else EXIT_OK


def _unusable(exc: StreamError) -> str:
    """Why input of which no payload was accepted is not a stream."""
    if isinstance(exc, StreamAborted):  # nothing was framed at all
        return (
            "no provider payload in it (an empty file, or text that is not SSE, NDJSON, "
            "a JSON array or AWS event-stream)"
        )
    return f"not a recognisable stream: {exc}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolwire._cli.replay FILE [options]``: the subcommand on its own."""
    return run_alone("replay", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
