"""The ``tools`` service: the registry (:mod:`.registry`) and the calls it runs.

``execute(call)`` is the call kernel (:func:`harness.tools.kernel.execute`: read it for the
whole pipeline), ``execute_many`` schedules several calls (:mod:`.execute_many`) through it, and
``run(call)`` is the kernel's innermost step alone, for an executor running a call its host
already decided on. None of them raises: every failure is a :class:`ToolResult` with a
``code``.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import anyio

from ..search import Hit
from ..service import Service
from . import kernel
from .approval_requests import Approvals
from .calls import ToolCall, ToolResult
from .config import ToolsConfig
from .execute_many import dispatch
from .finding import SEARCH_TOOL
from .journaling import Journal
from .registry import ToolRegistry

if TYPE_CHECKING:
    from ..context import Context

__all__ = ["ToolsConfig", "ToolsService"]

_log = logging.getLogger("harness.tools")


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
        self.approvals = Approvals(self._emit_approval)
        """The approval object: every ask of every surface is a request here."""
        self.journal: Journal | None = None
        """The call journal while ``harness:store`` is loaded (:mod:`.journaling`)."""
        self._search_tool: Callable[[], None] | None = None
        self._offered = 0

    async def start(self) -> None:
        self.ctx.on("tools/change", self._sync_search_tool)
        self._sync_search_tool()

    def is_searching(self) -> bool:
        """Whether ``search_tools`` is offered: ``search.defer: true``, ``search.mcp: true``,
        or ``defer: auto`` with more tools registered than ``search.threshold``."""
        search = self.config.search
        if self._offered or search.mcp or search.defer is True:
            return True
        others = len(self._tools) - (SEARCH_TOOL in self._tools)
        return search.defer == "auto" and others > search.threshold

    def offer_search(self) -> Callable[[], None]:
        """Offer ``search_tools`` whatever the config says, until the returned undo (an MCP
        surface serving with ``--mcp-tools search`` does)."""
        self._offered += 1
        self._sync_search_tool()

        def undo() -> None:
            self._offered -= 1
            self._sync_search_tool()

        return undo

    def _sync_search_tool(self, *args: Any) -> None:
        if self.ctx.is_disposed:
            return
        wanted = self.is_searching()
        if wanted and self._search_tool is None and SEARCH_TOOL not in self._tools:
            self._search_tool = self.register(self.finder.search_tool())
        elif not wanted and self._search_tool is not None:
            dispose, self._search_tool = self._search_tool, None
            dispose()

    async def search(
        self, query: str, limit: int = 10, *, tools: Sequence[str] | None = None
    ) -> builtins.list[Hit]:
        """The tools that best match ``query``, best first, at most ``limit`` (1 to 50).

        Only tools the caller may use are found: never one the policy denies (or, while
        the policy is not loaded, one it gated), nor one outside the globs ``tools`` (an
        agent's ``tools``). The index follows the registry: a tool registered, reloaded or
        removed is found or gone at the next search (:mod:`.finding`).
        """
        return await self.finder.search_async(query, limit, tools)

    def _emit_approval(self, kind: str, fields: dict[str, Any]) -> None:
        if not self.ctx.is_disposed:
            self.ctx.emit(kind, fields)

    execute = kernel.execute
    """One call through the pipeline; never raises (:func:`harness.tools.kernel.execute`)."""

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
            result
            if result is not None
            else kernel.cancelled(kernel.as_call(call), "before it started")
            for call, result in zip(items, results, strict=True)
        ]

    async def run(self, call: ToolCall) -> ToolResult:
        """Validation, the body under its timeout, the output check and rendering: the
        kernel's innermost step, with no pipeline stage, gate or ``tools/result`` event.

        For an executor running a call its host already decided on (:mod:`harness.executor`).
        Never raises but the caller's cancellation.
        """
        try:
            return await kernel.innermost_async(self, call)
        except anyio.get_cancelled_exc_class():
            raise
        except BaseException as exc:
            _log.error(
                "internal error while running tool %r (call %s)", call.name, call.id, exc_info=exc
            )
            return ToolResult.failure(
                call, "internal", f"Internal error while running tool {call.name}; see the host log"
            )
