"""Per-call latency through the official MCP client, in memory, beside the SDK's MCPServer.

Both servers serve the same async ``add(a, b)``; the client is the SDK's ``Client`` connected
in process (no transport). Reports µs per ``call_tool``, interleaved rounds.
"""

from __future__ import annotations

from typing import Any

from mcp import Client
from mcp.server.mcpserver import MCPServer

from harness import Context, ToolsService, define_tool
from harness.mcp import McpSurface

from .timing import compare, table


async def _add(args: dict[str, Any]) -> float:
    return float(args["a"] + args["b"])


async def main() -> None:
    peer: Any = MCPServer("peer")

    @peer.tool()
    async def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    async with Context() as root:
        await root.plugin(ToolsService, {"timeout": None})
        root.tools.register(
            define_tool(
                name="add",
                description="Add two numbers",
                parameters={
                    "a": {"type": "number", "required": True},
                    "b": {"type": "number", "required": True},
                },
                output={"schema": {"type": "number"}},
                execute=_add,
            )
        )
        surface = McpSurface(root)
        surface.attach()
        async with Client(surface.server) as ours, Client(peer) as theirs:
            args = {"a": 1, "b": 2}
            assert (await ours.call_tool("add", args)).structured_content == {"result": 3.0}
            assert (await theirs.call_tool("add", args)).structured_content == {"result": 3.0}
            results = await compare(
                {
                    "harness over MCP (in memory)": lambda: ours.call_tool("add", args),
                    "MCP SDK MCPServer (in memory)": lambda: theirs.call_tool("add", args),
                },
                number=1000,
                rounds=7,
            )
    table(
        "call_tool add(a, b) through the SDK client (best of 7 rounds of 1,000)",
        results,
        baseline="harness over MCP (in memory)",
    )
