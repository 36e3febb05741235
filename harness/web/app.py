"""The combined ASGI app of ``harness run``: MCP at ``/mcp``, the console everywhere else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..mcp.auth import TokenThrottle
from .console import WebConsole
from .hide_paths import HidePaths
from .routes import build_app
from .security import WebGate


def console_app(
    console: WebConsole,
    mcp_app: Any,
    bind: str,
    token: str | None,
    allow_hosts: Sequence[str] = (),
    throttle: TokenThrottle | None = None,
) -> Any:
    """One ASGI app: ``/mcp`` → ``mcp_app``; the rest → the console, behind its gate.

    The gate accepts the same Host names as the MCP endpoint: the bind address's own and
    ``allow_hosts`` (``--allow-host``); wrong tokens count in ``throttle``, which the MCP
    endpoint's gate should share. Error answers name files relative to the project
    (:class:`~harness.web.hide_paths.HidePaths`).
    """
    routes = HidePaths(build_app(console), console.host.config_path.parent)
    web = WebGate(routes, bind, token, allow_hosts=allow_hosts, throttle=throttle)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path", "") if scope["type"] != "lifespan" else "/mcp"
        if path == "/mcp" or path.startswith("/mcp/"):
            await mcp_app(scope, receive, send)
        else:
            await web(scope, receive, send)

    return app
