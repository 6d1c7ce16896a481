"""Tools from real MCP servers (the SDK's own server in a subprocess, over stdio and
streamable HTTP): listing, at-most-once calls with the key in ``_meta``, replays across
reconnects, ``isError``, a server dying mid-call, content blocks, prefixes, refresh."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from executor_support import response
from servers import free_port
from toolwire import (
    AsyncExecutor,
    Executor,
    MCPTools,
    SQLiteStore,
    StreamAssembler,
    Toolbox,
    ToolDefinitionError,
    UsageError,
)
from toolwire._turn.early_abort import AbortWatch

mcp = pytest.importorskip("mcp")
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

SERVER = Path(__file__).with_name("mcp_server.py")
TRANSPORTS = ["stdio", "http"]


class Server:
    """Where the test server keeps its runs, and how to reach it (HTTP: a live process)."""

    def __init__(self, transport: str, runs: Path) -> None:
        self.transport = transport
        self.runs = runs
        self.process: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self) -> None:
        """Start the HTTP server (again) and wait until it accepts connections."""
        if self.transport != "http":
            return
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.process = subprocess.Popen(
            [sys.executable, str(SERVER), "http", str(self.runs), str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        import socket

        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "the MCP server exited"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                return
            time.sleep(0.05)
        raise RuntimeError("the MCP server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()

    def executions(self, tool: str) -> list[str]:
        """The idempotency keys the server's ``tool`` ran with, one per execution."""
        path = self.runs / tool
        return path.read_text().splitlines() if path.exists() else []

    @contextlib.asynccontextmanager
    async def session(self, **options: Any) -> AsyncIterator[Any]:
        """An initialised ClientSession (stdio: a new server process)."""
        if self.transport == "stdio":
            params = mcp.StdioServerParameters(
                command=sys.executable, args=[str(SERVER), "stdio", str(self.runs)]
            )
            transport = mcp.stdio_client(params, errlog=subprocess.DEVNULL)
        else:
            transport = streamable_http_client(self.url)
        async with transport as streams, mcp.ClientSession(*streams[:2], **options) as session:
            await session.initialize()
            yield session


@pytest.fixture(params=TRANSPORTS)
def server(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    runs = tmp_path / "runs"
    runs.mkdir()
    srv = Server(request.param, runs)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def charge(call_id: str = "call_1", amount: int = 5) -> Any:
    return response((call_id, "charge", {"amount": amount, "to": "acct_9"}))


def test_add_mcp_registers_every_tool_with_its_input_schema(server: Server) -> None:
    """add_mcp adds each server tool under its name, with the server's inputSchema."""

    async def main() -> None:
        tools = Toolbox()
        async with server.session() as session:
            mcp_tools = await tools.add_mcp(session)
            listed = (await session.list_tools()).tools
        assert isinstance(mcp_tools, MCPTools)
        assert mcp_tools.names == [t.name for t in listed] == [t.name for t in tools]
        tool = tools.get("charge")
        assert tool is not None and tool.is_async
        assert tool.description == "Charge an amount to an account."
        assert tool.parameters == listed[0].model_dump(by_alias=True)["inputSchema"]
        assert tool.required == ("amount", "to")
        [definition] = [
            d for d in tools.definitions("openai-chat") if d["function"]["name"] == "charge"
        ]
        assert definition["function"]["parameters"]["properties"]["amount"]["type"] == "integer"

    run(main())


def test_a_call_runs_once_per_key_and_the_key_is_in_meta(server: Server, tmp_path: Path) -> None:
    """A call runs on the server once, with the key in _meta; a second run replays."""

    async def main() -> None:
        tools = Toolbox()
        store = SQLiteStore(str(tmp_path / "calls.db"))
        async with server.session() as session:
            await tools.add_mcp(session)
            executor = AsyncExecutor(tools, store=store, scope="conv-1")
            [first] = await executor.run(charge())
            [again] = await executor.run(charge())
        assert first.status == "completed", first
        assert again.status == "replayed"
        assert server.executions("charge") == [first.idempotency_key]
        assert first.value == f"charged 5 to acct_9 (key {first.idempotency_key})"
        assert again.value == first.value

    run(main())


def test_a_replay_survives_a_reconnect(server: Server, tmp_path: Path) -> None:
    """A new session (a new server process under stdio) on the same store replays."""

    async def main() -> None:
        db = str(tmp_path / "calls.db")
        async with server.session() as session:
            tools = Toolbox()
            await tools.add_mcp(session)
            [first] = await AsyncExecutor(tools, store=SQLiteStore(db), scope="c").run(charge())
        if server.transport == "http":
            server.stop()
            server.start()
        async with server.session() as session:
            tools = Toolbox()
            await tools.add_mcp(session)
            [again] = await AsyncExecutor(tools, store=SQLiteStore(db), scope="c").run(charge())
        assert (first.status, again.status) == ("completed", "replayed")
        assert server.executions("charge") == [first.idempotency_key]

    run(main())


def test_is_error_is_a_failed_outcome(server: Server) -> None:
    """An isError result fails the call with the tool's text; it is not run again."""

    async def main() -> None:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
            executor = AsyncExecutor(tools, scope="c")
            [first] = await executor.run(response(("call_1", "decline", {})))
            [again] = await executor.run(response(("call_1", "decline", {})))
        assert first.status == "failed"
        assert first.error is not None and "card declined" in first.error
        assert first.error.startswith("MCPToolError: ")
        assert again.status == "failed" and again.error == first.error
        assert len(server.executions("decline")) == 1

    run(main())


def test_a_server_dying_mid_call_is_unknown_and_never_resent(
    server: Server, tmp_path: Path
) -> None:
    """The server exiting during the call ends it unknown; a later run does not resend."""

    async def main() -> None:
        db = str(tmp_path / "calls.db")
        died = response(("call_1", "crash", {}))
        tools = Toolbox()
        async with contextlib.AsyncExitStack() as stack:
            session = await stack.enter_async_context(server.session())
            await tools.add_mcp(session)
            [first] = await AsyncExecutor(tools, store=SQLiteStore(db), scope="c").run(died)
            with contextlib.suppress(Exception):
                await stack.aclose()  # the transport is broken: closing may complain
        assert first.status == "unknown", first
        assert first.error is not None and "may have run" in first.error
        server.stop()
        server.start()
        async with server.session() as session:
            tools = Toolbox()
            await tools.add_mcp(session)
            [again] = await AsyncExecutor(tools, store=SQLiteStore(db), scope="c").run(died)
        assert again.status == "unknown"
        assert server.executions("crash") == [first.idempotency_key]

    run(main())


def test_image_content_is_kept_as_protocol_dicts(server: Server) -> None:
    """A result with an image keeps every block as the protocol's JSON dict."""

    async def main() -> None:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
            [outcome] = await AsyncExecutor(tools, scope="c").run(
                response(("call_1", "picture", {}))
            )
        assert outcome.status == "completed"
        assert outcome.value == [
            {"type": "text", "text": "a red dot"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ]
        assert json.loads(outcome.result_json or "") == outcome.value

    run(main())


def test_a_name_clash_needs_a_prefix(server: Server) -> None:
    """A server tool named like a local one is refused, toolbox unchanged; prefix= adds it."""

    async def main() -> None:
        tools = Toolbox()

        @tools.tool
        def charge(amount: int) -> str:
            """A local charge."""
            return "local"

        async with server.session() as session:
            with pytest.raises(ToolDefinitionError, match="prefix="):
                await tools.add_mcp(session)
            assert [t.name for t in tools] == ["charge"]
            bank = await tools.add_mcp(session, prefix="bank")
            assert "bank_charge" in tools and bank.names[0] == "bank_charge"
            with pytest.raises(ToolDefinitionError, match="clashes even with its prefix"):
                await tools.add_mcp(session, prefix="bank")
            [outcome] = await AsyncExecutor(tools, scope="c").run(
                response(("call_1", "bank_charge", {"amount": 2, "to": "x"}))
            )
        assert outcome.status == "completed" and outcome.value.startswith("charged 2 to x")
        assert server.executions("charge") == [outcome.idempotency_key]

    run(main())


def test_refresh_follows_a_changed_tool_list(server: Server) -> None:
    """After tools/list_changed, refresh() adds the new tool and drops the removed one."""

    async def main() -> None:
        changed = asyncio.Event()

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        tools = Toolbox()
        async with server.session(message_handler=on_message) as session:
            mcp_tools = await tools.add_mcp(session)
            assert "picture" in tools and "later" not in tools
            await session.call_tool("grow", {})
            await asyncio.wait_for(changed.wait(), 10)
            await mcp_tools.refresh()
            assert "later" in tools and "picture" not in tools
            assert "later" in mcp_tools.names and "picture" not in mcp_tools.names
            [outcome] = await AsyncExecutor(tools, scope="c").run(
                response(("call_1", "later", {"note": "hi"}))
            )
        assert (outcome.status, outcome.value) == ("completed", "later: hi")

    run(main())


def test_arguments_are_checked_like_a_raw_schema_tool(server: Server) -> None:
    """Bad arguments are rejected before any request, as Toolbox.add's schema rejects them."""

    async def main() -> None:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
            [outcome] = await AsyncExecutor(tools, scope="c").run(
                response(("call_1", "charge", {"amount": "ten", "to": "x"}))
            )
        local = Toolbox()
        tool = tools.get("charge")
        assert tool is not None
        local.add("charge", tool.parameters, lambda **kw: None)
        bad = response(("call_1", "charge", {"amount": "ten", "to": "x"}))
        [expected] = local.check_response(bad)
        assert outcome.status == "rejected"
        assert outcome.error == getattr(expected, "reason", None)
        assert server.executions("charge") == []

    run(main())


@pytest.mark.parametrize("server", ["stdio"], indirect=True)
def test_the_sync_executor_refuses_mcp_tools(server: Server) -> None:
    """Executor.run raises UsageError for an MCP tool and claims nothing."""

    async def main() -> None:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
            executor = Executor(tools, scope="c")
            with pytest.raises(UsageError, match="AsyncExecutor"):
                executor.run(charge())
            [outcome] = await AsyncExecutor(tools, store=executor.store, scope="c").run(charge())
        assert outcome.status == "completed"
        assert len(server.executions("charge")) == 1

    run(main())


def test_import_toolwire_does_not_import_mcp() -> None:
    """import toolwire (and its MCP names) never imports the mcp SDK."""
    code = (
        "import sys, toolwire; toolwire.MCPTools; toolwire.Toolbox().add_mcp; "
        "toolwire.AsyncExecutor; assert 'mcp' not in sys.modules, 'mcp imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("server", ["stdio"], indirect=True)
def test_streamed_arguments_are_judged_by_the_servers_schema(server: Server) -> None:
    """While a call streams, a value breaking the server's inputSchema stops it early,
    fed whole, byte by byte and at Hypothesis-chosen splits."""

    async def listed() -> Toolbox:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
        return tools

    tools = run(listed())
    text = json.dumps({"amount": "ten", "to": "acct_9"})

    end = text.index('"ten"') + len('"ten"')  # the breaking value is complete here

    def verdict_at(cuts: list[int]) -> tuple[Any, int]:
        """The verdict, and how far the stream had to go past the bad value for it."""
        points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
        assembler = StreamAssembler(format="openai-chat")
        watch = AbortWatch(tools)
        for i, (a, b) in enumerate(itertools.pairwise(points)):
            function: dict[str, Any] = {"arguments": text[a:b]}
            call: dict[str, Any] = {"index": 0, "function": function}
            if i == 0:
                call = {"index": 0, "id": "call_1", "function": {"name": "charge", **function}}
            for event in assembler.feed(
                {"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]}
            ):
                if watch.see(event) is not None:
                    # stopped in the chunk that completed the bad value, never later
                    assert a < end, (a, end)
                    return watch.verdict, b
        return None, len(text)

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.integers(0, 100), max_size=8))
    def at_splits(cuts: list[int]) -> None:
        verdict, _ = verdict_at(cuts)
        assert verdict is not None and verdict.path == ("amount",)

    verdict, _ = verdict_at([])  # whole
    assert verdict is not None and verdict.path == ("amount",)
    verdict, at = verdict_at(list(range(len(text))))  # byte by byte
    assert verdict is not None and verdict.path == ("amount",) and at <= end
    at_splits()


@pytest.mark.parametrize("server", ["stdio"], indirect=True)
def test_a_tool_the_server_dropped_fails_before_a_refresh(server: Server) -> None:
    """Calling a tool the server removed is answered by the server: failed, not unknown."""

    async def main() -> Any:
        tools = Toolbox()
        async with server.session() as session:
            await tools.add_mcp(session)
            await session.call_tool("grow", {})  # removes "picture"
            [outcome] = await AsyncExecutor(tools, scope="c").run(
                response(("call_1", "picture", {}))
            )
        return outcome

    outcome = run(main())
    assert outcome.status == "failed", outcome
    assert "picture" in (outcome.error or "")
    assert server.executions("picture") == []


class _Listing:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return self.data


class _Failing:
    """A session whose every tools/call ends in ``error`` (as the SDK raises it)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.sent: list[dict[str, Any]] = []

    async def list_tools(self) -> _Listing:
        return _Listing({"tools": [{"name": "pay", "inputSchema": {"type": "object"}}]})

    async def call_tool(self, name: str, arguments: Any, *, meta: Any) -> Any:
        self.sent.append(meta)
        raise self.error


@pytest.mark.parametrize(
    ("error", "status"),
    [
        ("answered", "failed"),  # a JSON-RPC error response from the server
        ("closed", "unknown"),  # the SDK's CONNECTION_CLOSED: no answer came
        ("timeout", "unknown"),  # the SDK's REQUEST_TIMEOUT
        ("reset", "unknown"),  # a ConnectionError would otherwise release the claim
        ("broken", "unknown"),  # anyio's broken stream
    ],
)
def test_errors_of_call_tool_fail_only_when_the_server_answered(error: str, status: str) -> None:
    """A server's JSON-RPC error is failed; every other error of call_tool is unknown and
    the request is not sent again."""
    import anyio

    try:
        from mcp.shared.exceptions import MCPError
    except ImportError:  # mcp 1.x
        from mcp.shared.exceptions import McpError as MCPError  # type: ignore[attr-defined,no-redef]

    def sdk(code: int) -> Exception:
        data = mcp.types.ErrorData(code=code, message="m")
        if hasattr(MCPError, "from_error_data"):  # mcp 2
            return MCPError.from_error_data(data)
        return MCPError(data)  # type: ignore[call-arg]

    errors: dict[str, BaseException] = {
        "answered": sdk(-32601),
        "closed": sdk(-32000),
        "timeout": sdk(-32001),
        "reset": ConnectionResetError("reset by peer"),
        "broken": anyio.BrokenResourceError(),
    }
    session = _Failing(errors[error])

    async def main() -> tuple[Any, Any]:
        tools = Toolbox()
        await tools.add_mcp(session)
        executor = AsyncExecutor(tools, scope="c")
        [first] = await executor.run(response(("call_1", "pay", {})))
        [again] = await executor.run(response(("call_1", "pay", {})))
        return first, again

    first, again = run(main())
    assert first.status == again.status == status, first
    assert session.sent == [{"toolwire/idempotency_key": first.idempotency_key}]


def test_add_mcp_refuses_what_is_not_a_session_or_a_prefix() -> None:
    """add_mcp takes an MCP session and a non-empty str prefix, or raises ToolDefinitionError."""

    async def main() -> None:
        tools = Toolbox()
        with pytest.raises(ToolDefinitionError, match=r"mcp\.ClientSession"):
            await tools.add_mcp(object())
        for prefix in ("", 3):
            with pytest.raises(ToolDefinitionError, match="prefix"):
                await tools.add_mcp(_Failing(RuntimeError()), prefix=prefix)  # type: ignore[arg-type]
        assert len(tools) == 0

    run(main())
