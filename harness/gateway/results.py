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

A mounted tool's body makes its own result (:func:`result_of`): the value and the upstream's
blocks as they were, so nothing is rendered again. Called without a context (Python, on the
definition itself) it returns the value, through :func:`check_output`.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..tools.calls import ToolCall, ToolResult
from ..tools.definition import OutputMismatch
from ..tools.jsonvalue import is_json, problem

_log = logging.getLogger("harness.gateway")


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
    """A mounted tool's output check, for a body run without a context: a :class:`Reply`'s
    value, an :class:`Invalid`'s message as the mismatch."""
    if isinstance(value, Invalid):
        raise OutputMismatch(value.message)
    if isinstance(value, Reply):
        return value.value
    return value


def result_of(call: ToolCall, reply: Reply | Invalid) -> ToolResult:
    """The result of ``call``: the upstream's value and blocks, each sent once."""
    if isinstance(reply, Reply):
        wrong = problem(reply.value) if not is_json(reply.value) else None
        wrong = wrong or (problem(reply.blocks) if not is_json(reply.blocks) else None)
        if wrong is None:
            return ToolResult(call.id, call.name, reply.value, reply.blocks)
        message = f"the result is not valid JSON: {wrong}"
    else:
        message = reply.message
    _log.warning("tool %r returned invalid output: %s", call.name, message)
    return ToolResult.failure(
        call, "invalid_output", f"Tool {call.name} returned invalid output: {message}"
    )


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
