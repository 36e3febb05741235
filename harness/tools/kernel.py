"""The call kernel: every tool call, from every surface, is :func:`execute`.

The CLI's ``harness call``, MCP (the SDK's handler and the HTTP fast path), the web console,
the agent loop, ``execute_many``, the gateway, the Ray executor and code mode all end up
here; nothing else runs a tool. Read :func:`execute` top to bottom for the whole onion::

    entry        a ToolCall; a caller already cancelled starts nothing
    policy       a closed gate, then tools/pre-execute: allow / deny / ask
    approval     an ask goes to the approval object (harness.tools.approval_requests), raced
                 against the asker the surface passed (or a plugin's approval service)
    stage 2      tools/execute wraps the innermost step:
                   validation (the acceptor's quick yes, else bind), deadline, body,
                   output check, render (:func:`innermost`)
    stage 3      tools/post-execute may replace the result
    result       tools/result is emitted for every result; execute never raises

One fast branch (nobody listens, no gate closed, the tool exists, no journaled key) runs
:func:`innermost` at once; the general branch runs every stage that has listeners, and a
keyed call's stage 2 through the call journal (:mod:`.journaling`). :func:`innermost` is
synchronous as far as it can be: an async body's first step runs at once
(:func:`~harness.tools.deadline.start`), and a body that returns on it gives its result
back with nothing left to await.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from ..errors import ToolArgsError
from ..service import unwrap
from . import jsonvalue, traces
from .approval_contract import Approved, Denied, Pending, decide
from .approval_requests import Approvals
from .call_context import ApproverClient, CallContext, made_by_kernel
from .calls import DEFAULT_TEXT, Ask, Deny, ToolCall, ToolResult
from .cancel_check import caller_cancelled
from .deadline import Later, running_loop, start
from .definition import OutputMismatch, ToolDefinition, unchecked
from .inputs import InputRequired
from .journaling import Journal, journal_of
from .jsonvalue import BIG, NEG_BIG, is_json
from .pace import Paced
from .render import RenderError, render

if TYPE_CHECKING:
    from ..context import Context
    from ..events import EventBus
    from .config import ToolsConfig
    from .policy_gates import Gates


class Tools(Protocol):
    """What the kernel reads of the tools service (:mod:`.service`)."""

    ctx: Context
    config: ToolsConfig
    _bus: EventBus
    _layers: Mapping[str, Any]
    _gates: Gates
    _definitions: dict[str, ToolDefinition]
    approvals: Approvals
    journal: Journal | None

    async def _reloaded(self, name: str) -> ToolDefinition | None: ...


_log = logging.getLogger("harness.tools")
STAGES = frozenset(("tools/pre-execute", "tools/execute", "tools/post-execute", "tools/result"))
"""The events whose listeners take a call off the fast branch (no other listener does)."""
_isfinite = math.isfinite
_monotonic = time.monotonic
_get_running_loop = asyncio.get_running_loop


async def execute(
    tools: Tools, call: ToolCall | Mapping[str, Any], *, approval: Any = None
) -> ToolResult:
    """Run one call through the pipeline (``ToolsService.execute`` is this function). Never
    raises; failures are results.

    The call's :class:`~harness.tools.call_context.CallContext` (``call.context``, made by
    its surface) says who is calling and who answers; a call without one gets a Python
    surface's when a stage or the body needs it. ``approval`` (an object with
    ``request(call, reason)``) answers this call's ``ask`` decisions before the approval
    object's other answerers: it becomes the context's client.
    """
    # -- entry ----------------------------------------------------------------------------
    if type(call) is not ToolCall:
        try:
            call = ToolCall.of(call)
        except TypeError as exc:
            return ToolResult.failure(as_call(call), "invalid_args", str(exc))
    try:  # running_loop(), inline: this is every call's path
        loop: asyncio.AbstractEventLoop | None = _get_running_loop()
    except RuntimeError:  # trio
        loop = None
    ctx: CallContext | None = call.context
    if approval is not None:
        if ctx is None:
            ctx = CallContext(call, "python", ApproverClient(approval, call.client))
        else:
            ctx.client = ApproverClient(approval, ctx.client.id)
    if ctx is not None and ctx.tools is None:
        ctx.tools = tools
    layers, bus, gates = tools._layers, tools._bus, tools._gates
    if caller_cancelled(loop):  # no stage runs, nothing starts
        result = cancelled(call, "before it started")
        if "tools/result" in layers:
            bus.emit("tools/result", call, result)
        return result
    # traces: one execute_tool span from here to the tools/result event (only while a
    # tracer provider is installed; else this is one module attribute read)
    traced = traces.open_tool(call, tools.config.trace_content) if traces.ON else None
    denial: ToolResult | None = None
    try:
        tool = tools._definitions.get(call.name)
        # the call journal (harness.tools.journaling): keyed calls of tools not read_only
        journal = None if call.key is None else journal_of(tools.journal, tool)
        fast = (
            not gates.engaged
            and tool is not None
            and journal is None
            and (not layers or STAGES.isdisjoint(layers))  # MCP's listeners are elsewhere
        )
        # a context the kernel makes for the body alone is the call's while it runs, and
        # unlinked when it ends: no call-context cycle is left for the garbage collector
        own = fast and ctx is None and tool.takes_context  # type: ignore[union-attr]
        if fast:  # -- the fast branch: no stage has listeners, no gate is closed or held ----
            if own:
                made_by_kernel(call, tools)
            ran: ToolResult | Awaitable[ToolResult] = innermost(
                tool, call, tools.config.timeout, loop
            )
        else:  # -- the general branch: the stages that have listeners, and the gates ------
            # policy: a gate its policy left closed while unloaded (a reload of the call's
            # tool, or of a plugin that checks calls, is waited for), then tools/pre-execute
            if ctx is None:  # listeners read call.context
                ctx = made_by_kernel(call, tools)
            if gates.engaged:
                denial = await gates.admit(call, tools.config.reload_wait)
            if denial is None and "tools/pre-execute" in layers:
                decision = await bus.waterfall("tools/pre-execute", (call,), _allow)
                if decision != "allow":  # approval: deny, or ask the approval object
                    denial = await approve(tools, ctx, decision)
            if denial is not None:
                ran = denial
            elif journal is not None and tool is not None:  # stage 2, at most once per key
                ran = journal.run(call, tool, partial(_stage_2, tools, call))
            else:
                if "tools/execute" in layers:  # stage 2 wraps the innermost step
                    inner = partial(innermost_async, tools, call)
                    ran = bus.waterfall("tools/execute", (call,), inner)
                else:  # the registry of this moment: a reload may have run meanwhile
                    ran = innermost(await current(tools, call), call, tools.config.timeout, loop)
        result = ran if isinstance(ran, ToolResult) else _checked(await ran, "tools/execute")
        if own:
            call.context = None
        if not fast and denial is None and "tools/post-execute" in layers:  # stage 3
            after = bus.waterfall("tools/post-execute", (call, result), partial(_same, result))
            result = _checked(await after, "tools/post-execute")
    except anyio.get_cancelled_exc_class():
        result = cancelled(call)  # the caller's scope stays cancelled: its next checkpoint raises
    except BaseException as exc:  # SystemExit or KeyboardInterrupt from a listener too
        _log.error(
            "internal error while executing tool %r (call %s)", call.name, call.id, exc_info=exc
        )
        result = ToolResult.failure(
            call, "internal", f"Internal error while running tool {call.name}; see the host log"
        )
    if traced is not None:
        traces.close_tool(traced, result, tools.config.trace_content)
    # -- result -------------------------------------------------------------------------
    if "tools/result" in layers:
        bus.emit("tools/result", call, result)
    return result


def innermost(
    tool: ToolDefinition | None,
    call: ToolCall,
    default_timeout: float | None,
    loop: asyncio.AbstractEventLoop | None,
) -> ToolResult | Awaitable[ToolResult]:
    """Validation, the body under its deadline, the output check and render: a result, or an
    awaitable of it when the body suspends. ``loop`` is the running asyncio loop (None on
    trio). The caller's cancellation passes through (as an exception); all else is a result.
    """
    if tool is None:
        return ToolResult.failure(call, "unknown_tool", f"Tool {call.name} not found")
    # -- validation: the acceptor's quick yes, else JSON judged and the arguments bound ---
    args = call.args
    accepts = tool.accepts
    body: Callable[[], Any] | None = None
    """The bound body; None when the acceptor vouched for the arguments (``execute(args)``)."""
    if not (accepts is not None and type(args) is dict and tool.is_async and accepts(args)):
        try:
            if isinstance(args, str | bytes):
                try:
                    args = jsonvalue.loads(args)
                except jsonvalue.NotJson as exc:
                    raise ToolArgsError(f"arguments are not valid JSON ({exc})") from None
            elif not is_json(args):
                raise ToolArgsError(f"arguments are not valid JSON: {jsonvalue.problem(args)}")
            body = tool.bind(args, call.context) if tool.takes_context else tool.bind(args)
        except ToolArgsError as exc:
            return _invalid_args(call, exc)
    # -- deadline and body: a sync body in a worker thread, an async one's first step now --
    timeout = tool.timeout if tool.timeout is not None else default_timeout
    if body is not None and not tool.is_async:
        return _finish(call, tool, _threaded(body, timeout), timeout)
    paced: CallContext | None = None
    try:
        if tool.takes_context:  # its deadline follows progress and pauses for answers
            ctx = call.context
            if ctx.recorded:  # a body run again (a later input round) takes them anew
                ctx.restart()
            else:
                ctx.used = 0
            if timeout is not None or tool.idle is not None:  # its Pace is made when needed
                ctx.pace, ctx.limits, paced = None, (timeout, tool.idle, _monotonic()), ctx
            coro = tool.execute(args, ctx) if body is None else body()
        else:
            coro = tool.execute(args) if body is None else body()
        started = start(coro, timeout, loop, paced)
    except BaseException as exc:
        if _passes(exc):
            raise
        return _raised(call, exc)
    if type(started) is Later:
        return _finish(call, tool, started.rest, timeout, paced)
    return _outcome(call, tool, started)


async def innermost_async(tools: Tools, call: ToolCall) -> ToolResult:
    """:func:`innermost` with the registry of this moment, awaited: the innermost ``next`` of
    ``tools/execute``, and what an executor runs for a call its host decided on."""
    ran = innermost(await current(tools, call), call, tools.config.timeout, running_loop())
    return ran if isinstance(ran, ToolResult) else await ran


async def _stage_2(tools: Tools, call: ToolCall) -> ToolResult:
    """``tools/execute`` around the innermost step (a journaled call's step)."""
    if "tools/execute" in tools._layers:
        return _checked(
            await tools._bus.waterfall(
                "tools/execute", (call,), partial(innermost_async, tools, call)
            ),
            "tools/execute",
        )
    return await innermost_async(tools, call)


async def current(tools: Tools, call: ToolCall) -> ToolDefinition | None:
    """The call's tool in the registry of this moment; if its entry began to reload since
    the call was admitted, the new version once the transaction ends (bounded)."""
    tool = tools._definitions.get(call.name)
    if tool is None and tools._gates.holds:
        tool = await tools._reloaded(call.name)
    return tool


async def _finish(
    call: ToolCall,
    tool: ToolDefinition,
    pending: Awaitable[tuple[Any, bool]],
    seconds: float | None,
    paced: Paced | None = None,
) -> ToolResult:
    try:
        value, timed_out = await pending
    except BaseException as exc:
        if _passes(exc):
            raise
        return _raised(call, exc)
    if timed_out:
        pace = None if paced is None else paced.paced()
        if pace is not None and pace.idle_out():
            return ToolResult.failure(
                call, "timeout", f"Tool {call.name} {pace.describe()} and was stopped"
            )
        return timeout_result(call, seconds)
    return _outcome(call, tool, value)


def _outcome(call: ToolCall, tool: ToolDefinition, value: Any) -> ToolResult:
    """The output check and render of a body that returned ``value``. A body that makes its
    own result (a :class:`ToolResult`: code mode's program with its calls' cards, a mounted
    tool's upstream blocks) returns it, and that is the call's result as it is."""
    if type(value) is ToolResult:
        return value
    try:
        check = tool.check_output
        canonical = value if check is unchecked else check(value)
        if tool.render is None:  # the usual scalars are JSON as they are: their default
            kind = type(canonical)  # text is made when content is first read
            if (
                (kind is int and NEG_BIG < canonical < BIG)  # longer ints are not JSON
                or (kind is float and _isfinite(canonical))
                or (kind is str and canonical.isascii())
            ):
                return ToolResult(call.id, call.name, canonical, DEFAULT_TEXT)
        if not is_json(canonical):
            raise OutputMismatch(f"the result is not valid JSON: {jsonvalue.problem(canonical)}")
        content = render(tool.render, canonical)
        if tool.render is not None and not is_json(content):
            raise RenderError(
                f"render returned blocks that are not JSON: {jsonvalue.problem(content)}"
            )
    except (OutputMismatch, RenderError) as exc:
        _log.warning("tool %r returned invalid output: %s", call.name, exc)
        return ToolResult.failure(
            call, "invalid_output", f"Tool {call.name} returned invalid output: {exc}"
        )
    except Exception as exc:
        _log.info("rendering tool %r raised", call.name, exc_info=exc)
        return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
    except BaseException as exc:
        if _passes(exc):
            raise
        return contained(call, exc)
    return ToolResult(call.id, call.name, canonical, content)


# -- small parts -------------------------------------------------------------------------


async def _allow() -> str:
    return "allow"


async def _same(result: ToolResult) -> ToolResult:
    return result


def _checked(result: Any, stage: str) -> ToolResult:
    if not isinstance(result, ToolResult):
        raise TypeError(
            f"{stage} produced {type(result).__name__}, not a ToolResult; "
            "a listener must return the result of await next() or a ToolResult"
        )
    return result


async def approve(tools: Tools, ctx: CallContext, decision: Any) -> ToolResult | None:
    """A pre-execute decision other than allow: None to run the call, else the result that
    ends it (``denied``, or ``approval_pending`` when the answer comes in a later request)."""
    call = ctx.call
    if decision == "deny":
        decision = Deny()
    elif decision == "ask":
        decision = Ask()
    if isinstance(decision, Deny):
        return ToolResult.failure(call, "denied", f"Tool denied: {decision.reason}")
    if not isinstance(decision, Ask):
        raise TypeError(
            f"tools/pre-execute produced {decision!r}; listeners must return 'allow', "
            "'deny', 'ask', Deny(reason), Ask(reason) or the result of await next()"
        )
    answer = await ask(tools, ctx, decision.reason)
    if isinstance(answer, Approved):
        return None
    if isinstance(answer, Pending):
        message = f"Tool {call.name} is waiting for approval: {decision.reason}"
        result = ToolResult.failure(call, "approval_pending", message)
        result.pending = answer
        return result
    why = answer.reason or "approval was refused"
    return ToolResult.failure(call, "denied", f"Tool denied: {decision.reason} ({why})")


async def ask(tools: Tools, ctx: CallContext, reason: str) -> Approved | Denied | Pending:
    """Ask about ``ctx``'s call: the call's client when it can answer approvals, raced by
    the approval object (:mod:`.approval_requests`) against its other answerers; else a
    plugin's own ``approval`` service when one is loaded, else the approval object alone."""
    approver = ctx.client.approver(ctx)
    if approver is None:
        service = tools.ctx.get("approval")
        if service is not None and unwrap(service) is not tools.approvals:
            return await decide(service, ctx.call, reason)
    return await tools.approvals.decide(ctx.call, reason, approver)


def _passes(exc: BaseException) -> bool:
    """Whether ``exc`` ends the call as an exception: the caller's cancellation, or close()."""
    return isinstance(exc, (anyio.get_cancelled_exc_class(), GeneratorExit))


def _raised(call: ToolCall, exc: BaseException) -> ToolResult:
    """What the body raised, as a result."""
    if type(exc) is InputRequired:  # the caller answers in its next request
        return input_required(call, exc)
    if isinstance(exc, ToolArgsError):
        return _invalid_args(call, exc)
    if isinstance(exc, Exception):
        _log.info("tool %r raised", call.name, exc_info=exc)
        return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
    return contained(call, exc)  # SystemExit, KeyboardInterrupt...: the tool's, not ours


def _invalid_args(call: ToolCall, exc: ToolArgsError) -> ToolResult:
    return ToolResult.failure(
        call, "invalid_args", f"Invalid arguments for tool {call.name}: {exc}"
    )


async def _threaded(body: Callable[[], Any], seconds: float | None) -> tuple[Any, bool]:
    """Run a sync body in a worker thread.

    A sync body cannot be stopped: on timeout or cancellation the call stops waiting for
    its thread, whose late result is discarded.
    """
    if seconds is None:
        return await _in_thread(body), False
    with anyio.move_on_after(seconds) as scope:
        return await _in_thread(body), False
    return None, scope.cancelled_caught


async def _in_thread(body: Callable[[], Any]) -> Any:
    value = await anyio.to_thread.run_sync(body, abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


def contained(call: ToolCall, exc: BaseException) -> ToolResult:
    """A BaseException a tool raised (SystemExit, KeyboardInterrupt, ...) as a tool_error.

    Only the host's own signal handling stops the host; a tool cannot, by raising.
    """
    _log.warning("tool %r raised %s; contained", call.name, type(exc).__name__, exc_info=exc)
    detail = str(exc)
    return ToolResult.failure(
        call,
        "tool_error",
        f"Tool {call.name} raised {type(exc).__name__}" + (f": {detail}" if detail else ""),
    )


def timeout_result(call: ToolCall, seconds: float | None) -> ToolResult:
    """The ``timeout`` result of a call that ran out of its ``seconds`` (every surface's)."""
    return ToolResult.failure(
        call, "timeout", f"Tool {call.name} timed out after {seconds:g} seconds"
    )


def input_required(call: ToolCall, exc: InputRequired) -> ToolResult:
    """The end of an input round: ``approval_pending``, carrying the requests (key → wire)
    for the surface to send (an MCP 2026-07-28 ``InputRequiredResult``)."""
    message = f"Tool {call.name} is waiting for input from the caller"
    result = ToolResult.failure(call, "approval_pending", message)
    result.pending = Pending(message, exc.requests)
    return result


def cancelled(call: ToolCall, when: str = "") -> ToolResult:
    message = f"Tool {call.name} was cancelled" + (f" {when}" if when else "")
    return ToolResult.failure(call, "cancelled", message)


def as_call(call: Any) -> ToolCall:
    """A ToolCall for a malformed call's result (its id when it has one)."""
    try:
        return ToolCall.of(call)
    except TypeError:
        return ToolCall(str(getattr(call, "get", lambda _: None)("id") or "?"), "?")
