"""Timeouts armed only when a body suspends: every guarantee of a cancel scope still holds.

Each test runs on asyncio and trio. The bodies suspend in different ways (plain
checkpoints, a thread, a stream, a task group) so the pass-through of every step and
every exception between the event loop and the body is exercised.
"""

from __future__ import annotations

import math
import time
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import Context, ToolCall, ToolResult, ToolsService, define_tool
from harness.tools.cancel_check import caller_cancelled
from harness.tools.deadline import run_with_deadline, running_loop

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio


async def run(ctx: Context, execute: Any, limit: float | None, args: Any = None) -> ToolResult:
    definition = define_tool(name="body", description="b", execute=execute, timeout=limit)
    await ctx.plugin(tool_plugin(definition, name="deadline_case"))
    result: ToolResult = await ctx.tools.execute(ToolCall("c", "body", args or {}))
    return result


async def test_a_body_that_never_suspends_is_not_cut_short(root: Context) -> None:
    async def quick(args: dict[str, Any]) -> int:
        return 7

    result = await run(root, quick, limit=1e-9)
    assert (result.code, result.result) == (None, 7)


async def test_timeout_after_several_steps_stops_the_body_first(root: Context) -> None:
    steps: list[str] = []

    async def stepping(args: dict[str, Any]) -> str:
        for index in range(3):
            await anyio.lowlevel.checkpoint()
            steps.append(f"step {index}")
        try:
            await anyio.sleep(30)
        finally:
            steps.append("cleanup ran")
        return "never"

    result = await run(root, stepping, limit=0.05)
    assert result.code == "timeout"
    assert result.error == "Tool body timed out after 0.05 seconds"
    assert steps == ["step 0", "step 1", "step 2", "cleanup ran"]


async def test_the_deadline_counts_from_before_the_first_step(root: Context) -> None:
    async def slow_start(args: dict[str, Any]) -> str:
        until = time.monotonic() + 0.2
        while time.monotonic() < until:  # a first step that hogs the loop past the timeout
            pass
        await anyio.lowlevel.checkpoint()  # the first checkpoint: already past the deadline
        return "finished late"

    result = await run(root, slow_start, limit=0.1)
    assert result.code == "timeout"


async def test_values_and_errors_pass_through_every_later_step(root: Context) -> None:
    async def busy(args: dict[str, Any]) -> dict[str, Any]:
        from_thread = await anyio.to_thread.run_sync(lambda: 21 * 2)
        send, receive = anyio.create_memory_object_stream[str](1)
        async with send, receive:
            await send.send("through a stream")
            received = await receive.receive()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(anyio.sleep, 0)
                raise KeyError("raised inside a task group")
        except* KeyError as group_error:
            caught = str(group_error.exceptions[0])
        return {"thread": from_thread, "stream": received, "caught": caught}

    result = await run(root, busy, limit=30)
    assert result.code is None
    assert result.result == {
        "thread": 42,
        "stream": "through a stream",
        "caught": "'raised inside a task group'",
    }


async def test_an_error_after_suspending_is_a_tool_error(root: Context) -> None:
    async def fails_later(args: dict[str, Any]) -> None:
        await anyio.lowlevel.checkpoint()
        raise ValueError("disk is full")

    result = await run(root, fails_later, limit=30)
    assert (result.code, result.error) == ("tool_error", "disk is full")


async def test_an_inner_timeout_of_the_body_fires_first_and_the_body_goes_on(
    root: Context,
) -> None:
    async def own_timeout(args: dict[str, Any]) -> str:
        await anyio.lowlevel.checkpoint()
        with anyio.move_on_after(0.01) as scope:
            await anyio.sleep(30)
        await anyio.lowlevel.checkpoint()
        return f"inner scope caught: {scope.cancelled_caught}"

    result = await run(root, own_timeout, limit=30)
    assert (result.code, result.result) == (None, "inner scope caught: True")


async def test_shielded_cleanup_finishes_before_the_timeout_result(root: Context) -> None:
    cleaned: list[str] = []

    async def careful(args: dict[str, Any]) -> str:
        try:
            await anyio.sleep(30)
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.01)
                cleaned.append("shielded cleanup ran")
        return "never"

    result = await run(root, careful, limit=0.05)
    assert result.code == "timeout"
    assert cleaned == ["shielded cleanup ran"]


async def test_cancelling_the_caller_with_a_default_timeout(root: Context) -> None:
    started = anyio.Event()
    cleaned: list[str] = []
    results: list[ToolResult] = []
    after: list[str] = []

    async def long_running(args: dict[str, Any]) -> str:
        await anyio.lowlevel.checkpoint()
        started.set()
        try:
            await anyio.sleep(30)
        finally:
            cleaned.append("cleanup ran")
        return "never"

    await root.plugin(tool_plugin(define_tool(name="long", description="l", execute=long_running)))

    async def caller(scope: anyio.CancelScope) -> None:
        with scope:
            results.append(await root.tools.execute(ToolCall("c", "long", {})))
            await anyio.lowlevel.checkpoint()  # the caller's scope is still cancelled here
            after.append("the caller went on")

    scope = anyio.CancelScope()
    async with anyio.create_task_group() as group:
        group.start_soon(caller, scope)
        await started.wait()
        scope.cancel()
    assert cleaned == ["cleanup ran"]
    assert [r.code for r in results] == ["cancelled"]
    assert after == []
    assert scope.cancelled_caught


async def test_a_caller_cancelled_during_the_first_step_stops_at_the_first_suspension() -> None:
    ran: list[str] = []
    scope = anyio.CancelScope()

    async def suspends(args: dict[str, Any]) -> str:
        ran.append("first step")
        scope.cancel()  # the caller is cancelled while the eager first step runs
        await anyio.lowlevel.checkpoint()
        ran.append("second step")
        return "done"

    async with Context() as root:
        await root.plugin(ToolsService)
        await root.plugin(tool_plugin(define_tool(name="s", description="s", execute=suspends)))
        with scope:
            result = await root.tools.execute(ToolCall("c", "s", {}))
    assert result.code == "cancelled"
    assert ran == ["first step"]


async def test_run_with_deadline_directly() -> None:
    async def value() -> str:
        return "at once"

    async def later() -> str:
        await anyio.lowlevel.checkpoint()
        return "later"

    async def never() -> str:
        await anyio.sleep(30)
        return "never"

    assert await run_with_deadline(value(), 1) == ("at once", False)
    assert await run_with_deadline(later(), 1) == ("later", False)
    assert await run_with_deadline(never(), 0.01) == (None, True)


async def test_scopes_the_first_step_opens_stay_nested_on_timeout(root: Context) -> None:
    events: list[str] = []

    async def scoped(args: dict[str, Any]) -> str:
        # The first step opens a task group and a cancel scope and suspends inside them:
        # the deadline armed after it must not disturb their nesting.
        async with anyio.create_task_group() as group:
            group.start_soon(anyio.sleep, 30)
            with anyio.CancelScope():
                try:
                    await anyio.sleep(30)
                finally:
                    events.append("inner cleanup")
        return "never"

    result = await run(root, scoped, limit=0.05)
    assert result.code == "timeout"
    assert events == ["inner cleanup"]
    again = await run_with_deadline(_thread_then_value(), 30)
    assert again == ("from a thread", False)


async def _thread_then_value() -> str:
    # anyio's to_thread opens a (shielded) scope of its own in the first step
    return await anyio.to_thread.run_sync(lambda: "from a thread")


async def test_caller_cancelled_agrees_with_anyio() -> None:
    def expected() -> bool:
        return anyio.current_effective_deadline() == -math.inf

    # Scopes entered only to be inspected, never awaited in:
    seen: list[tuple[bool, bool]] = [(caller_cancelled(running_loop()), expected())]
    with anyio.CancelScope() as outer:  # noqa: ASYNC100
        seen.append((caller_cancelled(running_loop()), expected()))
        outer.cancel()
        seen.append((caller_cancelled(running_loop()), expected()))
        with anyio.CancelScope(shield=True):  # noqa: ASYNC100
            seen.append((caller_cancelled(running_loop()), expected()))
            with anyio.CancelScope():  # noqa: ASYNC100
                seen.append((caller_cancelled(running_loop()), expected()))
        with anyio.CancelScope():  # noqa: ASYNC100
            seen.append((caller_cancelled(running_loop()), expected()))
    assert seen == [
        (False, False),
        (False, False),
        (True, True),
        (False, False),
        (False, False),
        (True, True),
    ]
