"""The ``tools`` service: the registry and the three-stage execution pipeline.

``execute(call)`` runs three waterfalls and then an event::

    tools/pre-execute   (call, next) -> decision      allow / deny / ask, Deny(r) / Ask(r)
    tools/execute       (call, next) -> ToolResult    wraps validation and the body
    tools/post-execute  (call, result, next) -> ToolResult
    tools/result        emit (call, result)           every result, denials included

It never raises: every failure is a :class:`ToolResult` with a ``code``.
"""

from __future__ import annotations

import builtins
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import pydantic

from ..errors import ToolArgsError, ToolConflict, ToolDefinitionError
from ..service import Service, caller_aware
from . import formats, jsonvalue
from .calls import Ask, Deny, ToolCall, ToolResult
from .define import OutputMismatch, ToolDefinition
from .function import tool as tool_from_function
from .render import RenderError, render

if TYPE_CHECKING:
    from ..context import Context
    from ..fiber import Fiber

_log = logging.getLogger("harness.tools")


class ToolsConfig(pydantic.BaseModel):
    """Config of the tools service (``name: harness:tools`` in cordis.yml)."""

    model_config = pydantic.ConfigDict(extra="forbid")

    timeout: float | None = pydantic.Field(60.0, gt=0)
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


async def _allow() -> str:
    return "allow"


async def _same(result: ToolResult) -> ToolResult:
    return result


class ToolsService(Service):
    """The tool registry and its execution pipeline, provided as ``ctx.tools``."""

    name = "tools"
    provides = ("tools",)
    Config = ToolsConfig

    def __init__(self, ctx: Context, config: ToolsConfig | None = None) -> None:
        super().__init__(ctx, "tools")
        self.config = config or ToolsConfig()
        self._tools: dict[str, _Entry] = {}
        self._runtime = ctx._runtime
        self._bus = ctx._runtime.bus

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
        entry = _Entry(definition, owner.describe(), owner)

        def setup() -> Callable[[], None]:
            self._tools[name] = entry
            self._bus.emit("tools/change", "added", name)
            return cleanup

        def cleanup() -> None:
            if self._tools.get(name) is entry:
                del self._tools[name]
                self._bus.emit("tools/change", "removed", name)

        dispose: Callable[[], None] = owner.effect(setup)
        return dispose

    def get(self, name: str) -> ToolDefinition | None:
        """The tool called ``name``, or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.definition

    def list(self) -> list[str]:
        """Tool names in registration order."""
        return list(self._tools)

    def owner(self, name: str) -> str | None:
        """Who registered ``name`` (``plugin 'x'``), or None."""
        entry = self._tools.get(name)
        return None if entry is None else entry.owner

    def tools_of(self, fiber: Fiber) -> builtins.list[str]:
        """The tools registered by ``fiber`` or the plugins below it."""
        names = []
        for name, entry in self._tools.items():
            owner = entry.context.fiber
            while owner is not None and owner is not fiber:
                owner = owner.parent.fiber
            if owner is fiber:
                names.append(name)
        return names

    def schemas(
        self, format: formats.Format = "openai", strict: bool | None = None
    ) -> builtins.list[dict[str, Any]]:
        """Every tool's schema in ``format`` (``openai``, ``anthropic`` or ``mcp``)."""
        definitions = [entry.definition for entry in self._tools.values()]
        if format == "openai":
            use_strict = self.config.strict if strict is None else strict
            return [formats.openai(item, use_strict) for item in definitions]
        if format == "anthropic":
            return [formats.anthropic(item) for item in definitions]
        if format == "mcp":
            return [formats.mcp(item) for item in definitions]
        raise ValueError(
            f"unknown schema format {format!r}; use one of {', '.join(formats.FORMATS)}"
        )

    # -- execution -----------------------------------------------------------------------

    async def execute(self, call: ToolCall | Mapping[str, Any]) -> ToolResult:
        """Run one call through the pipeline. Never raises; failures are results."""
        try:
            call = ToolCall.of(call)
        except TypeError as exc:
            bad = ToolCall(str(getattr(call, "get", lambda _: None)("id") or "?"), "?")
            return ToolResult.failure(bad, "invalid_args", str(exc))
        layers = self._bus.layers
        try:
            # Stages without listeners are skipped outright: the hot path pays only for
            # the stages somebody listens to.
            if "tools/pre-execute" in layers:
                decision = await self._bus.waterfall("tools/pre-execute", (call,), _allow)
                denial = None if decision == "allow" else await self._decide(call, decision)
            else:
                denial = None
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
            result = ToolResult.failure(call, "cancelled", f"Tool {call.name} was cancelled")
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
        """Run calls; concurrency-safe ones together (bounded), others alone, in call order.

        A call that is not concurrency-safe is a barrier: the calls before it finish first,
        and the calls after it start once it has finished.
        """
        items = list(calls)
        results: list[ToolResult | None] = [None] * len(items)
        limit = max_parallel or self.config.max_parallel
        if limit < 1:
            raise ValueError("max_parallel must be at least 1")
        limiter = anyio.CapacityLimiter(limit)
        batch: list[tuple[int, Any]] = []

        async def run_one(index: int, call: Any) -> None:
            async with limiter:
                results[index] = await self.execute(call)

        async def flush() -> None:
            if batch:
                async with anyio.create_task_group() as group:
                    for index, call in batch:
                        group.start_soon(run_one, index, call)
                batch.clear()

        for index, call in enumerate(items):
            if self._is_concurrency_safe(call):
                batch.append((index, call))
            else:
                await flush()
                results[index] = await self.execute(call)
        await flush()
        return [result for result in results if result is not None]

    # -- internals -----------------------------------------------------------------------

    async def _decide(self, call: ToolCall, decision: Any) -> ToolResult | None:
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
        approval = self._runtime.available("approval")
        if approval is None:
            return ToolResult.failure(
                call,
                "denied",
                f"Tool denied: {decision.reason} (approval needed, and no approval service "
                "is loaded)",
            )
        answer = await approval.request(call, decision.reason)
        if answer is True:
            return None
        why = answer if isinstance(answer, str) and answer else "approval was refused"
        return ToolResult.failure(call, "denied", f"Tool denied: {decision.reason} ({why})")

    async def _run(self, call: ToolCall) -> ToolResult:
        entry = self._tools.get(call.name)
        if entry is None:
            return ToolResult.failure(call, "unknown_tool", f"Tool {call.name} not found")
        tool = entry.definition
        args = call.args
        try:
            if isinstance(args, str | bytes):
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
            value, timed_out = await _invoke(tool, body, timeout)
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
        try:
            args = normal.args
            if isinstance(args, str | bytes):
                args = json.loads(args)
            return bool(safe(args))
        except Exception:
            _log.warning("concurrency_safe of %r raised; running the call alone", normal.name)
            return False


async def _invoke(
    tool: ToolDefinition, body: Callable[[], Any], seconds: float | None
) -> tuple[Any, bool]:
    """Run the body (a sync one in a worker thread); return ``(value, timed_out)``.

    No cancel scope is entered without a timeout: entering one costs more than the rest
    of a quick call. A sync body cannot be stopped: on timeout or cancellation the call
    stops waiting for its thread, whose late result is discarded.
    """
    if seconds is None:
        return await _body(tool, body), False
    with anyio.move_on_after(seconds) as scope:
        return await _body(tool, body), False
    return None, scope.cancelled_caught


async def _body(tool: ToolDefinition, body: Callable[[], Any]) -> Any:
    if tool.is_async:
        return await body()
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


def _check_result(result: Any, stage: str) -> None:
    if not isinstance(result, ToolResult):
        raise TypeError(
            f"{stage} produced {type(result).__name__}, not a ToolResult; "
            "a listener must return the result of await next() or a ToolResult"
        )
