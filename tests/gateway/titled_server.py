"""An MCP server on the official SDK's low-level ``Server`` (not harness) whose tool,
resource, template and prompt carry everything MCP lets them describe themselves with:
``title``, ``annotations`` (with its own ``title``), ``outputSchema``, ``icons`` and
``_meta``. A real upstream for what the gateway keeps of them (DESIGN §12). Run as
``python titled_server.py`` (stdio).
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

ICON = types.Icon(src="data:image/png;base64,iVBORw0KGgo=", mime_type="image/png", sizes=["48x48"])
META = {"example.com/ui": {"panel": "report", "width": 3}}
REPORT = types.Tool(
    name="report",
    title="Quarterly report",
    description="Build the quarterly report.",
    input_schema={"type": "object", "properties": {"quarter": {"type": "integer"}}},
    output_schema={"type": "object", "properties": {"pages": {"type": "integer"}}},
    annotations=types.ToolAnnotations(title="Report builder", read_only_hint=True),
    icons=[ICON],
    _meta=META,
)


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[REPORT])


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text="3 pages")], structured_content={"pages": 3}
    )


async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
    sheet = types.Resource(uri="books://ledger", name="ledger", title="The ledger")
    return types.ListResourcesResult(resources=[sheet])


async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
    month = types.ResourceTemplate(
        uri_template="books://months/{month}", name="month", title="A month's books"
    )
    return types.ListResourceTemplatesResult(resource_templates=[month])


async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
    contents = types.TextResourceContents(uri=str(params.uri), text="balanced")
    return types.ReadResourceResult(contents=[contents])


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    summary = types.Prompt(name="summary", title="Summarise the books", description="Summarise.")
    return types.ListPromptsResult(prompts=[summary])


async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    text = types.TextContent(type="text", text="Summarise the books.")
    return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=text)])


async def main() -> None:
    server: Server[Any] = Server(
        "titled-upstream",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
