"""harness: an async plugin host for LLM-agent tools, following the Cordis plugin model.

The public names load on first use (``from harness import Host`` imports the host then), so
``import harness`` costs almost nothing, and it changes nothing in the process that imports
it: not the garbage collector, not logging, not a signal handler. The ``harness`` command
tunes its own process (:mod:`harness.cli.entry_point`).
"""

import typing as _typing

from .lazy import lazy_exports as _lazy_exports

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
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
    from .prompts import define_prompt, prompt
    from .resources import define_resource, resource
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
    from .tools.call_context import CallContext, Client
    from .tools.inputs import Answer, InputUnavailable, Root, Sampled

_HOMES = {
    "Context": "context",
    "ConfigError": "errors",
    "ContextDisposed": "errors",
    "HarnessError": "errors",
    "PluginError": "errors",
    "ServiceNotInjected": "errors",
    "ToolArgsError": "errors",
    "ToolConflict": "errors",
    "ToolDefinitionError": "errors",
    "Fiber": "fiber",
    "FiberState": "fiber",
    "EntryStatus": "host",
    "Host": "host",
    "Service": "service",
    "define_prompt": "prompts",
    "prompt": "prompts",
    "define_resource": "resources",
    "resource": "resources",
    "Ask": "tools",
    "CallContext": "tools.call_context",
    "Client": "tools.call_context",
    "Answer": "tools.inputs",
    "InputUnavailable": "tools.inputs",
    "Root": "tools.inputs",
    "Sampled": "tools.inputs",
    "Deny": "tools",
    "ToolCall": "tools",
    "ToolDefinition": "tools",
    "ToolResult": "tools",
    "ToolsService": "tools",
    "define_tool": "tools",
    "tool": "tools",
}

__all__ = [
    "Answer",
    "Ask",
    "CallContext",
    "Client",
    "InputUnavailable",
    "Root",
    "Sampled",
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
    "define_prompt",
    "define_resource",
    "define_tool",
    "prompt",
    "resource",
    "tool",
]

__getattr__ = _lazy_exports(__name__, _HOMES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
