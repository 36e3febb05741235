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
)
from .fiber import Fiber, FiberState
from .service import Service

__all__ = [
    "ConfigError",
    "Context",
    "ContextDisposed",
    "Fiber",
    "FiberState",
    "HarnessError",
    "PluginError",
    "Service",
    "ServiceNotInjected",
    "ToolArgsError",
]
