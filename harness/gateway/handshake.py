"""Which protocol era an upstream speaks, found by the handshake (DESIGN §12).

MCP has two eras: 2025-11-25, where a connection opens with ``initialize`` and keeps a
session (and a stream for the server's own requests), and 2026-07-28, where every request
carries its own envelope and a server may be stateless, found with ``server/discover``.
The SDK's ``Client`` speaks both: ``mode="legacy"`` performs ``initialize``, and
``mode="auto"`` probes ``server/discover`` first, adopting 2026-07-28 when the server
offers it and falling back to ``initialize`` otherwise.

``protocol: auto`` (the default) prefers 2025-11-25 where a server speaks both, so its
elicitation, sampling and roots requests keep their stream: it opens with ``initialize``,
and only when the server refuses it with a protocol error (a 2026-only server answers the
handshake with an error, such as a missing ``MCP-Protocol-Version``) does it open again in
the SDK's ``auto`` mode, which discovers 2026-07-28. A pinned era is used as given: a
``2026-07-28`` pin that finds a server of the older era only is a problem of the entry.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .failures import Unavailable

Protocol = Literal["auto", "2025-11-25", "2026-07-28"]
LISTEN_AGAIN = 1.0
"""Seconds before listening again after a dropped ``subscriptions/listen`` stream."""
LISTEN_WAIT = 5.0
"""Seconds the first listing waits for the server to acknowledge the listen."""
MODERN = "2026-07-28"

Opener = Callable[[], AbstractAsyncContextManager[tuple[Any, Any]]]


@asynccontextmanager
async def connect(
    open_transport: Opener,
    protocol: Protocol,
    refused: Callable[[], bool],
    **options: Any,
) -> AsyncIterator[Client]:
    """A connected SDK ``Client`` at the era ``protocol`` asks for (see the module).

    ``open_transport`` opens a fresh transport each time it is called (the fallback of
    ``auto`` opens a second one); ``refused`` says whether the server's last answer was an
    HTTP 401 or 403 (which no other era would change); ``options`` go to ``Client``.
    """
    modes = {"auto": ["legacy", "auto"], "2025-11-25": ["legacy"], MODERN: ["auto"]}[protocol]
    async with AsyncExitStack() as stack:
        for index, mode in enumerate(modes):
            try:
                client = await stack.enter_async_context(
                    Client(open_transport(), mode=mode, **options)
                )
                break
            except Exception as exc:
                if index == len(modes) - 1 or refused() or not _refuses_handshake(exc):
                    raise
        if protocol == MODERN and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            raise Unavailable(
                f"the server does not speak protocol {MODERN} (it answered the handshake at "
                f"{client.protocol_version}); set protocol: auto or 2025-11-25"
            )
        yield client


async def follow_changes(
    client: Client,
    changed: Callable[[], None],
    listening: anyio.Event,
    logger: logging.Logger,
    label: str,
) -> None:
    """At 2026-07-28, hear the server's tool list changes: there is no standing stream for
    ``notifications/tools/list_changed``, so listen for them (``subscriptions/listen``).
    ``listening`` is set once the server acknowledged (or would not: then this returns), so
    the first listing follows it and misses no change; after a dropped stream it listens
    again, and re-lists (a change may have come meanwhile). Returns at once for a
    2025-11-25 connection."""
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        listening.set()
        return
    while True:
        try:
            async with client.listen(tools_list_changed=True) as events:
                if listening.is_set():
                    changed()
                listening.set()
                async for _ in events:
                    changed()
        except MCPError as exc:
            logger.info("%s does not announce tool list changes: %s", label, exc.error.message)
            listening.set()
            return
        except Exception as exc:
            logger.debug("%s: its subscriptions/listen stream ended: %s", label, exc)
        listening.set()
        await anyio.sleep(LISTEN_AGAIN)  # not at once: a server dropping it in a loop


def _refuses_handshake(exc: BaseException) -> bool:
    """Whether ``initialize`` failed with an answer from the server (so another era may
    work), rather than with the connection itself."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    if isinstance(exc, RuntimeError) and "protocol version" in str(exc):
        # The SDK's answer to an initialize result at a version of the other era (a server
        # that answers the handshake at 2026-07-28).
        return any(version in str(exc) for version in MODERN_PROTOCOL_VERSIONS)
    return isinstance(exc, MCPError) and exc.code != types.CONNECTION_CLOSED
