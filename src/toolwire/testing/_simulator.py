"""``Simulator``: the provider simulator as a context manager (sync and async).

``start()`` returns once the server accepts connections; ``stop()`` leaves no thread,
socket or event loop behind. Responses may be added from any thread at any time.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import threading
import time
import types
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from .._errors import UsageError
from ._faults import parse_faults
from ._formats import WIRES, WireFormats
from ._recordings import load_recording
from ._scenario import ScenarioFile, Script, load_scenario, make_response
from ._scenario_types import Fault, ScenarioResponse
from ._server import (
    ConnectionRecord,
    RecordedRequest,
    SimulatorApp,
    Tracker,
    counting_protocol,
    install_log_filter,
)

__all__ = ["Simulator"]

_RECORDING_SUFFIXES = (".sse", ".jsonl", ".ndjson", ".json", ".eventstream", ".txt")


class Simulator:
    """A deterministic HTTP server that speaks seven providers' protocols, with faults.

    ``seed`` makes every seeded choice (fragment sizes, interleaving, ids, fault positions)
    reproducible. ``faults`` apply to every response served (after each response's own).
    ``loop`` makes the script start over instead of running dry. ``scenario`` loads a JSON
    or TOML scenario file (its ``seed`` and ``loop`` are used unless given here). ``keep``
    bounds how many requests and connections are remembered (the oldest are forgotten
    first; ``None``, the default, keeps all), for servers that run for days.
    ``formats`` is the table of formats it writes and routes to, with their quirk profiles:
    the built-in one by default; a test that defines a toy format passes its own
    (``WireFormats(TOY_WIRE, *WIRES)``).
    """

    def __init__(
        self,
        seed: int | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        faults: Iterable[str | Fault] = (),
        loop: bool | None = None,
        scenario: str | Path | None = None,
        shutdown_timeout: float = 5.0,
        keep: int | None = None,
        formats: WireFormats | None = None,
    ) -> None:
        self._wires = WIRES if formats is None else formats
        loaded = load_scenario(scenario) if scenario is not None else None
        seed, loop = _seed_and_loop(seed, loop, loaded)
        self.seed = seed
        self.host = host
        self._port = port
        self._shutdown_timeout = shutdown_timeout
        self._script = _script(loaded, loop=loop)
        if keep is not None and (not isinstance(keep, int) or keep < 1):
            raise UsageError(f"keep must be a positive number of requests, not {keep!r}")
        self._tracker = Tracker(keep)
        self._app = SimulatorApp(
            self._script,
            seed=seed,
            faults=parse_faults(faults),
            tracker=self._tracker,
            keep=keep,
            wires=self._wires,
        )
        self._sock: socket.socket | None = None
        self._bound_port: int | None = None
        self._thread: threading.Thread | None = None
        self._server: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None

    # ------------------------------------------------------------------ script

    def add_response(
        self,
        text: Any = "",
        *,
        for_model: str | None = None,
        reasoning: str = "",
        tool_calls: Iterable[Any] = (),
        finish: str = "auto",
        usage: Any = None,
        id: str | None = None,
        model: str | None = None,
        faults: Iterable[str | Fault] = (),
        profile: str | Sequence[str] | None = None,
        output: Any = None,
        refusal: str = "",
        server_tools: Iterable[Any] = (),
    ) -> ScenarioResponse:
        """Queue a scripted response and return it (checked; see ``ScenarioResponse``).

        ``output`` is a structured output (a pydantic model instance or a JSON value),
        served as the text's JSON; ``refusal`` the words of a model that declined (OpenAI's
        ``refusal`` channel, Anthropic's ``refusal`` stop, Gemini's ``SAFETY``).

        ``tool_calls`` items are ``(name, arguments)``, ``(name, arguments, id)`` or
        mappings; ``arguments`` given as a string is served as raw text (so it can be
        invalid JSON). ``for_model`` (an ``fnmatch`` pattern) serves it only to requests
        for matching models; otherwise responses are served in the order they were added,
        whichever endpoint asks.
        """
        response = make_response(
            text=text,
            reasoning=reasoning,
            tool_calls=tool_calls,
            finish=finish,
            usage=usage,
            id=id,
            model=model,
            faults=faults,
            output=output,
            refusal=refusal,
            server_tools=server_tools,
        )
        if profile is not None:  # named in this simulator's table
            response = dataclasses.replace(response, profiles=self._wires.parse_profiles(profile))
        self._script.add(response, model=for_model)
        return response

    def add_recording(
        self,
        path: str | Path,
        *,
        faults: Iterable[str | Fault] = (),
        for_model: str | None = None,
    ) -> None:
        """Queue a recorded body, served byte-exact (its framing found from its content)."""
        self._script.add(load_recording(path, faults=faults), model=for_model)

    def add_recordings(self, directory: str | Path) -> list[str]:
        """Register every recording in ``directory`` for requests whose model is its file
        name (or the name without its suffix), served again on every such request; return
        the names registered."""
        folder = Path(directory)
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a directory of recordings")
        names = []
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.suffix in _RECORDING_SUFFIXES:
                recording = load_recording(path)
                self._script.add(recording, model=path.name, repeat=True)
                self._script.add(recording, model=path.stem, repeat=True)
                names.append(path.name)
        return names

    # ------------------------------------------------------------------ state

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order, with what was served for it."""
        return self._app.requests

    @property
    def connections(self) -> list[ConnectionRecord]:
        """Every TCP connection accepted, open or closed, with the body bytes it carried."""
        return self._tracker.connections

    @property
    def open_connections(self) -> int:
        """How many TCP connections are open now."""
        return self._tracker.open_count

    def wait_for_connections_closed(self, timeout: float = 5.0) -> bool:
        """Wait until no connection is open and every request received has been dealt
        with (answered, cut or abandoned); whether that happened within ``timeout``."""
        deadline = time.monotonic() + timeout
        for record in list(self._app.requests):
            if not record.finished.wait(max(0.0, deadline - time.monotonic())):
                return False
        return self._tracker.wait_closed(max(0.0, deadline - time.monotonic()))

    @property
    def port(self) -> int:
        """The port the server listens on (known once started)."""
        if self._bound_port is None:
            raise UsageError("the simulator is not started: use it in a with block")
        return self._bound_port

    @property
    def url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT``."""
        return f"http://{self.host}:{self.port}"

    def base_url(self, format: str) -> str:
        """What the provider's SDK client takes as its base URL for ``format``.

        OpenAI (chat and Responses): ``.../v1``; Anthropic, Cohere: the root; Gemini: the
        root for google-genai's ``http_options``; Bedrock: boto3's ``endpoint_url``;
        Ollama: the client's ``host``. Each provider declares its own
        (``WireFormat.base_path``); :class:`~toolwire.UnknownFormat` for a format the
        simulator does not serve.
        """
        return self.url + self._wires.wire(format).base_path

    def base_urls(self) -> dict[str, str]:
        """``base_url`` of every format served."""
        return self._wires.base_urls(self.url)

    # -------------------------------------------------------------- lifecycle

    def start(self) -> Simulator:
        """Bind, start the server thread and wait until it accepts connections."""
        if self._thread is not None:
            raise UsageError("the simulator is already started")
        try:
            import uvicorn
        except ModuleNotFoundError:
            raise UsageError(
                "the simulator's server needs the testing extra: pip install 'toolwire[testing]'"
            ) from None
        install_log_filter()
        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self._port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise UsageError(f"cannot listen on {self.host}:{self._port}: {exc}") from None
        self._sock = sock
        self._bound_port = int(sock.getsockname()[1])
        config = uvicorn.Config(
            self._app,
            http=counting_protocol(self._tracker),
            lifespan="off",
            log_config=None,
            log_level="warning",
            access_log=False,
            ws="none",
            timeout_graceful_shutdown=max(1, round(self._shutdown_timeout)),
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._run, name="toolwire-simulator", daemon=True)
        self._thread.start()
        while not self._ready.wait(0.05):
            if not self._thread.is_alive():
                break
        if self._failure is not None or not getattr(self._server, "started", False):
            self.stop()
            raise UsageError(f"the simulator's server did not start: {self._failure!r}")
        return self

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # reported by start() / stop()
            self._failure = exc
        finally:
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._app.stopping = asyncio.Event()
        server = self._server

        async def announce() -> None:
            while not server.started and not server.should_exit:
                await asyncio.sleep(0.01)
            self._ready.set()

        notifier = asyncio.ensure_future(announce())
        try:
            await server.serve(sockets=[self._sock])
        finally:
            notifier.cancel()

    def stop(self) -> None:
        """Shut down and join the server thread; safe to call twice."""
        thread, self._thread = self._thread, None
        if thread is not None:
            loop, stopping = self._loop, self._app.stopping
            if loop is not None and stopping is not None and not loop.is_closed():
                # RuntimeError: the loop just closed, so the server is already down
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(stopping.set)
            if self._server is not None:
                self._server.should_exit = True
            thread.join(self._shutdown_timeout + 5.0)
        if self._sock is not None:
            self._sock.close()

    def __enter__(self) -> Simulator:
        """Start; the simulator stops when the block ends."""
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        """Stop, whatever ended the block."""
        self.stop()

    async def __aenter__(self) -> Simulator:
        """Start in a worker thread, so the caller's event loop never blocks."""
        await asyncio.to_thread(self.start)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: types.TracebackType | None,
    ) -> None:
        """Stop in a worker thread."""
        await asyncio.to_thread(self.stop)


def _seed_and_loop(
    seed: int | None, loop: bool | None, loaded: ScenarioFile | None
) -> tuple[int, bool]:
    """The seed and loop flag given, else the scenario file's, else 0 and no loop."""
    if seed is None:
        seed = loaded.seed if loaded is not None and loaded.seed is not None else 0
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise UsageError(f"seed must be an integer, not {seed!r}")
    if loop is None:
        loop = loaded.loop if loaded is not None else False
    return seed, loop


def _script(loaded: ScenarioFile | None, *, loop: bool) -> Script:
    """The script of a simulator: a scenario file's responses, in order and per model."""
    script = Script(loop=loop)
    if loaded is not None:
        for entry in loaded.responses:
            script.add(entry)
        for pattern, entries in loaded.models.items():
            for entry in entries:
                script.add(entry, model=pattern)
    return script
