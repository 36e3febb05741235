"""What a prompt's render returns, checked and made into messages.

A render returns a string (one user message), or a list of messages ``{"role", "content"}``
where ``role`` is ``user`` or ``assistant`` and ``content`` is a string or a render block
(:mod:`harness.tools.render`: text, image, audio, resource, resource_link), or a list of
blocks (one message each, in the same role). Messages are plain dicts
``{"role", "content": block}``, each carrying exactly one block as MCP's do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ContentError
from ..tools.render import RenderError, normalize

ROLES = ("user", "assistant")


def messages_of(value: Any, name: str) -> list[dict[str, Any]]:
    """The messages of prompt ``name``'s render, which returned ``value``; raise
    ContentError saying what was wrong."""
    where = f"prompt {name!r}"
    if isinstance(value, str):
        return [{"role": "user", "content": {"type": "text", "text": value}}]
    if isinstance(value, Mapping) and "role" in value:
        value = [value]
    if not isinstance(value, list | tuple) or not value:
        raise ContentError(
            f"{where} rendered {type(value).__name__}; a render returns a string or a "
            "non-empty list of {'role', 'content'} messages"
        )
    out: list[dict[str, Any]] = []
    for index, message in enumerate(value):
        at = f"{where}: message [{index}]"
        if not isinstance(message, Mapping) or set(message) != {"role", "content"}:
            raise ContentError(f"{at} must be a mapping with exactly 'role' and 'content'")
        role = message["role"]
        if role not in ROLES:
            raise ContentError(f"{at}: role must be 'user' or 'assistant', not {role!r}")
        try:
            blocks = normalize(message["content"])
        except RenderError as exc:
            raise ContentError(f"{at}: {exc}".replace("render block", "content block")) from None
        if not blocks:
            raise ContentError(f"{at} has no content")
        out.extend({"role": role, "content": block} for block in blocks)
    return out
