"""Plugins named ``harness:<name>`` in cordis.yml."""

from __future__ import annotations

from typing import Any

from ..gateway import plugin as mcp_client
from ..tools.service import ToolsService

BUILTINS: dict[str, Any] = {
    "tools": ToolsService,
    "mcp-client": mcp_client,
}
