"""The SDK session's streams, watched: the end of the stream, list changes, floods, and the
capabilities a request says its client has.

Between the transport and the SDK session of a :class:`~.upstream.Connection`: the read
side notices the end of the stream, turns ``tools/list_changed`` into the connection's
coalesced re-list, and passes at most ``max_notifications`` other notifications a second
(the rest are dropped and counted). The write side (:class:`StampedWrites`) narrows the
capabilities a 2026-07-28 request declares (its ``_meta``) to those of the caller it is
made for, so the server asks the caller only for what the caller can give, and declares
the tasks extension only in a call made as a task.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from mcp_types import CLIENT_CAPABILITIES_META_KEY

if TYPE_CHECKING:
    from .upstream import Connection


CALLER_CAPABILITIES = "harness/caller-capabilities"
"""The ``_meta`` key (never sent) by which a call names its caller's declared input
capabilities (``elicitation``, ``sampling``, ``roots``) to :class:`StampedWrites`."""
_INPUTS = ("elicitation", "sampling", "roots")
CALLER_TASKS = "harness/as-task"
"""The ``_meta`` key (never sent) of a call made as a task: only its request declares the
tasks extension (:mod:`.tasks`)."""
_TASKS = "io.modelcontextprotocol/tasks"

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


class StampedWrites:
    """The SDK session's write stream: a request made for a caller (its ``_meta`` holds
    :data:`CALLER_CAPABILITIES`) declares only the input capabilities that caller declared
    (over 2026-07-28, where each request carries its client's capabilities); the key itself
    is never sent."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def send(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        params = message.params if isinstance(message, types.JSONRPCRequest) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        if isinstance(meta, dict):
            named = meta.pop(CALLER_CAPABILITIES, None)  # None: not a caller's request
            declared = set(_INPUTS if named is None else named)
            tasks = bool(meta.pop(CALLER_TASKS, False))
            capabilities = meta.get(CLIENT_CAPABILITIES_META_KEY)
            if isinstance(capabilities, dict):
                narrowed = {
                    key: value
                    for key, value in capabilities.items()
                    if key not in _INPUTS or key in declared
                }
                extensions = narrowed.get("extensions")
                if isinstance(extensions, dict) and _TASKS in extensions and not tasks:
                    rest = {key: value for key, value in extensions.items() if key != _TASKS}
                    if rest:
                        narrowed["extensions"] = rest
                    else:
                        del narrowed["extensions"]
                meta[CLIENT_CAPABILITIES_META_KEY] = narrowed
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def close(self) -> None:
        self.inner.close()

    async def __aenter__(self) -> StampedWrites:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.inner.aclose()
