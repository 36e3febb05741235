"""Serving the registry over MCP, with the official SDK's low-level server.

One concept per module: :mod:`.surface` (the server and its notifications),
:mod:`.tools_list` (the registry in MCP's format and its revision), :mod:`.client` (the
client of one request: what a running call asks of it, its progress and logs),
:mod:`.tool_calls` (``tools/call``: its context and client), :mod:`.rounds` (2026-07-28
input rounds and the sealed ``requestState``), :mod:`.results`
(tool results as MCP content), :mod:`.hosts` (bind and
``Host`` checks) and :mod:`.auth` (bearer tokens and their throttle), both standard library
only, and :mod:`.http` (streamable HTTP: the transport, its limits and the fast path).

Names are re-exported lazily, so ``from harness.mcp import check_bind`` does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .auth import TokenThrottle
    from .client import APPROVAL_KEY, McpClient
    from .hosts import allowed_hosts, check_bind, is_loopback, machine_names
    from .http.transport import BearerGate
    from .results import to_mcp_result
    from .surface import McpSurface, connection_of
    from .tools_list import Catalog


_HOMES = {
    "APPROVAL_KEY": "client",
    "McpClient": "client",
    "Catalog": "tools_list",
    "allowed_hosts": "hosts",
    "check_bind": "hosts",
    "is_loopback": "hosts",
    "machine_names": "hosts",
    "BearerGate": "http.transport",
    "TokenThrottle": "auth",
    "to_mcp_result": "results",
    "McpSurface": "surface",
    "connection_of": "surface",
}

__all__ = [
    "APPROVAL_KEY",
    "BearerGate",
    "Catalog",
    "McpClient",
    "McpSurface",
    "TokenThrottle",
    "allowed_hosts",
    "check_bind",
    "connection_of",
    "is_loopback",
    "machine_names",
    "to_mcp_result",
]


__getattr__ = lazy_exports(__name__, _HOMES)
