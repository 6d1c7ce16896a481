"""Throwaway PostgreSQL and Redis servers for the store tests, started by the suite itself.

Each fixture is session-scoped: the server starts once, on a free port, in a temporary
directory that is removed at the end of the session, whatever happened in between. Under
pytest-xdist each worker is a session of its own, so each starts its own servers: workers
share no server, port or directory.

- PostgreSQL: ``initdb`` + ``pg_ctl`` from ``/usr/lib/postgresql/*/bin`` (or ``PATH``). As
  root, ``initdb`` refuses to run, so the data directory is handed to the ``postgres``
  system user and the binaries run as that user (``runuser``, else ``su``). The server
  listens on a Unix socket in the temporary directory (the DSN points there) and on
  127.0.0.1. Durability settings are off (``fsync``, ``synchronous_commit``): the tests
  check atomicity and fencing, which do not depend on them, and run faster without.
- Redis: ``redis-server --save '' --appendonly no`` in the background, bound to 127.0.0.1.

Readiness is awaited with a bounded loop (``pg_ctl start -w`` with a timeout; a PING loop
for Redis). Where the binaries are missing or a server does not come up, the tests that use
it skip with the reason, except under ``CI=true`` where ``require()`` fails them, so a green
CI run means they really ran.

Register the fixtures in a test module by importing them:
``from servers import postgres_dsn, redis_url``. The context managers behind them
(:func:`postgres_server`, :func:`redis_server`) serve the benchmarks too
(``python -m benchmarks stores``); they raise :class:`ServerUnavailable` where a server
cannot start.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import require

_START_TIMEOUT = 30.0


class ServerUnavailable(RuntimeError):
    """A throwaway server could not be started here (the reason is the message)."""


def _need(condition: bool, reason: str) -> None:
    if not condition:
        raise ServerUnavailable(reason)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _postgres_bin(name: str) -> str | None:
    """The newest installed PostgreSQL binary ``name``, or the one on ``PATH``."""
    candidates = sorted(
        glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
        key=lambda path: int(Path(path).parts[-3]) if Path(path).parts[-3].isdigit() else 0,
    )
    if candidates:
        return candidates[-1]
    return shutil.which(name)


def _as_postgres_user(argv: list[str]) -> list[str] | None:
    """``argv`` run as the ``postgres`` system user when we are root; ``None`` if impossible."""
    if os.geteuid() != 0:
        return argv
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return None
    runuser = shutil.which("runuser")
    if runuser:
        return [runuser, "-u", "postgres", "--", *argv]
    su = shutil.which("su")
    if su:
        import shlex

        return [su, "postgres", "-s", "/bin/sh", "-c", shlex.join(argv)]
    return None


def _log_tail(path: Path, lines: int = 20) -> str:
    """The last lines of a server log, for a skip or failure message."""
    try:
        return "\n".join(path.read_text("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """A throwaway PostgreSQL server for the ``with`` block; its DSN (Unix socket)."""
    initdb, pg_ctl = _postgres_bin("initdb"), _postgres_bin("pg_ctl")
    _need(
        initdb is not None and pg_ctl is not None,
        "PostgreSQL's initdb/pg_ctl are not installed (Debian package postgresql)",
    )
    assert initdb is not None and pg_ctl is not None
    wrap_probe = _as_postgres_user(["true"])
    _need(
        wrap_probe is not None,
        "running as root, but there is no 'postgres' system user to run initdb as",
    )
    tmp = Path(tempfile.mkdtemp(prefix="toolwire-pg-"))
    data, log = tmp / "data", tmp / "server.log"
    started = False
    try:
        if os.geteuid() == 0:
            import pwd

            entry = pwd.getpwnam("postgres")
            os.chown(tmp, entry.pw_uid, entry.pw_gid)
        init = _as_postgres_user(
            [initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"]
        )
        assert init is not None
        done = subprocess.run(init, capture_output=True, text=True, timeout=120, check=False)
        _need(done.returncode == 0, f"initdb failed: {done.stderr.strip()[-2000:]}")
        # A free port can be taken between the probe and the bind (by another xdist
        # worker's server, say): try a few.
        for _attempt in range(3):
            port = free_port()
            options = (
                f"-p {port} -k {tmp} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            )
            start = _as_postgres_user(
                [
                    pg_ctl,
                    "-D",
                    str(data),
                    "-l",
                    str(log),
                    "-o",
                    options,
                    "-w",
                    "-t",
                    str(int(_START_TIMEOUT)),
                    "start",
                ]
            )
            assert start is not None
            done = subprocess.run(
                start, capture_output=True, text=True, timeout=_START_TIMEOUT + 10, check=False
            )
            started = done.returncode == 0
            if started or "could not bind" not in _log_tail(log):
                break
        _need(started, f"PostgreSQL did not start: {done.stderr.strip()}\n{_log_tail(log)}")
        yield f"host={tmp} port={port} user=postgres dbname=postgres"
    finally:
        # Stop whatever came up, even after a start that timed out half-way.
        if started or (data / "postmaster.pid").exists():
            stop = _as_postgres_user([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"])
            assert stop is not None
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run(stop, capture_output=True, timeout=60, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def _redis_ping(port: int) -> bool:
    """Whether a Redis server answers PING on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


@contextlib.contextmanager
def redis_server() -> Iterator[str]:
    """A throwaway Redis server without persistence for the ``with`` block; its URL."""
    server = shutil.which("redis-server")
    _need(server is not None, "redis-server is not installed (Debian package redis-server)")
    assert server is not None
    tmp = Path(tempfile.mkdtemp(prefix="toolwire-redis-"))
    log = tmp / "server.log"
    process: subprocess.Popen[bytes] | None = None
    try:
        # A free port can be taken between the probe and the bind: try a few.
        for _attempt in range(3):
            port = free_port()
            argv = [
                server,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(tmp),
                "--logfile",
                str(log),
            ]
            process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + _START_TIMEOUT
            ready = False
            while time.monotonic() < deadline and process.poll() is None:
                if _redis_ping(port):
                    ready = True
                    break
                time.sleep(0.05)
            if ready:
                break
            _stop(process)
        _need(ready, f"redis-server did not answer PING\n{_log_tail(log)}")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(tmp, ignore_errors=True)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Terminate a server process, killing it if it does not exit in time."""
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def _fixture(server: contextlib.AbstractContextManager[str]) -> Iterator[str]:
    """A session fixture around ``server``: skip (or fail under ``CI=true``) if it cannot
    start; stop it at the end of the session."""
    with contextlib.ExitStack() as stack:
        try:
            target = stack.enter_context(server)
        except ServerUnavailable as exc:
            require(False, str(exc))
            raise  # not reached: require skips or fails
        yield target


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """The DSN of a throwaway PostgreSQL server (Unix socket in a temporary directory)."""
    yield from _fixture(postgres_server())


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """The URL of a throwaway Redis server without persistence."""
    yield from _fixture(redis_server())
