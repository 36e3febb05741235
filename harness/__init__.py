"""harness: an async plugin host for LLM-agent tools, following the Cordis plugin model."""

__version__ = "0.1.0"

from .context import Context
from .errors import (
    ConfigError,
    ContextDisposed,
    HarnessError,
    PluginError,
    ServiceNotInjected,
    ToolArgsError,
    ToolConflict,
    ToolDefinitionError,
)
from .fiber import Fiber, FiberState
from .host import EntryStatus, Host
from .service import Service
from .tools import (
    Ask,
    Deny,
    ToolCall,
    ToolDefinition,
    ToolResult,
    ToolsService,
    define_tool,
    tool,
)

__all__ = [
    "Ask",
    "ConfigError",
    "Context",
    "ContextDisposed",
    "Deny",
    "EntryStatus",
    "Fiber",
    "FiberState",
    "HarnessError",
    "Host",
    "PluginError",
    "Service",
    "ServiceNotInjected",
    "ToolArgsError",
    "ToolCall",
    "ToolConflict",
    "ToolDefinition",
    "ToolDefinitionError",
    "ToolResult",
    "ToolsService",
    "define_tool",
    "tool",
]
