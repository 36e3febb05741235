"""The exception tree of harness.

::

    HarnessError                 base of everything harness raises on purpose
    ├── ConfigError              a config (a plugin's or cordis.yml) is invalid
    ├── PluginError              a plugin cannot be used or failed to apply
    │   ├── ServiceConflict      two plugins provide one service name
    │   └── DependencyCycle      plugins wait on each other's services
    ├── ContextDisposed          a context that is gone was used (effects, services)
    ├── ServiceNotInjected       a plugin read a service it did not inject (an AttributeError)
    ├── DefinitionError          a tool, resource or prompt definition is malformed
    │   └── ToolDefinitionError  a tool definition is malformed (raised when it is defined)
    ├── NameConflict             two plugins register one tool name, resource URI or prompt
    │   └── ToolConflict         two plugins register one tool name
    ├── ArgumentsError           arguments do not match what a prompt or template takes
    │   └── ToolArgsError        tool arguments do not match the tool's parameters
    ├── NotFound                 no resource has that URI, no prompt that name
    ├── AccessDenied             the policy refused a resource read or a prompt get
    ├── ContentError             a resource's read, a prompt's render or a completion failed
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


class DefinitionError(HarnessError):
    """Raised when a definition (a tool's, a resource's, a prompt's) is malformed; raised
    when it is defined, never at call time."""


class ToolDefinitionError(DefinitionError):
    """Raised when a tool definition or its parameter spec is malformed."""


class NameConflict(HarnessError):
    """Raised when a key (a tool name, a resource URI or template, a prompt name) is
    registered while another plugin holds it."""


class ToolConflict(NameConflict):
    """Raised when a tool name is registered while another plugin holds it."""


class ArgumentsError(HarnessError):
    """Raised when arguments do not match what they are for: a prompt's arguments, a
    resource template's variables, a tool's parameters. ``issues`` lists each problem."""

    def __init__(self, message: str, issues: Sequence[str] = ()) -> None:
        self.issues: tuple[str, ...] = tuple(issues)
        super().__init__(message)


class ToolArgsError(ArgumentsError):
    """Raised when tool arguments do not match the tool's parameters.

    A tool body may raise it too: the call then fails with code ``invalid_args``.
    """


class NotFound(HarnessError, LookupError):
    """Raised when no resource has the URI read, or no prompt the name asked for.

    ``kind`` is ``resource`` or ``prompt``; ``key`` the URI or name looked for. A template's
    read may raise it (``NotFound("no note named x")``) when a value names nothing; the
    service fills in both.
    """

    def __init__(self, message: str, kind: str = "", key: str = "") -> None:
        self.kind = kind
        self.key = key
        super().__init__(message)


class AccessDenied(HarnessError, PermissionError):
    """Raised when a policy refuses a resource read or a prompt get (an ``ask`` counts as a
    refusal there: nobody is asked); the message begins ``denied:``."""


class ContentError(HarnessError):
    """Raised when a resource's read, a prompt's render or a completion raised, or returned
    what cannot be served; the message names which and why (the cause is chained)."""


class RecordError(HarnessError):
    """Raised when a session search query or a session title cannot be used (the message says
    why). It lives here, not in the agent, so the web console can tell it apart without
    importing the agent."""
