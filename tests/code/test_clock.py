"""A program's timeout counts the time it runs: a person's answer to an approval does not."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host, ToolCall, ToolResult, define_tool
from harness.tools.approval_contract import ApprovalAnswer, Approved

from .conftest import project
from .test_approvals import PROGRAM

pytestmark = pytest.mark.anyio


async def _nap(args: dict[str, Any]) -> str:
    await anyio.sleep(args["seconds"])
    return "rested"


NAP = define_tool(
    name="nap",
    description="Sleep a while",
    parameters={"seconds": {"type": "number", "required": True}},
    output={"schema": {"type": "string"}},
    execute=_nap,
)


class SlowPerson:
    """An approver who answers ``after`` seconds, longer than the program's timeout."""

    def __init__(self, after: float) -> None:
        self.after = after
        self.asked = 0

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        self.asked += 1
        await anyio.sleep(self.after)
        return Approved()


async def run_asking(host: Host, code: str, person: SlowPerson) -> tuple[ToolResult, float]:
    began = time.perf_counter()
    with anyio.fail_after(30):
        call = ToolCall("rc", "run_code", {"code": code})
        result = await host.ctx.tools.execute(call, approval=person)
    return result, time.perf_counter() - began


async def test_an_answer_slower_than_the_timeout_does_not_end_the_program(
    tmp_path: Path,
) -> None:
    async with Host(project(tmp_path, "{timeout: 1, max_calls: 50}")) as host:
        person = SlowPerson(after=2.0)
        result, took = await run_asking(host, PROGRAM, person)
    assert result.ok, result.error
    assert result.result["output"].splitlines() == ["first 3", "greeted Hello, Ada!", "last 13"]
    assert result.result["value"] == 13
    assert person.asked == 1
    assert took >= 2.0


async def test_the_clock_runs_on_before_and_after_the_wait(tmp_path: Path) -> None:
    code = (
        "await nap(seconds=1.0)\nawait greet(name='Ada')\n"
        "print('answered')\nawait nap(seconds=1.0)\nprint('never')"
    )
    async with Host(project(tmp_path, "{timeout: 2, max_calls: 50}")) as host:
        host.ctx.tools.register(NAP)
        person = SlowPerson(after=1.5)
        result, took = await run_asking(host, code, person)
        after = await host.ctx.tools.execute(ToolCall("n", "run_code", {"code": "1 + 1"}))
    assert result.code == "timeout", result.error
    assert result.error == "Tool run_code timed out after 2 seconds"
    # a second and a little, the 1.5 s answer (not counted), then what is left of the 2 s
    assert 3.4 <= took < 10
    assert person.asked == 1
    assert after.ok, after.error  # the pool replaced the killed worker
    assert after.result["value"] == 2
