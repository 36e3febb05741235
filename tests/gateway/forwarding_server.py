"""An MCP server built with the official SDK (not harness) whose tools report progress, log,
and ask the client for a form, a completion and its roots while they run, and which offers
resources (text, binary, a template) and a prompt, adding a resource and announcing updates
when asked: a real upstream for the gateway's forwarding and mounting (DESIGN §12).
Run as ``python forwarding_server.py``."""

from __future__ import annotations

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources.types import TextResource
from mcp.shared.exceptions import MCPError
from mcp_types import Completion, ResourceTemplateReference, SamplingMessage, TextContent
from pydantic import BaseModel, Field

server = MCPServer("forwarding-upstream")


class Confirm(BaseModel):
    ok: bool = Field(description="Go ahead?")


@server.tool(description="Work in steps, reporting progress and logging each one.")
async def work(ctx: Context, steps: int) -> str:
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await ctx.info(f"worked step {step}")
    await ctx.warning({"done": steps})
    return "worked"


@server.tool(description="Ask the client's user to confirm.")
async def confirm(ctx: Context) -> str:
    answer = await ctx.elicit("Really do it?", Confirm)
    data = getattr(answer, "data", None)
    return f"{answer.action}:{getattr(data, 'ok', None)}"


@server.tool(description="Ask the client's model for a completion.")
async def ask_model(ctx: Context, prompt: str) -> str:
    try:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
            max_tokens=50,
            system_prompt="Answer in one word.",
            temperature=0.5,
        )
    except MCPError as exc:
        return f"error: {exc.error.message}"
    content = result.content
    text = content.text if isinstance(content, TextContent) else str(content)
    return f"{result.model}: {text}"


@server.tool(description="The client's roots.")
async def roots(ctx: Context) -> str:
    try:
        listed = await ctx.session.list_roots()
    except MCPError as exc:
        return f"error: {exc.error.message}"
    return " ".join(f"{root.name}={root.uri}" for root in listed.roots) or "none"


@server.resource("notes://readme", name="readme", description="The readme.", mime_type="text/plain")
def readme() -> str:
    return "Read me first."


@server.resource("notes://logo", name="logo", description="The logo.", mime_type="image/png")
def logo() -> bytes:
    return b"\x89PNG logo"


@server.resource("notes://people/{name}", name="person", description="A note on a person.")
def person(name: str) -> str:
    return f"A note on {name}."


@server.prompt(description="Review a piece of code.")
def review(code: str, focus: str = "correctness") -> str:
    return f"Review this code for {focus}:\n\n{code}"


@server.completion()
async def complete(ref: object, argument: object, context: object) -> Completion:
    typed = str(getattr(argument, "value", ""))
    known = getattr(context, "arguments", None) or {}
    if isinstance(ref, ResourceTemplateReference):
        names = ["ada", "adele", "bo"]
    else:
        names = ["correctness", "clarity", "speed"] if known.get("code") else ["none"]
    return Completion(values=[name for name in names if name.startswith(typed)])


@server.tool(description="Add the resource notes://added and announce the change.")
async def add_note(ctx: Context) -> str:
    server.add_resource(
        TextResource(uri="notes://added", name="added", description="Added.", text="new")
    )
    await ctx.session.send_resource_list_changed()
    return "added"


@server.tool(description="Announce that a resource was updated.")
async def touch(ctx: Context, uri: str) -> str:
    await ctx.session.send_resource_updated(uri)
    return "touched"


if __name__ == "__main__":
    server.run("stdio")
