"""A task-capable upstream: the SDK's ``MCPServer`` with the tasks extension (SEP-2663).

Run as ``python tasks_server.py stdio``. The server advertises
``io.modelcontextprotocol/tasks`` under ``capabilities.extensions`` and serves ``tasks/get``.
Its tool ``square`` supports tasks: called at 2026-07-28 by a client that declared the
extension (for its session, or for this request in ``_meta``), the server decides to run it
as a task and answers with a ``CreateTaskResult`` (``resultType: "task"``), whose result
``tasks/get`` gives; called by any other client, it answers at once, as the extension says
it must.
``TASKS_MARK`` (a file) gets ``ran square N`` per run of the tool and ``task ID`` or
``sync square`` per call, for the tests to read.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolRequestParams, RequestParams
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

TASKS = "io.modelcontextprotocol/tasks"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
MARK = Path(os.environ["TASKS_MARK"]) if os.environ.get("TASKS_MARK") else None


def mark(line: str) -> None:
    if MARK is not None:
        with MARK.open("a") as file:
            file.write(line + "\n")


class TaskParams(RequestParams):
    taskId: str  # the wire name


class Tasks(Extension):
    """Server-directed tasks for the tools in ``supporting``, for clients that opted in."""

    identifier = TASKS

    def __init__(self, supporting: set[str]) -> None:
        self.supporting = supporting
        self.finished: dict[str, dict[str, Any]] = {}

    def methods(self) -> list[MethodBinding]:
        return [MethodBinding("tasks/get", TaskParams, self.get)]

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS  # no such extension before
        if params.name not in self.supporting or not modern or not _opted_in(ctx, params):
            mark(f"sync {params.name}")
            return await call_next(ctx)
        task = f"task-{len(self.finished) + 1}"
        mark(f"task {task}")
        # The work runs before the task is reported (a finished task: no polling needed).
        done = await call_next(ctx)
        assert isinstance(done, BaseModel)
        result = done.model_dump(by_alias=True, mode="json", exclude_none=True)
        now = datetime.now(UTC).isoformat()
        self.finished[task] = {
            "taskId": task,
            "status": "completed",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttlMs": 60_000,
            "result": result,
        }
        summary = {key: value for key, value in self.finished[task].items() if key != "result"}
        return {"resultType": "task", **summary}

    async def get(self, ctx: ServerRequestContext[Any, Any], params: TaskParams) -> HandlerResult:
        return {"resultType": "complete", **self.finished[params.taskId]}


def _opted_in(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> bool:
    capabilities = ctx.session.client_capabilities
    if capabilities is not None and TASKS in (capabilities.extensions or {}):
        return True
    requested: Any = (params.meta or {}).get(CAPABILITIES) or {}
    return isinstance(requested, dict) and TASKS in (requested.get("extensions") or {})


server = MCPServer("tasks-upstream", extensions=[Tasks({"square"})])


class Squared(BaseModel):
    n: int
    square: int


@server.tool(description="Square n (a task, for a client that opted in to tasks).")
def square(n: int) -> Squared:
    mark(f"ran square {n}")
    return Squared(n=n, square=n * n)


if __name__ == "__main__":
    assert sys.argv[1:] == ["stdio"], "usage: tasks_server.py stdio"
    server.run("stdio")
