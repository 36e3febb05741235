"""A program's inner calls carry the program's context (DESIGN §16): their questions go to
the client that runs the program and to nobody else, and every wait for an answer (an
approval, or the inner tool's own question) stops the program's clock."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Answer, CallContext, Client, Host, ToolCall, ToolResult, define_tool
from harness.tools import kernel
from harness.tools.call_context import APPROVAL_KEY
from harness.tools.inputs import Input

from .conftest import PLUGINS, project

pytestmark = pytest.mark.anyio


async def _nickname(args: dict[str, Any], ctx: CallContext) -> str:
    answer = await ctx.ask(f"A nickname for {args['name']}?", {"nick": {"type": "string"}})
    return str((answer.content or {}).get("nick")) if answer.accepted else answer.action


NICKNAME = define_tool(
    name="nickname",
    description="Ask the user for a person's nickname",
    parameters={"name": {"type": "string", "required": True}},
    output={"schema": {"type": "string"}},
    execute=_nickname,
)


class Person(Client):
    """A client whose person approves every call and gives nicknames, once every client
    running a program has been asked (so both programs wait for answers at once)."""

    asks = True

    def __init__(self, id: str, nick: str, everyone: anyio.Event) -> None:
        super().__init__(id)
        self.nick = nick
        self.everyone = everyone
        self.asked: list[tuple[str, str, str]] = []
        """(the asking call's id, its parent's id, the message) of each question."""
        self.first = anyio.Event()

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        answers: dict[str, Any] = {}
        for key, request in requests.items():
            assert request.kind == "ask"
            parent = ctx.parent.call.id if ctx.parent is not None else ""
            self.asked.append((ctx.call.id, parent, request.message))
            self.first.set()
            await self.everyone.wait()
            if key == APPROVAL_KEY:
                answers[key] = Answer("accept", {"approve": True})
            else:
                answers[key] = Answer("accept", {"nick": self.nick})
        return answers


async def test_two_clients_programs_each_get_only_their_own_inner_calls_questions(
    tmp_path: Path,
) -> None:
    everyone = anyio.Event()
    alice = Person("client-alice", "Al", everyone)
    bob = Person("client-bob", "Bobby", everyone)
    results: dict[str, ToolResult] = {}
    async with Host(project(tmp_path)) as host:
        host.ctx.tools.register(NICKNAME)

        async def program(person: Person, name: str) -> None:
            code = (
                f'g = await greet(name="{name}")\nn = await nickname(name="{name}")\n'
                '[g["greeting"], n]'
            )
            call = ToolCall("rc", "run_code", {"code": code})  # both callers' request 1
            CallContext(call, "mcp", person)
            results[person.id or ""] = await host.ctx.tools.execute(call)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(program, alice, "Ada")
                group.start_soon(program, bob, "Bo")
                await alice.first.wait()
                await bob.first.wait()  # both programs wait for their person now
                everyone.set()
    for person, name, nick in ((alice, "Ada", "Al"), (bob, "Bo", "Bobby")):
        result = results[person.id or ""]
        assert result.ok, result.error
        assert result.result["value"] == [f"Hello, {name}!", nick]
        (approval_call, approval_parent, approval), (ask_call, ask_parent, question) = person.asked
        assert (approval_call, approval_parent) == ("rc/1", "rc")
        assert approval.startswith(f'Allow the tool call greet({{"name": "{name}"}})?')
        assert (ask_call, ask_parent, question) == ("rc/2", "rc", f"A nickname for {name}?")


class Slow(Client):
    """A person who takes ``after`` seconds, longer than the program's timeout, to answer
    the inner tool's own question."""

    def __init__(self, after: float) -> None:
        super().__init__("client-slow")
        self.after = after
        self.asked = 0

    async def answer(self, ctx: CallContext, requests: Mapping[str, Input]) -> dict[str, Any]:
        self.asked += 1
        await anyio.sleep(self.after)
        return {key: Answer("accept", {"nick": "Slowpoke"}) for key in requests}


async def test_an_inner_tool_s_own_question_does_not_count_against_the_program_s_timeout(
    tmp_path: Path,
) -> None:
    async with Host(project(tmp_path, "{timeout: 1, max_calls: 50}")) as host:
        host.ctx.tools.register(NICKNAME)
        person = Slow(after=2.0)
        call = ToolCall("rc", "run_code", {"code": 'await nickname(name="Ada")'})
        CallContext(call, "mcp", person)
        with anyio.fail_after(30):
            result = await host.ctx.tools.execute(call)
    assert result.ok, result.error
    assert result.result["value"] == "Slowpoke"
    assert person.asked == 1


async def test_a_console_answer_slower_than_the_timeout_does_not_end_the_program(
    tmp_path: Path,
) -> None:
    # nobody on the calling surface asks: the approval object's request waits for a page
    async with Host(project(tmp_path, "{timeout: 1, max_calls: 50}")) as host:
        approvals = host.ctx.tools.approvals
        detach = approvals.attach()  # a console page is open
        requests: list[dict[str, Any]] = []
        asked = anyio.Event()

        def seen(fields: dict[str, Any]) -> None:
            requests.append(fields)
            asked.set()

        host.ctx.on("approval/request", seen)
        results: list[ToolResult] = []

        async def program() -> None:
            call = ToolCall("rc", "run_code", {"code": 'await greet(name="Ada")'})
            results.append(await host.ctx.tools.execute(call))

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(program)
                await asked.wait()
                await anyio.sleep(2.0)  # the person reads for longer than the 1 s timeout
                approvals.answer(requests[0]["id"], "allow_once")
        detach()
    (result,) = results
    assert result.ok, result.error
    assert result.result["value"] == {"greeting": "Hello, Ada!"}


async def test_loading_code_mode_leaves_calls_on_the_fast_branch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the kernel's general branch is the only caller of kernel.current: count who goes there
    general: list[str] = []
    current = kernel.current

    async def counted(tools: Any, call: ToolCall) -> Any:
        general.append(call.name)
        return await current(tools, call)

    monkeypatch.setattr(kernel, "current", counted)
    config = tmp_path / "cordis.yml"
    config.write_text(
        "insert:\n"
        f"  - {{ id: add, name: {PLUGINS / 'add.py'} }}\n"
        "  - { id: code, name: 'harness:code', config: {timeout: 20} }\n"
    )
    async with Host(config) as host:
        direct = await host.ctx.tools.execute(ToolCall("a", "add", {"a": 1, "b": 2}))
        program = await host.ctx.tools.execute(
            ToolCall("rc", "run_code", {"code": "await add(a=2, b=3)"})
        )
    assert direct.result == 3
    assert program.ok, program.error
    assert program.result["value"] == 5
    assert general == []  # no stage listener: run_code and its inner call too
