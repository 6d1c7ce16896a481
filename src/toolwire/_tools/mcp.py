"""Tools from an MCP server: each tool a session lists becomes a toolwire tool calling it.

Works on the session it is given (extra ``toolwire[mcp]``); the SDK itself is imported only
to ask for a second page of tools.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .._errors import EffectInDoubt, RetryableError, ToolDefinitionError

if TYPE_CHECKING:  # the toolbox imports this module, on add_mcp
    from .context import ToolContext
    from .toolbox import Tool, Toolbox

__all__ = ["MCPToolError", "MCPTools"]

IDEMPOTENCY_KEY_META = "toolwire/idempotency_key"
"""The key of the request's ``_meta`` that carries the call's idempotency key."""

# The JSON-RPC codes the SDK raises itself for a request that got no answer.
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_MAX_PAGES = 1000


class MCPToolError(Exception):
    """The MCP tool answered with ``isError``: a ``failed`` outcome.

    The message is the text of its content; ``content`` holds every content block as a
    JSON dict (``{"type": "text", "text": ...}``, ``{"type": "image", ...}``).
    """

    def __init__(self, message: str, content: list[dict[str, Any]]) -> None:
        super().__init__(message)
        self.content = content


class MCPCall:
    """The callable behind one MCP tool: sends ``tools/call`` through the session."""

    __slots__ = ("_owner", "remote")

    def __init__(self, owner: MCPTools, remote: str) -> None:
        self._owner = owner
        self.remote = remote

    def __repr__(self) -> str:
        """``MCPCall('name')``."""
        return f"MCPCall({self.remote!r})"

    async def __call__(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Call the server's tool with ``arguments``; its result value (see :class:`MCPTools`)."""
        return await self._owner._call(self.remote, arguments, ctx)


class MCPTools:
    """The tools one MCP session added to a :class:`~toolwire.Toolbox`
    (what ``await tools.add_mcp(session)`` returns).

    A call sends ``tools/call`` with the idempotency key in the request's ``_meta`` under
    ``"toolwire/idempotency_key"``. Its value is the text of the result (the text blocks
    joined by newlines) when every content block is text, else the list of blocks as the
    JSON dicts of the protocol (``{"type": "image", "data": ..., "mimeType": ...}``,
    ``{"type": "resource", "resource": {...}}``). ``isError`` raises :class:`MCPToolError`
    (``failed``); a request cut off before its answer (the server died, the connection
    dropped, the SDK's read timeout) raises :class:`~toolwire.EffectInDoubt`
    (``unknown``, never sent again). Run the calls with an ``AsyncExecutor`` on the
    session's event loop; ``Executor`` refuses them with a ``UsageError``.
    """

    def __init__(self, toolbox: Toolbox, session: Any, prefix: str | None) -> None:
        if prefix is not None and (not isinstance(prefix, str) or not prefix):
            raise ToolDefinitionError(f"prefix must be a non-empty str or None, not {prefix!r}")
        if not callable(getattr(session, "list_tools", None)) or not callable(
            getattr(session, "call_tool", None)
        ):
            raise ToolDefinitionError(
                f"add_mcp takes an mcp.ClientSession, not {type(session).__name__}"
            )
        self.toolbox = toolbox
        self.session = session
        self.prefix = prefix
        self._remote: dict[str, str] = {}  # toolwire name -> the server's name
        self._loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        """``MCPTools(name, name, ...)``."""
        return f"MCPTools({', '.join(self._remote)})"

    @property
    def names(self) -> list[str]:
        """The toolwire names of the server's tools, in the server's order."""
        return list(self._remote)

    def __iter__(self) -> Iterator[Tool]:
        """The registered tools, in the server's order."""
        tools = self.toolbox._tools
        return iter([tools[name] for name in self._remote])

    def __len__(self) -> int:
        """How many tools the server has in the toolbox."""
        return len(self._remote)

    def _name(self, remote: str) -> str:
        return remote if self.prefix is None else f"{self.prefix}_{remote}"

    async def refresh(self) -> None:
        """List the server's tools again and make the toolbox hold exactly them.

        New tools are added, removed ones dropped, changed ones replaced; on a name taken
        by another tool (or any tool that cannot be registered) :class:`ToolDefinitionError`
        is raised and the toolbox is left as it was. Call it after the server's
        ``notifications/tools/list_changed``.
        """
        self._loop = asyncio.get_running_loop()
        listed = await _list_tools(self.session)
        made: dict[str, tuple[str, Tool]] = {}
        taken = self.toolbox._tools
        for entry in listed:
            remote = entry.get("name")
            if not isinstance(remote, str):
                raise ToolDefinitionError(f"the MCP server listed a tool without a name: {entry}")
            name = self._name(remote)
            if name in made:
                raise ToolDefinitionError(f"the MCP server lists the tool {remote!r} twice")
            if name in taken and name not in self._remote:
                hint = "" if self.prefix is None else " even with its prefix"
                raise ToolDefinitionError(
                    f"the MCP tool {remote!r} clashes{hint} with the tool {name!r} already "
                    "registered: give add_mcp(..., prefix=...) to keep both"
                )
            tool = self.toolbox._raw_tool(
                name,
                entry.get("inputSchema", {"type": "object"}),
                entry.get("description") or "",
                MCPCall(self, remote),
            )
            made[name] = (remote, tool)
        for name in self._remote:
            if name not in made:
                del taken[name]
        for name, (_, tool) in made.items():
            taken[name] = tool
        self._remote = {name: remote for name, (remote, _) in made.items()}

    async def _call(self, remote: str, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        if asyncio.get_running_loop() is not self._loop:
            raise RetryableError(
                f"the MCP tool {remote!r} runs on the event loop of its session: run it with "
                "an AsyncExecutor there (nothing was sent)"
            )
        meta = {IDEMPOTENCY_KEY_META: ctx.idempotency_key}
        try:
            result = await self.session.call_tool(remote, arguments, meta=meta)
        except Exception as exc:
            if _answered(exc):
                raise  # the server answered with a JSON-RPC error: a failure
            raise EffectInDoubt(
                f"the MCP call was cut off before its answer ({type(exc).__name__}: {exc}); "
                "the tool may have run"
            ) from exc
        data = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        content: list[dict[str, Any]] = data.get("content") or []
        if data.get("isError"):
            raise MCPToolError(_text(content) or "the MCP tool reported an error", content)
        if all(block.get("type") == "text" for block in content):
            return _text(content)
        return content


def _text(content: list[dict[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text")


def _answered(exc: Exception) -> bool:
    """Whether ``exc`` is the SDK's error for a JSON-RPC error the server sent back."""
    if not type(exc).__module__.startswith("mcp."):
        return False
    code = getattr(getattr(exc, "error", None), "code", None)
    return isinstance(code, int) and code not in (_CONNECTION_CLOSED, _REQUEST_TIMEOUT)


async def _list_tools(session: Any) -> list[dict[str, Any]]:
    """Every tool the server lists, across pages, as protocol dicts (camelCase keys)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        if cursor is None:
            page = await session.list_tools()
        else:
            page = await _next_page(session, cursor)
        data = page.model_dump(by_alias=True, exclude_none=True, mode="json")
        tools.extend(data.get("tools") or [])
        cursor = data.get("nextCursor")
        if not cursor:
            return tools
    raise ToolDefinitionError(f"the MCP server's tool list goes on past {_MAX_PAGES} pages")


async def _next_page(session: Any, cursor: str) -> Any:
    if "params" in inspect.signature(session.list_tools).parameters:
        from mcp import types  # the session is an mcp one: the SDK is installed

        return await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor))
    return await session.list_tools(cursor=cursor)  # the mcp 1.x signature
