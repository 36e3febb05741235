"""The upstream of the gateway benchmark: one quick tool, built with the official SDK.

``python -m bench.gateway_upstream stdio`` or ``... http PORT``.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

# INFO over HTTP: the benchmark waits for uvicorn's "running" line.
server = MCPServer("bench-upstream", log_level="INFO" if sys.argv[1:2] == ["http"] else "WARNING")


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
