"""harness: an async plugin host for LLM-agent tools, following the Cordis plugin model."""

__version__ = "0.1.0"

import gc as _gc

# Importing harness (with pydantic, anyio and yaml) allocates some 60 000 objects that live
# as long as the process and hardly any garbage; the cyclic collector would walk them again
# and again meanwhile (about 15 ms of a `harness tools --json`). So it pauses, and what the
# import made is then filed with the oldest generation, as a later collection would have
# filed it: nothing is frozen, and garbage among those objects is still collected. Skipped
# when the process has frozen objects of its own (gc.freeze() before a fork), which
# unfreezing would undo.
_collecting = _gc.isenabled()
_gc.disable()
try:
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
finally:
    if not _gc.get_freeze_count():
        _gc.freeze()  # every tracked object to the permanent generation,
        _gc.unfreeze()  # and from there to the oldest: no walk over them
    if _collecting:
        _gc.enable()

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
