"""What a surface tells its clients when something changes, in both protocol eras.

Registry changes (``tools/change``, ``resources/change``, ``prompts/change``) are gathered
for :data:`NOTIFY_DELAY` seconds, then announced once per kind: as
``notifications/{tools,resources,prompts}/list_changed`` on every handshake-era connection,
and as ``ToolsListChanged`` / ``ResourcesListChanged`` / ``PromptsListChanged`` events on
the 2026-07-28 ``subscriptions/listen`` streams. A resource update (``resources/updated``,
from ``ctx.resources.notify_updated``) goes at once to the handshake-era connections that
subscribed to its URI (``resources/subscribe``) and to the listen streams that asked for it.
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    SubscriptionBus,
    ToolsListChanged,
)

if TYPE_CHECKING:
    from mcp.server.connection import Connection

    from ..context import Context

_log = logging.getLogger("harness.mcp")
NOTIFY_DELAY = 0.05
"""Seconds registry changes are gathered before one list_changed per kind goes out."""
KINDS: dict[str, tuple[Any, str]] = {
    "tools": (ToolsListChanged, "send_tool_list_changed"),
    "resources": (ResourcesListChanged, "send_resource_list_changed"),
    "prompts": (PromptsListChanged, "send_prompt_list_changed"),
}
"""Kind → its listen-stream event and the connection's method that sends its notice."""


class Changes:
    """The change notices of one surface: list_changed per kind, and resource updates."""

    def __init__(
        self, root: Context, bus: SubscriptionBus, connections: weakref.WeakSet[Any]
    ) -> None:
        self.root = root
        self.bus = bus
        self.connections = connections
        """The surface's handshake-era connections (weakly: closed ones drop out)."""
        self.notifications = 0
        """How many rounds of list_changed went out."""
        self._dirty: set[str] = set()
        self._subscribed: weakref.WeakKeyDictionary[Connection, set[str]] = (
            weakref.WeakKeyDictionary()
        )

    def changed(self, kind: str) -> None:
        """The registry ``kind`` changed: announce it with the others gathered meanwhile."""
        if kind in self._dirty or self.root.is_disposed:
            return
        if not self._dirty:
            self.root.start_soon(self._notify)
        self._dirty.add(kind)

    async def _notify(self) -> None:
        await anyio.sleep(NOTIFY_DELAY)
        dirty, self._dirty = self._dirty, set()
        self.notifications += 1
        for kind, (event, method) in KINDS.items():
            if kind not in dirty:
                continue
            await self.bus.publish(event())
            for connection in list(self.connections):
                try:
                    await getattr(connection, method)()
                except Exception as exc:  # a closed connection: forget it
                    _log.debug("dropping an MCP connection: %s", exc)
                    self.connections.discard(connection)

    # -- resource subscriptions ------------------------------------------------------------

    async def subscribe(self, connection: Connection, uri: str) -> None:
        """``connection`` hears of updates to ``uri`` from now on (handshake era); the
        resources service counts it, until it unsubscribes or disconnects."""
        uris = self._subscribed.get(connection)
        if uris is None:
            uris = self._subscribed[connection] = set()
            connection.exit_stack.push_async_callback(self._gone, uris)
        if uri in uris:
            return
        uris.add(uri)  # before the await: a second subscribe meanwhile is this one
        try:
            await self.watch(uri)
        except BaseException:
            uris.discard(uri)
            raise

    async def unsubscribe(self, connection: Connection, uri: str) -> None:
        """``connection`` no longer hears of updates to ``uri`` (a no-op if it did not)."""
        uris = self._subscribed.get(connection, set())
        if uri in uris:
            uris.discard(uri)
            await self.unwatch(uri)

    async def _gone(self, uris: set[str]) -> None:
        """A subscribed connection closed: its subscriptions end with it."""
        for uri in sorted(uris):
            uris.discard(uri)
            await self.unwatch(uri)

    async def watch(self, uri: str) -> None:
        """One more subscriber of ``uri`` (a connection's, or a 2026-07-28 listen stream's)."""
        resources = self.root.get("resources")
        if resources is not None:
            await resources.subscribe(uri)

    async def unwatch(self, uri: str) -> None:
        """One subscriber of ``uri`` fewer."""
        resources = self.root.get("resources")
        if resources is not None:
            await resources.unsubscribe(uri)

    def updated(self, uri: str) -> None:
        """The resource at ``uri`` changed: tell who subscribed (the ``resources/updated``
        listener)."""
        if not self.root.is_disposed:
            self.root.start_soon(self._send_updated, uri)

    async def _send_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))
        for connection, uris in list(self._subscribed.items()):
            if uri not in uris:
                continue
            try:
                await connection.send_resource_updated(uri)
            except Exception as exc:  # a closed connection: its exit stack unsubscribes
                _log.debug("an MCP subscriber is gone: %s", exc)
