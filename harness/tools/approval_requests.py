"""The approval object: every ``ask`` of every surface is one request here.

One :class:`Approvals` belongs to each tools service (``ctx.tools.approvals``; the agent
provides it as the ``approval`` service too). An ``ask`` becomes a request with an
unguessable id (``secrets.token_urlsafe``), listed by :meth:`Approvals.pending` as ``{id,
call_id, session, name, args, reason}`` and announced as an ``approval/request`` event. It is
answered by the first of:

- :meth:`Approvals.answer` ``(id, decision, reason=None)``, with ``allow_once``,
  ``allow_session`` (this tool, for the rest of the call's session: its agent session, else
  its client's, :func:`holder`; a call of neither is allowed once), ``allow_always`` (the
  policy file is edited when a writer is set, :attr:`Approvals.always`) or ``deny``: what
  the web console's buttons, ``harness chat``'s prompt and Python code all call;
- the call's own asker, when its surface passed one (``execute(call, approval=...)``): MCP
  elicitation (or its sealed ``requestState`` round trip, whose :class:`Pending` ends the
  call ``approval_pending``), ``harness call``'s terminal prompt or ``--yes``;
- ``timeout`` seconds (default 300), which deny.

Then ``approval/decided {id, decision, reason}`` is emitted. A request that nobody could
answer (no asker, no session whose reader answers, and no console page with its event stream
open, :meth:`Approvals.attach`) is denied at once, saying how to approve it; one that waits
for a page is denied :data:`GRACE` seconds after the last page closes, unless one reopens.
Nothing reaches this object through a context variable: the call carries its session
(``ToolCall.session``) and the surface passes its asker. Only ``True`` and
:class:`Approved` approve; an asker that raises denies.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Awaitable, Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, Protocol, get_args

import anyio

from ..errors import HarnessError
from .approval_contract import ApprovalScope, Approved, Denied, Pending, decide, show_args
from .calls import ToolCall
from .inputs import Answer, AskInput

if TYPE_CHECKING:
    from .call_context import CallContext

_log = logging.getLogger("harness.approval")

Decision = Literal["allow_once", "allow_session", "allow_always", "deny"]
DECISIONS: tuple[Decision, ...] = get_args(Decision)
TIMEOUT = 300.0
"""Seconds a request waits for an answer before it is denied (``approval_timeout``)."""
GRACE = 5.0
"""Seconds a request waiting for a console page outlives the last page (a reload
reconnects within a second or two)."""
_SCOPES: dict[str | None, ApprovalScope] = {
    "allow_once": "once",
    "allow_session": "session",
    "allow_always": "always",
}


class Keyed(Protocol):
    """What answers a keyed call's ask before anyone is asked (``Approvals.keyed``: the
    store's, :mod:`harness.store.approvals`)."""

    async def before(self, call: ToolCall) -> Approved | Denied | None:
        """The answer for ``call`` (its ``key`` set), or None to ask as usual."""
        ...

    async def opened(self, id: str, call: ToolCall, reason: str) -> None:
        """Keep request ``id`` about ``call`` before anyone is told of it."""
        ...

    def outlives(self, id: str) -> bool:
        """Whether request ``id``, cut off now, stays kept for the next process (the host
        is stopping): it is then not denied, only no longer listed here."""
        ...


class ApprovalError(HarnessError):
    """Raised when an answer names no open request or no known decision."""


@dataclass
class Request:
    """One open approval request."""

    id: str
    call: ToolCall
    reason: str
    question: bool = False
    """A running call's question to its person (``ctx.ask``), not an approval: answered
    once (:meth:`Approvals.answer` with ``content``), never remembered."""
    form: dict[str, Any] | None = None
    """A question's form (a JSON Schema object)."""
    content: dict[str, Any] | None = None
    """A question's answer, with an allowing decision."""
    done: anyio.Event = field(default_factory=anyio.Event)
    decision: Decision | None = None
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``{id, call_id, session, name, args, reason, display}``, and ``question: True``
        for a running call's question (which ``--yes`` never answers)."""
        fields = {
            "id": self.id,
            "call_id": self.call.id,
            "session": self.call.session,
            "name": self.call.name,
            "args": self.call.args,
            "reason": self.reason,
            "display": show_args(self.call.args),
        }
        if self.question:
            fields["question"] = True
            fields["form"] = self.form
        return fields


class Approvals:
    """Open approval requests and their answers (see the module)."""

    def __init__(self, emit: Callable[[str, dict[str, Any]], None]) -> None:
        self._emit = emit
        self.timeout = TIMEOUT
        """Seconds before an unanswered request is denied."""
        self.always: Callable[[str], None] | None = None
        """Writes ``TOOL: allow`` into the policy (set by the agent); None: remembered here."""
        self._open: dict[str, Request] = {}
        self._allowed: dict[str, set[str]] = {}
        """Session (an agent's, or else a client's) → tools allowed for it (``allow_session``)."""
        self._always: set[str] = set()
        self._attached = 0
        self._change: anyio.Event | None = None
        """Set (and dropped) when a page attaches or detaches."""
        self.keyed: Keyed | None = None
        """Answers a keyed call's ask first, while a store is loaded (an approval given
        before a restart, a call the journal holds); None: nothing does."""

    def attach(self) -> Callable[[], None]:
        """Declare a person who sees session-less requests: a console page with its event
        stream open, for as long as it is open. Returns its detach."""
        self._attached += 1
        self._changed()
        detached = False

        def detach() -> None:
            nonlocal detached
            if not detached:
                detached = True
                self._attached -= 1
                self._changed()

        return detach

    @property
    def attached(self) -> bool:
        """Whether a person who sees session-less requests is attached."""
        return self._attached > 0

    def _changed(self) -> None:
        change, self._change = self._change, None
        if change is not None:
            change.set()

    async def _unwatched(self, call: ToolCall) -> Denied:
        """The denial of ``call`` once no page has been attached for :data:`GRACE` seconds."""
        while True:
            change = self._change = self._change or anyio.Event()
            if self._attached:
                await change.wait()
                continue
            with anyio.move_on_after(GRACE) as grace:
                await change.wait()
            if grace.cancelled_caught:
                return Denied(unanswerable(call, "the last console page that showed it was closed"))

    async def request(self, call: ToolCall, reason: str) -> bool:
        """Ask whoever is attached about ``call``; True only when it was approved."""
        return isinstance(await self.decide(call, reason), Approved)

    async def decide(
        self,
        call: ToolCall,
        reason: str,
        asker: Any = None,
        *,
        question: bool = False,
        form: dict[str, Any] | None = None,
    ) -> Approved | Denied | Pending:
        """The answer to ``call``'s ask: the first of :meth:`answer`, ``asker`` (an object
        with ``request(call, reason)``, the call's own surface) and the timeout. With
        ``question``, a running call's question to a person (:mod:`.questions`): no
        remembered decision answers it, and its answer is not remembered."""
        if call.key is not None and self.keyed is not None and not question:
            early = await self.keyed.before(call)
            if early is not None:
                return early
        if asker is None and not question:  # remembered decisions answer for this object
            session = holder(call)
            if session is not None and call.name in self._allowed.get(session, ()):
                return Approved("session")
            if call.name in self._always:
                return Approved("always")
        if asker is None and call.session is None and not self._attached:
            return Denied(
                unanswerable(call, "the caller cannot ask a person and no console page is open")
            )
        request = Request(secrets.token_urlsafe(16), call, reason, question, form)
        if call.key is not None and self.keyed is not None and not question:
            with anyio.CancelScope(shield=True):  # kept before anyone can see it
                await self.keyed.opened(request.id, call, reason)
        self._open[request.id] = request
        fields = request.to_dict()
        del fields["display"]
        self._emit("approval/request", fields)
        # what races answer(): the call's own asker, or (nobody else can answer) the pages
        rival: Callable[[], Awaitable[Approved | Denied | Pending]] | None = None
        if asker is not None:
            rival = partial(decide, asker, call, reason)
        elif call.session is None:
            rival = partial(self._unwatched, call)
        answered: Approved | Denied | Pending | None = None
        context = call.context  # its client hears of the wait (a program pauses its clock)
        waiting = nullcontext() if context is None else context.client.waiting(context)
        try:
            with (
                waiting,
                anyio.move_on_after(self.timeout if math.isfinite(self.timeout) else None),
            ):
                if rival is None:
                    await request.done.wait()
                else:
                    async with anyio.create_task_group() as group:

                        async def race(rival: Callable[[], Awaitable[Any]]) -> None:
                            nonlocal answered
                            answered = await rival()
                            group.cancel_scope.cancel()

                        group.start_soon(race, rival)
                        await request.done.wait()
                        group.cancel_scope.cancel()
        except anyio.get_cancelled_exc_class():
            if self.keyed is not None and self.keyed.outlives(request.id):
                self._open.pop(request.id, None)  # the host stops: asked again at its next start
            else:
                self._close(request, "deny", "the call was cancelled")
            raise
        if request.decision is None:  # not answered through answer()
            if answered is None:
                waited = f"no answer within {self.timeout:g} seconds"
                self._close(request, "deny", waited)
                return Denied(waited)  # nobody answered: not "denied by the user"
            if isinstance(answered, Pending):
                self._close(request, None, "the client answers in its next request")
                return answered
            if isinstance(answered, Approved):
                self._close(request, answered.decision, None)  # type: ignore[arg-type]
                return answered
            self._close(request, "deny", answered.reason or None)
            return answered
        if request.decision == "deny":
            return Denied(
                f"denied by the user: {request.why}" if request.why else "denied by the user"
            )
        if request.question:
            return Answered(content=request.content)
        return Approved(_SCOPES[request.decision])

    async def question(self, ctx: CallContext, request: AskInput) -> Answer:
        """A running call's question (``ctx.ask``) as a request only a person answers: the
        agent session's card or prompt, or a console page with its event stream open. It is
        listed and announced like an approval, with ``question: true`` and its ``form``;
        :meth:`answer` with ``content`` fills the form in (``deny`` declines; a yes without
        content accepts the form's defaults and ``true`` for its yes/no fields, when that is
        a complete answer). Nothing remembered answers it; nobody there: ``cancel``."""
        call = ctx.call
        if call.session is None and not self._attached:
            return Answer(
                "cancel",
                reason=f"nobody can answer tool {call.name}'s question: "
                "the caller cannot be asked and no console page is open",
            )
        shown = ToolCall(
            call.id,
            call.name,
            {"message": request.message, "requested": request.schema, "call": call.args},
            parent=call.parent,
            session=call.session,
            client=call.client,
        )
        reason = f"tool {call.name} asks: {request.message}"
        decided = await self.decide(shown, reason, question=True, form=request.schema)
        if isinstance(decided, Approved):
            content = decided_content(decided, request.schema)
            if content is not None:
                return Answer("accept", content)
            return Answer("decline", reason="the form needs typed input and none was given")
        if isinstance(decided, Denied) and decided.reason and "no answer within" in decided.reason:
            return Answer("cancel", reason=decided.reason)
        return Answer("decline")

    def revive(self, id: str, call: ToolCall, reason: str) -> Request:
        """Open request ``id`` again: a keyed call that was waiting for it when its process
        died (the store keeps them). It is listed and announced as before; nobody waits on
        it here: the caller (the store) does, and runs the call once it is allowed."""
        request = Request(id, call, reason)
        self._open[id] = request
        fields = request.to_dict()
        del fields["display"]
        self._emit("approval/request", fields)
        return request

    def pending(self) -> list[dict[str, Any]]:
        """The open requests, oldest first: ``{id, call_id, session, name, args, reason,
        display}`` (``display``: the arguments with hidden characters made visible)."""
        return [request.to_dict() for request in self._open.values()]

    def answer(
        self,
        id: str,
        decision: str,
        reason: str | None = None,
        content: dict[str, Any] | None = None,
    ) -> None:
        """Answer one open request, from anywhere (console, terminal, Python): the same call.
        ``content`` fills in a question's form (with an allowing decision)."""
        request = self._open.get(id) if isinstance(id, str) else None
        if request is None or request.done.is_set():
            raise ApprovalError(f"no open approval request {id!r} (answered, expired or unknown)")
        if decision not in DECISIONS:
            raise ApprovalError(f"unknown decision {decision!r}; use one of {', '.join(DECISIONS)}")
        if content is not None and not isinstance(content, dict):
            raise ApprovalError("a question's content must be an object (the form's values)")
        if content is not None and not request.question:
            raise ApprovalError(
                f"request {id!r} is an approval, not a tool's question: send a decision "
                "without content"
            )
        if content is not None and decision != "deny":
            fits(request, content)
        name = request.call.name
        decided: Decision = decision
        if request.question:  # a question's yes is this answer only
            decided = "deny" if decision == "deny" else "allow_once"
            request.content = content
        elif decision == "allow_always":
            if self.always is not None:
                self.always(name)  # may raise (the policy file): the request stays open
            self._always.add(name)
        elif decision == "allow_session":
            session = holder(request.call)
            if session is None:  # nothing to remember it for: this call only
                decided = "allow_once"
            else:
                self._allowed.setdefault(session, set()).add(name)
        self._close(request, decided, reason)

    def cancel(self, call_id: str, session: str | None) -> bool:
        """Deny the open request of ``call_id`` in ``session`` (the call was cancelled)."""
        for request in list(self._open.values()):
            if request.call.id == call_id and request.call.session == session:
                self._close(request, "deny", "the call was cancelled")
                return True
        return False

    def forget(self, session: str) -> None:
        """Deny a closing session's open requests and drop what it allowed (an agent
        session's, or a client's: ``ToolCall.client``)."""
        self.drop(session)
        for request in list(self._open.values()):
            if self.keyed is not None and self.keyed.outlives(request.id):
                continue  # the host stops: the request waits in the store for its next start
            if holder(request.call) == session:
                self._close(request, "deny", "the session was closed")

    def drop(self, session: str) -> None:
        """Forget what ``session`` allowed (``allow_session``): its client went away."""
        self._allowed.pop(session, None)

    def _close(self, request: Request, decision: Decision | None, why: str | None) -> None:
        """Decide ``request`` once: the event, and the waiting call woken."""
        if request.done.is_set():
            return
        request.decision, request.why = decision, why
        request.done.set()
        self._open.pop(request.id, None)
        self._emit(
            "approval/decided",
            {
                "id": request.id,
                "call_id": request.call.id,
                "session": request.call.session,
                "decision": decision or "pending",
                "reason": why,
            },
        )


@dataclass(frozen=True, slots=True)
class Answered(Approved):
    """A question answered yes, with the form's values when the person gave them."""

    content: dict[str, Any] | None = None


def decided_content(decided: Approved, form: dict[str, Any]) -> dict[str, Any] | None:
    """A question's accepted content: what the person filled in, else the form's consent
    defaults (:func:`consent_content`)."""
    given = decided.content if isinstance(decided, Answered) else None
    return given if given is not None else consent_content(form)


def consent_content(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a form when a person says yes: defaults, and ``true`` for yes/no fields.

    None when the form asks for something only a person could type (a required field that
    has no default and is not a boolean).
    """
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for key, node in properties.items():
        node = node if isinstance(node, dict) else {}
        if "default" in node:
            content[key] = node["default"]
        elif node.get("type") == "boolean":
            content[key] = True
        elif key in required:
            return None
    return content


def fits(request: Request, content: dict[str, Any]) -> None:
    """Raise :class:`ApprovalError` when ``content`` does not fill in ``request``'s form
    (the request stays open, to be answered again)."""
    from ..errors import ToolArgsError
    from .fullschema import InvalidSchema, schema_checker

    try:
        check = schema_checker(request.form or {"type": "object"})
    except InvalidSchema:  # a form that is no JSON Schema: the tool reads what it gets
        return
    try:
        check(content)
    except ToolArgsError as exc:
        raise ApprovalError(
            f"the answer does not fit the form of {request.call.name}: {exc}"
        ) from None


def unanswerable(call: ToolCall, why: str) -> str:
    """Why nobody answered ``call``'s approval (``why``: no page open, say), and how to
    approve it."""
    name = call.name
    return (
        f"nobody can answer its approval: {why}; approve it from an MCP client with "
        f"elicitation, with `harness call {name} --yes`, in the web console (open it first: "
        f"it asks there), or with a rule `{name}: allow` in the policy"
    )


def holder(call: ToolCall) -> str | None:
    """Whose ``allow_session`` covers ``call``: its agent session, else its client's session,
    else nobody's (None: ``allow_session`` is ``allow_once``)."""
    return call.session if call.session is not None else call.client
