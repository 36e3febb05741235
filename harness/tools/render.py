"""Content blocks: what ``output.render`` returns, normalised and checked.

Blocks are dicts with a string ``type``:

- ``{"type": "text", "text"}``;
- ``{"type": "image", "url"}`` or ``{"type": "image", "data", "mime_type"}``;
- ``{"type": "audio", "data", "mime_type"}``;
- ``{"type": "resource", "uri", "text" | "data"[, "mime_type"]}``: a resource's contents
  embedded in the result (text, or binary ``data``);
- ``{"type": "resource_link", "uri", "name"[, "mime_type", "description", "title"]}``: a
  resource the reader may fetch;
- further types, passed through as they are.

``data`` is base64; bytes are encoded for you. A render may return one block, a list of
blocks, a plain string (a text block), or ``{"blocks": [...]}`` as in dsh.
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
    if isinstance(block.get("data"), bytes | bytearray) and kind in _DATA_KINDS:
        block = {**block, "data": base64.b64encode(block["data"]).decode("ascii")}
    check = _CHECKS.get(kind)
    if check is not None:
        problem = check(block)
        if problem:
            raise RenderError(f"render block [{index}]: {problem}")
    return dict(block)


def _strings(block: dict[str, Any], *keys: str) -> bool:
    return all(isinstance(block.get(key), str) for key in keys)


def _text(block: dict[str, Any]) -> str | None:
    return None if _strings(block, "text") else "a text block needs a string 'text'"


def _image(block: dict[str, Any]) -> str | None:
    if _strings(block, "url") or _strings(block, "data", "mime_type"):
        return None
    return "an image block needs 'url', or 'data' and 'mime_type'"


def _audio(block: dict[str, Any]) -> str | None:
    if _strings(block, "data", "mime_type"):
        return None
    return "an audio block needs 'data' (base64 or bytes) and 'mime_type' such as 'audio/wav'"


def _resource(block: dict[str, Any]) -> str | None:
    if not _strings(block, "uri"):
        return "a resource block needs a string 'uri'"
    if _strings(block, "text") == ("data" in block):
        return "a resource block needs either 'text' or 'data' (base64 or bytes), not both"
    if "data" in block and not _strings(block, "data"):
        return "a resource block's 'data' must be base64 text or bytes"
    if "mime_type" in block and not _strings(block, "mime_type"):
        return "a resource block's 'mime_type' must be a string"
    return None


def _resource_link(block: dict[str, Any]) -> str | None:
    if _strings(block, "uri", "name"):
        return None
    return "a resource_link block needs a string 'uri' and 'name'"


_CHECKS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "text": _text,
    "image": _image,
    "audio": _audio,
    "resource": _resource,
    "resource_link": _resource_link,
}
_DATA_KINDS = frozenset({"image", "audio", "resource"})
