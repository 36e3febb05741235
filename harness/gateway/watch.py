"""The SDK session's read stream, watched: the end of the stream, list changes, floods.

Between the transport and the SDK session of a :class:`~.upstream.Connection`: it notices
the end of the stream, turns ``tools/list_changed`` into the connection's coalesced re-list,
and passes at most ``max_notifications`` other notifications a second (the rest are dropped
and counted).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

if TYPE_CHECKING:
    from .upstream import Connection


_LIST_CHANGES = frozenset(
    f"notifications/{kind}/list_changed" for kind in ("tools", "resources", "prompts")
)


class WatchedStream:
    """The SDK session's read stream, watched: end of stream, list changes, floods."""

    def __init__(self, inner: Any, connection: Connection) -> None:
        self.inner = inner
        self.connection = connection
        self._window = -math.inf
        self._count = 0

    @property
    def last_context(self) -> Any:
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                item = await self.inner.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self.connection.mark_lost("the server closed the connection")
                raise
            if self._keep(item):
                return item  # type: ignore[no-any-return]

    def _keep(self, item: Any) -> bool:
        message = item.message if isinstance(item, SessionMessage) else None
        if not isinstance(message, types.JSONRPCNotification):
            return True
        if message.method in _LIST_CHANGES:
            self.connection.request_relist()
            return False
        now = anyio.current_time()
        if now - self._window >= 1.0:
            self._window, self._count = now, 0
        self._count += 1
        if self._count <= self.connection.config.max_notifications:
            if message.method == "notifications/resources/updated":
                uri = (message.params or {}).get("uri")
                updated = self.connection.on_updated
                if isinstance(uri, str) and updated is not None:
                    updated(uri)
                return False
            return True
        self.connection.dropped += 1
        if self._count == self.connection.config.max_notifications + 1:
            self.connection.logger.warning(
                "%s sends more than %d notifications a second; dropping the rest",
                self.connection.label,
                self.connection.config.max_notifications,
            )
        return False

    def __aiter__(self) -> WatchedStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> WatchedStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.inner.aclose()
