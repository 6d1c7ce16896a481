"""Shared test set-up: where the recorded corpus lives, and skip-or-fail for missing parts.

Under ``CI=true`` a missing corpus or server fails the run instead of skipping, so a green
CI means every test really ran.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from cli_support import Terminal

IN_CI = os.environ.get("CI", "").lower() == "true"

settings.register_profile("default", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "ci",
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci" if IN_CI else "default")


def _one_certificate_bundle() -> None:
    """Point ``SSL_CERT_FILE`` at a bundle of one CA certificate, for this process and the
    processes the tests start, whatever it named before.

    Every SDK client builds a TLS context and loads the CA bundle into it (certifi's, or the
    one ``SSL_CERT_FILE`` names): about 35 ms of CPU each, some 1,400 times a run and again
    in every agent subprocess, although no test speaks TLS (every server is a local
    plain-HTTP one, and nothing goes online). With one certificate that load takes under
    1 ms; the clients and their transports are the real ones.
    """
    try:
        import certifi
    except ImportError:  # nothing the tests use loads its bundle then
        return
    bundle = Path(certifi.where()).read_text("utf-8")
    first = re.search(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----\n", bundle, re.S)
    if first is None:
        return
    folder = tempfile.mkdtemp(prefix="toolwire-tests-ca-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    path = Path(folder) / "one.pem"
    path.write_text(first.group(0), "ascii")
    os.environ["SSL_CERT_FILE"] = str(path)


_one_certificate_bundle()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules that hold ``slow`` tests first, each in its own order: xdist's
    ``--dist loadfile`` hands modules out in this order, so the long ones start at once and
    the short ones fill the workers at the end, instead of a long one running alone last."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


REPO = Path(__file__).resolve().parents[1]
CORPUS_DIR = Path(os.environ.get("TOOLWIRE_CORPUS", REPO.parent / "shared" / "corpus"))


def require(condition: bool, reason: str) -> None:
    """Skip the calling test when ``condition`` is false, or fail it under ``CI=true``."""
    if condition:
        return
    if IN_CI:
        pytest.fail(f"CI=true and {reason}", pytrace=False)
    pytest.skip(reason)


def corpus_available() -> bool:
    """Whether ``../shared/corpus`` (the 51 recorded provider streams) is present."""
    return (CORPUS_DIR / "expected.json").is_file()


def load_expected() -> dict[str, Any]:
    """The corpus's ``expected.json``, or ``{}`` where the corpus is absent."""
    if not corpus_available():
        return {}
    data: dict[str, Any] = json.loads((CORPUS_DIR / "expected.json").read_text("utf-8"))
    return data


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The corpus folder; skips (or fails under CI) when it is absent."""
    require(corpus_available(), f"the recorded corpus is not at {CORPUS_DIR}")
    return CORPUS_DIR


@pytest.fixture
def python_sigint() -> Iterator[None]:
    """Python's own SIGINT handler (raising ``KeyboardInterrupt``) for one test.

    A process can inherit SIGINT ignored (a non-interactive shell starts background jobs
    that way), and then neither a real SIGINT nor ``_thread.interrupt_main()`` interrupts
    anything; tests of Ctrl-C handling install the handler instead of relying on it.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture
def terminal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Terminal]:
    """A private tmux server whose socket lives in a temporary directory (skipped without
    tmux, a failure under CI=true)."""
    require(shutil.which("tmux") is not None, "tmux is not installed (make system-deps adds it)")
    # a short directory of its own: a socket path must stay under about 100 bytes
    term = Terminal(tmp_path_factory.mktemp("tmux", numbered=True) / "socket")
    try:
        yield term
    finally:
        subprocess.run(["tmux", "-S", str(term.socket), "kill-server"], capture_output=True)
        term.socket.unlink(missing_ok=True)
