"""Fail-closed gates: tools a policy gated stay refused while that policy is not loaded.

A plugin that decides which calls may run (the ``policy``) opens a gate with
``ctx.tools.gate(key, gated)`` as it applies. When it unloads — its own hot reload, a config
change, a failed apply — its listeners are gone, but the gate stays behind, closed: a call to
a tool ``gated`` names is denied until a plugin opens the gate of the same ``key`` again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .calls import ToolCall, ToolResult

_log = logging.getLogger("harness.tools")

Gated = Callable[[str], str | None]
"""Tool name → why the tool is gated (a policy's rule, say), or None."""


class Gates:
    """The gates of one tools service, by key."""

    def __init__(self) -> None:
        self._open: dict[str, Gated] = {}
        self.closed: dict[str, tuple[Gated, str]] = {}
        """Gates whose holder is not loaded: key → (gated, who held it)."""

    def open(self, key: str, gated: Gated, holder: str) -> Callable[[], None]:
        """Open (or replace) the gate ``key``; return the cleanup that closes it."""
        self.closed.pop(key, None)
        self._open[key] = gated

        def close() -> None:
            if self._open.get(key) is gated:
                del self._open[key]
                self.closed[key] = (gated, holder)

        return close

    def held(self, call: ToolCall) -> ToolResult | None:
        """The denial of ``call`` by a closed gate, or None."""
        for key, (gated, holder) in tuple(self.closed.items()):
            try:
                why = gated(call.name)
            except Exception:
                _log.exception("gate %r raised for tool %r; refusing the call", key, call.name)
                why = "its gate failed"
            if why:
                return ToolResult.failure(
                    call,
                    "denied",
                    f"Tool denied: {why}, and {holder}, which decides it, is not loaded "
                    "right now (reloading or failed); calls are refused until it is back",
                )
        return None
