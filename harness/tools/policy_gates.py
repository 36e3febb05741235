"""Fail-closed gates: tools a policy gated stay refused while that policy is not loaded.

A plugin that decides which calls may run (the ``policy``) opens a gate with
``ctx.tools.gate(key, gated)`` as it applies. When it unloads — a config change, a failed
apply — its listeners are gone, but the gate stays behind, closed: a call to a tool ``gated``
names is denied until a plugin opens the gate of the same ``key`` again.

The gates also keep the open reload holds (:mod:`.reload_holds`): during a reload transaction
calls it concerns wait instead. ``engaged`` is the one flag the call path reads: False while
no gate is closed and no hold is open.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .calls import ToolCall, ToolResult
from .reload_holds import Hold, wait

_log = logging.getLogger("harness.tools")

Gated = Callable[[str], str | None]
"""Tool name (or ``resource:<uri>``, ``prompt:<name>``) → why it is gated (a policy's rule,
say), or None."""


class Gates:
    """The gates of one tools service, by key."""

    def __init__(self) -> None:
        self._open: dict[str, Gated] = {}
        self.closed: dict[str, tuple[Gated, str]] = {}
        """Gates whose holder is not loaded: key → (gated, who held it)."""
        self.holds: list[Hold] = []
        """The open reload transactions."""
        self._until: dict[str, Callable[[], bool]] = {}
        """Gates closed by :meth:`refuse_while`: key → whether they still refuse."""
        self.engaged = False
        """True while a gate is closed or a hold is open: calls must look here first."""

    def open(self, key: str, gated: Gated, holder: str) -> Callable[[], None]:
        """Open (or replace) the gate ``key``; return the cleanup that closes it."""
        self.closed.pop(key, None)
        self._until.pop(key, None)
        self._open[key] = gated
        self._update()

        def close() -> None:
            if self._open.get(key) is gated:
                del self._open[key]
                self.closed[key] = (gated, holder)
                self._update()

        return close

    def refuse_while(self, key: str, refusing: Callable[[], bool], why: str, holder: str) -> None:
        """Refuse every call while ``refusing()`` holds (a plugin that checked calls failed
        to come back from a reload); the gate opens by itself once it no longer does."""

        def gated(tool: str) -> str | None:
            return why if refusing() else None

        self.closed[key] = (gated, holder)
        self._until[key] = refusing
        self._update()

    def begin(self, hold: Hold) -> None:
        """Open ``hold``: the calls it concerns wait from now on."""
        self.holds.append(hold)
        self._update()

    def end(self, hold: Hold) -> None:
        """End ``hold``: the calls waiting for it go on (a second call is a no-op)."""
        if hold in self.holds:
            self.holds.remove(hold)
            self._update()
        hold.done.set()

    async def admit(self, call: ToolCall, seconds: float) -> ToolResult | None:
        """Wait out the holds that concern ``call`` (at most ``seconds``), then check the
        closed gates: None to go on, else the result that ends the call."""
        if self.holds:
            refused = await wait(self.holds, call, seconds)
            if refused is not None:
                return refused
        return self.held(call) if self.closed else None

    def _update(self) -> None:
        self.engaged = bool(self.closed or self.holds)

    def held(self, call: ToolCall) -> ToolResult | None:
        """The denial of ``call`` by a closed gate, or None."""
        why = self.refusal(call.name)
        if why is None:
            return None
        return ToolResult.failure(call, "denied", f"Tool denied: {why}")

    def refusal(self, subject: str) -> str | None:
        """Why a closed gate refuses ``subject`` (a tool name, ``resource:<uri>`` or
        ``prompt:<name>``), or None when none does."""
        for key, (gated, holder) in tuple(self.closed.items()):
            until = self._until.get(key)
            if until is not None and not until():  # what it waited for is over
                del self.closed[key], self._until[key]
                self._update()
                continue
            try:
                why = gated(subject)
            except Exception:
                _log.exception("gate %r raised for %r; refusing it", key, subject)
                why = "its gate failed"
            if why:
                return (
                    f"{why}, and {holder}, which decides it, is not loaded right now "
                    "(reloading or failed); calls are refused until it is back"
                )
        return None
