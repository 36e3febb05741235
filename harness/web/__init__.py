"""The web console: chat, plugins and tools in the browser, live (DESIGN §11).

``harness run`` serves it at ``/`` beside MCP's ``/mcp``, on the same address and port.
:func:`console_app` builds the combined ASGI app: ``/mcp`` goes to the MCP app untouched
(its own Host, Origin and bearer checks), everything else through
:class:`~harness.web.security.WebGate` to the console's routes.
"""

from __future__ import annotations

from typing import Any

from .console import WebConsole
from .routes import build_app
from .security import WebGate
from .stream import EventHub

__all__ = ["EventHub", "WebConsole", "console_app"]


def console_app(console: WebConsole, mcp_app: Any, bind: str, token: str | None) -> Any:
    """One ASGI app: ``/mcp`` → ``mcp_app``; the rest → the console, behind its gate."""
    web = WebGate(build_app(console), bind, token)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] != "lifespan" else "/mcp"
        if path == "/mcp" or path.startswith("/mcp/"):
            await mcp_app(scope, receive, send)
        else:
            await web(scope, receive, send)

    return app
