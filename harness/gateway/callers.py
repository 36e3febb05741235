"""What an upstream sends while a mounted tool's call runs, passed to that call's context.

A server may report progress, log, and ask the client for an elicitation, a completion
(``sampling/createMessage``) or its roots (``roots/list``) while a call runs (DESIGN §12,
§16). A call run through :meth:`Callers.during` has them put to the caller:

- progress (tied to the call by its progress token) goes to ``ctx.progress``, which also
  keeps the call's ``idle`` timeout from running out;
- a log goes to ``ctx.log`` (the caller's ``notifications/message``, the ``tool/log``
  event, the logger);
- an elicitation goes to ``ctx.ask`` (the server's form passed on as written): an MCP
  client's user, or the person at the console or in the agent session. A remembered
  approval, ``--yes`` or an ``approval`` service never answers it (they answer the
  policy's ``ask``); where nobody can answer, the server gets ``decline``;
- sampling goes to ``ctx.sample`` (the calling client's model, or the agent's ``llm``) and
  roots to ``ctx.roots``; where the caller has none to give, the server gets an error
  saying so.

The SDK's callbacks for requests and logs do not say which call they belong to, so they go
to the caller only while exactly one call of the entry runs. One while none or several run
cannot be tied to a caller: an elicitation is declined, sampling refused, roots are none,
and a log goes to harness's own log only.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
import mcp_types as types
import pydantic
from mcp.shared.dispatcher import ProgressFnT

from ..tools.call_context import LEVELS, CallContext
from ..tools.inputs import InputRequired, InputUnavailable

__all__ = ["Callers", "Progress"]

T = TypeVar("T")
R = TypeVar("R")
Progress = ProgressFnT
_log = logging.getLogger("harness.gateway")


@dataclass(eq=False)
class _InFlight:
    call: CallContext
    requests: Any = None


class Callers:
    """The running calls of one entry, and the server's messages routed to their callers."""

    def __init__(self, label: str, elicitation: str = "ask") -> None:
        self.label = label
        self.elicitation = elicitation
        """``decline``: the server's elicitations are declined unasked."""
        self._inflight: set[_InFlight] = set()

    async def during(self, call: CallContext, forward: Callable[[Progress], Awaitable[T]]) -> T:
        """Run ``forward`` (the upstream call of ``call``, given the progress callback to
        pass on) and answer the server's requests meanwhile from this task."""
        record = _InFlight(call)
        self._inflight.add(record)
        failure: BaseException | None = None
        send, receive = anyio.create_memory_object_stream[Any](4)
        record.requests = send

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            try:
                await call.progress(progress, total, message)
            except ValueError:  # not numbers: nothing to show
                _log.info("%s sent progress %r of %r: ignored", self.label, progress, total)

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(_serve, receive)
                try:
                    reply = await forward(progress)
                except (Exception, InputRequired) as exc:  # raised below, outside the group
                    failure = exc  # (InputRequired: the caller answers in its next request)
                finally:
                    group.cancel_scope.cancel()
        finally:
            self._inflight.discard(record)
            _close_requests(send, receive)
        if failure is not None:
            raise failure
        return reply

    def _only(self, what: str) -> _InFlight | None:
        if len(self._inflight) == 1:
            (record,) = self._inflight
            return record
        _log.info(
            "%s sent %s while %d calls of it ran: not passed on (it cannot be told whose)",
            self.label,
            what,
            len(self._inflight),
        )
        return None

    async def _in_call(
        self, record: _InFlight, answer: Callable[[CallContext], Awaitable[R]], otherwise: R
    ) -> R:
        """``answer(ctx)``, run in the call's own task (so it ends with the call)."""
        reply_send, reply_receive = anyio.create_memory_object_stream[Any](1)
        try:
            await record.requests.send((partial(answer, record.call), reply_send))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            reply_send.close()
            reply_receive.close()
            return otherwise
        with reply_receive:
            try:
                result: R = await reply_receive.receive()
            except anyio.EndOfStream:
                return otherwise
            return result

    # -- the server's requests and notifications --------------------------------------------

    async def elicit(self, params: types.ElicitRequestParams) -> types.ElicitResult:
        """``elicitation/create``: the caller's ``ask``."""
        declined = types.ElicitResult(action="decline")
        if self.elicitation == "decline":
            return declined
        record = self._only(f"the question {params.message!r}")
        if record is None:
            return declined
        return await self._in_call(record, lambda ctx: self._ask(ctx, params), declined)

    async def sample(
        self, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        """``sampling/createMessage``: the caller's ``sample``."""
        refused = types.ErrorData(
            code=types.INVALID_REQUEST,
            message="harness cannot sample here: no single call of this server is running",
        )
        record = self._only("a sampling request")
        if record is None:
            return refused
        return await self._in_call(record, lambda ctx: self._sample(ctx, params), refused)

    async def roots(self) -> types.ListRootsResult | types.ErrorData:
        """``roots/list``: the caller's ``roots`` (none outside a call)."""
        record = self._only("a roots request")
        if record is None:
            return types.ListRootsResult(roots=[])
        return await self._in_call(record, self._roots, types.ListRootsResult(roots=[]))

    async def log(self, params: types.LoggingMessageNotificationParams) -> bool:
        """``notifications/message``: the running call's ``log``; False when no one call
        runs (the caller logs it to harness's log)."""
        if len(self._inflight) != 1:
            return False
        (record,) = self._inflight
        data = params.data
        message = data if isinstance(data, str) else json.dumps(data, default=str)
        level = params.level if params.level in LEVELS else "info"
        extra = {"logger": params.logger} if params.logger else {}
        try:
            await record.call.log(level, message, upstream=self.label, **extra)
        except Exception:
            _log.exception("%s logged %r; passing it to the caller failed", self.label, message)
        return True

    # -- answered in the call's task --------------------------------------------------------

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
        except InputRequired:  # a caller that answers only between requests
            return types.ElicitResult(action="decline")
        except Exception:
            _log.exception("%s asked %r; asking the caller failed", self.label, params.message)
            return types.ElicitResult(action="decline")
        if answer.action == "accept":
            return types.ElicitResult(action="accept", content=answer.content or {})
        if answer.reason is not None:  # nobody could answer: declined at the upstream
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action=answer.action)

    async def _sample(
        self, call: CallContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        messages = []
        for message in params.messages:
            content = message.content
            if isinstance(content, list):
                content = content[0] if len(content) == 1 else content
            dumped = (
                [
                    block.model_dump(mode="json", by_alias=True, exclude_none=True)
                    for block in content
                ]
                if isinstance(content, list)
                else content.model_dump(mode="json", by_alias=True, exclude_none=True)
            )
            messages.append({"role": message.role, "content": dumped})
        options: dict[str, Any] = {}
        for key in ("temperature", "stop_sequences", "include_context", "metadata"):
            if getattr(params, key) is not None:
                options[key] = getattr(params, key)
        if params.model_preferences is not None:
            options["model_preferences"] = params.model_preferences.model_dump(
                mode="json", by_alias=True, exclude_none=True
            )
        try:
            sampled = await call.sample(
                messages, system=params.system_prompt, max_tokens=params.max_tokens, **options
            )
        except InputUnavailable as exc:
            return _error(f"the caller cannot sample: {exc}")
        except InputRequired:
            return _error("the caller cannot sample: it answers only between requests")
        except Exception as exc:
            _log.exception("%s asked for a completion; the caller's sampling failed", self.label)
            return _error(f"the caller's sampling failed: {exc}")
        block = sampled.content[0] if sampled.content else {"type": "text", "text": sampled.text}
        try:
            return types.CreateMessageResult.model_validate(
                {
                    "role": "assistant",
                    "content": block,
                    "model": sampled.model or "unknown",
                    "stopReason": sampled.stop_reason,
                }
            )
        except pydantic.ValidationError as exc:
            return _error(f"the caller's completion is not an MCP sampling result: {exc}")

    async def _roots(self, call: CallContext) -> types.ListRootsResult | types.ErrorData:
        try:
            roots = await call.roots()
        except InputUnavailable as exc:
            return _error(f"the caller cannot list roots: {exc}")
        except InputRequired:
            return _error("the caller cannot list roots: it answers only between requests")
        try:
            return types.ListRootsResult(
                roots=[types.Root(uri=root.uri, name=root.name) for root in roots]
            )
        except pydantic.ValidationError as exc:
            return _error(f"the caller's roots are not MCP roots: {exc}")


def _error(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


async def _serve(receive: Any) -> None:
    async with receive:
        async for answer, reply in receive:
            async with reply:
                await reply.send(await answer())


def _close_requests(send: Any, receive: Any) -> None:
    send.close()
    while True:  # requests nobody answered: their askers get the fallback (end of stream)
        try:
            _, reply = receive.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
        reply.close()
    receive.close()
