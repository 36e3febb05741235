"""What one call from a program costs in hops to the sandbox: one per awaited call."""

from __future__ import annotations

import pytest

from harness import Host
from harness.code.plugin import CodeTool

from .conftest import run

pytestmark = pytest.mark.anyio

LOOP = "x = 0\nfor i in range({n}):\n    x = await add(a=i, b=1)\nx"
GATHER = "import asyncio\nsum(await asyncio.gather(*[add(a=i, b=1) for i in range({n})]))"


def steps(host: Host) -> int:
    definition = host.ctx.tools.get("run_code")
    assert definition is not None
    tool = getattr(definition.execute, "__self__", None)
    assert isinstance(tool, CodeTool)
    return tool.pool.steps


async def hops(host: Host, code: str) -> int:
    before = steps(host)
    result = await run(host, code)
    assert result.ok, result.error
    return steps(host) - before


async def test_an_awaited_call_costs_one_step(host: Host) -> None:
    # A program's fixed steps (enter, start, the name lookup, exit), then one per call.
    fixed = await hops(host, LOOP.format(n=1)) - 1
    assert await hops(host, LOOP.format(n=40)) == fixed + 40
    result = await run(host, LOOP.format(n=40))
    assert result.result["value"] == 40
    assert [c["name"] for c in result.result["calls"]] == ["add"] * 40


async def test_gathered_calls_cost_a_step_each_and_their_waits(host: Host) -> None:
    fixed = await hops(host, LOOP.format(n=1)) - 1
    assert await hops(host, GATHER.format(n=40)) <= fixed + 40 + 40
    result = await run(host, GATHER.format(n=40))
    assert result.result["value"] == sum(i + 1 for i in range(40))


async def test_a_failed_awaited_call_still_raises_in_the_program(host: Host) -> None:
    code = (
        "out = []\nfor i in range(3):\n    try:\n        await multiply(a=i, b=2)\n"
        "    except Exception as e:\n        out.append(str(e).split(':', 1)[0])\n"
        "    out.append(await add(a=i, b=1))\nout"
    )
    result = await run(host, code)
    assert result.ok, result.error
    assert result.result["value"] == ["denied", 1, "denied", 2, "denied", 3]
