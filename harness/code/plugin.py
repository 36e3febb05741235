"""``harness:code``: the ``run_code`` tool, its worker pool, and the calls its programs make.

One Monty pool per entry, started with it and closed with it. ``run_code``'s description
carries the stubs of the tools a program may call, rebuilt when the registry changes. Each
call a program makes is a new :class:`~harness.tools.calls.ToolCall` whose ``parent`` is the
``run_code`` call's id, run by ``ctx.tools.execute``: policy, approval, validation and its
own timeout, like any other. The registry is read at each call, so a tool reloaded while a
program runs answers the program's next call in its new version. ``code/call (call)`` and
``code/result (call, result, duration_ms)`` are emitted around each inner call (the agent
records them in the session, so people see nested cards live). The program's ``timeout``
is its own clock (:mod:`.clock`), paused while one of its calls waits for an approval; the
tool's pipeline timeout is only a backstop beyond every approval it could wait for.
"""

from __future__ import annotations

import contextvars
import dataclasses
import fnmatch
import math
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..errors import ToolConflict
from ..tools.approval_requests import TIMEOUT as APPROVAL_TIMEOUT
from ..tools.calls import ToolCall, ToolResult
from ..tools.definition import ToolDefinition, define_tool
from ..tools.finding import SEARCH_TOOL, kept
from ..tools.kernel import timeout_result
from .checker import Checker
from .clock import Clock
from .config import CodeConfig, show_size
from .names import RESERVED
from .pool import Pool
from .program import Program, ProgramFailed
from .results import CallRecord, blocks, canonical, failure_blocks, plain
from .stubs import callable_name, positional, stubs

if TYPE_CHECKING:
    from ..context import Context
    from ..tools.config import ToolsConfig

name = "code"
inject = ["tools"]
Config = CodeConfig
RUN_CODE = "run_code"
PROGRAM_MEDIA_TYPE = "text/x-python"

DESCRIPTION = """\
Run a short Python program that calls the tools below as async functions, and get back \
only what it prints and the value of its last expression. Use it when a task needs several \
tool calls (loops, filtering, combining results, asyncio.gather for calls at once) instead \
of one call per step; for a single call, call the tool directly if you can. The sandbox \
runs a subset of Python: no files, network, environment or subprocesses; standard modules \
such as asyncio, json, re, math, datetime and collections import. Every call goes through \
the same policy and approvals as a direct call; a failed call raises an exception whose \
text begins with its code ("denied: Tool denied: ..."), which the program may catch with \
`except Exception as e` (`str(e)` is all it carries). Limits: {timeout:g} s for the whole \
program, {max_calls} tool calls, {memory} of memory, {max_output} characters of output \
and value together.

The tools, as Python stubs (top-level `await` works):
```python
{stubs}```"""

_current: contextvars.ContextVar[ToolCall | None] = contextvars.ContextVar(
    "harness_code_call", default=None
)


class CodeTool:
    """The ``run_code`` tool of one entry."""

    def __init__(self, ctx: Context, config: CodeConfig, pool: Pool) -> None:
        self.ctx = ctx
        self.config = config
        self.pool = pool
        self.checker = Checker(config, ctx.start_soon)
        self._stubs: str | None = None
        self._functions: list[str] = []
        """The tools that are functions in the stubs (the warm-up snippet names them)."""
        self._dispose: Callable[[], None] | None = None
        self._shown: dict[int, tuple[Any, str, list[CallRecord]]] = {}
        """Values being rendered → (value, program, calls): render gets the value only."""
        self._clocks: dict[tuple[str | None, str], list[tuple[ToolCall, Clock]]] = {}
        """(session, id) of running inner calls → each such call and its program's clock
        (ids can repeat across clients: the call object tells them apart)."""
        self._waits: dict[str, Clock] = {}
        """Open approval requests of inner calls (by request id) → the clocks they pause."""
        self._failed: dict[int, tuple[str, list[CallRecord], bool]] = {}
        """Failed run_code calls (by ``id``) → (program, calls, whether its clock ran out)."""

    # -- the registry ----------------------------------------------------------------------

    def allows(self, tool: str) -> bool:
        """Whether a program may call ``tool`` (by the entry's globs; never run_code)."""
        return tool != RUN_CODE and any(
            fnmatch.fnmatchcase(tool, pattern) for pattern in self.config.tools
        )

    def lookup(self, tool: str, known: frozenset[str] = frozenset()) -> list[str] | None:
        """The current definition's parameter order, or None when the program may not call it.

        A tool of the program's stubs (``known``) that has gone since is still a call (it
        ends ``unknown_tool``); any other undefined name is the program's NameError.
        """
        if not self.allows(tool):
            return None
        definition = self.ctx.tools.get(tool)
        if definition is None:
            return [] if tool in known else None
        return positional(definition)

    def reserved(self) -> dict[str, str]:
        """The names a program already has, among those the entry's globs allow: what a tool
        taking one causes (for the registry's clashes, listed by ``harness check``)."""
        return {
            name: f"in its programs {name!r} is {why}, so they reach the tool only as "
            f"call_tool({name!r}, {{...}}); rename the tool (for a mounted MCP server, set a "
            "prefix: on its entry)"
            for name, why in RESERVED.items()
            if self.allows(name)
        }

    def stubs(self) -> str:
        if self._stubs is None:
            tools = self.ctx.tools
            allowed = [d for d in map(tools.get, tools.list()) if d and self.allows(d.name)]
            allowed = deferred(allowed, tools.config)
            self._stubs = stubs(allowed)
            self._functions = [d.name for d in allowed if callable_name(d)]
        return self._stubs

    def register(self) -> None:
        """(Re)register run_code with stubs of the tools allowed now, and have a session
        checked against them made ready."""
        self._stubs = None
        old, self._dispose = self._dispose, None
        if old is not None:
            old()
        self._dispose = self.ctx.tools.register(self.definition())
        self.checker.prepare(self.stubs(), self._functions)

    def changed(self, kind: str, tool: str) -> None:
        if tool != RUN_CODE and self.allows(tool) and self._dispose is not None:
            self.register()

    def definition(self) -> ToolDefinition:
        config = self.config
        text = DESCRIPTION.format(
            timeout=config.timeout,
            max_calls=config.max_calls,
            memory=show_size(config.max_memory),
            max_output=config.max_output,
            stubs=self.stubs(),
        )
        definition = define_tool(
            name=RUN_CODE,
            description=text,
            parameters={
                "code": {
                    "type": "string",
                    "required": True,
                    "description": "The Python program; its last expression is the value",
                }
            },
            output={"render": self.render},
            execute=self.execute,
            timeout=self.backstop(),
            annotations={"read_only": False, "open_world": True},
        )
        # JSON Schema's annotation of what a string holds: forms show it as a multi-line
        # editor (the console's Tools page), validation is unchanged.
        schema = definition.parameters
        code_schema = {**schema["properties"]["code"], "contentMediaType": PROGRAM_MEDIA_TYPE}
        properties = {**schema["properties"], "code": code_schema}
        return dataclasses.replace(definition, parameters={**schema, "properties": properties})

    def backstop(self) -> float:
        """The pipeline's timeout for run_code: the program's, plus an approval wait per call
        (the program's own clock ends it first; this only bounds a clock that never could)."""
        approvals = getattr(self.ctx.tools, "approvals", None)
        wait = getattr(approvals, "timeout", APPROVAL_TIMEOUT)
        wait = wait if isinstance(wait, int | float) and math.isfinite(wait) else 86400.0
        return self.config.timeout + self.config.max_calls * wait

    # -- running ---------------------------------------------------------------------------

    async def around(self, call: ToolCall, next: Callable[[], Awaitable[ToolResult]]) -> Any:
        """``tools/execute``: remember which run_code call the body below runs for. A failed
        program's blocks still show it and its calls' cards; one whose clock ran out ends
        ``timeout``, as a tool past its pipeline timeout does."""
        if call.name != RUN_CODE:
            return await next()
        token = _current.set(call)
        try:
            result: ToolResult = await next()
        finally:
            _current.reset(token)
            failed = self._failed.pop(id(call), None)
        if failed is None or result.ok:
            return result
        code, records, timed_out = failed
        if timed_out:
            result = timeout_result(call, self.config.timeout)
        if not records:  # nothing to show but why
            return result
        content = failure_blocks(code, result.error or "", records)
        return ToolResult(call.id, call.name, None, content, result.error, result.code)

    def approval(self, kind: str, fields: dict[str, Any]) -> None:
        """``approval/request`` and ``approval/decided``: pause and restart programs' clocks."""
        request = fields.get("id")
        if not isinstance(request, str):
            return
        if kind != "approval/request":
            clock = self._waits.pop(request, None)
            if clock is not None:
                clock.resume()
            return
        approvals = getattr(self.ctx.tools, "approvals", None)
        call = approvals.call_of(request) if approvals is not None else None
        running = self._clocks.get((fields.get("session"), fields.get("call_id", "")), ())
        for inner, clock in running:
            if inner is call:
                self._waits[request] = clock
                clock.pause()

    async def execute(self, args: dict[str, Any]) -> dict[str, Any]:
        code = args["code"]
        parent = _current.get() or ToolCall(f"run_code-{id(args)}", RUN_CODE, args)
        records: list[CallRecord] = []

        async def inner(tool: str, arguments: dict[str, Any]) -> ToolResult:
            return await self._inner(parent, records, clock, tool, arguments)

        parallel = self.config.max_parallel or self.ctx.tools.config.max_parallel
        tools = self.ctx.tools
        known = frozenset(name for name in tools.list() if self.allows(name))
        clock = Clock(self.config.timeout)
        result: dict[str, Any] | None = None
        try:
            with clock.scope:
                await self.checker.check(self.stubs(), code)
                async with self.pool.session(self.stubs()) as session:
                    lookup = partial(self.lookup, known=known)
                    program = Program(session, self.config, inner, lookup, parallel, clock)
                    value = await program.run(code)
                    result = canonical(program.output, value, records)
            if result is None:  # the clock ran out: the scope was cancelled
                raise ProgramFailed(timeout_result(parent, self.config.timeout).error or "")
        except Exception:
            if _current.get() is parent:  # around() is there to show it
                self._failed[id(parent)] = (code, records, result is None and clock.ran_out)
            raise
        if len(self._shown) > 64:
            self._shown.pop(next(iter(self._shown)))
        self._shown[id(result)] = (result, code, records)
        return result

    async def _inner(
        self,
        parent: ToolCall,
        records: list[CallRecord],
        clock: Clock,
        tool: str,
        args: dict[str, Any],
    ) -> ToolResult:
        # the program's client, session and parent: its calls ask whoever it would ask
        call = ToolCall(
            f"{parent.id}/{len(records) + 1}",
            tool,
            args,
            parent=parent.id,
            session=parent.session,
            client=parent.client,
        )
        if parent.context is not None:
            parent.context.child(call)
        record = CallRecord(call)
        records.append(record)
        self.ctx.emit("code/call", call)
        began = time.perf_counter()
        key = (call.session, call.id)
        running = self._clocks.setdefault(key, [])
        running.append((call, clock))
        try:
            result: ToolResult = await self.ctx.tools.execute(call)
        finally:
            running.remove((call, clock))
            if not running:
                del self._clocks[key]
        if result.code == "approval_pending":
            # The approver answers in a later request (an MCP 2026-07-28 round trip): a
            # program cannot wait across requests, so the call is refused, saying why.
            result = ToolResult.failure(
                call,
                "denied",
                f"Tool denied: {tool} needs approval, and this client answers approvals only "
                "between requests, not in the middle of a program; call it directly",
            )
        record.result = result
        record.duration_ms = (time.perf_counter() - began) * 1000
        self.ctx.emit("code/result", call, result, record.duration_ms)
        return result

    def render(self, value: Any) -> list[dict[str, Any]]:
        shown = self._shown.pop(id(value), None)
        if shown is None or shown[0] is not value:
            return plain(value)
        return blocks(shown[1], value, shown[2])


async def apply(ctx: Context, config: CodeConfig) -> None:
    pool = Pool(config)
    await pool.start()
    ctx.effect(lambda: pool.close)
    tool = CodeTool(ctx, config, pool)
    ctx.effect(lambda: tool.checker.close)
    ctx.tools.reserve(tool.reserved())
    ctx.on("tools/execute", tool.around)
    ctx.on("tools/change", tool.changed)
    ctx.on("approval/request", partial(tool.approval, "approval/request"))
    ctx.on("approval/decided", partial(tool.approval, "approval/decided"))
    try:
        tool.register()
    except ToolConflict:
        holder = ctx.tools.owner(RUN_CODE) or "another plugin"
        raise ToolConflict(
            f"the tool name {RUN_CODE!r}, code mode's own, is taken by {holder}: rename that "
            f"tool (for a mounted MCP server, set a prefix: on its entry or add {RUN_CODE!r} "
            "to its exclude)"
        ) from None


def deferred(allowed: list[ToolDefinition], config: ToolsConfig) -> list[ToolDefinition]:
    """The tools whose stubs programs get: all of ``allowed``, or with deferral on (the
    tools service's ``search.defer``, ``search_tools`` among them) ``search_tools`` and the
    kept tools only; a program finds the others with ``search_tools`` and calls them with
    ``call_tool(name, {...})`` (docs/search.md)."""
    names, search = [d.name for d in allowed], config.search
    if SEARCH_TOOL not in names or not search.defers(len(names) - 1):
        return allowed
    shown = {SEARCH_TOOL, *kept(names, search)}
    return [d for d in allowed if d.name in shown]
