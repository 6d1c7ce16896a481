"""A real MCP server (the SDK's MCPServer, formerly FastMCP) for tests/tools/test_mcp.py.

``python mcp_server.py stdio RUNS_DIR`` or ``python mcp_server.py http RUNS_DIR PORT``.
Every execution of a tool appends the idempotency key it received to ``RUNS_DIR/<tool>``,
so the tests count executions across sessions and server processes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mcp import types

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context
    from mcp.server.fastmcp import FastMCP as MCPServer
    from mcp.server.fastmcp.exceptions import ToolError

RUNS = Path(sys.argv[2])
KEY = "toolwire/idempotency_key"
server = MCPServer("toolwire-test")


def ran(tool: str, ctx: Context) -> str:
    """Record one execution of ``tool``; the idempotency key the request carried."""
    meta = ctx.request_context.meta
    extra = meta if isinstance(meta, dict) else getattr(meta, "model_extra", None) or {}
    key = str(extra.get(KEY))
    with open(RUNS / tool, "a") as f:
        f.write(key + "\n")
    return key


@server.tool()
def charge(amount: int, to: str, ctx: Context) -> str:
    """Charge an amount to an account."""
    key = ran("charge", ctx)
    return f"charged {amount} to {to} (key {key})"


@server.tool(structured_output=False)
def decline(ctx: Context) -> str:
    """A tool that always fails."""
    ran("decline", ctx)
    raise ToolError("card declined")


@server.tool(structured_output=False)
def crash(ctx: Context) -> str:
    """The server dies in the middle of the call."""
    ran("crash", ctx)
    os._exit(3)


@server.tool(structured_output=False)
def picture(ctx: Context) -> list[types.TextContent | types.ImageContent]:
    """Text and an image."""
    ran("picture", ctx)
    return [
        types.TextContent(type="text", text="a red dot"),
        types.ImageContent(type="image", data="iVBORw0KGgo=", mimeType="image/png"),
    ]


def later(note: str) -> str:
    """A tool that appears once ``grow`` ran."""
    return f"later: {note}"


@server.tool(structured_output=False)
async def grow(ctx: Context) -> str:
    """Add the tool ``later``, remove ``picture``, and tell the client."""
    server.add_tool(later)
    server.remove_tool("picture")
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
