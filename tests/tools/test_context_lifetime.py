"""The context the kernel makes for a call that entered without one (the Python surface's):
what the body sees in it, its deadline counted from before the body's first step (its pace is
made at the first need), and its lifetime (freed when the call ends, with no cycle left)."""

from __future__ import annotations

import gc
import time
import weakref
from collections.abc import Iterator
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from harness import CallContext, Context, ToolCall, define_tool, tool

pytestmark = pytest.mark.anyio


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The cycle collector off: what is freed is freed by reference counts alone."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def work(seconds: float) -> None:
    """A body's own blocking work (not a wait for anything)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


async def test_the_kernels_context_is_freed_when_the_call_ends(
    root: Context, no_collector: None
) -> None:
    kept: list[weakref.ref[CallContext]] = []

    @tool
    async def at_once(ctx: CallContext) -> int:
        """Return on the first step."""
        kept.append(weakref.ref(ctx))
        return 1

    async def later(args: dict[str, Any], ctx: CallContext) -> int:
        kept.append(weakref.ref(ctx))
        await anyio.lowlevel.checkpoint()
        return 2

    root.tools.register(at_once)
    root.tools.register(define_tool(name="later", description="suspends", execute=later))
    for name in ("at_once", "later"):
        call = ToolCall("1", name, {})
        assert (await root.tools.execute(call)).ok
        assert call.context is None  # the call entered without a context; it leaves without
    assert [ref() for ref in kept] == [None, None]


async def test_the_body_sees_the_python_surfaces_context_on_either_branch(root: Context) -> None:
    seen: list[Any] = []

    @tool
    async def look(ctx: CallContext) -> str:
        """Describe the context."""
        assert ctx.call.context is ctx
        seen.append(
            (
                ctx.surface,
                ctx.client.id,
                ctx.session,
                ctx.parent,
                ctx.round,
                ctx.recorded,
                ctx.call.id,
            )
        )
        left = ctx.time_left()
        return "timed" if left is not None and 59 < left <= 60 else f"left {left}"

    root.tools.register(look)
    assert (await root.tools.execute(ToolCall("fast", "look", {}, session="s1"))).result == "timed"

    async def allow(call: ToolCall, next: Any) -> str:
        return "allow"

    root.on("tools/pre-execute", allow)  # the general branch
    assert (await root.tools.execute(ToolCall("general", "look", {}))).result == "timed"
    assert seen == [
        ("python", None, "s1", None, 0, [], "fast"),
        ("python", None, None, None, 0, [], "general"),
    ]


async def test_the_deadline_counts_the_first_step(root: Context) -> None:
    @tool(timeout=0.3)
    async def slow_start(ctx: CallContext) -> str:
        """Work 0.6 s before the first suspension, then wait."""
        work(0.6)
        left = ctx.time_left()
        if left is None or left > 0.01:
            return f"the deadline forgot the first step: {left} s left"
        await anyio.sleep(10)
        return "never"

    @tool(timeout={"idle": 0.3})
    async def quiet_start(ctx: CallContext) -> str:
        """Report nothing for 0.6 s, then wait."""
        work(0.6)
        await anyio.sleep(10)
        return "never"

    root.tools.register(slow_start)
    root.tools.register(quiet_start)
    with anyio.fail_after(5):
        slow = await root.tools.execute(ToolCall("s", "slow_start", {}))
        quiet = await root.tools.execute(ToolCall("q", "quiet_start", {}))
    assert slow.code == "timeout", slow
    assert "timed out after 0.3 seconds" in (slow.error or "")
    assert quiet.code == "timeout", quiet
    assert "reported no progress for 0.3 seconds" in (quiet.error or "")
