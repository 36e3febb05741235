"""Content blocks: what ``output.render`` returns, normalised and checked.

Blocks are dicts with a string ``type``: ``{"type": "text", "text"}``, ``{"type": "image",
"url"}`` or ``{"type": "image", "data", "mime_type"}`` (``data`` base64; bytes are encoded
for you), or further types passed through as they are. A render may return one block, a
list of blocks, a plain string (a text block), or ``{"blocks": [...]}`` as in dsh.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable
from typing import Any


class RenderError(ValueError):
    """Raised when a render returns something that is not content blocks."""


def default_text(value: Any) -> str:
    """How a value reads as text without a render: strings as they are, the rest as JSON."""
    kind = type(value)
    if kind is str:
        return str(value)
    if kind is int:
        return str(value)
    if kind is float and math.isfinite(value):
        return repr(value)
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def render(renderer: Callable[[Any], Any] | None, value: Any) -> list[dict[str, Any]]:
    """Render ``value`` to a list of content blocks."""
    if renderer is None:
        return [{"type": "text", "text": default_text(value)}]
    return normalize(renderer(value))


def normalize(output: Any) -> list[dict[str, Any]]:
    """Check and normalise a render's output to a list of blocks."""
    if isinstance(output, str):
        return [{"type": "text", "text": output}]
    if isinstance(output, dict) and "type" not in output and "blocks" in output:
        output = output["blocks"]
    if isinstance(output, dict):
        output = [output]
    if not isinstance(output, list | tuple):
        raise RenderError(
            f"render returned {type(output).__name__}; expected a content block "
            "such as {'type': 'text', 'text': ...} or a list of blocks"
        )
    return [_block(block, index) for index, block in enumerate(output)]


def _block(block: Any, index: int) -> dict[str, Any]:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise RenderError(f"render block [{index}] must be a dict with a string 'type'")
    kind = block["type"]
    if kind == "text":
        if not isinstance(block.get("text"), str):
            raise RenderError(f"render block [{index}]: a text block needs a string 'text'")
    elif kind == "image":
        if isinstance(block.get("data"), bytes | bytearray):
            block = {**block, "data": base64.b64encode(block["data"]).decode("ascii")}
        has_url = isinstance(block.get("url"), str)
        has_data = isinstance(block.get("data"), str) and isinstance(block.get("mime_type"), str)
        if not has_url and not has_data:
            raise RenderError(
                f"render block [{index}]: an image block needs 'url', or 'data' and 'mime_type'"
            )
    return dict(block)
