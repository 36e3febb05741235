"""Mounting MCP servers: ``harness:mcp-client`` (a gateway with harness's pipeline in front).

See ``docs/gateway.md``. The plugin is :mod:`harness.gateway.plugin`; its config is
:class:`GatewayConfig`.
"""

from . import plugin
from .config import GatewayConfig

__all__ = ["GatewayConfig", "plugin"]
