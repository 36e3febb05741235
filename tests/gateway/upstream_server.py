# ruff: noqa: E402  (a failing start exits before the heavy imports)
"""An MCP server built with the official SDK (not harness), used as a real upstream.

Run as ``python upstream_server.py stdio`` or ``python upstream_server.py http PORT``.
``UPSTREAM_MARK`` (a folder, the test's temporary one) receives marker files the tests read
after the fact; without it the server writes none (never into its working folder, which may
be the repository).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MARK = Path(os.environ["UPSTREAM_MARK"]) if os.environ.get("UPSTREAM_MARK") else None
if __name__ == "__main__" and (
    os.environ.get("UPSTREAM_FAIL_AT_START") or (MARK is not None and (MARK / "fail").exists())
):
    print("refusing to start: UPSTREAM_FAIL_AT_START is set", file=sys.stderr)
    sys.exit(2)

import base64
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Icon, ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("upstream-under-test")
cancelled = anyio.Event()
cancel_count = 0


class Weather(BaseModel):
    city: str
    celsius: float


class Confirm(BaseModel):
    ok: bool = Field(description="Go ahead?")


ICON = Icon(src="data:image/png;base64,iVBORw0KGgo=", mime_type="image/png", sizes=["48x48"])


@server.tool(
    description="Echo the text back.",
    annotations=ToolAnnotations(read_only_hint=True),
    icons=[ICON],
)
def echo(text: Annotated[str, Field(min_length=1)]) -> str:
    return f"upstream says {text}"


@server.tool(description="Always fails with a message.")
def fail(reason: str = "broken on purpose") -> str:
    raise ValueError(reason)


@server.tool(description="Sleep, unless cancelled first.")
async def sleep(seconds: float) -> str:
    global cancel_count
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        cancel_count += 1
        cancelled.set()
        raise
    return "slept"


@server.tool(description="How many sleeps were cancelled, waiting up to 10 s for one.")
async def cancellations() -> int:
    with anyio.move_on_after(10):
        await cancelled.wait()
    return cancel_count


@server.tool(description="The weather in a city, as structured output.")
def weather(city: str) -> Weather:
    return Weather(city=city, celsius=21.5)


@server.tool(name="dotted.name", description="A tool whose name harness must repair.")
def dotted() -> str:
    return "dotted"


@server.tool(description="A picture and a resource link.")
def picture() -> list[object]:
    from mcp_types import ImageContent, ResourceLink, TextContent

    data = base64.b64encode(b"\x89PNG fake").decode()
    return [
        TextContent(type="text", text="a picture"),
        ImageContent(type="image", data=data, mime_type="image/png"),
        ResourceLink(type="resource_link", uri="file:///tmp/x.txt", name="x.txt"),
    ]


@server.tool(
    description="A photo, as content only (no structuredContent).", structured_output=False
)
def photo() -> list[object]:
    from mcp_types import ImageContent, TextContent

    data = base64.b64encode(b"\x89PNG photo bytes").decode()
    return [
        TextContent(type="text", text="a photo"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool(description="A number of 5001 digits, which Python's JSON readers refuse.")
def long_number() -> int:
    return 10**5000


@server.tool(description="Add a tool named `added` and announce the change.")
async def grow(ctx: Context) -> str:
    server.add_tool(lambda: "I was added", name="added", description="Added at run time.")
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()  # to 2026-07-28 listeners (subscriptions/listen)
    return "grown"


@server.tool(description="Remove the tool `echo` and announce the change.")
async def shrink(ctx: Context) -> str:
    server.remove_tool("echo")
    await ctx.session.send_tool_list_changed()
    return "shrunk"


@server.tool(description="Ask the client's user to confirm.")
async def confirm(ctx: Context) -> str:
    answer = await ctx.elicit("Really do it?", Confirm)
    data = getattr(answer, "data", None)
    return f"{answer.action}:{getattr(data, 'ok', None)}"


class Everything(BaseModel):
    ok: bool = Field(description="Move every last cent?")


@server.tool(description="Move money, after asking the client's user to confirm.")
async def transfer(ctx: Context, to: str) -> str:
    answer = await ctx.elicit("Transfer ALL funds?", Everything)
    data = getattr(answer, "data", None)
    return f"{answer.action}:{getattr(data, 'ok', None)}"


@server.tool(description="Exit the server process in the middle of the call.")
def crash() -> str:
    if MARK is not None:
        (MARK / "crashed").write_text("yes")
    os._exit(3)


@server.tool(description="Return a lot of text.")
def huge(size: int) -> str:
    return "x" * size


@server.tool(description="Send many log notifications, then answer.")
async def flood(ctx: Context, count: int) -> str:
    for index in range(count):
        await ctx.info(f"log line {index}")
    return "flooded"


@server.tool(description="The value of one HTTP request header (HTTP only).")
def header(ctx: Context, name: str) -> str:
    request = ctx.request_context.request
    return str(request.headers.get(name)) if request is not None else "no request"


if __name__ == "__main__":
    if MARK is not None:
        (MARK / f"pid-{os.getpid()}").write_text(str(os.getpid()))
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
