"""The ``toolwire`` console script: every subcommand is registered and reachable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import write_file_stream
from toolwire._cli.main import build_parser, main


def test_every_subcommand_is_registered() -> None:
    """``toolwire`` offers serve, replay and store."""
    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    assert {"serve", "replay", "store"} <= set(commands.choices)  # type: ignore[arg-type]


def test_replay_through_the_console_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``toolwire replay FILE --json`` judges a finished stream 0 and a cut one 3."""
    whole = tmp_path / "whole.sse"
    whole.write_text(write_file_stream())
    cut = tmp_path / "cut.sse"
    cut.write_text(write_file_stream(finish=False))
    assert main(["replay", str(whole), "--json"]) == 0
    assert main(["replay", str(cut), "--json"]) == 3
    assert '"error"' in capsys.readouterr().out


def test_python_dash_m_toolwire_runs_the_same_command() -> None:
    """``python -m toolwire store --help`` exits 0 and names the actions."""
    out = subprocess.run(
        [sys.executable, "-m", "toolwire", "store", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "resolve" in out.stdout and "purge" in out.stdout
