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

It lists ``square``, ``confirm`` and ``wait`` with ``execution.taskSupport: optional`` (a
middleware adds it: ``MCPServer`` has no such option). As tasks, ``confirm`` is
``input_required`` with one form (``sure``) until ``tasks/update`` answers it, then
completed with the answer; ``wait`` works until ``tasks/cancel`` (marked ``update ID
ACTION``, ``polled ID`` on its first poll while working, and ``cancel ID``). Called at
once, ``confirm`` and ``wait`` answer at once.
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
    inputResponses: dict[str, Any] | None = None


class Tasks(Extension):
    """Server-directed tasks for the tools in ``supporting``, for clients that opted in."""

    identifier = TASKS

    def __init__(self, supporting: set[str]) -> None:
        self.supporting = supporting
        self.finished: dict[str, dict[str, Any]] = {}

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("tasks/get", TaskParams, self.get),
            MethodBinding("tasks/update", TaskParams, self.update),
            MethodBinding("tasks/cancel", TaskParams, self.cancel),
        ]

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
        if params.name != "square":  # still running: input_required, or working
            self.finished[task] = _task(
                task, "input_required" if params.name == "confirm" else "working"
            )
            if params.name == "confirm":
                self.finished[task]["inputRequests"] = {"sure": SURE}
            return {"resultType": "task", **self.finished[task]}
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
        task = self.finished[params.taskId]
        if task["status"] == "working" and not task.get("polled"):
            task["polled"] = True  # not a Task field: the SDK's client ignores it
            mark(f"polled {params.taskId}")
        return {"resultType": "complete", **task}

    async def update(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> HandlerResult:
        answer = (params.inputResponses or {}).get("sure") or {}
        mark(f"update {params.taskId} {answer.get('action')}")
        task = self.finished[params.taskId]
        task.pop("inputRequests", None)
        text = f"{answer.get('action')}: {answer.get('content')}"
        task.update(status="completed", result={"content": [{"type": "text", "text": text}]})
        return {"resultType": "complete"}

    async def cancel(
        self, ctx: ServerRequestContext[Any, Any], params: TaskParams
    ) -> HandlerResult:
        mark(f"cancel {params.taskId}")
        self.finished[params.taskId].update(status="cancelled")
        return {"resultType": "complete"}


SURE = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Sure?",
        "requestedSchema": {"type": "object", "properties": {"sure": {"type": "boolean"}}},
    },
}


def _task(task: str, status: str) -> dict[str, Any]:
    now = datetime.now(UTC).isoformat()
    return {
        "taskId": task,
        "status": status,
        "createdAt": now,
        "lastUpdatedAt": now,
        "ttlMs": 60_000,
        "pollIntervalMs": 50,
    }


async def task_support(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """List every tool with ``execution.taskSupport: optional``."""
    result = await call_next(ctx)  # the wire's JSON
    if ctx.method == "tools/list" and isinstance(result, dict):
        for tool in result.get("tools", []):
            tool["execution"] = {"taskSupport": "optional"}
    return result


def _opted_in(ctx: ServerRequestContext[Any, Any], params: CallToolRequestParams) -> bool:
    capabilities = ctx.session.client_capabilities
    if capabilities is not None and TASKS in (capabilities.extensions or {}):
        return True
    requested: Any = (params.meta or {}).get(CAPABILITIES) or {}
    return isinstance(requested, dict) and TASKS in (requested.get("extensions") or {})


server = MCPServer(
    "tasks-upstream",
    extensions=[Tasks({"square", "confirm", "wait"})],
    middleware=[task_support],
)


class Squared(BaseModel):
    n: int
    square: int


@server.tool(description="Square n (a task, for a client that opted in to tasks).")
def square(n: int) -> Squared:
    mark(f"ran square {n}")
    return Squared(n=n, square=n * n)


@server.tool(description="Ask whether the caller is sure (a task, for a client that opted in).")
def confirm() -> str:
    return "asked nobody"


@server.tool(description="Wait until cancelled (a task, for a client that opted in).")
def wait() -> str:
    return "waited for nothing"


if __name__ == "__main__":
    assert sys.argv[1:] == ["stdio"], "usage: tasks_server.py stdio"
    server.run("stdio")
