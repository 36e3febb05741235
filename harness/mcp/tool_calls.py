"""``tools/call`` over MCP: one call, its context, and its client.

Each call gets a :class:`~harness.tools.call_context.CallContext` whose client is the
request's (:class:`~.client.McpClient`): over 2025-11-25 it asks the client while the call
waits; over 2026-07-28 a call that needs input ends with an ``InputRequiredResult`` and its
next round resumes from the sealed state (:mod:`.rounds`). An approval is one such input,
asked first. A success returns the rendered content and ``structuredContent``; a failure is
a result with ``isError`` (DESIGN §6b), except the protocol's own errors: -32602 for a
``requestState`` this server will not open, -32021 for a call that failed for want of a
capability the 2026-07-28 client did not declare.

A call of a task tool from a 2026-07-28 client that declared the tasks extension is a task
(:mod:`.tasks`) at once; one of an ``ask_first`` tool runs here until a round brings the
answers to its body's inputs, and that round is its task: only a round this server asked
(its sealed ``requestState``), so answers sent without one are not taken.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.connection import Connection
from mcp_types import LOG_LEVEL_META_KEY
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..service import unwrap
from ..tools.call_context import CallContext
from ..tools.calls import ToolCall, ToolResult
from ..tools.finding import CALL_TOOL
from .client import APPROVAL_KEY, CallParams, McpClient
from .log_messages import LogLevels
from .results import to_mcp_result
from .rounds import Rounds, missing_capability

if TYPE_CHECKING:
    from ..context import Context
    from .tasks import McpTasks
    from .tools_list import Catalog

__all__ = ["IDEMPOTENCY_KEY", "ToolCalls", "called"]

IDEMPOTENCY_KEY = "harness/idempotency-key"
"""The ``_meta`` key of a ``tools/call`` that names the call in the journal (docs/store.md)."""


class ToolCalls:
    """The ``tools/call`` requests of one server (see the module).

    ``remember(request)`` is the handshake-era connection of a request (None over
    2026-07-28), ``catalog()`` the registry as MCP lists it.
    """

    def __init__(
        self,
        root: Context,
        rounds: Rounds,
        levels: LogLevels,
        remember: Callable[[Any], Connection | None],
        catalog: Callable[[], Catalog],
        tasks: McpTasks | None = None,
    ) -> None:
        self.root = root
        self.rounds = rounds
        self.levels = levels
        self.remember = remember
        self.catalog = catalog
        self.tasks = tasks
        """The tasks extension (:mod:`.tasks`): calls of task tools from clients that declared
        it run as tasks."""
        self._clients: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
        """Handshake-era connections → the client session their calls carry."""

    def client_of(self, request: Any, capabilities: types.ClientCapabilities | None) -> McpClient:
        """The client of one request: ``request`` is the SDK's request context (None: a
        plain 2026-07-28 call on the fast path, which carries no progress token or log level)."""
        if request is None:
            return McpClient(capabilities)
        if request.protocol_version in MODERN_PROTOCOL_VERSIONS:
            level = (request.meta or {}).get(LOG_LEVEL_META_KEY)
            return McpClient(
                capabilities,
                session=request.session,
                request_id=request.request_id,
                minimum=lambda: level,
            )
        connection = self.remember(request)
        assert connection is not None  # a handshake-era request has its connection

        def minimum() -> str | None:
            return self.levels.of(connection) or "info"

        return McpClient(
            capabilities,
            id=self._client(connection),
            session=request.session,
            request_id=request.request_id,
            modern=False,
            minimum=minimum,
        )

    async def run(
        self, request_id: str, params: CallParams, client: McpClient
    ) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
        """One ``tools/call`` from ``client`` (a dict: a ``CreateTaskResult``)."""
        if params.name == CALL_TOOL and self.catalog().searching:
            params = called(params)
        call = ToolCall(request_id, params.name, params.arguments or {}, client=client.id)
        meta = getattr(params, "meta", None)  # the fast path's plain params have none
        if isinstance(meta, dict) and IDEMPOTENCY_KEY in meta:
            key = meta[IDEMPOTENCY_KEY]
            if not isinstance(key, str) or not 0 < len(key) <= 200:
                message = f"_meta[{IDEMPOTENCY_KEY!r}] must be a string of 1 to 200 characters"
                return to_mcp_result(ToolResult.failure(call, "invalid_args", message))
            call.key = key  # the call journal's (harness:store)
        recorded, carried = self.rounds.opened(call, params) if client.modern else ([], None)
        tasks = self.tasks
        if tasks is not None and client.modern:
            tool = self.root.tools.get(call.name)
            if tool is not None and tool.task is not None:
                if tasks.declared(client.capabilities):
                    if not tool.ask_first:
                        return await tasks.start(call, client, recorded, carried)
                    # only a round this server asked (its sealed state, opened above) starts
                    # an ask_first task: answers sent unasked are not taken, so the first
                    # round asks (the approval, then the body's questions)
                    if getattr(params, "request_state", None) is None:
                        recorded = []
                    elif answers_its_inputs(recorded):
                        return await tasks.start(call, client, recorded, carried)
                elif tool.task == "required":
                    raise tasks.missing(f"tool {call.name} (it runs as a task only)")
        ctx = CallContext(call, "mcp", client, recorded=recorded)
        ctx.carried = carried
        result = await unwrap(self.root.tools).execute(call)
        if client.modern:
            pending = result.pending
            if result.code == "approval_pending" and pending is not None and pending.data:
                return self.rounds.required(call, ctx, client, pending.data)
            if client.missing and not result.ok:
                raise missing_capability(f"tool {call.name}", client)
        if result.ok and result.result is None:  # structured content only where declared
            tool = self.root.tools.get(params.name)
            return to_mcp_result(result, tool is not None and tool.output_schema is not None)
        return to_mcp_result(result)

    def _client(self, connection: Connection) -> str:
        """The client session a handshake-era connection is (``mcp-`` and a random token):
        what its calls' ``allow_session`` answers cover, forgotten when it goes."""
        client = self._clients.get(connection)
        if client is None:
            client = self._clients[connection] = f"mcp-{secrets.token_urlsafe(12)}"
            weakref.finalize(connection, unwrap(self.root.tools).approvals.drop, client)
        return client


def answers_its_inputs(recorded: list[Any]) -> bool:
    """Whether a round's answers include the body's own (not only the call's approval): an
    ``ask_first`` task tool's call becomes its task in that round."""
    return any(set(answers) - {APPROVAL_KEY} for answers in recorded)


def called(params: CallParams) -> types.CallToolRequestParams:
    """A ``call_tool {name, args}`` call as the call of the tool it names: it then runs as a
    direct call of that tool would (the same pipeline, policy and approval). Arguments that
    are not a name and an object call a tool no registry holds, which fails as unknown."""
    arguments = params.arguments or {}
    name, args = arguments.get("name"), arguments.get("args", {})
    if not isinstance(name, str) or not isinstance(args, dict):
        name, args = f"{CALL_TOOL}: give a tool name and an args object", {}
    return types.CallToolRequestParams(
        name=name,
        arguments=args,
        request_state=params.request_state,
        input_responses=params.input_responses,
    )
