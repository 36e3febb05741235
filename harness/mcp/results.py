"""Tool results in MCP's shape: content blocks and ``structuredContent``."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pydantic

from ..tools.calls import ToolResult


def to_mcp_result(result: ToolResult, output_schema: bool = True) -> types.CallToolResult:
    """A ToolResult as MCP's CallToolResult.

    A value of None from a tool that declares no output schema (``output_schema`` False) has
    no ``structuredContent``: a mounted tool whose server sent none (its blocks arrive once,
    an image is not repeated there), or a tool that returned nothing.
    """
    if not result.ok:
        message = result.error or "the tool call failed"
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )
    value = result.result
    if value is None and not output_schema:
        return types.CallToolResult(content=[content_block(block) for block in result.content])
    structured = value if isinstance(value, dict) else {"result": value}
    return types.CallToolResult(
        content=[content_block(block) for block in result.content], structured_content=structured
    )


def content_block(block: dict[str, Any]) -> Any:
    """A render block as MCP's content block (a prompt message's content too); a block of
    no type MCP knows goes as its JSON text."""
    kind = block.get("type")
    if kind == "image" and isinstance(block.get("data"), str):
        return types.ImageContent(type="image", data=block["data"], mime_type=block["mime_type"])
    if kind == "image" and isinstance(block.get("url"), str):
        return types.ResourceLink(
            type="resource_link",
            uri=block["url"],
            name=block.get("name") or "image",
            mime_type=block.get("mime_type"),
        )
    if kind == "text":
        return types.TextContent(type="text", text=block["text"])
    converted = mcp_block(block)  # audio, resource links and embedded resources
    if converted is not None:
        return converted
    return types.TextContent(type="text", text=json.dumps(block, ensure_ascii=False))


def mcp_block(block: dict[str, Any]) -> Any:
    """The MCP content block for an ``audio``, ``resource_link`` or ``resource`` render block.

    The inverse of :func:`harness.gateway.results.block_of`, used when harness serves such
    blocks over MCP; None when the block is not one of these or is malformed (it is then
    sent as JSON text).
    """
    kind = block.get("type")
    try:
        if kind == "audio":
            return types.AudioContent(
                type="audio", data=block["data"], mime_type=block["mime_type"]
            )
        if kind == "resource_link":
            fields = {
                key: block[key] for key in ("mime_type", "description", "title") if key in block
            }
            return types.ResourceLink(
                type="resource_link", uri=block["uri"], name=block["name"], **fields
            )
        if kind == "resource":
            contents: Any
            if "text" in block:
                contents = types.TextResourceContents(
                    uri=block["uri"], mime_type=block.get("mime_type"), text=block["text"]
                )
            else:
                contents = types.BlobResourceContents(
                    uri=block["uri"], mime_type=block.get("mime_type"), blob=block["data"]
                )
            return types.EmbeddedResource(type="resource", resource=contents)
    except (KeyError, TypeError, pydantic.ValidationError):
        return None
    return None
