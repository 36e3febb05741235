"""The web console: chat, plugins and tools in the browser, live (DESIGN §11).

``harness run`` serves it at ``/`` beside MCP's ``/mcp``, on the same address and port.
:func:`console_app` builds the combined ASGI app: ``/mcp`` goes to the MCP app untouched
(its own Host, Origin and bearer checks), everything else through
:class:`~harness.web.security.WebGate` to the console's routes.
"""

from __future__ import annotations

from .app import console_app
from .console import WebConsole
from .stream import EventHub

__all__ = ["EventHub", "WebConsole", "console_app"]
