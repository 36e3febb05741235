"""How many MCP sessions one client may hold, and when a session stops counting.

One client (:func:`~harness.mcp.auth.client_key`: its address, an IPv6 one by its /64, all of
loopback as one) may hold at most ``limit`` live MCP sessions: a further ``initialize`` is
answered ``429`` (requests in existing sessions, and sessionless 2026-07-28 requests, go on).
A session counts from the answer that opens it until the client deletes it (``DELETE``: at
once), the SDK no longer knows it (it answers 404), or it has had no request in flight for
``idle`` seconds (an open event stream is a request in flight): the rule by which the SDK
closes an idle session, given the same seconds. A client that leaves without deleting its
sessions (the official conformance suite's clients do) frees them that long after its last
request.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..auth import client_key
from .limits import plain


@dataclass(slots=True)
class _Session:
    client: str
    in_flight: int
    """Requests of the session being served (an open event stream is one)."""
    last: float
    """When the last of them ended."""


class SessionsPerClient:
    """ASGI middleware: at most ``limit`` live MCP sessions per client (module docstring)."""

    def __init__(
        self, app: Any, limit: int, idle: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.app = app
        self.limit = limit
        self.idle = idle
        self.clock = clock
        self.sessions: dict[str, _Session] = {}
        """Every session counted, by its id."""
        self.clients: dict[str, set[str]] = {}
        """The ids of each client's sessions."""
        self._swept = clock()

    def live(self, client: str) -> set[str]:
        """The ids of the client's sessions that still count."""
        now = self.clock()
        if now - self._swept > self.idle:  # clients that never came back: forget theirs
            self._swept = now
            for session_id, session in list(self.sessions.items()):
                if not self._counts(session, now):
                    self.forget(session_id)
        ids = self.clients.get(client, set())
        for session_id in list(ids):
            if not self._counts(self.sessions[session_id], now):
                self.forget(session_id)
        return ids

    def _counts(self, session: _Session, now: float) -> bool:
        return session.in_flight > 0 or now - session.last < self.idle

    def forget(self, session_id: str) -> None:
        """Stop counting one session."""
        session = self.sessions.pop(session_id, None)
        if session is None:
            return
        ids = self.clients.get(session.client)
        if ids is not None:
            ids.discard(session_id)
            if not ids:
                del self.clients[session.client]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session_id = ""
        for name, value in scope.get("headers") or ():
            if name == b"mcp-session-id":
                session_id = value.decode("latin-1")
                break
        if session_id:
            await self._in_session(session_id, scope, receive, send)
            return
        client = client_key(scope)
        if scope.get("method") == "POST" and len(self.live(client)) >= self.limit:
            receive, opens = await _peek_initialize(receive)
            if opens:
                await plain(
                    send,
                    429,
                    f"this client already holds {self.limit} MCP sessions: close one (DELETE), "
                    f"or let one idle out ({self.idle:g} s without a request), before opening "
                    "another; the server's --sessions-per-client sets the bound".encode(),
                )
                return
        opened: list[str] = []

        async def remember(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                for name, value in message.get("headers") or []:
                    if name.lower() == b"mcp-session-id":
                        new = value.decode("latin-1")
                        self.sessions[new] = _Session(client, 1, self.clock())
                        self.clients.setdefault(client, set()).add(new)
                        opened.append(new)
            await send(message)

        try:
            await self.app(scope, receive, remember)
        finally:
            for new in opened:
                self._ended(new)

    async def _in_session(self, session_id: str, scope: Any, receive: Any, send: Any) -> None:
        session = self.sessions.get(session_id)
        if session is None:  # not one this layer counts: the SDK answers it
            await self.app(scope, receive, send)
            return
        session.in_flight += 1
        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, watch)
        finally:
            self._ended(session_id)
            if status and (
                status[0] == 404 or (scope.get("method") == "DELETE" and status[0] < 300)
            ):
                self.forget(session_id)  # deleted, or gone from the SDK

    def _ended(self, session_id: str) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.in_flight -= 1
            session.last = self.clock()


async def _peek_initialize(receive: Any) -> tuple[Any, bool]:
    """Whether the request body is an MCP ``initialize`` (which opens a session), and a
    ``receive`` that replays the body to the app."""
    buffered: list[Any] = []
    body = b""
    while True:
        message = await receive()
        buffered.append(message)
        body += message.get("body", b"")
        if message["type"] != "http.request" or not message.get("more_body"):
            break
        if len(body) > 65536:
            break
    try:
        request = json.loads(body)
    except ValueError:
        request = None
    opens = isinstance(request, dict) and request.get("method") == "initialize"

    async def replay() -> Any:
        if buffered:
            return buffered.pop(0)
        return await receive()

    return replay, opens
