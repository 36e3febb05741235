"""The ``tools`` service: the registry and the three-stage execution pipeline.

``execute(call)`` runs three waterfalls and then an event::

    tools/pre-execute   (call, next) -> decision      allow / deny / ask, Deny(r) / Ask(r)
    tools/execute       (call, next) -> ToolResult    wraps validation and the body
    tools/post-execute  (call, result, next) -> ToolResult
    tools/result        emit (call, result)           every result, denials included

An ``ask`` goes to the approval service (:mod:`harness.tools.approval`): approved, the call
runs; denied, it ends ``denied``; pending (the answer comes in a later request), it ends
``approval_pending`` without entering stages 2 and 3, and a later ``execute`` resumes it.

It never raises: every failure is a :class:`ToolResult` with a ``code``.
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import json
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
import anyio.abc
import pydantic

from ..errors import ToolArgsError, ToolConflict, ToolDefinitionError
from ..service import Service, caller_aware
from . import formats, jsonvalue
from .approval import ApprovalService, Approved, Pending
from .approval import decide as decide_approval
from .calls import Ask, Deny, ToolCall, ToolResult
from .deadline import caller_cancelled, start
from .define import OutputMismatch, ToolDefinition
from .function import tool as tool_from_function
from .gates import Gates
from .render import RenderError, render

if TYPE_CHECKING:
    from ..context import Context
    from ..fiber import Fiber

_log = logging.getLogger("harness.tools")


class ToolsConfig(pydantic.BaseModel):
    """Config of the tools service (``name: harness:tools`` in cordis.yml)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    timeout: float | None = pydantic.Field(60.0, gt=0, allow_inf_nan=False)
    """Default seconds a call may run; null for no limit."""
    max_parallel: int = pydantic.Field(10, ge=1)
    """Default bound on concurrent calls in ``execute_many``."""
    strict: bool = False
    """Default strictness of ``schemas("openai")``."""


@dataclass(frozen=True, slots=True)
class _Entry:
    definition: ToolDefinition
    owner: str
    context: Context
    seq: int
    """Registration sequence number: the order within one plugin."""


async def _allow() -> str:
    return "allow"


async def _same(result: ToolResult) -> ToolResult:
    return result


class ToolsService(Service):
    """The tool registry and its execution pipeline, provided as ``ctx.tools``."""

    name = "tools"
    provides = ("tools",)
    inject: ClassVar[dict[str, Any]] = {"approval": {"required": False}}  # read per ask
    Config = ToolsConfig

    def __init__(self, ctx: Context, config: ToolsConfig | None = None) -> None:
        super().__init__(ctx, "tools")
        self.config = config or ToolsConfig()
        self._tools: dict[str, _Entry] = {}
        self._gates = Gates()
        self._bus = ctx.bus
        self._layers = self._bus.layers  # a live view: read on every call, without the lookup
        self._seq = itertools.count()
        self._positions: Mapping[str, int] = {}
        self._order: builtins.list[str] | None = None
        """Tool names in list order; None until computed after a change."""
        self._snapshots: dict[tuple[str, bool], builtins.list[dict[str, Any]]] = {}
        """Frozen schemas per (format, strict), built once per registry change."""

    # -- registry ------------------------------------------------------------------------

    @caller_aware
    def register(
        self, definition: ToolDefinition | Callable[..., Any], *, caller: Context | None = None
    ) -> Callable[[], None]:
        """Register a tool as an effect of the calling plugin; return its dispose callable.

        A plain function is turned into a tool with ``@tool`` first. A name another plugin
        holds raises :class:`~harness.errors.ToolConflict`.
        """
        owner = caller or self.ctx
        if not isinstance(definition, ToolDefinition):
            if not callable(definition):
                raise ToolDefinitionError(
                    f"{owner.describe()} registered {definition!r}: expected a ToolDefinition "
                    "(define_tool or @tool) or a function"
                )
            definition = tool_from_function(definition)
        name = definition.name
        held = self._tools.get(name)
        if held is not None:
            raise ToolConflict(
                f"tool {name!r} is already registered by {held.owner}; {owner.describe()} "
                "cannot register it too (rename one of them or unload the holder)"
            )
        entry = _Entry(definition, owner.describe(), owner, next(self._seq))

        def setup() -> Callable[[], None]:
            self._tools[name] = entry
            self._changed()
            self._bus.emit("tools/change", "added", name)
            return cleanup

        def cleanup() -> None:
            if self._tools.get(name) is entry:
                del self._tools[name]
                self._changed()
                self._bus.emit("tools/change", "removed", name)

        dispose: Callable[[], None] = owner.effect(setup)
        return dispose

    def get(self, name: str) -> ToolDefinition | None:
        """The tool called ``name``, or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.definition

    def list(self) -> list[str]:
        """Tool names in order: by the position of the plugin that registered them (see
        :meth:`order_by`), then in registration order."""
        return list(self._ordered())

    def order_by(self, positions: Mapping[str, int]) -> None:
        """Order tools by the position of their top-level plugin (a plugin loaded on the root
        context, by name), then by registration order; unplaced plugins' tools come last.

        The host passes each ``cordis.yml`` entry's position, so a tool keeps its place when
        its plugin is disabled and enabled again or reloaded (model prompt caches stay warm).
        """
        if dict(positions) != self._positions:
            self._positions = dict(positions)
            self._changed()

    def owner(self, name: str) -> str | None:
        """Who registered ``name`` (``plugin 'x'``), or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.owner

    def tools_of(self, fiber: Fiber) -> builtins.list[str]:
        """The tools registered by ``fiber`` or the plugins below it."""
        names = []
        for name in self._ordered():
            owner = self._tools[name].context.fiber
            while owner is not None and owner is not fiber:
                owner = owner.parent.fiber
            if owner is fiber:
                names.append(name)
        return names

    def schemas(
        self, format: formats.Format = "openai", strict: bool | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every tool's schema in ``format`` (``openai``, ``anthropic`` or ``mcp``), in
        :meth:`list` order.

        The schemas are read-only snapshots, built once per registry change and shared by
        callers: changing one raises ``TypeError`` (``copy.deepcopy`` gives a plain copy). The
        list itself is the caller's own.
        """
        use_strict = (self.config.strict if strict is None else strict) and format == "openai"
        key = (format, bool(use_strict))
        cached = self._snapshots.get(key)
        if cached is None:
            if format == "openai":
                build: Callable[[ToolDefinition], dict[str, Any]] = partial(
                    formats.openai, strict=bool(use_strict)
                )
            elif format == "anthropic":
                build = formats.anthropic
            elif format == "mcp":
                build = formats.mcp
            else:
                raise ValueError(
                    f"unknown schema format {format!r}; use one of {', '.join(formats.FORMATS)}"
                )
            cached = [
                formats.freeze(build(self._tools[name].definition)) for name in self._ordered()
            ]
            self._snapshots[key] = cached
        return list(cached)

    # -- fail-closed gates ---------------------------------------------------------------

    @caller_aware
    def gate(
        self,
        key: str,
        gated: Callable[[str], str | None],
        *,
        caller: Context | None = None,
    ) -> Callable[[], None]:
        """Keep refusing the tools ``gated`` names while the calling plugin is not loaded.

        ``gated(tool_name)`` returns why the tool is gated (a policy's rule, say), or None.
        While the caller is active the gate does nothing (its listeners decide). When it
        unloads — during its own hot reload, a config change, a failed apply — the gate stays
        behind, closed: every call to a gated tool is denied until a plugin sets the gate of
        the same ``key`` again. Policies fail closed this way; the gate lives as long as
        this service.
        """
        owner = caller or self.ctx
        holder = owner.describe()
        dispose: Callable[[], None] = owner.effect(lambda: self._gates.open(key, gated, holder))
        return dispose

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
        if caller_cancelled():
            # Called from a scope that is already cancelled: no stage runs, nothing starts.
            result = _cancelled(call, "before it started")
            if "tools/result" in self._bus.layers:
                self._bus.emit("tools/result", call, result)
            return result
        layers = self._layers
        try:
            # Stages without listeners are skipped outright: the hot path pays only for
            # the stages somebody listens to.
            denial = self._gates.held(call) if self._gates.closed else None
            if denial is None and "tools/pre-execute" in layers:
                decision = await self._bus.waterfall("tools/pre-execute", (call,), _allow)
                denial = (
                    None if decision == "allow" else await self._decide(call, decision, approval)
                )
            if denial is not None:
                result = denial
            else:
                if "tools/execute" in layers:
                    result = await self._bus.waterfall(
                        "tools/execute", (call,), partial(self._run, call)
                    )
                    _check_result(result, "tools/execute")
                else:
                    result = await self._run(call)
                if "tools/post-execute" in layers:
                    result = await self._bus.waterfall(
                        "tools/post-execute", (call, result), partial(_same, result)
                    )
                    _check_result(result, "tools/post-execute")
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
        start comes, with validated arguments (a call whose arguments are invalid fails
        without running and is not classified). Results come back in call order, one per
        call; if the caller is cancelled, started calls end ``cancelled`` and the calls not
        started yet are ``cancelled`` without running.
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
            await self._dispatch(items, results, limit)
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

    # -- internals -----------------------------------------------------------------------

    def _changed(self) -> None:
        self._order = None
        self._snapshots.clear()

    def _ordered(self) -> builtins.list[str]:
        if self._order is None:
            last = len(self._positions)

            def rank(entry: _Entry) -> tuple[int, int]:
                fiber, top = entry.context.fiber, None
                while fiber is not None:
                    top, fiber = fiber, fiber.parent.fiber
                place = last if top is None else self._positions.get(top.name, last)
                return place, entry.seq

            self._order = sorted(self._tools, key=lambda name: rank(self._tools[name]))
        return self._order

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

    async def _run(self, call: ToolCall) -> ToolResult:
        entry = self._tools.get(call.name)
        if entry is None:
            return ToolResult.failure(call, "unknown_tool", f"Tool {call.name} not found")
        tool = entry.definition
        args = call.args
        try:
            if type(args) is not dict and isinstance(args, str | bytes):
                try:
                    args = jsonvalue.loads(args)
                except jsonvalue.NotJson as exc:
                    raise ToolArgsError(f"arguments are not valid JSON ({exc})") from None
            else:
                bad = jsonvalue.problem(args)
                if bad is not None:
                    raise ToolArgsError(f"arguments are not valid JSON: {bad}")
            body = tool.bind(args)
        except ToolArgsError as exc:
            return ToolResult.failure(
                call, "invalid_args", f"Invalid arguments for tool {call.name}: {exc}"
            )
        timeout = tool.timeout if tool.timeout is not None else self.config.timeout
        try:
            started = _start(tool, body, timeout)
            value, timed_out = started if isinstance(started, tuple) else await started
            if timed_out:
                return ToolResult.failure(
                    call, "timeout", f"Tool {call.name} timed out after {timeout:g} seconds"
                )
        except ToolArgsError as exc:
            return ToolResult.failure(
                call, "invalid_args", f"Invalid arguments for tool {call.name}: {exc}"
            )
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            _log.info("tool %r raised", call.name, exc_info=exc)
            return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
        except BaseException as exc:  # SystemExit, KeyboardInterrupt...: the tool's, not ours
            return _contained(call, exc)
        try:
            canonical = tool.check_output(value)
            bad = jsonvalue.problem(canonical)
            if bad is not None:
                raise OutputMismatch(f"the result is not valid JSON: {bad}")
            content = render(tool.render, canonical)
        except (OutputMismatch, RenderError) as exc:
            _log.warning("tool %r returned invalid output: %s", call.name, exc)
            return ToolResult.failure(
                call, "invalid_output", f"Tool {call.name} returned invalid output: {exc}"
            )
        except Exception as exc:
            _log.info("rendering tool %r raised", call.name, exc_info=exc)
            return ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            return _contained(call, exc)
        return ToolResult(call.id, call.name, canonical, content)

    async def _dispatch(
        self, items: builtins.list[Any], results: builtins.list[ToolResult | None], limit: int
    ) -> None:
        slots = anyio.Semaphore(limit)

        async def pooled(index: int, *, task_status: anyio.abc.TaskStatus[None]) -> None:
            try:
                task_status.started()  # the dispatch loop goes on once this call has begun
                results[index] = await self.execute(items[index])
            finally:
                slots.release()

        index, count = 0, len(items)
        safe = count > 0 and self._is_concurrency_safe(items[0])
        while index < count:
            if not safe:
                results[index] = await self.execute(items[index])
                index += 1
                safe = index < count and self._is_concurrency_safe(items[index])
                continue
            async with anyio.create_task_group() as pool:
                # The slot is taken here, in the dispatch loop, so calls start in call order
                # on every backend; the pool closes (its calls finish) before an exclusive call.
                while safe:
                    if anyio.current_effective_deadline() == -math.inf:
                        return
                    await slots.acquire()
                    await pool.start(pooled, index)
                    index += 1
                    safe = index < count and self._is_concurrency_safe(items[index])

    def _is_concurrency_safe(self, call: Any) -> bool:
        try:
            normal = ToolCall.of(call)
        except TypeError:
            return True  # fails at once without running anything
        entry = self._tools.get(normal.name)
        if entry is None:
            return True
        safe = entry.definition.concurrency_safe
        if isinstance(safe, bool):
            return safe
        args = normal.args
        try:
            if isinstance(args, str | bytes):
                args = json.loads(args)
            entry.definition.bind(args)
        except (ToolArgsError, ValueError):
            return True  # invalid arguments: the call fails without running, so it is harmless
        try:
            return bool(safe(args))
        except Exception:
            _log.warning("concurrency_safe of %r raised; running the call alone", normal.name)
            return False


def _start(
    tool: ToolDefinition, body: Callable[[], Any], seconds: float | None
) -> tuple[Any, bool] | Awaitable[tuple[Any, bool]]:
    """Start the body; return ``(value, timed_out)``, or an awaitable of it.

    An async body's first step runs here, at once (:mod:`.deadline`): a body that returns
    on it is done, with no cancel scope or timer armed and no further coroutine to await.
    """
    if tool.is_async:
        return start(body(), seconds)
    return _threaded(body, seconds)


async def _threaded(body: Callable[[], Any], seconds: float | None) -> tuple[Any, bool]:
    """Run a sync body in a worker thread.

    A sync body cannot be stopped: on timeout or cancellation the call stops waiting for
    its thread, whose late result is discarded.
    """
    if seconds is None:
        return await _body(body), False
    with anyio.move_on_after(seconds) as scope:
        return await _body(body), False
    return None, scope.cancelled_caught


async def _body(body: Callable[[], Any]) -> Any:
    value = await anyio.to_thread.run_sync(body, abandon_on_cancel=True)
    if inspect.isawaitable(value):
        value = await value
    return value


def _contained(call: ToolCall, exc: BaseException) -> ToolResult:
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
