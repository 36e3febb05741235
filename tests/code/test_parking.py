"""The bounds of programs waiting for a person: a snapshot longer than ``max_snapshot``, one
program more than ``max_paused``, and a wait longer than ``pause_timeout`` each stop that
program with a message naming the key, and no worker is held meanwhile."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from harness import Host, ToolCall, ToolResult
from harness.code.plugin import CodeTool
from harness.tools.approval_contract import Approved

from .conftest import project

pytestmark = pytest.mark.anyio
WAITING = 'g = await greet(name="Ada")\ng["greeting"]'


class Person:
    """Asked about greet; answers yes only when told."""

    def __init__(self) -> None:
        self.asked = 0
        self.changed = anyio.Event()
        self.answer = anyio.Event()

    async def request(self, call: ToolCall, reason: str) -> Approved:
        self.asked += 1
        self.changed.set()
        self.changed = anyio.Event()
        await self.answer.wait()
        return Approved()

    async def until_asked(self, times: int) -> None:
        with anyio.fail_after(20):
            while self.asked < times:
                await self.changed.wait()


def code_tool(host: Host) -> CodeTool:
    definition = host.ctx.tools.get("run_code")
    assert definition is not None
    tool = getattr(definition.execute, "__self__", None)
    assert isinstance(tool, CodeTool)
    return tool


async def run(host: Host, code: str, person: Person, call_id: str = "rc") -> ToolResult:
    call = ToolCall(call_id, "run_code", {"code": code})
    result: ToolResult = await host.ctx.tools.execute(call, approval=person)
    return result


async def test_a_snapshot_longer_than_max_snapshot_stops_the_program(tmp_path: Path) -> None:
    config = project(tmp_path, "{timeout: 20, max_snapshot: 4KiB, workers: 1}")
    person = Person()
    async with Host(config) as host:
        result = await run(host, 'big = "x" * 100000\n' + WAITING, person)
        assert code_tool(host).pool.held == 0
    assert person.asked == 1
    assert result.code == "tool_error"
    assert result.error is not None
    assert "is larger than max_snapshot (4KiB), so it cannot wait for an approval" in result.error


async def test_one_program_more_than_max_paused_is_stopped_and_none_holds_a_worker(
    tmp_path: Path,
) -> None:
    config = project(tmp_path, "{timeout: 20, max_paused: 2, workers: 1}")
    person = Person()
    results: dict[str, ToolResult] = {}
    async with Host(config) as host, anyio.create_task_group() as group:
        tool = code_tool(host)

        async def waiting(name: str) -> None:
            results[name] = await run(host, WAITING, person, name)

        group.start_soon(waiting, "a")
        group.start_soon(waiting, "b")
        await person.until_asked(2)
        with anyio.fail_after(20):
            while True:  # both parked (the lot counts them once their workers are free)
                if tool.lot.count == 2:
                    break
                await anyio.sleep(0.01)
        assert tool.pool.held == 0  # two programs wait; the only worker is free
        other = await run(host, "sum(range(10))", person, "other")
        assert other.ok, other.error
        assert other.result["value"] == 45
        third = await run(host, WAITING, person, "c")
        person.answer.set()
    assert third.code == "tool_error"
    assert third.error is not None
    assert third.error.startswith(
        "2 programs already wait for an approval (max_paused 2); this one was stopped rather "
        "than hold a sandbox worker"
    )
    assert [results[name].result["value"] for name in "ab"] == ["Hello, Ada!"] * 2


async def test_a_wait_longer_than_pause_timeout_stops_the_program(tmp_path: Path) -> None:
    config = project(tmp_path, "{timeout: 20, pause_timeout: 0.5, workers: 1}")
    person = Person()
    async with Host(config) as host:
        result = await run(host, WAITING, person)
        assert code_tool(host).lot.count == 0
    assert result.code == "tool_error"
    assert result.error is not None
    assert "longer than pause_timeout (0.5 seconds); it was stopped" in result.error
