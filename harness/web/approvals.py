"""Approvals asked in the console: a person answers ``ask`` decisions in the page.

While the console runs and no other plugin provides ``approval``, :class:`ConsoleApprovals`
is the ``approval`` service. A call that came from an MCP client is still asked through
that client (elicitation, as :class:`harness.mcp.McpApproval` does); every other call — a
Run on the Tools page, a script using the HTTP API — waits here until someone answers in
the page (``POST /api/approvals/{id}``) or ``timeout`` passes, which denies it.

Decisions: ``allow_once``; ``allow_session`` (this tool, for the rest of this console's
life when the call has no chat session); ``allow_always`` (the same, and the policy's rule
is written by the agent's approval service when one is loaded); ``deny`` with a reason.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..mcp import McpApproval, _current
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
    """The ``approval`` service of a console without another approval provider."""

    def __init__(self, hub: EventHub, timeout: float = TIMEOUT) -> None:
        self.hub = hub
        self.timeout = timeout
        self._open: dict[str, _Open] = {}
        self._allowed: set[str] = set()
        self._mcp = McpApproval()

    def pending(self) -> list[dict[str, Any]]:
        """The open requests, oldest first."""
        return [request.to_dict() for request in self._open.values()]

    async def request(self, call: ToolCall, reason: str) -> bool | str:
        """Ask the person at the page; True when allowed, else why not."""
        if _current.get() is not None:
            return await self._mcp.request(call, reason)
        if call.name in self._allowed:
            return True
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
            return (
                f"denied in the console: {request.why}" if request.why else "denied in the console"
            )
        return True

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
