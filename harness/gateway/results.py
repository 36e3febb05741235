"""Upstream ``CallToolResult`` → harness's canonical value and render blocks.

- ``isError: true`` → :class:`UpstreamToolError` with the result's text (``tool_error``).
- ``structuredContent`` → the canonical value, as it is; without it the value is None: the
  result arrives once, in its blocks, and an image is never repeated in the value (DESIGN
  §12). The model reads such a result's text (:mod:`harness.agent.history`), and an MCP
  client gets no ``structuredContent`` (:mod:`harness.mcp.results`).

Blocks: ``text`` → ``{"type": "text", "text"}``; ``image`` and ``audio`` → ``{"type", "data",
"mime_type"}`` (base64); ``resource_link`` → ``{"type": "resource_link", "uri", "name"[,
"mime_type", "description", "title"]}``; an embedded ``resource`` → ``{"type": "resource",
"uri"[, "mime_type"], "text" | "data"}``. A result larger than ``max_result_bytes`` is refused.

A mounted tool's body returns a :class:`Reply` (value and blocks); :func:`check_output`
hands the value on and keeps the blocks for :func:`render`, so the caller sees the upstream's
blocks as they were.
"""

from __future__ import annotations

import contextvars
import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..tools.definition import OutputMismatch
from ..tools.render import default_text

_rendered: contextvars.ContextVar[tuple[Any, list[dict[str, Any]]] | None] = contextvars.ContextVar(
    "harness_gateway_rendered", default=None
)


class UpstreamToolError(Exception):
    """Raised for an upstream result with ``isError: true``, or one harness refuses."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What a mounted tool's body returns: the canonical value and the upstream's blocks."""

    value: Any
    blocks: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Invalid:
    """A body result the output check turns into ``invalid_output``."""

    message: str


def check_output(value: Any) -> Any:
    """A mounted tool's output check: a :class:`Reply`'s value (its blocks kept for
    :func:`render`), an :class:`Invalid`'s message as the mismatch."""
    if isinstance(value, Invalid):
        raise OutputMismatch(value.message)
    if isinstance(value, Reply):
        _rendered.set((value.value, value.blocks))
        return value.value
    return value


def render(value: Any) -> list[dict[str, Any]]:
    """A mounted tool's render: the upstream's own blocks for the value just checked."""
    stash = _rendered.get()
    if stash is not None and stash[0] is value:
        _rendered.set(None)
        return stash[1]
    return [{"type": "text", "text": default_text(value)}]


def convert(result: types.CallToolResult, limit: int) -> tuple[Any, list[dict[str, Any]]]:
    """``(canonical value, render blocks)``; raise :class:`UpstreamToolError` on isError."""
    blocks = [block_of(item) for item in result.content]
    size = sum(len(block.get("text", "")) + len(block.get("data", "")) for block in blocks)
    structured = result.structured_content
    if structured is not None:
        size += len(json.dumps(structured, ensure_ascii=False, default=str))
    if size > limit:
        raise UpstreamToolError(
            f"the server returned {size} bytes, more than max_result_bytes ({limit}); "
            "ask for less (a narrower query, a page) or raise max_result_bytes"
        )
    if result.is_error:
        text = "\n".join(block["text"] for block in blocks if block["type"] == "text")
        raise UpstreamToolError(text or "the server reported an error without a message")
    return structured, blocks


def block_of(item: Any) -> dict[str, Any]:
    """One MCP content block as a harness render block."""
    kind = getattr(item, "type", None)
    if kind == "text":
        return {"type": "text", "text": item.text}
    if kind in ("image", "audio"):
        return {"type": kind, "data": item.data, "mime_type": item.mime_type}
    if kind == "resource_link":
        link: dict[str, Any] = {"type": "resource_link", "uri": str(item.uri), "name": item.name}
        for key, value in (
            ("mime_type", item.mime_type),
            ("description", item.description),
            ("title", item.title),
        ):
            if value is not None:
                link[key] = value
        return link
    if kind == "resource":
        contents = item.resource
        block: dict[str, Any] = {"type": "resource", "uri": str(contents.uri)}
        if contents.mime_type is not None:
            block["mime_type"] = contents.mime_type
        if isinstance(contents, types.TextResourceContents):
            block["text"] = contents.text
        else:
            block["data"] = contents.blob
        return block
    dumped = item.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {"type": "text", "text": json.dumps(dumped, ensure_ascii=False)}
