"""What a resource's read returns, checked and made into contents.

A read returns text (``str``), a blob (``bytes``), or a list of them; each becomes one
:class:`ResourceContents` of the URI read, with the resource's MIME type (``text/plain``
for text and ``application/octet-stream`` for a blob when it declares none).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from ..errors import ContentError

TEXT_TYPE = "text/plain"
BLOB_TYPE = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class ResourceContents:
    """One part of a resource as read: text or a blob, with its URI and MIME type."""

    uri: str
    mime_type: str
    text: str | None = None
    blob: bytes | None = None

    def to_dict(self) -> dict[str, Any]:
        """As MCP spells it: ``{"uri", "mimeType", "text"}`` or ``{..., "blob": base64}``."""
        out: dict[str, Any] = {"uri": self.uri, "mimeType": self.mime_type}
        if self.blob is not None:
            out["blob"] = base64.b64encode(self.blob).decode("ascii")
        else:
            out["text"] = self.text
        return out


def contents_of(value: Any, uri: str, mime_type: str | None) -> list[ResourceContents]:
    """The contents of a read of ``uri`` that returned ``value``; raise ContentError when it
    is not text, bytes or a non-empty list of them."""
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items:
        raise ContentError(
            f"reading resource {uri!r} returned an empty list; return its text or bytes "
            "(raise harness.errors.NotFound when there is nothing at this URI)"
        )
    out = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            out.append(ResourceContents(uri, mime_type or TEXT_TYPE, text=item))
        elif isinstance(item, bytes | bytearray | memoryview):
            out.append(ResourceContents(uri, mime_type or BLOB_TYPE, blob=bytes(item)))
        else:
            at = f" at [{index}]" if isinstance(value, list | tuple) else ""
            raise ContentError(
                f"reading resource {uri!r} returned {type(item).__name__}{at}; a read "
                "returns text (str), bytes, or a list of them"
            )
    return out
