"""The ``tools`` service: the registry (:mod:`.registry`) and the three-stage pipeline.

``execute(call)`` runs three waterfalls and then an event::

    tools/pre-execute   (call, next) -> decision      allow / deny / ask, Deny(r) / Ask(r)
    tools/execute       (call, next) -> ToolResult    wraps validation and the body
    tools/post-execute  (call, result, next) -> ToolResult
    tools/result        emit (call, result)           every result, denials included

An ``ask`` goes to the approval service (:mod:`harness.tools.approval`): approved, the call
runs; denied, it ends ``denied``; pending (the answer comes in a later request), it ends
``approval_pending`` without entering stages 2 and 3, and a later ``execute`` resumes it.
The innermost stage is :mod:`.run`; ``execute_many``'s scheduling is :mod:`.many`.

It never raises: every failure is a :class:`ToolResult` with a ``code``.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ..service import Service
from . import traces
from .approval import ApprovalService, Approved, Pending
from .approval import decide as decide_approval
from .approval import inherited as inherited_approval
from .calls import Ask, Deny, ToolCall, ToolResult
from .config import ToolsConfig
from .deadline import running_loop
from .many import dispatch
from .registry import ToolRegistry
from .run import run
from .scopes import caller_cancelled

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ToolsConfig", "ToolsService"]

_log = logging.getLogger("harness.tools")


async def _allow() -> str:
    return "allow"


async def _same(result: ToolResult) -> ToolResult:
    return result


class ToolsService(ToolRegistry, Service):
    """The tool registry and its execution pipeline, provided as ``ctx.tools``."""

    name = "tools"
    provides = ("tools",)
    inject: ClassVar[dict[str, Any]] = {"approval": {"required": False}}  # read per ask
    Config = ToolsConfig

    def __init__(self, ctx: Context, config: ToolsConfig | None = None) -> None:
        ToolRegistry.__init__(self, ctx)
        Service.__init__(self, ctx, "tools")
        self.config = config or ToolsConfig()
        self._layers = self._bus.layers  # a live view: read on every call, without the lookup

    # -- execution -----------------------------------------------------------------------

    async def execute(
        self, call: ToolCall | Mapping[str, Any], *, approval: ApprovalService | None = None
    ) -> ToolResult:
        """Run one call through the pipeline. Never raises; failures are results.

        ``approval`` answers this call's ``ask`` decisions instead of the ``approval``
        service (a surface passes the one that can reach the person behind the call).
        """
        if type(call) is not ToolCall:
            try:
                call = ToolCall.of(call)
            except TypeError as exc:
                return ToolResult.failure(_as_call(call), "invalid_args", str(exc))
        try:  # running_loop(), inline: this is every call's path
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:  # trio
            loop = None
        if caller_cancelled(loop):
            # Called from a scope that is already cancelled: no stage runs, nothing starts.
            result = _cancelled(call, "before it started")
            if "tools/result" in self._bus.layers:
                self._bus.emit("tools/result", call, result)
            return result
        layers = self._layers
        traced = traces.open_tool(call, self.config.trace_content) if traces.ON else None
        try:
            if not layers and not self._gates.engaged:
                # Nobody listens to any stage, no gate is closed, no reload holds: the hot path.
                ran = run(self._definitions.get(call.name), call, self.config.timeout, loop)
                result = ran if isinstance(ran, ToolResult) else await ran
            else:
                result = await self._staged(call, approval, loop)
        except anyio.get_cancelled_exc_class():
            # The caller's scope stays cancelled: its next checkpoint raises again.
            result = _cancelled(call)
        except BaseException as exc:  # SystemExit or KeyboardInterrupt from a listener too
            _log.error(
                "internal error while executing tool %r (call %s)", call.name, call.id, exc_info=exc
            )
            result = ToolResult.failure(
                call, "internal", f"Internal error while running tool {call.name}; see the host log"
            )
        if traced is not None:
            traces.close_tool(traced, result, self.config.trace_content)
        if "tools/result" in layers:
            self._bus.emit("tools/result", call, result)
        return result

    async def execute_many(
        self, calls: Iterable[ToolCall | Mapping[str, Any]], max_parallel: int | None = None
    ) -> builtins.list[ToolResult]:
        """Run calls in call order; concurrency-safe ones together, others alone.

        Calls are dispatched in order. A run of concurrency-safe calls shares a rolling pool
        of at most ``max_parallel`` (default: the tools service's ``max_parallel``): a call
        starts when a slot frees up. A call that is not concurrency-safe waits for the running
        ones, runs alone, and then the pool resumes. Each call is classified when its turn to
        start comes (a slot is free), against the registry then, with validated arguments (a
        call whose arguments are invalid, or whose tool is unknown, runs alone). Results come
        back in call order, one per call; if the caller is cancelled, started calls end
        ``cancelled`` and the calls not started yet are ``cancelled`` without running.
        """
        limit = self.config.max_parallel if max_parallel is None else max_parallel
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(
                f"max_parallel must be a whole number of at least 1 (None for the tools "
                f"service's default, {self.config.max_parallel}), got {max_parallel!r}"
            )
        items = list(calls)
        results: builtins.list[ToolResult | None] = [None] * len(items)
        try:
            await dispatch(items, results, limit, self.execute, self._tools)
        except anyio.get_cancelled_exc_class():
            pass  # the caller's scope stays cancelled: its next checkpoint raises again
        return [
            result if result is not None else _cancelled(_as_call(call), "before it started")
            for call, result in zip(items, results, strict=True)
        ]

    async def run(self, call: ToolCall) -> ToolResult:
        """Validation, the body under its timeout, the output check and rendering: what the
        innermost ``next`` of ``tools/execute`` does, with no pipeline stage, gate or
        ``tools/result`` event.

        For an executor running a call its host already decided on (:mod:`harness.executor`).
        Never raises but the caller's cancellation.
        """
        try:
            return await self._run(call)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            _log.error(
                "internal error while running tool %r (call %s)", call.name, call.id, exc_info=exc
            )
            return ToolResult.failure(
                call, "internal", f"Internal error while running tool {call.name}; see the host log"
            )

    async def _decide(
        self, call: ToolCall, decision: Any, approval: ApprovalService | None
    ) -> ToolResult | None:
        """None to run the call, else the result that ends it (denied or approval pending)."""
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
        if approval is None:
            approval = inherited_approval.get()
        service = approval if approval is not None else self._approval()
        if service is None:
            return ToolResult.failure(
                call,
                "denied",
                f"Tool denied: {decision.reason} (approval needed, and no approval service "
                "is loaded)",
            )
        answer = await decide_approval(service, call, decision.reason)
        if isinstance(answer, Approved):
            return None
        if isinstance(answer, Pending):
            message = f"Tool {call.name} is waiting for approval: {decision.reason}"
            result = ToolResult.failure(call, "approval_pending", message)
            result.pending = answer
            return result
        why = answer.reason or "approval was refused"
        return ToolResult.failure(call, "denied", f"Tool denied: {decision.reason} ({why})")

    def _approval(self) -> Any:
        return self.ctx.get("approval")

    async def _staged(
        self,
        call: ToolCall,
        approval: ApprovalService | None,
        loop: asyncio.AbstractEventLoop | None,
    ) -> ToolResult:
        """The three stages, each skipped outright when nobody listens to it, and the gates
        (a reload of the call's tool, or of a plugin that checks calls, is waited for)."""
        layers = self._layers
        gates = self._gates
        denial = await gates.admit(call, self.config.reload_wait) if gates.engaged else None
        if denial is None and "tools/pre-execute" in layers:
            decision = await self._bus.waterfall("tools/pre-execute", (call,), _allow)
            denial = None if decision == "allow" else await self._decide(call, decision, approval)
        if denial is not None:
            return denial
        if approval is not None:  # calls made inside this one ask the same approver
            token = inherited_approval.set(approval)
            try:
                return await self._stages(call, loop)
            finally:
                inherited_approval.reset(token)
        return await self._stages(call, loop)

    async def _stages(self, call: ToolCall, loop: asyncio.AbstractEventLoop | None) -> ToolResult:
        """Stages 2 and 3 of a call its pre-execute stage let through."""
        layers = self._layers
        result: ToolResult
        if "tools/execute" in layers:
            result = await self._bus.waterfall("tools/execute", (call,), partial(self._run, call))
            _check_result(result, "tools/execute")
        else:
            tool = self._definitions.get(call.name)
            if tool is None and self._gates.holds:  # its entry began to reload since admission
                tool = await self._reloaded(call.name)
            ran = run(tool, call, self.config.timeout, loop)
            result = ran if isinstance(ran, ToolResult) else await ran
        if "tools/post-execute" in layers:
            result = await self._bus.waterfall(
                "tools/post-execute", (call, result), partial(_same, result)
            )
            _check_result(result, "tools/post-execute")
        return result

    async def _run(self, call: ToolCall) -> ToolResult:
        """The innermost ``next`` of ``tools/execute``: validation and the body."""
        tool = self._definitions.get(call.name)
        if tool is None and self._gates.holds:  # its entry is reloading: wait for it
            tool = await self._reloaded(call.name)
        ran = run(tool, call, self.config.timeout, running_loop())
        return ran if isinstance(ran, ToolResult) else await ran


def _cancelled(call: ToolCall, when: str = "") -> ToolResult:
    message = f"Tool {call.name} was cancelled" + (f" {when}" if when else "")
    return ToolResult.failure(call, "cancelled", message)


def _as_call(call: Any) -> ToolCall:
    try:
        return ToolCall.of(call)
    except TypeError:
        return ToolCall(str(getattr(call, "get", lambda _: None)("id") or "?"), "?")


def _check_result(result: Any, stage: str) -> None:
    if not isinstance(result, ToolResult):
        raise TypeError(
            f"{stage} produced {type(result).__name__}, not a ToolResult; "
            "a listener must return the result of await next() or a ToolResult"
        )
