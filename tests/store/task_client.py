"""The official MCP SDK client as an ``io.modelcontextprotocol/tasks`` client (2026-07-28,
streamable HTTP): it declares the extension, starts a task with ``tools/call`` (the
``CreateTaskResult`` read through a result claim) and sends ``tasks/get``, ``tasks/update``
and ``tasks/cancel`` as the extension's requests (``Mcp-Name`` set to the ``taskId``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any, ClassVar, Literal

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from pydantic import ConfigDict, Field

TASKS = "io.modelcontextprotocol/tasks"


class Answer(types.Result):
    """Any answer of the extension's methods, as it came."""

    model_config = ConfigDict(extra="allow")


class CreatedTask(types.Result):
    """A ``CreateTaskResult``: the task the call became."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")
    status: str


class TaskParams(types.RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class TaskRequest(types.Request[TaskParams, str]):
    name_param: ClassVar[str | None] = "taskId"


async def _unread(result: CreatedTask, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("the tests read the task themselves (allow_claimed=True)")


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=_unread)]


class TaskClient:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def start(self, tool: str, args: dict[str, Any]) -> CreatedTask:
        created = await self.client.session.call_tool(tool, args, allow_claimed=True)
        assert isinstance(created, CreatedTask), created
        return created

    async def _send(
        self, method: str, task_id: str, responses: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params = TaskParams(taskId=task_id, inputResponses=responses)
        request = TaskRequest(method=method, params=params)
        answer = await self.client.session.send_request(request, Answer)
        wire = answer.model_dump(by_alias=True, mode="json", exclude_none=True)
        wire.pop("_meta", None)  # the server's name and version
        return wire

    async def get(self, task_id: str) -> dict[str, Any]:
        return await self._send("tasks/get", task_id)

    async def update(self, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
        return await self._send("tasks/update", task_id, responses)

    async def cancel(self, task_id: str) -> dict[str, Any]:
        return await self._send("tasks/cancel", task_id)


@contextlib.asynccontextmanager
async def over_tasks(port: int) -> AsyncIterator[TaskClient]:
    """A tasks client of the MCP endpoint of the ``harness run`` on ``port``."""
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=60))
    url = f"http://127.0.0.1:{port}/mcp"
    transport = streamable_http_client(url, http_client=http)
    async with http, Client(transport, mode="2026-07-28", extensions=[Tasks()]) as client:
        await client.list_tools()  # a 2026-07-28 call names a listed tool
        yield TaskClient(client)
