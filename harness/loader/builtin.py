"""Plugins named ``harness:<name>`` in cordis.yml."""

from __future__ import annotations

import importlib
from typing import Any

from ..tools.service import ToolsService


class _Builtins(dict[str, Any]):
    """Name → plugin; a ``"module:attribute"`` value is imported when first looked up.

    The agent-level builtins live above the loader, so the loader names them by string
    instead of importing them (imports run only downward).
    """

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        if isinstance(value, str):
            module, _, attribute = value.partition(":")
            value = getattr(importlib.import_module(module), attribute)
            self[key] = value
        return value


BUILTINS: dict[str, Any] = _Builtins(
    {
        "tools": ToolsService,
        "openai": "harness.llm.openai_chat:OpenAIChat",
        "anthropic": "harness.llm.anthropic_messages:AnthropicChat",
        "agent": "harness.agent.service:AgentService",
        "mcp-client": "harness.gateway:plugin",
        "ray-executor": "harness.executor:plugin",
        "code": "harness.code:plugin",
        "store": "harness.store:StoreService",
    }
)
