"""Plugins named ``harness:<name>`` in cordis.yml."""

from __future__ import annotations

from typing import Any

from .agent.service import AgentService
from .llm.openai_chat import OpenAIChat
from .tools.service import ToolsService

BUILTINS: dict[str, Any] = {
    "tools": ToolsService,
    "openai": OpenAIChat,
    "agent": AgentService,
}
