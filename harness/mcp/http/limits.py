"""What the MCP HTTP server sheds: slow requests, idle sessions, one client's session flood.

- **Header read timeout**: a connection must finish sending a request's headers within
  ``header_timeout`` seconds of connecting (or of its previous response); else it is closed.
  uvicorn itself only times out idle keep-alive connections, so a client trickling a
  header byte at a time (slowloris) held a connection forever.
- **Body read timeout**: each part of a request body must arrive within ``body_timeout``
  seconds; else the request is answered ``408``.
- **Sessions per client**: one client may hold at most ``sessions_per_client`` live MCP
  sessions, and a session idle for ``idle_session`` seconds is closed
  (:class:`~harness.mcp.http.sessions.SessionsPerClient`).
- **Shutdown grace**: on Ctrl-C or SIGTERM, requests still running (a tool call, a program
  in a loop) and open streams get ``shutdown_grace`` seconds to end, then are cancelled;
  uvicorn alone waits for them however long they take.
"""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass
from typing import Any

import anyio
from uvicorn.protocols.http.h11_impl import H11Protocol

from ...tools.deadline import run_with_deadline


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """The limits of ``harness run --mcp http``."""

    header_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_session: float = 120.0
    """Seconds a session may go without a request in flight (``--session-idle``)."""
    sessions_per_client: int = 64
    """Live sessions one client may hold (``--sessions-per-client``)."""
    shutdown_grace: int = 2


def header_timeout_protocol(
    seconds: float, base: type[asyncio.Protocol] | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (``base``: httptools' when installed, else h11's), closing
    connections whose headers do not arrive in time."""
    parent: Any = base or fastest_protocol()

    class HeaderTimeout(parent):  # type: ignore[misc]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def _arm(self) -> None:
            self._disarm()
            self._header_timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _expired(self) -> None:
            self._header_timer = None
            if self.cycle is None or self.cycle.response_complete:
                self.transport.close()  # the headers never came: shed the connection

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.cycle is not None and not self.cycle.response_complete:
                self._disarm()  # a request's headers are in; the body has its own timeout

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing():
                self._arm()  # the next request's headers must come in time too

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

    return HeaderTimeout


def fastest_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol (a C parser, what its ``http="auto"`` picks) when
    httptools is installed (a dependency of harness), else its h11 protocol."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # a virtualenv made before httptools was a dependency
        return H11Protocol
    return HttpToolsProtocol


class BodyTimeout:
    """ASGI middleware: a request body that does not arrive in time is a ``408``.

    The body is read here, each part within ``seconds``, up to ``cap`` bytes (past that it
    is handed on as it comes, for the SDK's own 413), then replayed to the app; later
    ``receive`` calls (a client disconnecting from a stream) are passed through untimed.
    """

    def __init__(self, app: Any, seconds: float, cap: int = 4 * 1024 * 1024) -> None:
        self.app = app
        self.seconds = seconds
        self.cap = cap

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        buffered: list[Any] = []
        size = 0
        while size <= self.cap:
            # A body that has arrived is there at once: the deadline is armed only if the
            # read waits (harness.tools.deadline), so a whole request costs no timer.
            message, late = await _within(receive, self.seconds)
            if late:
                await plain(send, 408, b"the request body did not arrive in time")
                return
            buffered.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body"):
                break

        async def replay() -> Any:
            if buffered:
                return buffered.pop(0)
            return await receive()

        await self.app(scope, replay, send)


async def _within(receive: Any, seconds: float) -> tuple[Any, bool]:
    """``receive()``'s message, or ``(None, True)`` when it takes longer than ``seconds``."""
    pending = receive()
    if inspect.iscoroutine(pending):
        return await run_with_deadline(pending, seconds)
    with anyio.move_on_after(seconds):  # an awaitable that is not a coroutine
        return await pending, False
    return None, True


async def plain(send: Any, status: int, body: bytes) -> None:
    """Answer ``status`` with a plain-text ``body`` and close the connection."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"connection", b"close")],
        }
    )
    await send({"type": "http.response.body", "body": body})
