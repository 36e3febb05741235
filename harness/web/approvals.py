"""Approvals asked in the console: a person answers ``ask`` decisions in the page.

When the agent's approval broker is loaded (``harness:agent`` provides ``approval``), the
console is one of its consoles: calls from the Tools page wait in the broker, and the page
answers them with ``pending()`` / ``answer()`` like every other request.

Without it, the console answers its own calls: a Run on the Tools page (or a script using
``POST /api/tools/{name}/call``) is executed with :class:`ConsoleApprovals` as the call's
approval service, so an ``ask`` waits until someone answers in the page
(``POST /api/approvals/{id}``) or ``timeout`` passes, which denies it. Nothing is provided
as the root's ``approval`` service, so MCP clients keep being asked through their own
client, and loading the agent later does not collide with the console.

Decisions: ``allow_once``; ``allow_session`` and ``allow_always`` (this tool, for the rest of
this console's life: without the agent's broker no policy file is edited); ``deny`` with a
reason.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..tools.approval import Approved, Denied
from ..tools.calls import ToolCall
from .stream import EventHub

TIMEOUT = 300.0
DECISIONS = ("allow_once", "allow_session", "allow_always", "deny")


class UnknownApproval(LookupError):
    """Raised when an answer names no open approval request."""


@dataclass
class _Open:
    id: str
    call: ToolCall
    reason: str
    session: str | None
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: str = "deny"
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "call_id": self.call.id,
            "session": self.session,
            "name": self.call.name,
            "args": self.call.args,
            "reason": self.reason,
        }


class ConsoleApprovals:
    """The approval service of the console's own calls, when no broker is loaded."""

    def __init__(self, hub: EventHub, timeout: float = TIMEOUT) -> None:
        self.hub = hub
        self.timeout = timeout
        self._open: dict[str, _Open] = {}
        self._allowed: set[str] = set()

    def pending(self) -> list[dict[str, Any]]:
        """The open requests, oldest first."""
        return [request.to_dict() for request in self._open.values()]

    async def request(self, call: ToolCall, reason: str) -> Approved | Denied:
        """Ask the person at the page."""
        if call.name in self._allowed:
            return Approved("session")
        request = _Open(f"a{secrets.token_hex(6)}", call, reason, None)
        self._open[request.id] = request
        self.hub.publish("approval/request", request.to_dict())
        try:
            with anyio.move_on_after(self.timeout) as waited:
                await request.done.wait()
            if waited.cancelled_caught:
                request.why = f"nobody answered within {self.timeout:g} s"
                self.hub.publish(
                    "approval/decided",
                    {"id": request.id, "decision": "deny", "reason": request.why},
                )
        finally:
            self._open.pop(request.id, None)
        if request.decision == "deny":
            why = f": {request.why}" if request.why else ""
            return Denied(f"denied in the console{why}")
        return Approved("once" if request.decision == "allow_once" else "session")

    def answer(self, request_id: str, decision: str, reason: str | None = None) -> None:
        """Answer one open request."""
        if decision not in DECISIONS:
            raise ValueError(f"decision must be one of {', '.join(DECISIONS)}, not {decision!r}")
        request = self._open.get(request_id)
        if request is None or request.done.is_set():
            raise UnknownApproval(f"no open approval request has id {request_id!r}")
        if decision in ("allow_session", "allow_always"):
            self._allowed.add(request.call.name)
        request.decision = decision
        request.why = reason or ""
        request.done.set()
        self.hub.publish(
            "approval/decided", {"id": request_id, "decision": decision, "reason": reason or ""}
        )
