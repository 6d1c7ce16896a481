"""``toolwire demo``: toolwire's main job shown offline, in four parts run for real.

A conversation, a cut stream read by toolwire and by the code people write without it, an
agent process killed inside a tool and started again, and a summary; the model is the
simulator. Needs the ``demo`` extra; nothing here is imported by ``import toolwire``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..subcommand import EXIT_OK, EXIT_USAGE, add_subcommand, fail, run_alone, tolerant_output

if TYPE_CHECKING:
    from .view import LiveView, PlainView

__all__ = ["add_parser", "main", "run"]

_EPILOG = """\
Everything runs on this machine: the model is toolwire's provider simulator (OpenAI chat
protocol, 127.0.0.1), the tools write into a temporary directory, the idempotency store
is SQLite. No network, no API key. Needs: pip install 'toolwire[demo]' (make demo).

exit status: 0 done; 2 a missing extra or an unusable --workdir; 130 interrupted.
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Declare ``toolwire demo`` on the ``toolwire`` command's subparsers."""
    parser = add_subcommand(
        commands,
        "demo",
        run,
        help="toolwire's main job in under 30 s: an agent, a cut stream, a crash (offline)",
        description=(
            "An agent conversation through the real openai client and run_turn; the same\n"
            "turn cut mid-arguments, read by toolwire and by the openai SDK's helpers on the\n"
            "same bytes; the agent process killed (SIGKILL) inside a tool and started again,\n"
            "finishing with nothing run twice; the usage and cost. The model is toolwire's\n"
            "simulator: no network, no API key."
        ),
        epilog=_EPILOG,
    )
    parser.add_argument(
        "--fast", action="store_true", help="no pacing: as fast as the machine goes"
    )
    parser.add_argument(
        "--plain",
        action="store_true",
        help="plain lines even on a terminal (the default into pipes and files)",
    )
    parser.add_argument(
        "--workdir",
        metavar="DIR",
        help="keep the workspace and the SQLite store in DIR (absent or empty)",
    )


def _missing_extras() -> list[str]:
    """The demo's requirements that are not installed."""
    missing = []
    for module, name in (("openai", "openai"), ("uvicorn", "uvicorn")):
        try:
            __import__(module)
        except ImportError:
            missing.append(name)
    return missing


class _Unusable(Exception):
    """Arguments that cannot be used: exit 2."""


@contextlib.contextmanager
def _workdir(path: str | None) -> Iterator[Path]:
    """``path`` (created, kept), or a temporary directory deleted afterwards."""
    if path is None:
        with tempfile.TemporaryDirectory(prefix="toolwire-demo-") as made:
            yield Path(made)
        return
    folder = Path(path)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise _Unusable(f"--workdir {path}: not an empty directory")
    folder.mkdir(parents=True, exist_ok=True)
    yield folder


def _view(args: argparse.Namespace) -> LiveView | PlainView:
    """The live view on a terminal with rich installed, else plain lines."""
    from .view import LiveView, Pace, PlainView

    if not args.plain and sys.stdout.isatty():
        try:
            from rich.console import Console
        except ImportError:  # the cli extra is missing: plain lines will do
            pass
        else:
            return LiveView(Console(highlight=False), pace=None if args.fast else Pace())
    return PlainView(sys.stdout)


def run(args: argparse.Namespace) -> int:
    """Run the demo; return the exit status."""
    tolerant_output(sys.stdout)
    missing = _missing_extras()
    if missing:
        return fail(
            "demo",
            f"needs {' and '.join(missing)}: pip install 'toolwire[demo]' (make demo does)",
            EXIT_USAGE,
        )
    from .parts import Demo

    view = _view(args)
    try:
        with _workdir(args.workdir) as root:
            Demo(root, view).run()
            if args.workdir is not None:
                view.line(f"kept in {root}: toolwire store list --db {root / 'toolwire.db'}", "dim")
        return EXIT_OK
    except _Unusable as exc:
        return fail("demo", str(exc), EXIT_USAGE)
    except KeyboardInterrupt:
        view.close()
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolwire._cli.demo [options]``: the subcommand on its own."""
    return run_alone("demo", add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
