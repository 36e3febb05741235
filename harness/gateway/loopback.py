"""The browser step of OAuth: open the authorisation URL, catch the redirect on 127.0.0.1.

``harness auth ID`` listens on a loopback port (:class:`Loopback`), registers
``http://127.0.0.1:PORT/callback`` as the redirect URI, opens the authorisation URL with
Python's ``webbrowser`` (which honours ``$BROWSER``) and prints it too, for when no browser
opens. The authorisation server sends the browser back to the loopback address with the
code (or an error); the page it gets says to return to the terminal.
"""

from __future__ import annotations

import contextlib
import webbrowser
from collections.abc import AsyncIterator, Callable
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import SocketAttribute, SocketStream, TaskGroup
from mcp.shared.auth import AuthorizationCodeResult

MAX_REQUEST = 16384
PAGE = (
    "<!doctype html><meta charset=utf-8><title>harness</title>"
    "<p>{text}</p><p>You can close this tab and return to the terminal.</p>"
)


class AuthorisationRefused(Exception):
    """Raised when the authorisation server sent the browser back with an error."""


class Loopback:
    """A one-shot HTTP listener on 127.0.0.1 for the authorisation redirect."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._result: AuthorizationCodeResult | AuthorisationRefused | None = None
        self._arrived = anyio.Event()

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}/callback"

    @contextlib.asynccontextmanager
    async def serving(self, group: TaskGroup) -> AsyncIterator[Loopback]:
        """Listen (on ``port``; 0: any free one) while inside."""
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=self.port)
        self.port = listener.extra(SocketAttribute.local_port)
        scope = anyio.CancelScope()

        async def serve() -> None:
            async with listener:  # closed here, once serving stopped
                with scope:
                    await listener.serve(self._answer)

        group.start_soon(serve)
        try:
            yield self
        finally:
            scope.cancel()

    async def redirect(self, url: str, show: Callable[[str], None], browser: bool) -> None:
        """Show ``url``, and open it in a browser (in the background) when ``browser``."""
        show(url)
        if browser:
            await anyio.to_thread.run_sync(_open, url, abandon_on_cancel=True)

    async def callback(self) -> AuthorizationCodeResult:
        """The code the redirect brought (raises :class:`AuthorisationRefused`)."""
        await self._arrived.wait()
        result = self._result
        if isinstance(result, AuthorisationRefused):
            raise result
        assert result is not None
        return result

    async def _answer(self, stream: SocketStream) -> None:
        async with stream:
            request = b""
            with anyio.move_on_after(30):
                while b"\r\n\r\n" not in request and len(request) < MAX_REQUEST:
                    try:
                        request += await stream.receive()
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        break
            status, text = self._take(request.split(b"\r\n", 1)[0].decode("latin-1"))
            body = PAGE.format(text=text).encode()
            head = (
                f"HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\n"
                f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            )
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(head.encode() + body)

    def _take(self, line: str) -> tuple[str, str]:
        parts = line.split(" ")
        target = urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
        if target is None or target.path != "/callback":
            return "404 Not Found", "This is harness's OAuth redirect listener."
        if self._arrived.is_set():
            return "409 Conflict", "harness already received an answer."
        query = {key: values[0] for key, values in parse_qs(target.query).items()}
        if "code" in query:
            self._result = AuthorizationCodeResult(
                code=query["code"], state=query.get("state"), iss=query.get("iss")
            )
            text = "harness is authorised."
        else:
            why = query.get("error_description") or query.get("error") or "no code was sent"
            self._result = AuthorisationRefused(f"the authorisation server refused: {why}")
            text = "The authorisation server refused: " + _escape(why)
        self._arrived.set()
        return "200 OK", text


def _open(url: str) -> None:
    with contextlib.suppress(Exception):  # no browser at all: the printed URL remains
        webbrowser.open(url)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
