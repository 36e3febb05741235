"""Upstream tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663) passed through
(DESIGN §12, §18).

A 2026-07-28 server that advertises the extension may answer a ``tools/call`` with a task
(``resultType: "task"``) when the request declares the extension. A tool it lists with
``execution.taskSupport`` ``optional`` or ``required`` is mounted with that ``task=``, so
harness serves it as a task downstream (:mod:`harness.mcp.tasks`). The gateway then calls the
server as a task when the call runs as a task itself, or when the server requires one;
otherwise it declares no tasks (:class:`~.watch.StampedWrites` leaves the extension out of
the request), and the server answers at once as before.

:func:`follow` polls the server's task (``tasks/get``, at the interval it suggests, within
bounds) until it ends: its result is the call's; an ``input_required`` task's requests go
to the caller as one input round (:func:`.rounds.answers_of`) and the answers back by
``tasks/update``; a call that ends first (cancelled, timed out, failed) cancels the task
(``tasks/cancel``).
"""

from __future__ import annotations

import contextlib
from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ConfigDict, Field

from ..tools.call_context import CallContext
from .results import UpstreamToolError
from .rounds import answers_of

__all__ = ["EXTENSION", "CreatedTask", "TasksExtension", "follow", "runs_as_task", "support"]

EXTENSION = "io.modelcontextprotocol/tasks"
POLL = (0.05, 5.0)
"""Seconds between two ``tasks/get`` at least and at most (the server suggests within)."""
CANCEL_WAIT = 5.0
"""Seconds the ``tasks/cancel`` of an abandoned task may take."""


class CreatedTask(types.Result):
    """A server's ``CreateTaskResult``: the task it made of a ``tools/call``."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str = "working"
    poll_interval_ms: int | None = Field(default=None, alias="pollIntervalMs")


class TaskAnswer(types.Result):
    """A server's answer about a task, as it sent it."""

    model_config = ConfigDict(extra="allow")


class TaskParams(types.RequestParams):
    """``tasks/get``, ``tasks/cancel`` and ``tasks/update``."""

    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class TaskRequest(types.Request[TaskParams, str]):
    """A request about one task (its id also in the ``Mcp-Name`` header)."""

    name_param = "taskId"


async def _unasked(result: CreatedTask, context: ClaimContext) -> types.CallToolResult:
    raise UpstreamToolError(f"the server answered with a task ({result.task_id}) unasked")


class TasksExtension(ClientExtension):
    """The extension declared to the SDK client, so a ``tools/call`` may be answered with a
    task (only requests that ask for one declare it: :class:`~.watch.StampedWrites`)."""

    identifier = EXTENSION

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_unasked)]


def support(client: Client | None, tool: types.Tool) -> str | None:
    """``optional`` or ``required`` for a tool the server runs as a task (it advertises the
    extension, over 2026-07-28); None otherwise."""
    if client is None or client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    extensions = client.server_capabilities.extensions or {}
    wanted = tool.execution.task_support if tool.execution is not None else None
    return wanted if EXTENSION in extensions and wanted in ("optional", "required") else None


def runs_as_task(call: CallContext | None) -> bool:
    """Whether ``call`` runs as an MCP task of harness's: the client of such a call (in
    :mod:`harness.mcp.tasks`, above this layer) carries its task."""
    return call is not None and getattr(call.client, "task", None) is not None


async def follow(
    client: Client, created: CreatedTask, call: CallContext | None, tool: str
) -> types.CallToolResult:
    """The result of the server's task ``created`` (see the module)."""
    task = created.task_id
    wait = min(max((created.poll_interval_ms or 500) / 1000, POLL[0]), POLL[1])
    ended = False
    try:
        while True:
            got = await _send(client, "tasks/get", task)
            status = got.get("status")
            if status == "completed":
                ended = True
                return types.CallToolResult.model_validate(got.get("result") or {})
            if status in ("failed", "cancelled"):
                ended = True
                error = got.get("error") or {}
                why = error.get("message") if isinstance(error, dict) else None
                raise UpstreamToolError(
                    f"the server's task {task} {status}" + (f": {why}" if why else "")
                )
            wanted = got.get("inputRequests") if status == "input_required" else None
            if isinstance(wanted, dict) and wanted:
                answers = await answers_of(call, tool, wanted, None)
                await _send(client, "tasks/update", task, answers)
                continue
            await anyio.sleep(wait)
    finally:
        if not ended:  # the call ended first: so does the task
            # (an error: gone already, or the server refuses; nothing more to undo)
            shielded = anyio.CancelScope(shield=True)
            with shielded, anyio.move_on_after(CANCEL_WAIT), contextlib.suppress(Exception):
                await _send(client, "tasks/cancel", task)


async def _send(
    client: Client, method: str, task: str, responses: dict[str, Any] | None = None
) -> dict[str, Any]:
    params = TaskParams(taskId=task, inputResponses=responses)
    answer = await client.session.send_request(
        TaskRequest(method=method, params=params), TaskAnswer
    )
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)
