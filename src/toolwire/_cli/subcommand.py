"""What every ``toolwire`` subcommand shares: exit statuses, the one-line error, safe output.

====  ==================================================================================
0     done
1     refused or not found: the command worked, the answer is no
2     unusable arguments or input: nothing was done (argparse's own status too)
3     the stream did not end properly (a ``StreamError``)
4     the store failed (cannot connect, an operation failed): an outage, retry later
130   interrupted (Ctrl-C)
141   stdout was closed early (``| head``), as for a program that SIGPIPE ended
====  ==================================================================================

Text from a model or a store is shown through :func:`visible`, so it cannot drive the
terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = [
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_STORE_FAILED",
    "EXIT_STREAM_ERROR",
    "EXIT_USAGE",
    "add_subcommand",
    "fail",
    "reader_gone",
    "run_alone",
    "tolerant_output",
    "visible",
]

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_STREAM_ERROR = 3
EXIT_STORE_FAILED = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


# C0 controls but tab and line feed, DEL, C1 controls (ESC and CSI among them), the
# bidirectional and line-separator characters, and lone surrogates (no terminal can show
# them, and no encoder writes them)
_HIDDEN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]"
)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def visible(text: str) -> str:
    """``text`` with every character that could act on a terminal instead of being shown
    (controls, escape sequences, bidirectional overrides, lone surrogates) written as a
    ``\\uXXXX`` escape; line feeds and tabs stay."""
    return _HIDDEN.sub(_escape, text)


def fail(command: str, message: str, status: int) -> int:
    """Print ``toolwire <command>: <message>`` on stderr, on one line; return ``status``."""
    line = " ".join(visible(message).split())  # one line, whatever the exception text held
    print(f"toolwire {command}: {line}", file=sys.stderr, flush=True)
    return status


def tolerant_output(stream: TextIO) -> None:
    """Let ``stream`` write any ``str``: characters its encoding lacks, and the lone
    surrogates a model's JSON escapes can produce, come out backslash-escaped instead of
    raising ``UnicodeEncodeError`` half-way through the output."""
    if isinstance(stream, io.TextIOWrapper):
        with contextlib.suppress(ValueError, OSError):
            stream.reconfigure(errors="backslashreplace")


def add_subcommand(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    run: Callable[[argparse.Namespace], int],
    *,
    help: str,
    description: str,
    epilog: str,
) -> argparse.ArgumentParser:
    """Declare the subcommand ``name`` on the ``toolwire`` command's subparsers, its texts
    shown with their line breaks, and return its parser (for its arguments). ``run`` runs
    it, under the statuses every subcommand shares: Ctrl-C is one line and
    :data:`EXIT_INTERRUPTED` (a subcommand that shows something closes it and re-raises),
    a reader gone (``| head``) :data:`EXIT_BROKEN_PIPE`."""

    def run_command(args: argparse.Namespace) -> int:
        try:
            return run(args)
        except KeyboardInterrupt:
            return fail(name, "interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            return reader_gone()

    parser = commands.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.set_defaults(run=run_command)
    return parser


def run_alone(
    name: str,
    add_parser: Callable[[Any], None],
    argv: Sequence[str] | None = None,
) -> int:
    """Run the subcommand ``name`` as ``toolwire <name> <argv>`` would, with only that
    subcommand registered (``python -m toolwire._cli_<name> ...``); return its status."""
    parser = argparse.ArgumentParser(prog="toolwire")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    add_parser(commands)
    args = parser.parse_args([name, *(sys.argv[1:] if argv is None else argv)])
    run: Callable[[argparse.Namespace], int] = args.run
    return run(args)


def reader_gone() -> int:
    """Handle ``BrokenPipeError`` on stdout (the reader went away, as ``| head`` does):
    point stdout at ``/dev/null`` so that Python's flush at exit does not complain again,
    and return :data:`EXIT_BROKEN_PIPE`."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE
