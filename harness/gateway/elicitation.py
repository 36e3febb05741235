"""An upstream's elicitations (``elicitation/create``), asked of the approval service.

A server may ask a question while a mounted tool's call runs. A call run through
:meth:`Elicitations.during` (``elicitation: approval``, with an approval service) has the
question shown as a call of that tool, its own arguments beside the form, and asked from the
call's own task, so an approval service sees it as that call's question; a question while no
such call or several run is asked on its own. A person's approval answers the form with
:func:`consent_content`; anything else declines.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import mcp_types as types

from ..context import Context
from ..tools.approval import Approved, decide
from ..tools.calls import ToolCall

T = TypeVar("T")
_ids = itertools.count(1)


@dataclass(eq=False)
class _InFlight:
    tool: str
    args: dict[str, Any]
    questions: Any = None
    number: int = field(default_factory=lambda: next(_ids))


class Elicitations:
    """The questions of one entry's server, routed to the approval service."""

    def __init__(self, ctx: Context, label: str) -> None:
        self.ctx = ctx
        self.label = label
        self._inflight: set[_InFlight] = set()

    async def during(
        self, name: str, args: dict[str, Any], forward: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``forward`` (the call of tool ``name`` with ``args``) and answer the questions
        the server asks meanwhile from this task."""
        record = _InFlight(name, args)
        self._inflight.add(record)
        failure: Exception | None = None
        send, receive = anyio.create_memory_object_stream[Any](4)
        record.questions = send
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(self._answer_questions, record, receive)
                try:
                    reply = await forward()
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
        name = record.tool if record else self.label
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
        reason = f"{self.label} asks: {params.message}"
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
