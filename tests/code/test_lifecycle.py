"""The pool lives with its entry; cancelling run_code stops the program and its calls; the
registry is read at each call, so a hot reload is live inside a running program."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from harness import Host, ToolCall, ToolResult

from ..helpers import write
from .conftest import Hold, project, run

pytestmark = pytest.mark.anyio


def monty_workers() -> set[int]:
    """The sandbox worker processes that are children of this process."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().split(b"\0")[0]
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and command.endswith(b"monty"):
            found.add(int(entry.name))
    return found


async def test_the_pool_starts_with_the_entry_and_closes_with_it(tmp_path: Path) -> None:
    before = monty_workers()
    async with Host(project(tmp_path)) as host:
        assert monty_workers() - before
        assert (await run(host, "1 + 1")).result["value"] == 2
        host.ctx.tools.list()
    assert monty_workers() - before == set()


async def test_disabling_the_entry_removes_run_code_and_its_workers(tmp_path: Path) -> None:
    before = monty_workers()
    async with Host(project(tmp_path)) as host:
        assert "run_code" in host.ctx.tools.list()
        text = (tmp_path / "cordis.yml").read_text()
        (tmp_path / "cordis.yml").write_text(
            text.replace("name: harness:code", "name: harness:code\n    enabled: false")
        )
        await host.reload()
        assert "run_code" not in host.ctx.tools.list()
        assert monty_workers() - before == set()


@pytest.mark.parametrize("where", ["in a tool call", "in sandboxed code"])
async def test_cancelling_run_code_stops_the_program_and_its_pending_calls(
    host: Host, where: str
) -> None:
    hold = Hold(host.ctx.tools)
    program = (
        "await hold()"
        if where == "in a tool call"
        else "await add(a=1, b=1)\nwhile True:\n    pass"
    )
    results: list[ToolResult] = []
    started = anyio.Event()
    host.ctx.on("code/result", lambda call, result, ms: started.set())
    async with anyio.create_task_group() as group:

        async def program_call() -> None:
            results.append(await run(host, program))

        group.start_soon(program_call)
        with anyio.fail_after(20):
            await (hold.started if where == "in a tool call" else started).wait()
        group.cancel_scope.cancel()
    assert [result.code for result in results] == ["cancelled"]
    if where == "in a tool call":
        assert hold.cancelled == 1
    after = await run(host, "await add(a=20, b=22)")
    assert after.ok, after.error
    assert after.result["value"] == 42


async def test_cancelling_a_program_cancels_every_call_it_has_in_flight(host: Host) -> None:
    hold = Hold(host.ctx.tools, expect=2)
    results: list[ToolResult] = []
    async with anyio.create_task_group() as group:

        async def program_call() -> None:
            with anyio.CancelScope() as scope:
                scopes.append(scope)
                results.append(
                    await run(host, "import asyncio\nawait asyncio.gather(hold(), hold())")
                )

        scopes: list[anyio.CancelScope] = []
        group.start_soon(program_call)
        with anyio.fail_after(20):
            await hold.started.wait()
        scopes[0].cancel()
    assert hold.cancelled == 2


STAMP = """
from harness import define_tool

inject = ["tools"]


def apply(ctx):
    ctx.tools.register(define_tool(
        name="stamp", description="Say which version answers.", parameters={{}},
        output={{"schema": {{"type": "string"}}}}, execute=lambda args: "{version}"))
"""


async def test_a_tool_reloaded_mid_program_answers_the_next_call_in_its_new_version(
    tmp_path: Path,
) -> None:
    source = write(tmp_path / "plugins" / "stamp.py", STAMP.format(version="v1"))
    config = project(tmp_path, extra=f"  - {{ id: stamp, name: {source} }}\n")
    async with Host(config, watch=True) as host:
        hold = Hold(host.ctx.tools)
        reloaded = anyio.Event()
        host.ctx.on("reload/done", lambda report: reloaded.set())
        results: list[ToolResult] = []
        program = "a = await stamp()\nawait hold()\nb = await stamp()\n[a, b]"
        async with anyio.create_task_group() as group:

            async def program_call() -> None:
                results.append(await run(host, program))

            group.start_soon(program_call)
            with anyio.fail_after(20):
                await hold.started.wait()
            write(source, STAMP.format(version="v2"))
            with anyio.fail_after(30):
                await reloaded.wait()
            hold.release.set()
    (result,) = results
    assert result.ok, result.error
    assert result.result["value"] == ["v1", "v2"]


async def test_calls_from_a_program_are_real_calls_with_a_parent(host: Host) -> None:
    seen: list[tuple[str, str, str | None]] = []

    async def pre(call: ToolCall, next: object) -> object:
        seen.append(("pre", call.name, call.parent))
        return await next()  # type: ignore[operator]

    host.ctx.on("tools/pre-execute", pre)
    host.ctx.on(
        "tools/result", lambda call, result: seen.append(("result", call.name, call.parent))
    )
    result = await run(host, "await add(a=1, b=2)", "outer")
    assert result.ok
    assert seen == [
        ("pre", "run_code", None),
        ("pre", "add", "outer"),
        ("result", "add", "outer"),
        ("result", "run_code", None),
    ]


async def test_a_tool_removed_mid_program_ends_unknown_tool_and_a_crash_is_contained(
    host: Host,
) -> None:
    from harness import define_tool

    hold = Hold(host.ctx.tools)
    dispose = host.ctx.tools.register(
        define_tool(name="gone", description="Soon gone", execute=lambda args: "here")
    )
    program = (
        "a = await gone()\nawait hold()\ntry:\n    await gone()\nexcept LookupError as e:\n"
        "    print(str(e))\na"
    )
    results: list[ToolResult] = []
    async with anyio.create_task_group() as group:

        async def program_call() -> None:
            results.append(await run(host, program))

        group.start_soon(program_call)
        with anyio.fail_after(20):
            await hold.started.wait()
        dispose()
        hold.release.set()
    (result,) = results
    assert result.ok, result.error
    assert result.result["output"] == "unknown_tool: Tool gone not found\n"
    assert result.result["value"] == "here"

    # a worker that dies under a program fails that program, and is replaced
    hold.dispose()
    again = Hold(host.ctx.tools)
    results.clear()
    async with anyio.create_task_group() as group:

        async def doomed() -> None:
            results.append(await run(host, "await hold()\n1"))

        group.start_soon(doomed)
        with anyio.fail_after(20):
            await again.started.wait()
        for pid in monty_workers():
            os.kill(pid, 9)
        again.release.set()
    (crashed,) = results
    assert crashed.code == "tool_error"
    assert crashed.error is not None
    assert crashed.error.startswith("the sandbox worker stopped (")
    assert crashed.error.endswith("it has been replaced, run the program again")
    after = await run(host, "await add(a=1, b=1)")
    assert after.ok, after.error
