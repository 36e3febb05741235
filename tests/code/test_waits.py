"""A program waiting for a person holds no sandbox worker: with more programs waiting for
approvals than there are workers, other clients' programs still run at once, and each
waiting program goes on where it stopped once it is answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from harness import Host, ToolCall, ToolResult
from harness.mcp import McpSurface
from harness.service import unwrap
from harness.tools.approval_contract import Approved, Denied
from harness.tools.service import ToolsService

from .conftest import Hold, project, run

pytestmark = pytest.mark.anyio

WAITING = {
    "Ada": (
        'squares = [i * i for i in range(10)]\nprint("before", sum(squares))\n'
        'g = await greet(name="Ada")\nprint("after", g["greeting"], sum(squares))\nsum(squares)',
        "before 285\nafter Hello, Ada! 285\n",
        285,
    ),
    "Bob": (
        "import asyncio\ntotal = 7\n"
        'a, g = await asyncio.gather(add(a=1, b=2), greet(name="Bob"))\n'
        'print("gathered", a, g["greeting"], total)\na + total',
        "gathered 3 Hello, Bob! 7\n",
        10,
    ),
    "Cy": (
        'x = {"n": 1}\ng = await greet(name="Cy")\nx["n"] += 1\nprint(g["greeting"], x)\nx',
        "Hello, Cy! {'n': 2}\n",
        {"n": 2},
    ),
}


class People:
    """MCP users who are asked about greet and answer only when the test says so."""

    def __init__(self, expect: int) -> None:
        self.expect = expect
        self.asked: list[str] = []
        self.all_asked = anyio.Event()
        self.answer = anyio.Event()

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult:
        self.asked.append(params.message)
        if len(self.asked) == self.expect:
            self.all_asked.set()
        await self.answer.wait()
        return types.ElicitResult(action="accept", content={"approve": True})


async def test_programs_waiting_for_approval_leave_the_workers_to_others(tmp_path: Path) -> None:
    config = project(tmp_path, "{timeout: 20, max_calls: 50, workers: 2}")
    async with Host(config) as host:
        tools = unwrap(host.ctx.tools)
        assert isinstance(tools, ToolsService)
        hold = Hold(tools, expect=2)
        surface = McpSurface(host.ctx)
        surface.attach()
        people = People(expect=len(WAITING))  # more programs waiting than workers
        results: dict[str, types.CallToolResult] = {}

        async def client(name: str, code: str, elicit: Any = None) -> None:
            async with Client(surface.server, mode="legacy", elicitation_callback=elicit) as c:
                results[name] = await c.session.call_tool("run_code", {"code": code})

        async with anyio.create_task_group() as group:
            for name, (code, _, _) in WAITING.items():
                group.start_soon(client, name, code, people)
            with anyio.move_on_after(30):
                await people.all_asked.wait()
            assert len(people.asked) == len(WAITING), (
                f"{len(people.asked)} of {len(WAITING)} programs reached their approval"
            )
            # every worker is free: two programs run at once while three wait for people
            with anyio.fail_after(30):
                group.start_soon(client, "hold 1", "await hold()")
                group.start_soon(client, "hold 2", "await hold()")
                await hold.started.wait()
                hold.release.set()
                await client("other", "await add(a=2, b=3)")
            assert not people.answer.is_set()
            people.answer.set()
    assert (results["other"].structured_content or {})["value"] == 5
    assert (results["hold 1"].structured_content or {})["value"] == "released"
    for name, (_, output, value) in WAITING.items():
        done = results[name]
        assert done.is_error is False, done.content
        assert done.structured_content is not None
        assert done.structured_content["output"] == output
        assert done.structured_content["value"] == value


class Person:
    """One approver who answers when the test says so."""

    def __init__(self, answer: Approved | Denied) -> None:
        self.asked = anyio.Event()
        self.answered = anyio.Event()
        self.answer = answer

    async def request(self, call: ToolCall, reason: str) -> Approved | Denied:
        self.asked.set()
        await self.answered.wait()
        return self.answer


@pytest.mark.parametrize("end", ["denied", "cancelled"])
async def test_a_parked_program_denied_or_cancelled_leaves_the_pool_whole(
    tmp_path: Path, end: str
) -> None:
    config = project(tmp_path, "{timeout: 20, max_calls: 50, workers: 1}")
    async with Host(config) as host:
        person = Person(Denied("no"))
        results: list[ToolResult] = []
        code = 'try:\n    await greet(name="Ada")\nexcept Exception as e:\n    print(e)\n"went on"'
        async with anyio.create_task_group() as group:

            async def waiting() -> None:
                call = ToolCall("rc", "run_code", {"code": code})
                results.append(await host.ctx.tools.execute(call, approval=person))

            group.start_soon(waiting)
            with anyio.fail_after(30):
                await person.asked.wait()
                other = await run(host, "await add(a=1, b=1)", "other")  # the one worker
            assert other.result["value"] == 2
            if end == "cancelled":
                group.cancel_scope.cancel()
            else:
                person.answered.set()
        if end == "denied":
            (result,) = results
            assert result.result["output"].startswith("denied: Tool denied: ")
            assert result.result["value"] == "went on"
        with anyio.fail_after(30):  # the worker is there for the next program
            after = await run(host, "await add(a=2, b=2)", "after")
        assert after.result["value"] == 4


async def test_an_approval_pauses_the_clock_of_its_own_program_when_ids_repeat(
    tmp_path: Path,
) -> None:
    # Two callers may both name their run_code call "rc" (two MCP clients' request 1): the
    # approval of A's call "rc/1" must restart A's clock, not that of B's call "rc/1".
    config = project(tmp_path, "{timeout: 2, max_calls: 50}")
    async with Host(config) as host:
        tools = unwrap(host.ctx.tools)
        assert isinstance(tools, ToolsService)
        hold = Hold(tools)
        person = Person(Approved())
        results: dict[str, ToolResult] = {}
        a_ended = anyio.Event()

        async def program(name: str, code: str, approval: Any = None) -> None:
            call = ToolCall("rc", "run_code", {"code": code})
            results[name] = await host.ctx.tools.execute(call, approval=approval)
            if name == "A":
                a_ended.set()

        async with anyio.create_task_group() as group:
            busy = 'await greet(name="Ada")\nwhile True:\n    pass'
            group.start_soon(program, "A", busy, person)
            with anyio.fail_after(30):
                await person.asked.wait()
                group.start_soon(program, "B", "await hold()")
                await hold.started.wait()
            person.answered.set()  # A runs on, and its 2 s run out
            with anyio.move_on_after(30):
                await a_ended.wait()
            hold.release.set()
            if not a_ended.is_set():
                group.cancel_scope.cancel()
    assert a_ended.is_set(), "A ran 30 s past its answer: its clock stayed paused"
    assert results["A"].code == "timeout", results["A"].error
