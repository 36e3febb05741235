"""An ``ask`` inside a program pauses it until the approval is answered."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from harness import Host, ToolCall, ToolResult
from harness.mcp import McpSurface
from harness.tools.approval_contract import ApprovalAnswer, Approved, Denied

from ..helpers import Elicitor
from .conftest import project

pytestmark = pytest.mark.anyio

PROGRAM = """
first = await add(a=1, b=2)
print("first", first)
try:
    greeting = await greet(name="Ada")
    print("greeted", greeting["greeting"])
except Exception as e:
    print("refused", str(e))
last = await add(a=first, b=10)
print("last", last)
last
"""


class Person:
    """An approver that waits for the test to answer, like a person at a console."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.answered = anyio.Event()
        self.answer: ApprovalAnswer = Denied()
        self.calls: list[ToolCall] = []

    async def request(self, call: ToolCall, reason: str) -> ApprovalAnswer:
        self.calls.append(call)
        self.asked.set()
        await self.answered.wait()
        return self.answer


@pytest.mark.parametrize(
    ("answer", "line"),
    [
        (Approved(), "greeted Hello, Ada!"),
        (Denied("not today"), "refused denied: Tool denied: the policy asks before greet"),
    ],
)
async def test_the_second_call_waits_for_its_approval_and_the_program_goes_on(
    host: Host, answer: ApprovalAnswer, line: str
) -> None:
    person = Person()
    person.answer = answer
    results: list[ToolResult] = []
    seen: list[str] = []
    host.ctx.on("code/result", lambda call, result, ms: seen.append(call.name))
    async with anyio.create_task_group() as group:

        async def program() -> None:
            call = ToolCall("rc", "run_code", {"code": PROGRAM})
            results.append(await host.ctx.tools.execute(call, approval=person))

        group.start_soon(program)
        with anyio.fail_after(20):
            await person.asked.wait()
        # paused at the second call: the first ran, the last has not
        assert seen == ["add"]
        assert [c.name for c in person.calls] == ["greet"]
        assert person.calls[0].parent == "rc"
        assert person.calls[0].id == "rc/2"
        person.answered.set()
    (result,) = results
    assert result.ok, result.error
    lines = result.result["output"].splitlines()
    assert lines[0] == "first 3"
    assert lines[1].startswith(line)
    assert lines[2] == "last 13"
    assert result.result["value"] == 13
    assert seen == ["add", "greet", "add"]


async def test_over_mcp_the_client_is_asked_mid_program_through_elicitation(
    tmp_path: Path,
) -> None:
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> types.ElicitResult:
        asked.append(params.message)
        approve = len(asked) == 1
        return types.ElicitResult(action="accept", content={"approve": approve})

    program = PROGRAM + "\nfinal = await greet(name='Bob')\n"
    async with Host(project(tmp_path)) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server, mode="legacy", elicitation_callback=elicit) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert "async def greet(name: str)" in (tools["run_code"].description or "")
            result = await client.session.call_tool("run_code", {"code": program})
    assert result.is_error is True  # the last greet is refused and not caught
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert "greeted Hello, Ada!" in text
    assert "last 13" in text
    assert "PermissionError: denied: Tool denied: the policy asks before greet" in text
    assert len(asked) == 2
    assert asked[0].startswith('Allow the tool call greet({"name": "Ada"})?')
    assert asked[1].startswith('Allow the tool call greet({"name": "Bob"})?')


async def test_a_client_that_answers_between_requests_gets_a_denial_saying_why(
    tmp_path: Path,
) -> None:
    async with Host(project(tmp_path)) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server, elicitation_callback=Elicitor()) as client:
            result = await client.session.call_tool("run_code", {"code": PROGRAM})
    assert result.is_error is False
    output = (result.structured_content or {})["output"]
    assert (
        "refused denied: Tool denied: greet needs approval, and this client answers approvals "
        "only between requests, not in the middle of a program; call it directly" in output
    )
    assert "last 13" in output
