"""One call, one context (DESIGN §16): who is calling, and what a running tool can do.

A :class:`CallContext` is made once where a call enters (the MCP surface, the agent, the
console, ``harness call``, a program in code mode, Python) and travels on the call
(``call.context``) through every stage into the body: a ``@tool`` parameter annotated
``CallContext`` receives it, as does ``define_tool``'s ``execute(args, ctx)``. Nothing looks it
up again by an id, a table or a context variable.

The surface's :class:`Client` is who answers: it puts a tool's questions, sampling and roots
requests to the person or program behind the call, and shows its progress and logs. The base
:class:`Client` (Python, and any surface that cannot ask) reaches nobody but the approval
object: a question goes there as a request only a person answers (a console page, an agent
session's reader), and is ``cancel``-led with the reason when none is there; ``sample`` and
``roots`` raise :class:`~harness.tools.inputs.InputUnavailable`.

Over MCP 2026-07-28 a client answers in its next request: its :meth:`Client.answer` raises
:class:`~harness.tools.inputs.InputRequired`, the call ends with the requests, and the next
round runs the body again with every answer so far in :attr:`CallContext.recorded`, which
each input takes in order. Code before an input must be safe to repeat.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from .inputs import (
    Answer,
    AskInput,
    Input,
    InputRequired,
    InputUnavailable,
    Root,
    RootsInput,
    Sampled,
    SampleInput,
    answer_of,
    form_schema,
)
from .pace import Pace

if TYPE_CHECKING:
    from .calls import ToolCall

__all__ = ["LEVELS", "CallContext", "Client", "Surface"]

Surface = Literal["mcp", "agent", "console", "cli", "code", "python"]
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
"""The syslog levels, as MCP names them, least severe first."""
_PY_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


class Client:
    """Who a call came from, and how to reach them. Surfaces subclass it.

    ``id`` names the client session an ``allow_session`` answer covers (an MCP connection's,
    ``mcp-...``), None for none. The base class reaches nobody itself (see the module).
    """

    id: str | None = None
    asks: bool = False
    """Whether :meth:`answer` can answer an approval (the policy's ``ask``) itself; when not,
    only the approval object's answerers (a console page, an agent session's reader) can."""

    def __init__(self, id: str | None = None) -> None:
        self.id = id

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        """The answers to ``requests`` by key, or raise :class:`InputRequired` (answers come
        in a later request) or :class:`InputUnavailable`. The base: questions to the approval
        object, nothing else."""
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind != "ask":
                raise InputUnavailable(unavailable(ctx, request))
            answers[key] = await ctx.approvals_question(request)
        return answers

    def approver(self, ctx: CallContext) -> Any:
        """What answers the call's approval first (an object with ``request(call, reason)``),
        raced by the approval object's other answerers; None when this client cannot (then
        the approval object alone decides). With :attr:`asks`: the approval as an input, on
        the same path as the tool's own questions."""
        return InputApprover(ctx) if self.asks else None

    def waiting(self, ctx: CallContext) -> AbstractContextManager[Any]:
        """Entered around a wait for a person's answer about ``ctx``'s call that does not
        pass through :meth:`answer` (the approval object deciding its approval). The base:
        nothing; a program's inner calls pause the program's clock."""
        return nullcontext()

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        """Show progress (the base: nowhere but the ``tool/progress`` event)."""

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        """Show a log entry (the base: nowhere but the event, the logger and the span)."""


NOBODY = Client()

APPROVAL_KEY = "harness/approval"
"""The key of an approval among a round's inputs (MCP ``inputRequests``)."""
APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approve": {
            "type": "boolean",
            "title": "Approve",
            "description": "Run this tool call?",
            "default": True,
        }
    },
}


class InputApprover:
    """A call's approval asked as an input of its context (``ctx.inputs``): the client's
    person answers the form; only an accepted form whose ``approve`` is True approves."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx

    async def request(self, call: ToolCall, reason: str) -> Any:
        from .approval_contract import Approved, Denied, Pending, prompt

        message = prompt(call, reason)
        request = AskInput(message, APPROVAL_SCHEMA, approval=True)
        try:
            answers = await self.ctx.inputs(**{APPROVAL_KEY: request})
        except InputRequired as later:
            return Pending(message, later.requests)
        except InputUnavailable as exc:
            return Denied(str(exc))
        answer: Answer = answers[APPROVAL_KEY]
        if not answer.accepted:
            return Denied(answer.reason or "the user declined")
        if (answer.content or {}).get("approve") is not True:
            return Denied("the user did not approve")
        return Approved()


class ApproverClient(Client):
    """A client that is only an approver: what ``execute(call, approval=...)`` passes (an
    object with ``request(call, reason)``: ``harness call``'s terminal prompt or ``--yes``).
    It answers approvals and nothing else; a tool's question goes to the approval object."""

    def __init__(self, approval: Any, id: str | None = None) -> None:
        super().__init__(id)
        self.approval = approval

    def approver(self, ctx: CallContext) -> Any:
        return self.approval

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        """A tool's questions go to the approver's ``question(call, message, schema)`` when
        it has one (an MCP client's elicitation), else to the approval object."""
        question = getattr(self.approval, "question", None)
        if not callable(question):
            return await super().answer(ctx, requests)
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if request.kind != "ask":
                raise InputUnavailable(unavailable(ctx, request))
            answers[key] = await question(ctx.call, request.message, request.schema)
        return answers


def unavailable(ctx: CallContext, request: Input) -> str:
    """Why ``request`` cannot be answered on ``ctx``'s surface."""
    what = {"sample": "sampling (a completion from its model)", "roots": "its roots"}
    return (
        f"tool {ctx.call.name} asked the caller for {what.get(request.kind, request.kind)}, "
        f"and the caller ({ctx.surface}) cannot give it"
    )


class CallContext:
    """The context of one running call (see the module)."""

    __slots__ = (
        "__weakref__",
        "call",
        "carried",
        "client",
        "limits",
        "pace",
        "parent",
        "recorded",
        "round",
        "session",
        "surface",
        "tools",
        "used",
    )

    Ask: ClassVar[type[AskInput]] = AskInput
    Sample: ClassVar[type[SampleInput]] = SampleInput
    Roots: ClassVar[type[RootsInput]] = RootsInput

    def __init__(
        self,
        call: ToolCall,
        surface: Surface = "python",
        client: Client | None = None,
        *,
        session: str | None = None,
        parent: CallContext | None = None,
        recorded: Sequence[Mapping[str, Any]] = (),
        tools: Any = None,
    ) -> None:
        self.call = call
        self.surface = surface
        self.client = NOBODY if client is None else client
        self.session = call.session if session is None else session
        self.parent = parent
        self.recorded = list(recorded)
        """The answers of earlier rounds, one mapping (key → answer) per input, in order."""
        self.round = len(self.recorded)
        """The input round this run is (0: the first)."""
        self.used = 0
        """How many of :attr:`recorded` this run of the body has taken."""
        self.carried: Any = None
        """What the body leaves for its next round when it ends one (a mounted tool: the
        upstream's own ``requestState``): sealed with the round's state, and given back here
        when the next round runs; JSON, and never shown to the client."""
        self.tools = tools
        """The tools service running the call (set by the kernel)."""
        self.pace: Pace | None = None
        """The running body's deadline (total and idle), once made (see :meth:`paced`)."""
        self.limits: tuple[float | None, float | None, float] | None = None
        """The running body's ``(total, idle, began)`` when it has a limit (set by the
        kernel); its :attr:`pace` is made from them when first needed."""
        call.context = self

    def child(self, call: ToolCall, surface: Surface = "code") -> CallContext:
        """The context of a call made inside this one (a program's): the same client,
        session and tools, with this as its ``parent``."""
        call.parent = self.call.id
        call.session = self.call.session
        call.client = self.call.client
        return CallContext(
            call, surface, self.client, session=self.session, parent=self, tools=self.tools
        )

    def restart(self) -> None:
        """The body runs (again) from its start: its inputs take the recorded answers anew,
        after those of the call's approval (which came first)."""
        used = 0
        for answered in self.recorded:
            if set(answered) != {APPROVAL_KEY}:
                break
            used += 1
        self.used = used

    def __repr__(self) -> str:
        return (
            f"CallContext(call={self.call.id!r}, name={self.call.name!r}, surface={self.surface!r})"
        )

    # -- time ------------------------------------------------------------------------------

    def time_left(self) -> float | None:
        """Seconds until the call's deadline (None: no limit), not counting waits for answers."""
        pace = self.paced()
        return None if pace is None else pace.left()

    def paced(self) -> Pace | None:
        """The running body's deadline (None: it has no limit), made at its first need: a
        body that returns without suspending, reporting or asking never needs one."""
        pace = self.pace
        if pace is None and self.limits is not None:
            total, idle, began = self.limits
            pace = self.pace = Pace(total, idle, began)
        return pace

    # -- inputs ----------------------------------------------------------------------------

    async def inputs(self, **requests: Input) -> dict[str, Any]:
        """Several inputs in one round: ``ctx.inputs(region=ctx.Ask(...), roots=ctx.Roots())``;
        the answers by key (an :class:`Answer`, :class:`Sampled`, or a list of :class:`Root`)."""
        if not requests:
            return {}
        for key, request in requests.items():
            if not isinstance(request, AskInput | SampleInput | RootsInput):
                raise TypeError(f"input {key!r} must be ctx.Ask, ctx.Sample or ctx.Roots")
        if self.used < len(self.recorded):  # a later round: this input was answered before
            answered = self.recorded[self.used]
            if set(requests) <= set(answered):  # keys nobody asked for are ignored
                self.used += 1
                return {key: answer_of(request, answered[key]) for key, request in requests.items()}
            if self.used < len(self.recorded) - 1:
                raise InputUnavailable(
                    f"tool {self.call.name} asked for {sorted(requests)} where its earlier round "
                    f"asked for {sorted(answered)}: code before an input must be repeatable"
                )
            del self.recorded[self.used :]  # the latest answers lack some of these: ask again
        pace = self.paced()
        if pace is not None:
            pace.pause()
        try:
            answers = await self.client.answer(self, requests)
        except InputRequired as ask_later:
            if not ask_later.requests:  # a client may defer only some (it answered the rest)
                ask_later.requests = {key: r.to_wire() for key, r in requests.items()}
            raise
        finally:
            if pace is not None:
                pace.resume()
        self.used += 1
        typed = {key: answer_of(request, answers.get(key)) for key, request in requests.items()}
        self.recorded.append(typed)
        return typed

    async def ask(self, message: str, schema: Mapping[str, Any] | None = None) -> Answer:
        """Ask the person behind the call; ``schema`` is a flat parameter spec or a JSON
        Schema object. ``cancel`` with a ``reason`` when nobody can answer."""
        request = AskInput(str(message), form_schema(schema))
        answer: Answer = (await self.inputs(ask=request))["ask"]
        return answer

    async def sample(
        self,
        text_or_messages: str | Sequence[Mapping[str, Any]],
        *,
        system: str | None = None,
        max_tokens: int,
        **params: Any,
    ) -> Sampled:
        """A completion from the caller's model; raises :class:`InputUnavailable` when the
        caller has none to offer."""
        request = SampleInput.of(text_or_messages, max_tokens, system, **params)
        sampled: Sampled = (await self.inputs(sample=request))["sample"]
        return sampled

    async def roots(self) -> list[Root]:
        """The caller's roots; raises :class:`InputUnavailable` when it offers none."""
        roots: list[Root] = (await self.inputs(roots=RootsInput()))["roots"]
        return roots

    async def approvals_question(self, request: AskInput) -> Answer:
        """A question to the approval object: a request only a person answers (a console
        page, an agent session's reader); ``cancel`` at once when nobody is there."""
        tools = self.tools
        if tools is None:
            return Answer("cancel", reason=f"nobody can answer tool {self.call.name}'s question")
        answer: Answer = await tools.approvals.question(self, request)
        return answer

    # -- progress and logs -----------------------------------------------------------------

    async def progress(
        self, done: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress: ``done`` of ``total`` (None: unknown), with a message. Resets
        the ``idle`` timeout."""
        if not _number(done) or (total is not None and not _number(total)):
            raise ValueError(f"progress takes finite numbers, got {done!r} of {total!r}")
        pace = self.paced()
        if pace is not None:
            pace.touch()
        tools = self.tools
        if tools is not None and "tool/progress" in tools._layers:
            fields = {"id": self.call.id, "done": done, "total": total, "message": message}
            tools.ctx.emit("tool/progress", fields, self)
        await self.client.progress(self, done, total, message)

    async def log(self, level: str, message: str, **data: Any) -> None:
        """Log to the caller (MCP ``notifications/message``), the ``tool/log`` event, the
        Python logger ``harness.tools.<name>`` and the call's span."""
        if level not in _PY_LEVELS:
            raise ValueError(f"unknown log level {level!r}; use one of {', '.join(LEVELS)}")
        logging.getLogger(f"harness.tools.{self.call.name}").log(
            _PY_LEVELS[level], "%s", message, extra={"harness_data": data} if data else None
        )
        tools = self.tools
        if tools is not None and "tool/log" in tools._layers:
            fields = {"id": self.call.id, "level": level, "message": message, "data": data}
            tools.ctx.emit("tool/log", fields, self)
        from . import traces

        if traces.ON:
            traces.log_event(level, message, tools is None or tools.config.trace_content)
        await self.client.log(self, level, message, data)


_new = object.__new__


def made_by_kernel(call: ToolCall, tools: Any) -> CallContext:
    """``CallContext(call, tools=tools)``, the Python surface's context, which the kernel
    makes for a call that entered without one: the same object, made without ``__init__``'s
    handling of its arguments (this is on the path of every such call of a tool that takes
    a context; tests/tools/test_call_context.py checks the two agree)."""
    ctx: CallContext = _new(CallContext)
    ctx.call = call
    ctx.surface = "python"
    ctx.client = NOBODY
    ctx.session = call.session
    ctx.parent = None
    ctx.recorded = []
    ctx.round = 0
    ctx.used = 0
    ctx.carried = None
    ctx.tools = tools
    ctx.pace = None
    ctx.limits = None
    call.context = ctx
    return ctx


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
