"""The MCP client behind one request: how a running call reaches it (DESIGN §16).

:class:`McpClient` is the :class:`~harness.tools.call_context.Client` of one ``tools/call``
(or ``prompts/get``, ``resources/read``), made where the request enters. What a tool asks
goes to the client only as the capabilities it declared allow (``elicitation`` for ``ask``,
``sampling`` for ``sample``, ``roots`` for ``roots``):

- over 2025-11-25, as requests on the client's stream while the call waits (related to the
  call's request, so streamable HTTP sends them on its response stream), one after another;
- over 2026-07-28, in the client's next request: :meth:`McpClient.answer` raises
  :class:`~harness.tools.inputs.InputRequired` and the surface ends the round with an
  ``InputRequiredResult`` (:mod:`.rounds`).

A question the client cannot take goes where the base client sends it (the approval object:
a console page, else ``cancel`` with the reason); ``sample`` and ``roots`` it cannot take raise
:class:`~harness.tools.inputs.InputUnavailable`, and :attr:`McpClient.missing` names the
capability (over 2026-07-28 the surface answers -32021 with it). Progress goes out as
``notifications/progress`` when the request carried a progress token, logs as
``notifications/message`` at the level the client chose (``logging/setLevel`` on its
connection, or the request's own ``io.modelcontextprotocol/logLevel``; ``info`` and above on a
handshake-era connection that chose none, nothing on a 2026-07-28 request that chose none).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import mcp_types as types
from mcp.shared.message import ServerMessageMetadata
from pydantic import TypeAdapter

from ..tools.call_context import APPROVAL_KEY, CallContext, Client, unavailable
from ..tools.inputs import Answer, Input, InputRequired, InputUnavailable, answer_to_wire
from .log_messages import LEVELS, at_least

__all__ = ["APPROVAL_KEY", "CallParams", "McpClient", "jsonable"]

_log = logging.getLogger("harness.mcp")
CAPABILITY = {"ask": "elicitation", "sample": "sampling", "roots": "roots"}
"""The client capability each kind of input needs."""
_REQUEST: TypeAdapter[Any] = TypeAdapter(types.ServerRequest)
_RESULTS: dict[str, type[Any]] = {
    "ask": types.ElicitResult,
    "sample": types.CreateMessageResult,
    "roots": types.ListRootsResult,
}


class CallParams(Protocol):
    """What a ``tools/call`` is asked with: the SDK's ``CallToolRequestParams``, or the fast
    path's plain params (:mod:`.http.fast_path`)."""

    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> dict[str, Any] | None: ...
    @property
    def request_state(self) -> str | None: ...
    @property
    def input_responses(self) -> Mapping[str, Any] | None: ...


class McpClient(Client):
    """The client of one MCP request (see the module).

    ``session`` is the SDK's per-request session (None on the fast path, whose plain calls
    carry no progress token or log level); ``modern`` a 2026-07-28 request; ``minimum`` the
    lowest log level the client takes (None: none over 2026-07-28).
    """

    def __init__(
        self,
        capabilities: types.ClientCapabilities | None,
        *,
        id: str | None = None,
        session: Any = None,
        request_id: Any = None,
        modern: bool = True,
        minimum: Callable[[], str | None] | None = None,
    ) -> None:
        super().__init__(id)
        self.capabilities = capabilities
        self.session = session
        self.request_id = request_id
        self.modern = modern
        self.minimum = minimum
        self.asks = self.declared("ask")
        self.missing: dict[str, dict[str, Any]] = {}
        """Capabilities a call needed that the client did not declare (``{"sampling": {}}``)."""
        self.answered: dict[str, Any] = {}
        """Over 2026-07-28: the answers of a round given here (questions the client could
        not take), sealed beside the ones it defers."""

    def declared(self, kind: str) -> bool:
        """Whether the client declared the capability an input of ``kind`` needs."""
        capabilities = self.capabilities
        if capabilities is None:
            return False
        return getattr(capabilities, CAPABILITY[kind], None) is not None

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        theirs = {key: request for key, request in requests.items() if self.declared(request.kind)}
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            if key in theirs:
                continue
            if request.kind != "ask":
                self.missing[CAPABILITY[request.kind]] = {}
                raise InputUnavailable(unavailable(ctx, request))
            answers.update(await super().answer(ctx, {key: request}))
        if not theirs:
            return answers
        if self.modern or self.session is None:
            self.answered = {key: answer_to_wire(answer) for key, answer in answers.items()}
            raise InputRequired({key: request.to_wire() for key, request in theirs.items()})
        for key, request in theirs.items():  # one after another, on the call's own stream
            answers[key] = await self._ask(ctx, request)
        return answers

    async def _ask(self, ctx: CallContext, request: Input) -> Any:
        """One request to a handshake-era client, its answer as the wire's JSON."""
        wire = request.to_wire()
        try:
            sent = _REQUEST.validate_python(wire)
            result = await self.session.send_request(
                sent,
                _RESULTS[request.kind],
                metadata=ServerMessageMetadata(related_request_id=self.request_id),
            )
        except Exception as exc:  # the client refused, failed, or sent what is not an answer
            _log.info("the MCP client did not answer %s: %s", wire["method"], exc)
            if request.kind == "ask":
                return Answer("cancel", reason=f"the client did not answer: {exc}")
            raise InputUnavailable(f"{unavailable(ctx, request)}: {exc}") from None
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        if self.session is not None:  # a no-op when the request carried no progress token
            await self.session.report_progress(done, total, message)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        session = self.session
        minimum = self.minimum() if self.minimum is not None else None
        if session is None or minimum not in LEVELS or not at_least(level, minimum):
            return
        entry: Any = message if not data else {"message": message, "data": jsonable(data)}
        notice = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level=level,
                logger=f"harness.tools.{ctx.call.name}",
                data=entry,
            )
        )
        await session.send_notification(notice, related_request_id=self.request_id)


def jsonable(value: Any) -> Any:
    """``value`` as JSON (what is not JSON becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))
