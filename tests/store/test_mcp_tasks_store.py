"""``McpTasks`` over the store in one process, on asyncio and trio: two roots, each with its
own ``harness:store`` on one SQLite file (as two replicas), one running the bodies. The other
lists the task, answers its question and cancels it, through the store; the body running on
the first root gets the answer and is cancelled."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import CallContext, Context, ToolCall, ToolsService, tool
from harness.mcp.client import McpClient
from harness.mcp.tasks import McpTasks
from harness.store import StoreConfig, StoreService

pytestmark = pytest.mark.anyio


class Bodies:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.inside = anyio.Event()
        self.ended = anyio.Event()

    def tools(self) -> list[Any]:
        @tool(task="optional")
        async def hold() -> str:
            """Wait until cancelled."""
            self.inside.set()
            try:
                await anyio.sleep_forever()
            finally:
                self.lines.append("hold ended")
                self.ended.set()
            return "never"

        @tool(task="optional")
        async def confirm(ctx: CallContext) -> str:
            """Ask, then say what was answered."""
            form = {"type": "object", "properties": {"go": {"type": "boolean"}}}
            answer = await ctx.ask("Go on?", form)
            self.lines.append(f"confirm {answer.action} {answer.content}")
            return "went" if (answer.content or {}).get("go") else "stopped"

        return [hold, confirm]


async def replica(stack: AsyncExitStack, url: str, bodies: Bodies) -> McpTasks:
    root = await stack.enter_async_context(Context())
    await root.plugin(ToolsService)
    await root.plugin(StoreService, StoreConfig(url=url))
    for definition in bodies.tools():
        root.tools.register(definition)
    return McpTasks(root)


@pytest.fixture
async def replicas(tmp_path: Path) -> AsyncIterator[tuple[McpTasks, McpTasks, Bodies]]:
    url = f"sqlite:///{tmp_path / 'harness.db'}"
    bodies = Bodies()
    async with AsyncExitStack() as stack:
        yield await replica(stack, url, bodies), await replica(stack, url, bodies), bodies


async def until(tasks: McpTasks, task_id: str, status: str) -> dict[str, Any]:
    with anyio.fail_after(10):
        while True:
            [found] = [task for task in await tasks.listing() if task["id"] == task_id]
            if found["status"] == status:
                return found
            await anyio.sleep(0.02)


async def test_another_replica_answers_and_cancels_a_running_task(
    replicas: tuple[McpTasks, McpTasks, Bodies],
) -> None:
    a, b, bodies = replicas
    client = McpClient(None)
    asking = (await a.start(ToolCall("1", "confirm", {}), client))["taskId"]
    await until(b, asking, "input_required")
    board = b.board()
    assert board is not None
    row = await board.get(asking)
    assert row is not None
    [key] = row["requests"]
    assert await board.answer(asking, {key: {"action": "accept", "content": {"go": True}}})
    await until(b, asking, "completed")
    done = await board.get(asking)
    assert done is not None
    assert done["result"]["content"] == [{"type": "text", "text": "went"}]

    held = (await a.start(ToolCall("2", "hold", {}), client))["taskId"]
    with anyio.fail_after(10):
        await bodies.inside.wait()
    listed = await b.listing()
    assert [(task["id"], task["tool"], task["status"]) for task in listed] == [
        (held, "hold", "working"),
        (asking, "confirm", "completed"),
    ]
    assert await b.cancel(held) == "cancelled"
    with anyio.fail_after(10):
        await bodies.ended.wait()  # a's watch saw the cancel
    assert await a.cancel(held) == "cancelled"  # a finished task keeps its status
    assert await b.cancel("no-such-task") is None
    assert bodies.lines == ["confirm accept {'go': True}", "hold ended"]
