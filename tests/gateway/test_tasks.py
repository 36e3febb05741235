"""A task-capable upstream is called synchronously (DESIGN §12: harness does not pass tasks
through yet). The upstream (``tasks_server.py``, the SDK's ``MCPServer`` with the tasks
extension, SEP-2663) runs ``square`` as a task for a client that declares the extension;
harness declares it to no upstream, so the call is answered at once, and runs once."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.stdio import StdioServerParameters

from harness import Host

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
