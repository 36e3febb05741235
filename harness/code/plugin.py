"""``harness:code``: the ``run_code`` tool, its worker pool, and the calls its programs make.

One Monty pool per entry, started with it and closed with it. ``run_code``'s description
carries the stubs of the tools a program may call, rebuilt when the registry changes. Its
body takes the call's context; each call a program makes is a new
:class:`~harness.tools.calls.ToolCall` whose context is the child of the program's
(``ctx.child``: its ``parent``, the same session and client, so its questions reach whoever
runs the program and nobody else), run by ``ctx.tools.execute``: policy, approval,
validation and its own timeout, like any other. The registry is read at each call, so a
tool reloaded while a program runs answers the program's next call in its new version.
``code/call (call)`` and ``code/result (call, result, duration_ms)`` are emitted around each
inner call (the agent records them in the session, so people see nested cards live). The
program's ``timeout`` is its own clock (:mod:`.clock`), paused while one of its calls waits
for an answer; the tool's pipeline timeout is only a backstop beyond every approval it could
wait for. The body makes its own result: the program and its calls' cards, also when the
program failed.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import logging
import math
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio

from ..errors import ToolArgsError, ToolConflict
from ..service import unwrap
from ..store.programs import Adopted, DurablePrograms
from ..tools.approval_requests import TIMEOUT as APPROVAL_TIMEOUT
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall, ToolResult
from ..tools.definition import ToolDefinition, define_tool
from ..tools.finding import SEARCH_TOOL, kept
from ..tools.kernel import timeout_result
from .checker import Checker
from .clock import Clock, ProgramClient
from .config import CodeConfig, show_size
from .names import RESERVED
from .parking import Lot, load_record
from .pool import Pool
from .program import Program, ProgramFailed
from .results import CallRecord, blocks, canonical, failure_blocks, plain
from .stubs import callable_name, positional, stubs

if TYPE_CHECKING:
    from ..context import Context
    from ..tools.config import ToolsConfig

_log = logging.getLogger("harness.code")
name = "code"
inject = {"tools": {}, "store": {"required": False}}
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


class CodeTool:
    """The ``run_code`` tool of one entry."""

    def __init__(self, ctx: Context, config: CodeConfig, pool: Pool) -> None:
        self.ctx = ctx
        self.config = config
        self.pool = pool
        self.checker = Checker(config, ctx.start_soon)
        self.lot = Lot(config, self.programs, lambda: ctx.is_stopping)
        self._stubs: str | None = None
        self._functions: list[str] = []
        """The tools that are functions in the stubs (the warm-up snippet names them)."""
        self._dispose: Callable[[], None] | None = None

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
            output={"render": plain},  # the body makes its own blocks (see execute)
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

    async def execute(self, args: dict[str, Any], ctx: CallContext) -> ToolResult:
        """Run the program: its result, with the program and its calls' cards as blocks (a
        failed program's too; one whose clock ran out ends ``timeout``, as a tool past its
        pipeline timeout does)."""
        return await self._run(ctx, args["code"])

    async def _run(self, ctx: CallContext, code: str, adopted: Adopted | None = None) -> ToolResult:
        """Run the program of ``ctx``'s call, from its start, or (``adopted``) on from the
        snapshot a dead process kept in the store."""
        restored = None if adopted is None else adopted.state
        records: list[CallRecord] = []
        if restored is not None:
            records = [load_record(fields) for fields in restored["records"]]
        clock = Clock(self.config.timeout, 0.0 if restored is None else restored["spent"])
        client = ProgramClient(ctx.client, clock)

        async def inner(tool: str, arguments: dict[str, Any], call_id: int) -> ToolResult:
            return await self._inner(ctx, client, records, tool, arguments, call_id)

        parallel = self.config.max_parallel or self.ctx.tools.config.max_parallel
        tools = self.ctx.tools
        known = frozenset(name for name in tools.list() if self.allows(name))
        result: dict[str, Any] | None = None
        spot = self.lot.spot(ctx.call, code, records)
        try:
            with clock.scope:
                if adopted is None:
                    await self.checker.check(self.stubs(), code)
                parked = None if adopted is None else adopted.snapshot
                async with self.pool.session(self.stubs(), parked) as session:
                    lookup = partial(self.lookup, known=known)
                    program = Program(session, self.config, inner, lookup, parallel, clock, spot)
                    if restored is None:
                        value = await program.run(code)
                    else:
                        value = await program.resume(restored["program"], restored["wait"])
                    result = canonical(program.output, value, records)
            if result is None:  # the clock ran out: the scope was cancelled
                raise ProgramFailed(timeout_result(ctx.call, self.config.timeout).error or "")
        except Exception as exc:
            return self._failed(ctx.call, code, records, exc, result is None and clock.ran_out)
        return ToolResult(ctx.call.id, RUN_CODE, result, blocks(code, result, records))

    def programs(self) -> DurablePrograms | None:
        """The store's paused programs, while ``harness:store`` is loaded."""
        store = self.ctx.get("store")
        programs = getattr(unwrap(store), "programs", None) if store is not None else None
        return programs if isinstance(programs, DurablePrograms) else None

    def resume(self, adopted: Adopted) -> None:
        """Finish a program a dead process left paused (the store adopted it for us)."""
        self.ctx.start_soon(self._resumed, adopted)

    async def _resumed(self, adopted: Adopted) -> None:
        state, programs = adopted.state, self.programs()
        call = ToolCall(
            state["id"],
            RUN_CODE,
            {"code": state["code"]},
            session=state["session"],
            client=state["client"],
            key=adopted.key,
        )
        ctx = CallContext(call, tools=self.ctx.tools)
        _log.info("resuming paused program %r (key %r) from its snapshot", call.id, call.key)
        result: ToolResult | None = None
        try:
            result = await self._run(ctx, state["code"], adopted)
        except Exception as exc:  # its own failures are results; this is a bug
            _log.exception("paused program %r could not resume", call.id)
            result = ToolResult.failure(call, "internal", f"the program could not resume: {exc}")
        finally:
            if programs is not None:
                with anyio.CancelScope(shield=True):
                    if result is not None or not self.ctx.is_stopping:
                        await programs.drop(adopted.key)
                    # else cut off by the host's stop: kept, for the next process to resume
                    await programs.journal.record(call, adopted.key, result)
        _log.info("paused program %r ended %s", call.id, result.code or "ok")

    def _failed(
        self, call: ToolCall, code: str, records: list[CallRecord], exc: Exception, timed_out: bool
    ) -> ToolResult:
        """A failed program's result: why, after the program and the cards of its calls."""
        if timed_out:
            failed = timeout_result(call, self.config.timeout)
        elif not records:  # nothing to show but why: the kernel says it
            raise exc
        elif isinstance(exc, ToolArgsError):
            message = f"Invalid arguments for tool {call.name}: {exc}"
            failed = ToolResult.failure(call, "invalid_args", message)
        else:
            failed = ToolResult.failure(call, "tool_error", str(exc) or type(exc).__name__)
        if not records:
            return failed
        content = failure_blocks(code, failed.error or "", records)
        return ToolResult(call.id, call.name, None, content, failed.error, failed.code)

    async def _inner(
        self,
        program: CallContext,
        client: ProgramClient,
        records: list[CallRecord],
        tool: str,
        args: dict[str, Any],
        call_id: int,
    ) -> ToolResult:
        # the program's client, session and parent: its calls ask whoever it would ask; a
        # keyed program's calls are keyed too (journaled: after a restart, the program's
        # calls that were running are answered from the journal, not run again)
        key = None if program.call.key is None else f"{program.call.key}/{call_id}"
        call = ToolCall(f"{program.call.id}/{len(records) + 1}", tool, args, key=key)
        program.child(call).client = client
        record = CallRecord(call)
        records.append(record)
        self.ctx.emit("code/call", call)
        began = time.perf_counter()
        result: ToolResult = await self.ctx.tools.execute(call)
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


async def apply(ctx: Context, config: CodeConfig) -> None:
    pool = Pool(config)
    await pool.start()
    ctx.effect(lambda: pool.close)
    tool = CodeTool(ctx, config, pool)
    ctx.effect(lambda: tool.checker.close)
    ctx.tools.reserve(tool.reserved())
    ctx.on("tools/change", tool.changed)
    programs = tool.programs()
    if programs is not None:  # resume the programs dead processes left paused
        programs.resume = tool.resume
        ctx.start_soon(programs.adopt)

        def lend_back() -> None:
            if programs.resume == tool.resume:
                programs.resume = None

        ctx.effect(lambda: lend_back)
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
