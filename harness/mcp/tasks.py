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
the task's ``statusMessage``. At most :data:`MAX_TASKS` tasks not yet expired are kept; past
that a task call is refused (-32603). A tool defined ``ask_first`` asks its first inputs through
input rounds (:mod:`.rounds`), and the round that answers them starts the task with those
answers recorded (:meth:`McpTasks.start`). :meth:`McpTasks.listing` and
:meth:`McpTasks.cancel` are the console's view (``GET /api/tasks``). An ``Mcp-Name`` header
that is not the request's ``taskId`` is -32020 (SEP-2243).

With ``harness:store`` loaded, tasks live in the store (``store.tasks``, :class:`TaskBoard`),
so that any replica sharing it answers them: the process running a task's body writes its
row, and every method reads and writes the row. That process watches its running tasks'
rows every :data:`WATCH` seconds, for answers and cancels given on another replica (it sees
its own at once), and writes a body's status messages at most that often. A task whose
process died is answered ``failed`` (``interrupted``). Without a store, tasks live in this
process's memory: a restart forgets them.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types import HEADER_MISMATCH, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY
from pydantic import Field

from ..service import unwrap
from ..tools.call_context import APPROVAL_KEY, CallContext, Client, InputApprover
from ..tools.inputs import Input
from .results import to_mcp_result

if TYPE_CHECKING:
    from ..context import Context
    from ..tools.calls import ToolCall, ToolResult
    from .client import McpClient

__all__ = ["EXTENSION", "McpTasks", "Task", "TaskBoard"]

_log = logging.getLogger("harness.mcp")

EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = 3_600_000
"""How long a task is kept (from its creation), in milliseconds: an hour."""
POLL_MS = 500
"""The poll interval suggested to clients, in milliseconds."""
MAX_TASKS = 1000
"""How many tasks not yet expired (running or ended: each is kept ``ttlMs``) are kept at
once, by default (:attr:`McpTasks.limit`): in this process's memory, or with a store across
the replicas sharing it. Past it, a task tool's call is refused (-32603) and does not run."""
TERMINAL = ("completed", "failed", "cancelled")
FAILED = frozenset({"internal", "invalid_output", "interrupted"})
"""Result codes that mean the host could not finish the call: the task ``failed``."""
INTERNAL_ERROR = -32603
WATCH = 0.1
"""Seconds between looks at the store rows of the tasks this process runs (answers and
cancels given on another replica), and at most between writes of their status messages."""


class TaskBoard(Protocol):
    """The tasks of the store (:class:`harness.store.tasks.StoredTasks`), as seen from here;
    a task is a dict of its row (``id``, ``tool``, ``status``, ``created_at``...)."""

    async def create(
        self,
        id: str,
        tool: str,
        client: str | None,
        at: float,
        ttl_ms: int,
        limit: int | None = ...,
    ) -> bool: ...
    async def save(
        self, id: str, status: str | None, message: str | None, result: Any = ..., error: Any = ...
    ) -> bool: ...
    async def ask(self, id: str, requests: dict[str, Any]) -> bool: ...
    async def take_answers(self, id: str, keys: Iterable[str]) -> dict[str, Any]: ...
    async def watch(self, ids: Iterable[str]) -> dict[str, dict[str, Any]]: ...
    async def get(self, id: str) -> dict[str, Any] | None: ...
    async def answer(self, id: str, responses: dict[str, Any]) -> bool: ...
    async def cancel(self, id: str) -> bool: ...
    async def listing(self, terminal: bool = ...) -> list[dict[str, Any]]: ...


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

    def __init__(self, tool: str, ttl_ms: int = TTL_MS, board: TaskBoard | None = None) -> None:
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
        self.board = board
        """The store that keeps it (None: this process's memory)."""
        self.unsaved = False
        """Its status message changed since it was last written to the store."""

    @classmethod
    def restored(cls, fields: Mapping[str, Any], board: TaskBoard) -> Task:
        """A task as the store's row ``fields`` has it."""
        task = cls(fields["tool"], fields["ttl_ms"] or TTL_MS, board)
        task.id = fields["id"]
        task.status = fields["status"]
        task.created_at, task.updated_at = fields["created_at"], fields["updated_at"]
        task.message = fields["message"]
        task.result, task.error = fields["result"], fields["error"]
        task.requests = dict(fields["requests"])
        return task

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

    def __init__(self, task: Task, client: McpClient, tasks: McpTasks) -> None:
        super().__init__(client.id)
        self.task = task
        self.tasks = tasks
        self.capabilities = client.capabilities

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        task, board = self.task, self.task.board
        wire = {key: request.to_wire() for key, request in requests.items()}
        task.requests.update(wire)
        task.touch("input_required")
        if board is not None:
            await board.ask(task.id, wire)  # False: cancelled meanwhile; the watch ends it
        while not set(requests) <= set(task.answers):
            task.answered = anyio.Event()
            if board is not None:  # given here or on another replica: in the row
                waiting = set(requests) - set(task.answers)
                task.answers.update(await board.take_answers(task.id, waiting))
                if set(requests) <= set(task.answers):
                    break
            await task.answered.wait()
        answers = {key: task.answers.pop(key) for key in requests}
        for key in requests:
            task.requests.pop(key, None)
        task.touch(None if task.requests else "working")
        if board is not None and not task.requests:
            await board.save(task.id, "working", task.message)
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
        self.tasks.say(self.task, f"{shown}: {message}" if message else shown)

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.tasks.say(self.task, f"{level}: {message}")


class McpTasks:
    """The tasks of one MCP server (see the module)."""

    def __init__(self, root: Context) -> None:
        self.root = root
        self.tasks: dict[str, Task] = {}
        """Without a store, every task; with one, those whose body runs here."""
        self.limit = MAX_TASKS
        """How many tasks not yet expired are kept at once (:data:`MAX_TASKS`)."""
        self._watching = False

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

    def board(self) -> TaskBoard | None:
        """The store's tasks, while ``harness:store`` is loaded."""
        store = self.root.get("store")
        board: TaskBoard | None = getattr(unwrap(store), "tasks", None) if store else None
        return board

    async def start(
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
        board = self.board()
        task = Task(call.name, board=board)
        if board is None:
            if sum(task.board is None for task in self.tasks.values()) >= self.limit:
                raise self._full(call)
        else:
            try:
                created = await board.create(
                    task.id, task.tool, client.id, task.created_at, task.ttl_ms, self.limit
                )
            except Exception as exc:
                _log.exception("the store could not keep a task of %s", call.name)
                raise MCPError(
                    INTERNAL_ERROR,
                    f"the store could not keep a task of {call.name} ({type(exc).__name__}: "
                    f"{exc}); the call did not run: try again, or check the store",
                ) from None
            if not created:
                raise self._full(call)
        self.tasks[task.id] = task
        ctx = CallContext(call, "mcp", TaskClient(task, client, self), recorded=recorded)
        ctx.carried = carried
        self.root.start_soon(self._run, task, call)
        if board is not None and not self._watching:
            self._watching = True
            self.root.start_soon(self._watch)
        return {"resultType": "task", **task.envelope()}

    def _full(self, call: ToolCall) -> MCPError:
        """The error of a task call past :attr:`limit`."""
        minutes = TTL_MS // 60_000
        return MCPError(
            INTERNAL_ERROR,
            f"tool {call.name} was not run: this server keeps at most {self.limit} tasks and "
            f"has that many not yet expired (each is kept {minutes} minutes from its "
            "creation); try again later",
            {"maxTasks": self.limit},
        )

    async def _run(self, task: Task, call: ToolCall) -> None:
        result: ToolResult | None = None
        try:
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
            if task.board is not None:
                with anyio.CancelScope(shield=True):
                    await self._save(task, task.status)
        finally:
            if task.board is not None:
                self.tasks.pop(task.id, None)  # its row tells the rest

    def say(self, task: Task, message: str) -> None:
        """Set a task's status message (written to the store by the watch)."""
        task.message = message
        task.touch()
        task.unsaved = task.board is not None

    async def _save(self, task: Task, status: str | None = None) -> None:
        board = task.board
        assert board is not None
        task.unsaved = False
        try:
            await board.save(task.id, status, task.message, task.result, task.error)
        except Exception:
            _log.exception("the store could not record task %s of %s", task.id, task.tool)

    async def _watch(self) -> None:
        """While tasks kept in the store run here: write their new status messages, and
        look at their rows for answers and cancels given on another replica."""
        failing = False
        try:
            while True:
                mine = [task for task in self.tasks.values() if task.board is not None]
                if not mine:
                    return
                try:
                    await self._look(mine)
                    failing = False
                except Exception:
                    if not failing:  # once per streak: it is asked ten times a second
                        _log.exception("the store could not be asked about this process's tasks")
                    failing = True
                await anyio.sleep(WATCH)
        finally:
            self._watching = False

    async def _look(self, mine: list[Task]) -> None:
        boards: dict[int, tuple[TaskBoard, list[Task]]] = {}
        for task in mine:
            assert task.board is not None
            boards.setdefault(id(task.board), (task.board, []))[1].append(task)
        for board, tasks in boards.values():
            for task in tasks:
                if task.unsaved:
                    await self._save(task)
            rows = await board.watch(task.id for task in tasks)
            now = time.time()
            for task in tasks:
                row = rows.get(task.id)
                if row is None or row["cancel_requested"] or task.expired(now):
                    self._stop(task)  # cancelled elsewhere, or expired
                elif row["answered"]:
                    task.answered.set()

    def _check(self, ctx: Any, params: TaskParams, method: str) -> None:
        if not self.declared(ctx.session.client_capabilities):
            raise self.missing(method)
        headers = getattr(getattr(ctx, "request", None), "headers", None)
        named = headers.get("mcp-name") if headers is not None else None
        if named is not None and named.strip() != params.task_id:
            raise MCPError(
                HEADER_MISMATCH,
                f"the Mcp-Name header {named.strip()!r} is not the taskId {params.task_id!r}",
            )

    async def _find(self, ctx: Any, params: TaskParams, method: str) -> Task:
        """The task ``params`` names: this process's own, or as the store has it."""
        self._check(ctx, params, method)
        self._purge()
        task = self.tasks.get(params.task_id)
        if task is not None and task.board is None:
            return task
        board = task.board if task is not None else self.board()
        fields = None
        if board is not None:
            if task is not None and task.unsaved:
                await self._save(task)
            fields = await board.get(params.task_id)
        if board is None or fields is None:
            raise MCPError(INVALID_PARAMS, f"no task {params.task_id!r} here (unknown or expired)")
        return Task.restored(fields, board)

    def _purge(self) -> None:
        now = time.time()
        for key in [key for key, task in self.tasks.items() if task.expired(now)]:
            self.tasks.pop(key).scope.cancel()

    async def _get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        return (await self._find(ctx, params, "tasks/get")).detailed()

    async def _update(self, ctx: Any, params: TaskUpdateParams) -> dict[str, Any]:
        task = await self._find(ctx, params, "tasks/update")
        responses = params.input_responses or {}
        if task.board is not None:
            if responses and await task.board.answer(task.id, responses):
                running = self.tasks.get(task.id)
                if running is not None:  # its body runs here: no need to wait for the watch
                    running.answered.set()
            return {}
        for key, value in responses.items():
            if key in task.requests and isinstance(value, dict):
                task.requests.pop(key)
                task.answers[key] = value
        if responses:
            task.touch()
            task.answered.set()
        return {}

    async def _cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        await self.cancel((await self._find(ctx, params, "tasks/cancel")).id)
        return {}

    async def listing(self) -> list[dict[str, Any]]:
        """The tasks not yet expired, newest first, as the console shows them: ``id``,
        ``tool``, ``status``, ``statusMessage`` (None: none), ``createdAt`` and
        ``lastUpdatedAt`` (ISO 8601, UTC). With a store, its tasks (every replica's), a dead
        process's ``failed``."""
        self._purge()
        tasks = [task for task in self.tasks.values() if task.board is None]
        board = self.board()
        if board is not None:
            for task in self.tasks.values():
                if task.unsaved:
                    await self._save(task)
            rows = await board.listing(terminal=True)
            tasks += [Task.restored(fields, board) for fields in rows]
        return [
            {
                "id": task.id,
                "tool": task.tool,
                "status": task.status,
                "statusMessage": task.message,
                "createdAt": _stamp(task.created_at),
                "lastUpdatedAt": _stamp(task.updated_at),
            }
            for task in sorted(tasks, key=lambda task: -task.created_at)
        ]

    async def cancel(self, task_id: str) -> str | None:
        """Cancel a running task (``tasks/cancel``, the console's Cancel); its status after
        (a finished task keeps its own), None when no such task is kept. With a store, on
        any replica: the one running its body cancels it."""
        self._purge()
        task = self.tasks.get(task_id)
        board = task.board if task is not None else self.board()
        if board is not None:
            await board.cancel(task_id)
            fields = await board.get(task_id)
            if fields is None:
                return None
            if task is not None and fields["status"] == "cancelled":
                self._stop(task)  # its body runs here: cancel it now
            return str(fields["status"])
        if task is None:
            return None
        self._stop(task)
        return task.status

    @staticmethod
    def _stop(task: Task) -> None:
        """Cancel a running task's body, here."""
        if task.status not in TERMINAL:
            task.requests.clear()
            task.touch("cancelled")
        task.scope.cancel()
