"""MCP tasks: the ``io.modelcontextprotocol/tasks`` extension (SEP-2663), as the pinned
conformance suite checks it (DESIGN §18).

The extension is advertised under ``capabilities.extensions``. A 2026-07-28 ``tools/call`` of
a tool defined with ``task="optional" | "required"`` from a client that declared the
extension (in its request's ``clientCapabilities``) is answered at once with a
``CreateTaskResult`` (``resultType: "task"``, ``taskId``, ``status``, ``ttlMs``...), and the
call runs in the background through the same pipeline (policy, approvals, validation,
timeouts, journal). The client then polls:

- ``tasks/get``: the task; once terminal, the tool's result inlined (``completed``, a tool's
  own error included as ``result.isError``), or the error (``failed``: the host could not
  finish the call: ``internal``, ``invalid_output``, ``interrupted``); while the body waits
  for input, ``input_required`` and the requests by key;
- ``tasks/update``: answers to those requests (``inputResponses``), some or all;
- ``tasks/cancel``: cancels a running task (its status becomes ``cancelled``).

Each answers an empty ``{resultType: "complete"}``. A task unknown here, or past its
``ttlMs``, is -32602; a client that did not declare the extension gets -32021 for these
methods, and for a call of a ``required`` tool. The body's progress and log entries become
the task's ``statusMessage``. A tool defined ``ask_first`` asks its first inputs through
input rounds (:mod:`.rounds`), and the round that answers them starts the task with those
answers recorded (:meth:`McpTasks.start`). :meth:`McpTasks.listing` and
:meth:`McpTasks.cancel` are the console's view (``GET /api/tasks``). An ``Mcp-Name`` header
that is not the request's ``taskId`` is
-32020 (SEP-2243). Tasks live in this process's memory: a restart forgets them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import HEADER_MISMATCH, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import Field

from ..tools.call_context import APPROVAL_KEY, CallContext, Client, InputApprover
from ..tools.inputs import Input
from .results import to_mcp_result

if TYPE_CHECKING:
    from ..context import Context
    from ..tools.calls import ToolCall, ToolResult
    from .client import McpClient

__all__ = ["EXTENSION", "McpTasks", "Task"]

EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = 3_600_000
"""How long a task is kept (from its creation), in milliseconds: an hour."""
POLL_MS = 500
"""The poll interval suggested to clients, in milliseconds."""
TERMINAL = ("completed", "failed", "cancelled")
FAILED = frozenset({"internal", "invalid_output", "interrupted"})
"""Result codes that mean the host could not finish the call: the task ``failed``."""
INTERNAL_ERROR = -32603


class TaskParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel``."""

    task_id: str = Field(alias="taskId")


class TaskUpdateParams(TaskParams):
    """``tasks/update``."""

    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


def _stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: its status and, once terminal, its result or error."""

    def __init__(self, tool: str, ttl_ms: int = TTL_MS) -> None:
        self.id = secrets.token_urlsafe(16)
        self.tool = tool
        self.status = "working"
        self.created_at = self.updated_at = time.time()
        self.ttl_ms = ttl_ms
        self.message: str | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.requests: dict[str, Any] = {}
        """Input requests by key the body waits on (``input_required``)."""
        self.answers: dict[str, Any] = {}
        self.answered = anyio.Event()
        self.scope = anyio.CancelScope()

    def touch(self, status: str | None = None) -> None:
        if status is not None:
            self.status = status
        self.updated_at = time.time()

    def expired(self, now: float) -> bool:
        return now > self.created_at + self.ttl_ms / 1000

    def envelope(self) -> dict[str, Any]:
        """The ``Task`` fields every answer about it carries."""
        wire: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": _stamp(self.created_at),
            "lastUpdatedAt": _stamp(self.updated_at),
            "ttlMs": self.ttl_ms,
            "pollIntervalMs": POLL_MS,
        }
        if self.message:
            wire["statusMessage"] = self.message
        return wire

    def detailed(self) -> dict[str, Any]:
        """``tasks/get``'s answer: the envelope, and the result, error or input requests."""
        wire = self.envelope()
        if self.status == "completed" and self.result is not None:
            wire["result"] = self.result
        elif self.status == "failed" and self.error is not None:
            wire["error"] = self.error
        elif self.status == "input_required":
            wire["inputRequests"] = dict(self.requests)
        return wire


class TaskClient(Client):
    """The client of a call running as a task: its inputs wait for ``tasks/update``, its
    progress and logs become the task's status message."""

    def __init__(self, task: Task, client: McpClient) -> None:
        super().__init__(client.id)
        self.task = task
        self.capabilities = client.capabilities

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        task = self.task
        task.requests.update({key: request.to_wire() for key, request in requests.items()})
        task.touch("input_required")
        while not set(requests) <= set(task.answers):
            task.answered = anyio.Event()
            await task.answered.wait()
        answers = {key: task.answers.pop(key) for key in requests}
        task.touch("working")
        return answers

    def approver(self, ctx: CallContext) -> Any:
        """An approval answered in the rounds before the task (sealed, :mod:`.rounds`) is
        taken from them; otherwise the approval object decides (a console page)."""
        if ctx.recorded and APPROVAL_KEY in ctx.recorded[0]:
            return InputApprover(ctx)
        return None

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        shown = f"{done:g}" if total is None else f"{done:g}/{total:g}"
        self.task.message = f"{shown}: {message}" if message else shown
        self.task.touch()

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.task.message = f"{level}: {message}"
        self.task.touch()


class McpTasks:
    """The tasks of one MCP server (see the module)."""

    def __init__(self, root: Context) -> None:
        self.root = root
        self.tasks: dict[str, Task] = {}

    def install(self, server: Any) -> None:
        """Advertise the extension and serve its methods on ``server`` (the SDK's)."""
        server.extensions[EXTENSION] = {}
        server.add_request_handler("tasks/get", TaskParams, self._get)
        server.add_request_handler("tasks/update", TaskUpdateParams, self._update)
        server.add_request_handler("tasks/cancel", TaskParams, self._cancel)

    @staticmethod
    def declared(capabilities: types.ClientCapabilities | None) -> bool:
        """Whether a request's client declared the extension."""
        extensions = getattr(capabilities, "extensions", None) or {}
        return EXTENSION in extensions

    @staticmethod
    def missing(what: str) -> MCPError:
        """The -32021 error of a request that needs the extension."""
        return MCPError(
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            f"{what} needs the client's {EXTENSION} extension, which this client did not declare",
            {"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
        )

    def start(
        self,
        call: ToolCall,
        client: McpClient,
        recorded: Sequence[Mapping[str, Any]] = (),
        carried: Any = None,
    ) -> dict[str, Any]:
        """Run ``call`` as a new task in the background; its ``CreateTaskResult``.
        ``recorded`` and ``carried`` are what the input rounds before it gathered (an
        ``ask_first`` tool's, :mod:`.rounds`): the body runs again from its start and each
        input takes its recorded answer."""
        self._purge()
        task = Task(call.name)
        self.tasks[task.id] = task
        ctx = CallContext(call, "mcp", TaskClient(task, client), recorded=recorded)
        ctx.carried = carried
        self.root.start_soon(self._run, task, call)
        return {"resultType": "task", **task.envelope()}

    async def _run(self, task: Task, call: ToolCall) -> None:
        result: ToolResult | None = None
        with task.scope:
            result = await self.root.tools.execute(call)
        if task.status in TERMINAL:
            return
        task.requests.clear()
        if result is None or (result.code == "cancelled" and task.scope.cancel_called):
            task.touch("cancelled")
        elif result.code in FAILED:
            task.error = {"code": INTERNAL_ERROR, "message": f"{result.code}: {result.error}"}
            task.touch("failed")
        else:
            tool = self.root.tools.get(call.name)
            declared = tool is not None and tool.output_schema is not None
            wire = to_mcp_result(result, declared or result.result is not None)
            task.result = wire.model_dump(by_alias=True, mode="json", exclude_none=True)
            task.touch("completed")

    def _find(self, ctx: Any, params: TaskParams, method: str) -> Task:
        if not self.declared(ctx.session.client_capabilities):
            raise self.missing(method)
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        named = headers.get("mcp-name") if headers is not None else None
        if named is not None and named.strip() != params.task_id:
            raise MCPError(
                HEADER_MISMATCH,
                f"the Mcp-Name header {named.strip()!r} is not the taskId {params.task_id!r}",
            )
        self._purge()
        task = self.tasks.get(params.task_id)
        if task is None:
            raise MCPError(INVALID_PARAMS, f"no task {params.task_id!r} here (unknown or expired)")
        return task

    def _purge(self) -> None:
        now = time.time()
        for key in [key for key, task in self.tasks.items() if task.expired(now)]:
            self.tasks.pop(key).scope.cancel()

    async def _get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        return self._find(ctx, params, "tasks/get").detailed()

    async def _update(self, ctx: Any, params: TaskUpdateParams) -> dict[str, Any]:
        task = self._find(ctx, params, "tasks/update")
        responses = params.input_responses or {}
        for key, value in responses.items():
            if key in task.requests and isinstance(value, dict):
                task.requests.pop(key)
                task.answers[key] = value
        if responses:
            task.touch()
            task.answered.set()
        return {}

    async def _cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        self.cancel(self._find(ctx, params, "tasks/cancel").id)
        return {}

    def listing(self) -> list[dict[str, Any]]:
        """The tasks not yet expired, newest first, as the console shows them: ``id``,
        ``tool``, ``status``, ``statusMessage`` (None: none), ``createdAt`` and
        ``lastUpdatedAt`` (ISO 8601, UTC)."""
        self._purge()
        return [
            {
                "id": task.id,
                "tool": task.tool,
                "status": task.status,
                "statusMessage": task.message,
                "createdAt": _stamp(task.created_at),
                "lastUpdatedAt": _stamp(task.updated_at),
            }
            for task in sorted(self.tasks.values(), key=lambda task: -task.created_at)
        ]

    def cancel(self, task_id: str) -> str | None:
        """Cancel a running task (``tasks/cancel``, the console's Cancel); its status after
        (a finished task keeps its own), None when no such task is kept."""
        self._purge()
        task = self.tasks.get(task_id)
        if task is None:
            return None
        if task.status not in TERMINAL:
            task.requests.clear()
            task.touch("cancelled")
            task.scope.cancel()
        return task.status
