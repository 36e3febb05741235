"""The upstream of the gateway benchmark, built with the official SDK: one quick tool, and
hostile ones for the attack rows (a huge result, a flood of ``tools/list_changed``, a flood
of progress and log notifications).

``python -m bench.gateway_upstream stdio`` or ``... http PORT``.
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context, MCPServer

# INFO over HTTP: the benchmark waits for uvicorn's "running" line.
server = MCPServer("bench-upstream", log_level="INFO" if sys.argv[1:2] == ["http"] else "WARNING")


@server.tool(description="Echo the text back.")
def echo(text: str) -> str:
    return text


@server.tool(description="Return `size` bytes of text.")
def huge(size: int) -> str:
    return "x" * size


@server.tool(description="Send `count` tools/list_changed notifications, then answer.")
async def flood(ctx: Context, count: int) -> str:
    for _ in range(count):
        await ctx.session.send_tool_list_changed()
    return "flooded"


@server.tool(description="Report progress and log `count` times each, then answer.")
async def chatter(ctx: Context, count: int) -> str:
    for index in range(count):
        await ctx.report_progress(index + 1, count)
        await ctx.info(f"chatter {index}")
    return "chattered"


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
