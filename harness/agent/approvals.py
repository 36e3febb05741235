"""The ``approval`` service of the agent: open requests that a person answers.

A tool call that the policy gates with ``ask`` waits in :meth:`ApprovalBroker.request` until
someone calls :meth:`ApprovalBroker.answer` with ``allow_once``, ``allow_session`` (this
tool, for the rest of this session), ``allow_always`` (writes ``TOOL: allow`` into the policy
entry's rules in cordis.yml) or ``deny`` (with an optional reason); after
``approval_timeout`` seconds it is denied. ``harness chat``, the web console and Python code
all read :meth:`pending` and call :meth:`answer`. Requests and decisions are session events.

Calls that do not come from an agent session (a web console's Run button, an MCP client
without elicitation) wait for an attached console, and are denied at once when nothing is
attached to answer them; surfaces with their own way to ask (MCP elicitation, ``harness
call``'s prompt) pass their own approver to ``execute`` and never reach the broker.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import anyio

from ..errors import HarnessError
from ..tools.approval import ApprovalAnswer, ApprovalScope, Approved, Denied, show_args
from ..tools.calls import ToolCall
from .always import allow_tool


class Session(Protocol):
    """What the broker needs of a session."""

    id: str
    allowed: set[str]

    def record(self, kind: str, **fields: Any) -> dict[str, Any]: ...


_log = logging.getLogger("harness.agent")
Decision = Literal["allow_once", "allow_session", "allow_always", "deny"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
_SCOPES: dict[str, ApprovalScope] = {
    "allow_once": "once",
    "allow_session": "session",
    "allow_always": "always",
}

current_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "harness_agent_session", default=None
)
"""The session whose step is running the tool calls (set by the agent loop)."""


class ApprovalError(HarnessError):
    """Raised when an answer names no open request or no known decision."""


@dataclass
class PendingApproval:
    id: str
    call: ToolCall
    reason: str
    session: Session | None
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: Decision | None = None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{id, call_id, session, name, args, reason, display}``."""
        return {
            "id": self.id,
            "call_id": self.call.id,
            "session": None if self.session is None else self.session.id,
            "name": self.call.name,
            "args": self.call.args,
            "reason": self.reason,
            "display": show_args(self.call.args),
        }


class ApprovalBroker:
    """Open approval requests, answered through :meth:`answer`."""

    def __init__(
        self,
        timeout: float,
        emit: Callable[[str, dict[str, Any]], None],
        config_file: Path | None = None,
        policy: str = "policy",
    ) -> None:
        self.timeout = timeout
        self._emit = emit
        self.config_file = config_file
        """The cordis.yml that ``allow_always`` edits."""
        self.policy = policy
        """The id of the policy entry whose rules ``allow_always`` extends."""
        self._open: dict[str, PendingApproval] = {}
        self._ids = itertools.count(1)
        self._attached = 0
        self._always: set[str] = set()

    # -- wiring ----------------------------------------------------------------------------

    def attach(self) -> Callable[[], None]:
        """Declare a console that answers requests from outside sessions; return a detach."""
        self._attached += 1
        detached = False

        def detach() -> None:
            nonlocal detached
            if not detached:
                detached = True
                self._attached -= 1

        return detach

    # -- the service -----------------------------------------------------------------------

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        """Wait for a person's decision."""
        session = current_session.get()
        if session is None:
            if not self._attached:
                return Denied("approval needed, and no console is attached to ask")
        elif call.name in session.allowed:
            return Approved("session")
        if call.name in self._always:
            return Approved("always")
        pending = PendingApproval(f"approval-{next(self._ids)}", call, reason, session)
        self._open[pending.id] = pending
        details = pending.to_dict()
        del details["session"], details["display"]
        try:
            if session is not None:
                session.record("approval/request", **details)
            else:
                self._emit("approval/request", details)
            with anyio.move_on_after(self.timeout):
                await pending.done.wait()
        except anyio.get_cancelled_exc_class():
            if session is not None:
                why = "the turn was cancelled"
                session.record("approval/decided", id=pending.id, decision="deny", reason=why)
            raise
        finally:
            self._open.pop(pending.id, None)
        if pending.decision is None:
            pending.decision = "deny"
            pending.why = f"no answer within {self.timeout:g} seconds"
        decided = {"id": pending.id, "decision": pending.decision, "reason": pending.why}
        if session is not None:
            session.record("approval/decided", **decided)
        else:
            self._emit("approval/decided", decided)
        if pending.decision == "deny":
            return Denied(
                f"denied by the user: {pending.why}" if pending.why else "denied by the user"
            )
        return Approved(_SCOPES[pending.decision])

    def pending(self) -> list[dict[str, Any]]:
        """The open requests: ``{id, call_id, session, name, args, reason, display}``."""
        return [item.to_dict() for item in self._open.values()]

    def answer(self, id: str, decision: str, reason: str | None = None) -> None:
        """Answer one open request."""
        pending = self._open.get(id)
        if pending is None or pending.done.is_set():
            raise ApprovalError(f"no open approval request {id!r} (answered, expired or unknown)")
        if decision not in DECISIONS:
            raise ApprovalError(f"unknown decision {decision!r}; use one of {', '.join(DECISIONS)}")
        name = pending.call.name
        if decision == "allow_always":
            if self.config_file is None:
                raise ApprovalError("allow_always needs the config file; none is known")
            allow_tool(self.config_file, self.policy, name)
            self._always.add(name)
        elif decision == "allow_session" and pending.session is not None:
            pending.session.allowed.add(name)
        pending.decision = decision
        pending.why = reason
        pending.done.set()

    def cancel_call(self, session: Session, call_id: str) -> bool:
        """Deny the open request of ``call_id`` in ``session`` (the call was cancelled)."""
        for item in list(self._open.values()):
            if item.session is session and item.call.id == call_id and not item.done.is_set():
                item.decision = "deny"
                item.why = "the call was cancelled"
                item.done.set()
                return True
        return False

    def forget(self, session: Session) -> None:
        """Deny a closing session's open requests."""
        for item in list(self._open.values()):
            if item.session is session and not item.done.is_set():
                item.decision, item.why = "deny", "the session was closed"
                item.done.set()
