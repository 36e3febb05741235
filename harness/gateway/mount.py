"""Upstream tools as registry tools of their entry, kept in step with the server's list.

A mounted tool's body forwards its call upstream (:meth:`Mount.call`); its answer comes back
through :mod:`.results`; the server's progress, logs and requests meanwhile go to the call's
context through :mod:`.callers`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError
from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY

from ..context import Context
from ..errors import ContextDisposed, ToolConflict
from ..tools.call_context import CallContext
from ..tools.calls import ToolResult
from ..tools.definition import ToolAnnotations, ToolDefinition
from .callers import Callers, Progress
from .config import GatewayConfig
from .failures import TooLarge, Unavailable
from .names import mount_name, selected
from .results import Invalid, Reply, UpstreamToolError, check_output, convert, result_of
from .rounds import through
from .schema import (
    NullOmitter,
    UnusableSchema,
    bound_description,
    compile_checker,
    input_schema,
    json_size,
    output_schema,
    upstream_icons,
)
from .tasks import CreatedTask, follow, runs_as_task, support
from .upstream import Connection


class Mount:
    """The registry tools of one entry: one per selected upstream tool."""

    def __init__(
        self, ctx: Context, connection: Connection, config: GatewayConfig, prefix: str
    ) -> None:
        self.ctx = ctx
        self.connection = connection
        self.config = config
        self.prefix = prefix
        self.mounted: dict[str, tuple[str, Callable[[], None]]] = {}
        self.skipped: dict[str, str] = {}
        """Upstream tools not mounted, with why (bad schema, name collision, ...)."""
        self.notes: dict[str, str] = {}
        """Mounted tools (registry name) changed on the way in (a description cut), with why."""
        self.callers = Callers(connection.label, config.elicitation)
        self.also: list[str] = []
        """Other problems of the entry (its resources and prompts)."""
        self.tasks: dict[str, str] = {}
        """Upstream tool → ``optional`` or ``required``: the server runs it as a task."""

    # -- the registry ----------------------------------------------------------------------

    def sync(self, tools: list[types.Tool]) -> None:
        """Make the registry hold exactly the selected upstream tools, as listed now.

        Every tool not mounted, or mounted changed, is a problem of this entry (listed by
        ``harness check``); the entry stays active with its other tools.
        """
        wanted: dict[str, types.Tool] = {}
        self.skipped = {}
        for tool in tools:
            if not selected(tool.name, self.config.include, self.config.exclude):
                continue
            name = mount_name(self.prefix, tool.name)
            if name in wanted:
                self._skip(tool.name, f"its name {name!r} is taken by {wanted[name].name!r}")
                continue
            wanted[name] = tool
        for name, (print_, dispose) in list(self.mounted.items()):
            current = wanted.get(name)
            if current is None or _fingerprint(current) != print_:
                del self.mounted[name]
                self.notes.pop(name, None)
                dispose()
        for name, tool in wanted.items():
            if name in self.mounted:
                continue
            try:
                definition = self.define(name, tool)
            except UnusableSchema as exc:
                self._skip(tool.name, str(exc))
                continue
            try:
                dispose = self.ctx.tools.register(definition)
            except ToolConflict:
                holder = self.ctx.tools.owner(name) or "another entry"
                self._skip(
                    tool.name,
                    f"its name {name!r} is already registered by {holder}; give this entry a "
                    f"prefix, or add {tool.name!r} to its exclude",
                )
                continue
            except ContextDisposed:
                return
            self.mounted[name] = (_fingerprint(tool), dispose)
        self.report()

    def _skip(self, upstream: str, why: str) -> None:
        self.skipped[upstream] = why
        self.ctx.logger.warning(
            "%s: not mounting tool %r: %s", self.connection.label, upstream, why
        )

    def report(self) -> None:
        """The entry's problems: what was not mounted, or changed on the way in."""
        fiber = self.ctx.fiber
        if fiber is None or self.ctx.is_disposed:
            return
        problems = [
            f"tool {upstream!r} is not mounted: {why}" for upstream, why in self.skipped.items()
        ]
        problems.extend(self.notes[name] for name in self.mounted if name in self.notes)
        problems.extend(self.also)
        fiber.problems = [f"{self.connection.label}: {problem}" for problem in problems]

    def define(self, name: str, tool: types.Tool) -> ToolDefinition:
        """The registry tool for upstream ``tool``; raise UnusableSchema when it cannot be."""
        limit = self.config.max_schema_bytes
        parameters = input_schema(tool.input_schema, limit)
        returns = output_schema(tool.output_schema, limit)
        check = compile_checker(parameters)
        hints = tool.annotations
        marks = (
            ToolAnnotations(
                read_only=hints.read_only_hint,
                destructive=hints.destructive_hint,
                idempotent=hints.idempotent_hint,
                open_world=hints.open_world_hint,
                title=hints.title,
            )
            if hints is not None
            else ToolAnnotations()
        )
        description = (tool.description or tool.title or "").strip() or (
            f"Run {tool.name!r} on {self.connection.label}."
        )
        description, note = bound_description(
            tool.name, description, self.config.max_description_bytes
        )
        if note is not None:
            self.notes[name] = note
            self.ctx.logger.warning("%s: %s", self.connection.label, note)
        execute = partial(self.call, name, tool.name)
        task = support(self.connection.client, tool)
        if task is None:
            self.tasks.pop(tool.name, None)
        else:
            self.tasks[tool.name] = task

        omit_nulls = NullOmitter(parameters)

        def bind(args: Any, ctx: CallContext | None = None) -> Callable[[], Any]:
            args = omit_nulls(args)
            check(args)
            return partial(execute, args, ctx)

        return ToolDefinition(
            name=name,
            description=description,
            parameters=parameters,
            execute=execute,
            output_schema=returns,
            timeout=self.config.timeout,
            concurrency_safe=bool(marks.read_only),
            annotations=marks,
            bind=bind,
            check_output=check_output,
            is_async=True,
            takes_context=True,  # the server's questions go to the caller's person
            icons=upstream_icons(tool, self.config.max_schema_bytes),
            title=tool.title,
            meta=self._meta(name, tool),
            task=task,
        )

    def _meta(self, name: str, tool: types.Tool) -> dict[str, Any] | None:
        """The upstream tool's ``_meta`` as it is, unless larger than ``max_schema_bytes``
        (then left out, a problem of the entry)."""
        if not tool.meta:
            return None
        limit = self.config.max_schema_bytes
        if json_size(tool.meta) > limit:
            note = (
                f"tool {tool.name!r}: its _meta is larger than max_schema_bytes ({limit}); left out"
            )
            self.notes[name] = "; ".join(filter(None, [self.notes.get(name), note]))
            self.ctx.logger.warning("%s: %s", self.connection.label, note)
            return None
        return dict(tool.meta)

    # -- calls -----------------------------------------------------------------------------

    async def call(
        self, name: str, upstream: str, args: dict[str, Any], call: CallContext | None = None
    ) -> ToolResult | Reply | Invalid:
        """Forward one validated call upstream (the local pipeline has run already); the
        server's progress, logs and requests meanwhile go to ``call``'s caller, and so do
        its input rounds (:mod:`.rounds`). The call's result, with the upstream's blocks as
        they were (without a context: the value)."""
        if call is None:
            return await self._forward(upstream, args)
        reply = await self.callers.during(call, partial(self._forward, upstream, args, call=call))
        return result_of(call.call, reply)

    async def _forward(
        self,
        upstream: str,
        args: dict[str, Any],
        progress: Progress | None = None,
        call: CallContext | None = None,
    ) -> Reply | Invalid:
        declared, level = _declared(call), _level(call)
        support = self.tasks.get(upstream)
        # A task upstream for a call that is a task here, or for a tool only run as one.
        as_task = support == "required" or (support is not None and runs_as_task(call))

        async def send(
            responses: dict[str, Any] | None, state: str | None
        ) -> types.CallToolResult | types.InputRequiredResult:
            answer = await self.connection.call(
                upstream,
                args,
                progress,
                responses=responses,
                state=state,
                declared=declared,
                level=level,
                task=as_task,
            )
            if isinstance(answer, CreatedTask):
                client = self.connection.client
                if client is None:
                    raise Unavailable(f"{self.connection.label} closed the connection")
                return await follow(client, answer, call, upstream)
            return answer

        try:
            result = await through(call, upstream, send)
        except (Unavailable, TooLarge) as exc:
            raise UpstreamToolError(str(exc)) from None
        except MCPError as exc:
            if exc.code == MISSING_REQUIRED_CLIENT_CAPABILITY and call is not None:
                _missing(call, exc)
            raise UpstreamToolError(f"the server answered with an error: {exc}") from None
        except pydantic.ValidationError:
            raise UpstreamToolError(
                "the server's answer is not a valid tools/call result"
            ) from None
        except RuntimeError as exc:  # the SDK's output-schema check of structuredContent
            return Invalid(str(exc))
        value, blocks = convert(result, self.config.max_result_bytes)
        return Reply(value, blocks)


def _declared(call: CallContext | None) -> frozenset[str] | None:
    """The input capabilities an MCP caller declared (None: not an MCP caller, whose
    surface answers for itself)."""
    capabilities = getattr(call.client, "capabilities", None) if call is not None else None
    if call is None or call.surface != "mcp":
        return None
    if capabilities is None:
        return frozenset()
    return frozenset(
        name
        for name in ("elicitation", "sampling", "roots")
        if getattr(capabilities, name, None) is not None
    )


def _level(call: CallContext | None) -> str | None:
    """The least severe upstream log the caller takes: an MCP client's level (None: it asked
    for none), ``info`` for any other caller (its logs are events), None without a caller."""
    if call is None:
        return None
    if call.surface != "mcp":
        return "info"
    minimum = getattr(call.client, "minimum", None)
    level = minimum() if callable(minimum) else None
    return level if isinstance(level, str) else None


def _missing(call: CallContext, exc: MCPError) -> None:
    """The upstream's -32021: the capabilities it needs become the caller's missing ones, so
    an MCP caller gets the same error (the surface reads them from its client)."""
    missing = getattr(call.client, "missing", None)
    needed = (
        exc.error.data.get("requiredCapabilities") if isinstance(exc.error.data, dict) else None
    )
    if isinstance(missing, dict) and isinstance(needed, dict):
        missing.update({str(name): value for name, value in needed.items()})


def _fingerprint(tool: types.Tool) -> str:
    return tool.model_dump_json(by_alias=True, exclude_none=True)
