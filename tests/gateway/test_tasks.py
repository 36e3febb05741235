"""Upstream tasks pass through (DESIGN §12, §18). The upstream (``tasks_server.py``, the
SDK's ``MCPServer`` with the tasks extension, SEP-2663) lists its tools with
``execution.taskSupport: optional`` and runs them as tasks for a client that declares the
extension. A call that is a task downstream (a 2026-07-28 client of harness's MCP surface
that declared the extension) is a task upstream: harness follows it, passes its input round
to the caller and the answer back, and cancels it when the caller cancels. Any other call
(no MCP client, or one without the extension) declares no tasks upstream and is answered
at once, running the tool once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import anyio
import mcp_types as types
import pydantic
import pytest
from mcp import Client
from mcp.client.extension import ClientExtension, ResultClaim, advertise
from mcp.client.stdio import StdioServerParameters
from pydantic import ConfigDict, Field

from harness import Host
from harness.mcp import McpSurface

from .conftest import PYTHON, write_config

pytestmark = pytest.mark.anyio
TASKS_SERVER = str(Path(__file__).with_name("tasks_server.py"))
TASKS = "io.modelcontextprotocol/tasks"


def marks(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def test_the_upstream_makes_a_task_for_a_client_that_declares_the_extension(
    tmp_path: Path,
) -> None:
    """The control: the same upstream, called directly by the SDK's client at 2026-07-28
    with the extension declared, answers ``square`` with a task (the SDK's client, with no
    claim for ``resultType: "task"``, cannot read it), and without it answers at once."""
    log = tmp_path / "tasks.log"
    server = StdioServerParameters(
        command=PYTHON, args=[TASKS_SERVER, "stdio"], env={"TASKS_MARK": str(log)}
    )
    async with Client(server, mode="auto", extensions=[advertise(TASKS)]) as client:
        assert client.protocol_version == "2026-07-28"
        capabilities = client.server_capabilities
        assert capabilities is not None
        assert TASKS in (capabilities.extensions or {})
        with pytest.raises(pydantic.ValidationError, match="'task'"):
            await client.call_tool("square", {"n": 3})
    async with Client(server, mode="auto") as client:
        plain = await client.call_tool("square", {"n": 4})
        assert plain.structured_content == {"n": 4, "square": 16}
    assert marks(log) == ["task task-1", "ran square 3", "sync square", "ran square 4"]


@pytest.mark.parametrize("protocol", ["auto", "2026-07-28"])
async def test_a_task_capable_upstream_is_called_synchronously_through_harness(
    tmp_path: Path, protocol: str
) -> None:
    log = tmp_path / "tasks.log"
    entry = {
        "id": "up",
        "name": "harness:mcp-client",
        "config": {
            "command": PYTHON,
            "args": [TASKS_SERVER, "stdio"],
            "env": {"TASKS_MARK": str(log)},
            "protocol": protocol,
        },
    }
    async with Host(write_config(tmp_path, [entry])) as host:
        result = await host.tools.execute({"id": "1", "name": "up_square", "args": {"n": 7}})
        again = await host.tools.execute({"id": "2", "name": "up_square", "args": {"n": 8}})
    assert result.ok, result
    assert result.result == {"n": 7, "square": 49}
    assert again.result == {"n": 8, "square": 64}
    # Answered at once (no task made), and the tool ran once per call.
    assert marks(log) == ["sync square", "ran square 7", "sync square", "ran square 8"]


class Created(types.Result):
    """A ``CreateTaskResult``, as the downstream client claims it."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(alias="resultType")
    task_id: str = Field(alias="taskId")


class TaskRef(types.RequestParams):
    task_id: str = Field(alias="taskId")
    input_responses: dict[str, Any] | None = Field(default=None, alias="inputResponses")


class TaskCall(types.Request[TaskRef, str]):
    name_param = "taskId"


class Answer(types.Result):
    model_config = ConfigDict(extra="allow")


async def _unclaimed(result: Created, context: Any) -> types.CallToolResult:
    raise AssertionError("the test reads its tasks itself")


class Tasks(ClientExtension):
    """The downstream client declares the extension and reads a task result."""

    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=Created, resolve=_unclaimed)]


def modern_entry(log: Path) -> dict[str, Any]:
    config = {
        "command": PYTHON,
        "args": [TASKS_SERVER, "stdio"],
        "env": {"TASKS_MARK": str(log)},
        "protocol": "2026-07-28",
    }
    return {"id": "up", "name": "harness:mcp-client", "config": config}


async def ask(client: Client, method: str, task: str, **responses: Any) -> dict[str, Any]:
    params = TaskRef(taskId=task, inputResponses=responses or None)
    answer = await client.session.send_request(TaskCall(method=method, params=params), Answer)
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


async def until(client: Client, task: str, status: str) -> dict[str, Any]:
    """Poll harness's task until it has ``status`` (as its client must: tasks are polled)."""
    for _ in range(1200):
        got = await ask(client, "tasks/get", task)
        if got["status"] == status:
            return got
        assert got["status"] in ("working", "input_required"), got
        await anyio.sleep(0.025)
    raise AssertionError(f"task {task} never reached {status}")


async def marked(log: Path, line: str) -> None:
    for _ in range(1200):
        if line in marks(log):
            return
        await anyio.sleep(0.025)
    raise AssertionError(f"{line!r} never in {marks(log)}")


async def started(client: Client, tool: str, args: dict[str, Any]) -> str:
    created = await client.session.call_tool(tool, args, allow_claimed=True)
    assert isinstance(created, Created), created
    return created.task_id


async def test_a_task_downstream_is_a_task_upstream_and_a_plain_call_stays_plain(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tasks.log"
    async with Host(write_config(tmp_path, [modern_entry(log)])) as host:
        definition = host.tools.get("up_square")
        assert definition is not None
        assert definition.task == "optional"  # the upstream lists it so
        surface = McpSurface(host.ctx)
        surface.attach()
        with anyio.fail_after(60):
            async with Client(surface.server, mode="2026-07-28", extensions=[Tasks()]) as client:
                task = await started(client, "up_square", {"n": 5})
                done = await until(client, task, "completed")
            async with Client(surface.server, mode="2026-07-28") as plain:
                answered = await plain.call_tool("up_square", {"n": 6})
    assert done["result"]["structuredContent"] == {"n": 5, "square": 25}
    assert answered.structured_content == {"n": 6, "square": 36}
    assert marks(log) == ["task task-1", "ran square 5", "sync square", "ran square 6"]


async def test_an_upstream_task_s_input_goes_to_the_caller_and_its_answer_back(
    tmp_path: Path,
) -> None:
    log = tmp_path / "tasks.log"
    async with Host(write_config(tmp_path, [modern_entry(log)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        with anyio.fail_after(60):
            async with Client(surface.server, mode="2026-07-28", extensions=[Tasks()]) as client:
                task = await started(client, "up_confirm", {})
                asking = await until(client, task, "input_required")
                (key,) = asking["inputRequests"]
                assert asking["inputRequests"][key]["params"]["message"] == "Sure?"
                answer = {"action": "accept", "content": {"sure": True}}
                await ask(client, "tasks/update", task, **{key: answer})
                done = await until(client, task, "completed")
    (block,) = done["result"]["content"]
    assert block["text"] == "accept: {'sure': True}"
    assert marks(log) == ["task task-1", "update task-1 accept"]


async def test_cancelling_the_task_cancels_the_upstream_s(tmp_path: Path) -> None:
    log = tmp_path / "tasks.log"
    async with Host(write_config(tmp_path, [modern_entry(log)])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        with anyio.fail_after(60):
            async with Client(surface.server, mode="2026-07-28", extensions=[Tasks()]) as client:
                task = await started(client, "up_wait", {})
                await marked(log, "polled task-1")  # harness follows the upstream's task
                await ask(client, "tasks/cancel", task)
                await marked(log, "cancel task-1")
                got = await ask(client, "tasks/get", task)
    assert got["status"] == "cancelled"
    assert marks(log) == ["task task-1", "polled task-1", "cancel task-1"]
