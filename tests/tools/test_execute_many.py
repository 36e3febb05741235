"""execute_many: concurrency-safe calls together (bounded), others alone, results in order."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from harness import Context, ToolCall, ToolsService, define_tool

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio


class Meter:
    """Counts calls in flight and remembers the high-water mark and the order of events."""

    def __init__(self) -> None:
        self.running = 0
        self.high = 0
        self.events: list[str] = []

    async def run(self, label: str) -> str:
        self.running += 1
        self.high = max(self.high, self.running)
        self.events.append(f"start {label}")
        await anyio.sleep(0.01)
        self.events.append(f"end {label}")
        self.running -= 1
        return label


def tools(meter: Meter) -> list[Any]:
    async def read(args: dict[str, Any]) -> str:
        return await meter.run(args["id"])

    async def write(args: dict[str, Any]) -> str:
        return await meter.run(args["id"])

    return [
        define_tool(name="read", description="r", execute=read, concurrency_safe=True),
        define_tool(name="write", description="w", execute=write),
        define_tool(
            name="maybe",
            description="m",
            execute=read,
            concurrency_safe=lambda args: args["id"].startswith("safe"),
        ),
    ]


async def test_results_in_call_order_with_bounded_parallelism(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    calls = [ToolCall(str(i), "read", {"id": f"r{i}"}) for i in range(12)]
    results = await root.tools.execute_many(calls, max_parallel=3)
    assert [r.result for r in results] == [f"r{i}" for i in range(12)]
    assert [r.id for r in results] == [str(i) for i in range(12)]
    assert meter.high == 3


async def test_default_bound_comes_from_service_config() -> None:
    meter = Meter()
    async with Context() as root:
        await root.plugin(ToolsService, {"max_parallel": 2})
        await root.plugin(tool_plugin(*tools(meter)))
        await root.tools.execute_many([{"name": "read", "args": {"id": str(i)}} for i in range(6)])
    assert meter.high == 2


async def test_exclusive_calls_are_barriers(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    calls = [
        {"name": "read", "args": {"id": "a"}},
        {"name": "read", "args": {"id": "b"}},
        {"name": "write", "args": {"id": "W"}},
        {"name": "maybe", "args": {"id": "safe-c"}},
        {"name": "maybe", "args": {"id": "d"}},
        {"name": "read", "args": {"id": "e"}},
    ]
    results = await root.tools.execute_many(calls)
    assert [r.result for r in results] == ["a", "b", "W", "safe-c", "d", "e"]
    events = meter.events
    # W starts after a and b ended, and ends before c starts; d runs alone too.
    assert events.index("start W") > max(events.index("end a"), events.index("end b"))
    assert events.index("end W") < events.index("start safe-c")
    assert events.index("start d") > events.index("end safe-c")
    assert events.index("end d") < events.index("start e")


async def test_failures_keep_their_place(root: Context) -> None:
    meter = Meter()
    await root.plugin(tool_plugin(*tools(meter)))
    results = await root.tools.execute_many(
        [{"name": "nope"}, {"name": "read", "args": {"id": "x"}}, {"name": "read", "args": {}}]
    )
    assert [r.code for r in results] == ["unknown_tool", None, "tool_error"]
