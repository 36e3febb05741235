"""Cursor paging of MCP's lists: ``tools/list``, ``resources/list``,
``resources/templates/list`` and ``prompts/list``.

Every list is built whole once per registry change; a request gets the page its cursor
points at, at most the tools service's ``page_size`` items (default 500), with a
``nextCursor`` while more follow. Cursors are opaque to clients (base64url of where the
next page starts); one that harness did not issue, or that points past the end of the
list, is a JSON-RPC -32602 error, as the spec asks. A list no longer than a page is
answered as built, without a cursor.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, TypeVar

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

Listing = TypeVar("Listing")
PREFIX = "harness-page:"


def cursor_of(offset: int) -> str:
    """The opaque cursor of the page that starts at ``offset``."""
    return base64.urlsafe_b64encode(f"{PREFIX}{offset}".encode()).decode("ascii").rstrip("=")


def offset_of(cursor: str, total: int) -> int:
    """Where the page of ``cursor`` starts; raise MCPError(-32602) for a cursor harness did
    not issue or one beyond a list of ``total`` items."""
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
        if not text.startswith(PREFIX):
            raise ValueError(text)
        offset = int(text[len(PREFIX) :])
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise MCPError(
            INVALID_PARAMS,
            f"invalid cursor {json.dumps(cursor)[:80]}: pass the nextCursor of the previous "
            "page, or no cursor for the first page",
        ) from None
    if not 0 < offset <= total:
        raise MCPError(
            INVALID_PARAMS,
            f"invalid cursor: the list has {total} items now; list again from the first page",
        )
    return offset


def page(listing: Listing, field: str, params: Any, size: int) -> Listing:
    """The page of ``listing`` (a list result whose items are in ``field``) that the request
    ``params`` asks for (its ``cursor``), at most ``size`` items."""
    cursor = getattr(params, "cursor", None)
    items: list[Any] = getattr(listing, field)
    if cursor is None and len(items) <= size:
        return listing
    start = 0 if cursor is None else offset_of(cursor, len(items))
    end = start + size
    following = cursor_of(end) if end < len(items) else None
    paged: Listing = listing.model_copy(  # type: ignore[attr-defined]
        update={field: items[start:end], "next_cursor": following}
    )
    return paged
