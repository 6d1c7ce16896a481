"""``toolwire serve``: runs in a subprocess, prints the base URLs, serves scenarios,
recordings and faults, and stops cleanly on SIGINT (Ctrl-C) and SIGTERM; bad arguments
exit with status 2 and the reason."""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from simulator_support import request_body


@dataclass
class Server:
    """A running ``toolwire serve``: its process, printed URLs and later output lines."""

    process: subprocess.Popen[str]
    urls: dict[str, str]
    lines: queue.Queue[str]

    def stop(self, sig: int) -> str:
        """Send ``sig``, wait for the exit, return what it printed after the URLs."""
        self.process.send_signal(sig)
        self.process.wait(15)
        time.sleep(0.2)  # let the reader thread take the last lines
        out = []
        while not self.lines.empty():
            out.append(self.lines.get())
        return "".join(out)


@contextmanager
def serve(*args: str) -> Iterator[Server]:
    """Start ``python -m toolwire serve ARGS``; yield it once its URLs are printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "toolwire", "serve", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        # a reader thread: select() on a text pipe misses lines already buffered
        reader = threading.Thread(
            target=lambda: [lines.put(line) for line in iter(process.stdout.readline, "")],
            daemon=True,
        )
        urls: dict[str, str] = {}
        if process.stdout is not None:
            reader.start()
        deadline = time.monotonic() + 30
        while len(urls) < 7 and time.monotonic() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if process.poll() is not None:
                    break
                continue
            parts = line.split()
            if len(parts) == 2 and parts[1].startswith("http://"):
                urls[parts[0]] = parts[1]
        assert len(urls) == 7, process.stderr.read() if process.poll() is not None else urls
        yield Server(process, urls, lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_serve_prints_urls_serves_and_stops_on_sigint() -> None:
    """With no scenario it greets every request; Ctrl-C stops it with status 0."""
    with serve("--seed", "3") as server:
        assert server.urls["openai-chat"].endswith("/v1")
        root = server.urls["anthropic"]
        path, body = request_body("openai-chat", stream=False)
        for _ in range(2):  # the greeting loops
            answer = httpx.post(root + path, json=body, timeout=10).json()
            greeting = answer["choices"][0]["message"]["content"]
            assert greeting == "Hello from the toolwire simulator."
        started = time.monotonic()
        out = server.stop(signal.SIGINT)
        assert server.process.returncode == 0
        assert time.monotonic() - started < 10
        assert "stopped" in out
        with pytest.raises(httpx.ConnectError):
            httpx.post(root + path, json=body, timeout=5)


def test_serve_runs_a_scenario_with_faults_and_stops_on_sigterm(tmp_path: Path) -> None:
    """``--scenario`` and ``--fault`` apply; SIGTERM stops it too."""
    scenario = tmp_path / "s.json"
    scenario.write_text(
        json.dumps({"responses": [{"text": "scripted", "tool_calls": [["f", {"a": 1}]]}]})
    )
    with serve("--scenario", str(scenario), "--fault", "http:503") as server:
        path, body = request_body("anthropic", stream=False)
        answer = httpx.post(server.urls["anthropic"] + path, json=body, timeout=10)
        assert answer.status_code == 503
        assert answer.json()["error"]["type"] == "api_error"
        server.stop(signal.SIGTERM)
        assert server.process.returncode == 0


def test_serve_recordings_by_model_name(tmp_path: Path) -> None:
    """``--recordings DIR`` serves each file to requests naming it as the model."""
    data = b'data: {"choices":[{"index":0,"delta":{"content":"recorded"}}]}\n\n'
    (tmp_path / "hello.sse").write_bytes(data)
    with serve("--recordings", str(tmp_path)) as server:
        path, body = request_body("openai-chat")
        for model in ("hello", "hello.sse", "hello"):  # served again on every request
            body["model"] = model
            answer = httpx.post(server.urls["anthropic"] + path, json=body, timeout=10)
            assert answer.content == data
        server.stop(signal.SIGINT)
        assert server.process.returncode == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fault", "cut:9"], "between 0 and 1"),
        (["--scenario", "/nonexistent/s.toml"], "cannot read the scenario"),
        (["--recordings", "/nonexistent"], "not a directory"),
    ],
)
def test_bad_arguments_exit_2_with_the_reason(args: list[str], message: str) -> None:
    """Unusable arguments are reported on stderr with exit status 2."""
    done = subprocess.run(
        [sys.executable, "-m", "toolwire", "serve", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert message in done.stderr


def test_no_subcommand_prints_help_and_exits_2() -> None:
    """``toolwire`` alone shows the subcommands."""
    done = subprocess.run(
        [sys.executable, "-m", "toolwire"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "serve" in done.stderr
