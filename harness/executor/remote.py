"""The executor side: a harness Host in an async Ray actor, running shipped calls' bodies.

The actor loads the host's own ``cordis.yml`` (the same patches and ``--set`` overrides, the
same plugin files), so every tool exists there with the same code and config. A shipped
call runs with an empty pipeline (:meth:`ToolsService.run`: validation, the body under the
tool's timeout, the output check, rendering): the host already ran its policy and asked its
approvals. A ``harness:ray-executor`` entry in that config ships nothing there. Calls a body
makes itself (``ctx.tools.execute`` inside a tool) run the executor's full pipeline, whose
``ask`` decisions are denied at once: approvals are asked only in the host.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import Any

from ..tools import traces
from ..tools.calls import Ask, Deny, ToolCall

_log = logging.getLogger("harness.executor")

_inside = False


def inside_executor() -> bool:
    """True in an executor's process: the ray-executor plugin ships nothing from there."""
    return _inside


async def _refuse_asks(call: Any, next: Any) -> Any:
    decision = await next()
    if decision == "ask" or isinstance(decision, Ask):
        reason = decision.reason if isinstance(decision, Ask) else "this call needs approval"
        return Deny(f"{reason}; approvals are asked only in the host, never on an executor")
    return decision


class Executor:
    """A harness Host loaded from ``config`` (with ``patches`` and ``overrides``)."""

    def __init__(self, config: str, patches: list[str], overrides: list[str]) -> None:
        global _inside
        _inside = True
        self._spec = (config, list(patches), list(overrides))
        self._loaded: asyncio.Future[Any] | None = None
        self._serving: asyncio.Task[None] | None = None

    async def ready(self) -> dict[str, Any]:
        """Load the host (once); return this process's id, its tools and its problems."""
        host = await self._host()
        problems = [f"{problem}" for problem in host.problems()]
        return {"pid": os.getpid(), "tools": host.ctx.tools.list(), "problems": problems}

    async def run(
        self, call_id: str, name: str, args: Any, trace: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Run one call's body with an empty pipeline; its ``ToolResult.to_dict()``.

        ``trace`` is the host's trace context (W3C headers): the body runs in it, under an
        ``execute_tool`` span of its own when this process traces too.
        """
        host = await self._host()
        call = ToolCall(call_id, name, args)
        token = traces.resume(trace)
        try:
            if not traces.ON:
                result = await host.tools.run(call)
            else:
                content = host.tools.config.trace_content
                opened = traces.open_tool(call, content)
                result = None
                try:
                    result = await host.tools.run(call)
                finally:
                    traces.close_tool(opened, result, content)
        finally:
            traces.leave(token)
        data: dict[str, Any] = result.to_dict()
        return data

    async def _host(self) -> Any:
        if self._loaded is None:
            self._loaded = asyncio.get_running_loop().create_future()
            # The host lives in a task of its own: a call that is cancelled while the host
            # loads does not take the host down with it.
            self._serving = asyncio.get_running_loop().create_task(self._serve(self._loaded))
        return await asyncio.shield(self._loaded)

    async def _serve(self, loaded: asyncio.Future[Any]) -> None:
        from ..host import Host  # the host stands above the tools; this module above both

        config, patches, overrides = self._spec
        try:
            async with Host(config, patches=patches, overrides=overrides) as host:
                host.ctx.on("tools/pre-execute", _refuse_asks, prepend=True)
                _log.info("executor %d serving %s", os.getpid(), config)
                loaded.set_result(host)
                await asyncio.Event().wait()  # until the actor's process ends
        except BaseException as exc:
            if not loaded.done():
                loaded.set_exception(RuntimeError(f"the executor could not load {config}: {exc}"))
                self._loaded = None  # the next call tries again
            if not isinstance(exc, Exception):
                raise
