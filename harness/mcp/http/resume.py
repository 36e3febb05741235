"""Resumable SSE streams on handshake-era (2025-11-25) sessions: priming events and ``retry``.

The MCP SDK sends a stream's *priming event* (an ``id`` and empty data, first on every SSE
stream, so a client that loses the stream can resume it with ``Last-Event-ID``) and the
``retry`` field (how many milliseconds a client waits before reconnecting) only when it has
an event store; it ships none. :class:`SessionEvents` is one, kept in memory, one per
session: the SDK names a POST stream by the JSON-RPC id of its request, which two sessions
reuse freely, so a store shared by all sessions would mix their streams and replay one
session's messages to another. It holds the last :data:`MAX_EVENTS` events of its session
and goes with it.

The SDK gives every session's transport the one store its session manager was given (here
none: the app is built with only ``retry_interval``); :func:`resumable` hands each new
transport its own instead. That reads two private names
of the SDK (``StreamableHTTPSessionManager._admit_session`` and the transport's
``_event_store``); ``tests/repository/test_private_apis.py`` fails by name when they change, and
without them streams simply are not resumable (no priming, no ``retry``), as before.
2026-07-28 requests are self-contained and their streams are not resumed: this concerns the
handshake era only.
"""

from __future__ import annotations

import itertools
import logging
import secrets
from collections import deque
from typing import Any

from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp_types import JSONRPCMessage

_log = logging.getLogger("harness.mcp")
MAX_EVENTS = 512
"""Events one session keeps for replay; older ones are dropped (a client that resumes from
one of them gets the stream from where the store begins)."""
RETRY_MS = 1000
"""The ``retry`` a client is told: milliseconds to wait before reconnecting a lost stream."""


class SessionEvents(EventStore):
    """The SSE events of one session, in memory, for ``Last-Event-ID`` replay."""

    def __init__(self, limit: int = MAX_EVENTS) -> None:
        self._prefix = secrets.token_hex(4)
        self._numbers = itertools.count(1)
        self._events: deque[tuple[str, str, JSONRPCMessage | None]] = deque(maxlen=limit)
        """(event id, stream id, message), oldest first; a priming event has no message."""

    async def store_event(self, stream_id: str, message: JSONRPCMessage | None) -> str:
        event_id = f"{self._prefix}-{next(self._numbers)}"
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        events = list(self._events)
        for index, (event_id, stream_id, _) in enumerate(events):
            if event_id == last_event_id:
                for later_id, later_stream, message in events[index + 1 :]:
                    if later_stream == stream_id and message is not None:
                        await send_callback(EventMessage(message, later_id))
                return stream_id
        return None


def resumable(manager: Any) -> bool:
    """Give each new handshake-era session of the SDK's session ``manager`` its own
    :class:`SessionEvents` (the app is built with ``retry_interval``); False, and streams
    stay unresumable, when the SDK no longer has what this needs."""
    admit = getattr(manager, "_admit_session", None)
    if admit is None:
        _log.warning("the MCP SDK changed: SSE streams are served without priming events")
        return False

    def admit_session(*args: Any, **kwargs: Any) -> Any:
        transport = admit(*args, **kwargs)
        if transport is not None and hasattr(transport, "_event_store"):
            transport._event_store = SessionEvents()
        return transport

    manager._admit_session = admit_session
    return True
