"""An upstream's elicitations (``elicitation/create``), asked of the calling surface's person.

A server may ask a question while a mounted tool's call runs. A call run through
:meth:`Elicitations.during` has the question put to the person behind that call
(its context's ``ask``): an MCP client's user through elicitation, with the server's form
passed on as written, or a person at the console or in the agent session,
who sees it as a question of that call with its arguments beside it. A remembered approval,
``--yes`` or an ``approval`` service never answers it (they answer the policy's ``ask``).

The SDK's callback does not say which call a question belongs to, so it is put to the
caller only while exactly one call of the entry runs; a question while none or several run
cannot be tied to a person and is declined, as is a URL-mode request and anything nobody
answers.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types

from ..context import Context
from ..tools.call_context import CallContext

__all__ = ["Elicitations"]

T = TypeVar("T")
_log = logging.getLogger("harness.gateway")


@dataclass(eq=False)
class _InFlight:
    call: CallContext
    questions: Any = None


class Elicitations:
    """The questions of one entry's server, routed to the person behind the call."""

    def __init__(self, ctx: Context, label: str) -> None:
        self.ctx = ctx
        self.label = label
        self._inflight: set[_InFlight] = set()

    async def during(self, call: CallContext, forward: Callable[[], Awaitable[T]]) -> T:
        """Run ``forward`` (the upstream call of ``call``) and answer the questions the server
        asks meanwhile from this task."""
        record = _InFlight(call)
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
        """An upstream elicitation: ask the person behind the one call running, from its task."""
        if len(self._inflight) != 1:
            _log.info(
                "%s asked %r while %d calls of it ran: declined (it cannot be told whose)",
                self.label,
                params.message,
                len(self._inflight),
            )
            return types.ElicitResult(action="decline")
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

    async def _answer_questions(self, record: _InFlight, receive: Any) -> None:
        async with receive:
            async for params, reply in receive:
                async with reply:
                    await reply.send(await self._ask(record.call, params))

    async def _ask(
        self, call: CallContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ElicitResult(action="decline")  # URL elicitation needs a browser
        schema = params.requested_schema
        schema_dict = (
            schema
            if isinstance(schema, dict)
            else schema.model_dump(mode="json", by_alias=True, exclude_none=True)
        )
        try:
            answer = await call.ask(params.message, schema_dict)
        except Exception:
            _log.exception("%s asked %r; asking the caller failed", self.label, params.message)
            return types.ElicitResult(action="decline")
        if answer.action == "accept":
            return types.ElicitResult(action="accept", content=answer.content or {})
        if answer.reason is not None:  # nobody could answer: declined at the upstream
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action=answer.action)


def _close_questions(send: Any, receive: Any) -> None:
    send.close()
    while True:  # questions nobody answered: their askers get a decline (end of stream)
        try:
            _, reply = receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
        reply.close()
    receive.close()
