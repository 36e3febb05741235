"""The peer of ``bench.mcp_http``: the SDK's MCPServer serving ``add`` over streamable HTTP.

Run as ``python -m bench.mcp_peer PORT``; uvicorn with the same settings harness uses.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer


def app() -> Any:
    server: Any = MCPServer("peer")

    @server.tool()
    async def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return server.streamable_http_app()


if __name__ == "__main__":
    uvicorn.run(app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
