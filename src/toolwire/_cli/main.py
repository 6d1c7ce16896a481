"""The ``toolwire`` command: argparse subcommands over the public API.

``serve`` runs the provider simulator until Ctrl-C or SIGTERM; ``replay``, ``store`` and
``demo`` live in their own modules. Exit statuses are those of :mod:`toolwire._cli.subcommand`.
Nothing here is imported by ``import toolwire``.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType

from .._errors import UsageError
from .demo import add_parser as add_demo
from .replay import add_parser as add_replay
from .store import add_parser as add_store

__all__ = ["main"]


def _add_serve(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "serve",
        help="run the provider simulator (seven wire formats, faults on demand)",
        description="Serve scripted or recorded LLM provider streams, with faults.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    parser.add_argument("--seed", type=int, default=None, help="seed of every choice")
    parser.add_argument("--scenario", help="JSON or TOML scenario file")
    parser.add_argument(
        "--recordings", help="directory of recordings, served to requests for model=<file name>"
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="fault applied to every response (repeatable), e.g. cut:0.5, stall-first:2",
    )
    parser.add_argument(
        "--loop", action="store_true", help="start the scenario over when it runs out"
    )
    parser.set_defaults(run=_serve)


def _serve(args: argparse.Namespace) -> int:
    from ..testing import Simulator

    greeting = args.scenario is None and args.recordings is None
    sim = Simulator(
        seed=args.seed,
        host=args.host,
        port=args.port,
        faults=args.fault,
        loop=True if args.loop or greeting else None,
        scenario=args.scenario,
        keep=1000,  # a server left running must not grow without bound
    )
    if args.recordings:
        sim.add_recordings(args.recordings)
    if greeting:
        sim.add_response(text="Hello from the toolwire simulator.")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    # Ctrl-C must stop the server even when SIGINT was inherited ignored (a shell's
    # background job); SIGTERM is what service managers send.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with sim:
            print(f"toolwire simulator on {sim.url} (seed {sim.seed}); Ctrl-C stops it")
            for name, url in sim.base_urls().items():
                print(f"  {name:<18} {url}")
            sys.stdout.flush()
            while not stop.wait(0.5):
                pass
        print("toolwire simulator stopped")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The ``toolwire`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="toolwire", description="Safe, fast streamed LLM tool calls: command-line tools."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_serve(commands)
    add_replay(commands)
    add_store(commands)
    add_demo(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``toolwire`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return run(args)
    except UsageError as exc:
        print(f"toolwire {args.command}: {exc}", file=sys.stderr)
        return 2
