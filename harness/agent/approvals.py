"""The ``approval`` service of the agent: open requests that a person answers.

A tool call that the policy gates with ``ask`` waits in :meth:`ApprovalBroker.request` until
someone calls :meth:`ApprovalBroker.answer` with ``allow_once``, ``allow_session`` (this
tool, for the rest of this session), ``allow_always`` (writes ``TOOL: allow`` into the policy
entry's rules in cordis.yml) or ``deny`` (with an optional reason); after
``approval_timeout`` seconds it is denied. ``harness chat``, the web console and Python code
all read :meth:`pending` and call :meth:`answer`. Requests and decisions are session events.

Calls that do not come from an agent session go to the surface they came from when it
registered a route (MCP elicitation, ``harness call``'s prompt); otherwise they wait for an
attached console, and are denied at once when nothing is attached to answer them.
"""

from __future__ import annotations

import contextvars
import itertools
import json
import logging
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, get_args

import anyio

from ..errors import HarnessError
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

current_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "harness_agent_session", default=None
)
"""The session whose step is running the tool calls (set by the agent loop)."""


class ApprovalError(HarnessError):
    """Raised when an answer names no open request or no known decision."""


class Approver(Protocol):
    async def request(self, call: ToolCall, reason: str) -> Any: ...


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
        self._routes: list[tuple[Callable[[ToolCall], bool], Approver]] = []
        self._attached = 0
        self._always: set[str] = set()

    # -- wiring ----------------------------------------------------------------------------

    def route(self, claims: Callable[[ToolCall], bool], approver: Approver) -> Callable[[], None]:
        """Send calls outside agent sessions for which ``claims(call)`` holds to ``approver``."""
        item = (claims, approver)
        self._routes.append(item)
        return lambda: self._routes.remove(item) if item in self._routes else None

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

    async def request(self, call: ToolCall, reason: str) -> bool | str:
        """Wait for a person's decision; True approves, a string says why not."""
        session = current_session.get()
        if session is None:
            for claims, approver in reversed(self._routes):
                if claims(call):
                    answer: Any = await approver.request(call, reason)
                    return answer if isinstance(answer, str) else answer is True
            if not self._attached:
                return "approval needed, and no console is attached to ask"
        elif call.name in session.allowed:
            return True
        if call.name in self._always:
            return True
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
            return f"denied by the user: {pending.why}" if pending.why else "denied by the user"
        return True

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


_INVISIBLE = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def visible(text: str) -> str:
    """``text`` with control, format (bidirectional, zero-width) and unassigned characters
    written as ``\\uXXXX`` escapes, so what a person approves is what the tool receives."""
    out = []
    for char in text:
        if char == "\n" or (char not in "\t\r" and unicodedata.category(char) not in _INVISIBLE):
            out.append(char)
        elif ord(char) > 0xFFFF:
            out.append(f"\\U{ord(char):08x}")
        else:
            out.append(f"\\u{ord(char):04x}")
    return "".join(out)


def show_args(args: Any) -> str:
    """The full arguments as indented JSON, with invisible characters made visible."""
    if isinstance(args, str):
        return visible(args)
    try:
        text = json.dumps(args, ensure_ascii=False, indent=2, sort_keys=False, default=repr)
    except ValueError:
        text = repr(args)
    return visible(text)
