"""Upstream tools as registry tools of their entry, kept in step with the server's list."""

from __future__ import annotations

import contextvars
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
import mcp_types as types
import pydantic
from mcp.shared.exceptions import MCPError

from ..context import Context
from ..errors import ContextDisposed, ToolConflict
from ..tools.approval import Approved, decide
from ..tools.calls import ToolCall
from ..tools.define import OutputMismatch, ToolAnnotations, ToolDefinition
from ..tools.render import default_text
from .config import GatewayConfig
from .names import mount_name, selected
from .results import UpstreamToolError, convert
from .schema import (
    UnusableSchema,
    bound_description,
    compile_checker,
    input_schema,
    output_schema,
)
from .upstream import Connection, TooLarge, Unavailable

_rendered: contextvars.ContextVar[tuple[Any, list[dict[str, Any]]] | None] = contextvars.ContextVar(
    "harness_gateway_rendered", default=None
)
_ids = itertools.count(1)


@dataclass(frozen=True, slots=True)
class _Reply:
    """What a mounted tool's body returns: the canonical value and the upstream's blocks."""

    value: Any
    blocks: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class _Invalid:
    """A body result the output check turns into ``invalid_output``."""

    message: str


@dataclass(eq=False)
class _InFlight:
    tool: str
    args: dict[str, Any]
    questions: Any = None
    number: int = field(default_factory=lambda: next(_ids))


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
        self._inflight: set[_InFlight] = set()

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
        self._report()

    def _skip(self, upstream: str, why: str) -> None:
        self.skipped[upstream] = why
        self.ctx.logger.warning(
            "%s: not mounting tool %r: %s", self.connection.label, upstream, why
        )

    def _report(self) -> None:
        fiber = self.ctx.fiber
        if fiber is None or self.ctx.is_disposed:
            return
        problems = [
            f"tool {upstream!r} is not mounted: {why}" for upstream, why in self.skipped.items()
        ]
        problems.extend(self.notes[name] for name in self.mounted if name in self.notes)
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

        def bind(args: Any) -> Callable[[], Any]:
            check(args)
            return partial(execute, args)

        return ToolDefinition(
            name=name,
            description=description,
            parameters=parameters,
            execute=execute,
            output_schema=returns,
            render=_render,
            timeout=self.config.timeout,
            concurrency_safe=bool(marks.read_only),
            annotations=marks,
            bind=bind,
            check_output=_check_output,
            is_async=True,
        )

    # -- calls -----------------------------------------------------------------------------

    async def call(self, name: str, upstream: str, args: dict[str, Any]) -> _Reply | _Invalid:
        """Forward one validated call upstream (the local pipeline has run already)."""
        if self.config.elicitation == "approval" and self.ctx.get("approval") is not None:
            record = _InFlight(name, args)
            self._inflight.add(record)
            failure: Exception | None = None
            send, receive = anyio.create_memory_object_stream[Any](4)
            record.questions = send
            try:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._answer_questions, record, receive)
                    try:
                        reply = await self._forward(upstream, args)
                    except Exception as exc:  # raised below, outside the group
                        failure = exc
                    finally:
                        group.cancel_scope.cancel()
            finally:
                self._inflight.discard(record)
                _close_questions(send, receive)
            if failure is not None:
                raise failure
            return reply
        return await self._forward(upstream, args)

    async def _forward(self, upstream: str, args: dict[str, Any]) -> _Reply | _Invalid:
        try:
            result = await self.connection.call(upstream, args)
        except (Unavailable, TooLarge) as exc:
            raise UpstreamToolError(str(exc)) from None
        except MCPError as exc:
            raise UpstreamToolError(f"the server answered with an error: {exc}") from None
        except pydantic.ValidationError:
            raise UpstreamToolError(
                "the server's answer is not a valid tools/call result"
            ) from None
        except RuntimeError as exc:  # the SDK's output-schema check of structuredContent
            return _Invalid(str(exc))
        value, blocks = convert(result, self.config.max_result_bytes)
        return _Reply(value, blocks)

    # -- elicitation -----------------------------------------------------------------------

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        """An upstream elicitation: ask the approval service from the call's own task."""
        if len(self._inflight) == 1:
            (record,) = self._inflight
            reply_send, reply_receive = anyio.create_memory_object_stream[types.ElicitResult](1)
            try:
                await record.questions.send((params, reply_send))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                reply_send.close()
                reply_receive.close()
                return types.ElicitResult(action="decline")
            with reply_receive:
                try:
                    return await reply_receive.receive()
                except anyio.EndOfStream:
                    return types.ElicitResult(action="decline")
        return await self._ask(None, params)

    async def _answer_questions(self, record: _InFlight, receive: Any) -> None:
        async with receive:
            async for params, reply in receive:
                async with reply:
                    await reply.send(await self._ask(record, params))

    async def _ask(
        self, record: _InFlight | None, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        decline = types.ElicitResult(action="decline")
        approval = self.ctx.get("approval")
        if approval is None or not isinstance(params, types.ElicitRequestFormParams):
            return decline  # URL elicitation would need a browser: declined
        schema = params.requested_schema
        schema_dict = (
            schema
            if isinstance(schema, dict)
            else schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        content = consent_content(schema_dict)
        if content is None:
            return decline
        name = record.tool if record else self.connection.label
        number = record.number if record else next(_ids)
        call = ToolCall(
            f"elicitation-{number}",
            name,
            {
                "message": params.message,
                "requested": schema_dict,
                "call": record.args if record else None,
            },
        )
        reason = f"{self.connection.label} asks: {params.message}"
        answer = await decide(approval, call, reason)
        if isinstance(answer, Approved):
            return types.ElicitResult(action="accept", content=content)
        return decline


def _close_questions(send: Any, receive: Any) -> None:
    send.close()
    while True:  # questions nobody answered: their askers get a decline (end of stream)
        try:
            _, reply = receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
        reply.close()
    receive.close()


def consent_content(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to a form when a person approves: defaults, and ``true`` for yes/no fields.

    None when the form asks for something only a person could type (a required field that
    has no default and is not a boolean): harness then declines.
    """
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    content: dict[str, Any] = {}
    for key, node in properties.items():
        node = node if isinstance(node, dict) else {}
        if "default" in node:
            content[key] = node["default"]
        elif node.get("type") == "boolean":
            content[key] = True
        elif key in required:
            return None
    return content


def _check_output(value: Any) -> Any:
    if isinstance(value, _Invalid):
        raise OutputMismatch(value.message)
    if isinstance(value, _Reply):
        _rendered.set((value.value, value.blocks))
        return value.value
    return value


def _render(value: Any) -> list[dict[str, Any]]:
    stash = _rendered.get()
    if stash is not None and stash[0] is value:
        _rendered.set(None)
        return stash[1]
    return [{"type": "text", "text": default_text(value)}]


def _fingerprint(tool: types.Tool) -> str:
    return tool.model_dump_json(by_alias=True, exclude_none=True)
