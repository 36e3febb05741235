"""The exception tree of harness.

::

    HarnessError                 base of everything harness raises on purpose
    ├── ConfigError              a config (a plugin's or cordis.yml) is invalid
    ├── PluginError              a plugin cannot be used or failed to apply
    │   ├── ServiceConflict      two plugins provide one service name
    │   └── DependencyCycle      plugins wait on each other's services
    ├── ContextDisposed          a context that is gone was used (effects, services)
    ├── ServiceNotInjected       a plugin read a service it did not inject (an AttributeError)
    ├── ToolDefinitionError      a tool definition is malformed (raised when it is defined)
    ├── ToolConflict             two plugins register one tool name
    ├── ToolArgsError            tool arguments do not match the tool's parameters
    └── RecordError              a session search or title cannot be used

Messages are one sentence naming the object and the broken rule, and say what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class HarnessError(Exception):
    """Raised for every failure harness reports on purpose."""


class ConfigError(HarnessError):
    """Raised when a config does not validate or cannot be read.

    ``issues`` lists every problem of a plugin config with its path; ``problems`` holds the
    located problems (file, line, entry) of a ``cordis.yml`` that cannot be read at all.
    """

    def __init__(
        self, message: str, issues: Sequence[str] = (), problems: Sequence[Any] = ()
    ) -> None:
        self.issues: tuple[str, ...] = tuple(issues)
        self.problems: tuple[Any, ...] = tuple(problems)
        if self.issues:
            message = f"{message}: " + "; ".join(self.issues)
        super().__init__(message)


class PluginError(HarnessError):
    """Raised when a plugin cannot be used or its apply failed."""


class ServiceConflict(PluginError):
    """Raised when a plugin provides a service name another plugin already holds."""


class DependencyCycle(PluginError):
    """Raised (and kept as the fibers' error) when plugins wait on each other's services."""


class ContextDisposed(HarnessError):
    """Raised when an effect is created, or a service read, on a context whose plugin unloaded."""


class ServiceNotInjected(HarnessError, AttributeError):
    """Raised when a plugin reads a service it did not declare in ``inject``.

    An :class:`AttributeError` too, so ``hasattr(ctx, name)`` and ``getattr(ctx, name, None)``
    answer instead of raising.
    """


class ToolDefinitionError(HarnessError):
    """Raised when a tool definition or its parameter spec is malformed."""


class ToolConflict(HarnessError):
    """Raised when a tool name is registered while another plugin holds it."""


class ToolArgsError(HarnessError):
    """Raised when tool arguments do not match the tool's parameters.

    A tool body may raise it too: the call then fails with code ``invalid_args``.
    """

    def __init__(self, message: str, issues: Sequence[str] = ()) -> None:
        self.issues: tuple[str, ...] = tuple(issues)
        super().__init__(message)


class RecordError(HarnessError):
    """Raised when a session search query or a session title cannot be used (the message says
    why). It lives here, not in the agent, so the web console can tell it apart without
    importing the agent."""
