"""An MCP server on the official SDK's low-level ``Server`` (not harness) that declares
resource subscriptions and keeps a journal of them: a real upstream for subscriptions passing
through the gateway (DESIGN §12). Run as ``python subscribing_server.py`` (stdio).

It serves ``feed://news`` and the template ``feed://topics/{name}``; ``resources/subscribe``
and ``unsubscribe`` (2025-11-25) and the URIs of each ``subscriptions/listen`` stream
(2026-07-28) are written to the journal, which the tool ``journal`` returns (once it has
``at_least`` lines: what a client's disconnection ends comes after it has gone); the tool
``touch`` announces an update of a URI to who subscribed to it, in either era, and
``crash`` exits.
A subscription to ``feed://topics/secret`` is refused (at 2025-11-25).
``--no-subscribe`` serves the same without declaring ``subscribe``.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError

journal: list[str] = []
written = anyio.Event()
sessions: dict[str, list[Any]] = {}
"""URI → the handshake-era sessions subscribed to it."""
bus = InMemorySubscriptionBus()
listener = ListenHandler(bus)

TOOLS = [
    types.Tool(
        name="touch",
        description="Announce an update of a resource.",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="crash",
        description="Exit at once, as a crash does.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="journal",
        description="What was subscribed and unsubscribed, in order.",
        input_schema={"type": "object", "properties": {"at_least": {"type": "integer"}}},
    ),
]


def write(line: str) -> None:
    global written
    journal.append(line)
    written.set()
    written = anyio.Event()


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=value)])


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "crash":
        os._exit(3)
    if params.name == "journal":
        while len(journal) < int((params.arguments or {}).get("at_least", 0)):
            await written.wait()
        return text(" | ".join(journal) or "empty")
    uri = str((params.arguments or {})["uri"])
    for session in sessions.get(uri, []):
        await session.send_resource_updated(uri)
    await bus.publish(ResourceUpdated(uri=uri))
    return text("touched")


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    news = types.Resource(uri="feed://news", name="news", description="The news.")
    return types.ListResourcesResult(resources=[news])


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    topic = types.ResourceTemplate(
        uri_template="feed://topics/{name}", name="topic", description="A topic."
    )
    return types.ListResourceTemplatesResult(resource_templates=[topic])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    contents = types.TextResourceContents(uri=str(params.uri), text=f"{params.uri} now")
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
    if str(params.uri) == "feed://topics/secret":
        raise MCPError(types.INVALID_PARAMS, "feed://topics/secret is not for subscribing")
    write(f"subscribe {params.uri}")
    sessions.setdefault(str(params.uri), []).append(ctx.session)
    return types.EmptyResult()


async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    write(f"unsubscribe {params.uri}")
    sessions.pop(str(params.uri), None)
    return types.EmptyResult()


async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
    uris = " ".join(params.notifications.resource_subscriptions or ())
    if uris:
        write(f"listen {uris}")
    try:
        return await listener(ctx, params)
    finally:
        if uris:
            write(f"unlisten {uris}")


def build(subscribes: bool) -> Server[Any]:
    handlers: dict[str, Any] = {}
    if subscribes:
        handlers = {
            "on_subscribe_resource": subscribe,
            "on_unsubscribe_resource": unsubscribe,
            "on_subscriptions_listen": listen,
        }
    return Server(
        "subscribing-upstream",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        **handlers,
    )


async def main() -> None:
    server = build("--no-subscribe" not in sys.argv)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
