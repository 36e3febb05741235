"""A mounted upstream that floods its caller with progress and log notifications, and local
calls meanwhile (DESIGN §12: the flood must not slow local calls by more than x2).

The upstream (the official SDK's ``MCPServer``, bench/gateway_upstream.py, over stdio) runs
``chatter``: 20 000 progress and 20 000 log notifications as fast as it can send them, for
a call whose context has a caller (so each notification that passes the entry's bound,
``max_notifications`` a second, reaches the caller's ``progress`` or ``log``). Meanwhile a
local ``echo`` is called over MCP (an in-memory SDK client): its latency under the flood
against the same calls idle.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
from mcp import Client as SdkClient

from harness import CallContext, Client, Context, ToolCall, ToolsService, define_tool
from harness.gateway import plugin as mcp_client
from harness.mcp import McpSurface

from .gateway import ROOT, UPSTREAM

COUNT = 20_000


class Caller(Client):
    """Counts what the upstream's call shows its caller."""

    def __init__(self) -> None:
        super().__init__("bench-caller")
        self.reports = 0
        self.logs = 0

    async def progress(
        self, ctx: CallContext, done: float, total: float | None, message: str | None
    ) -> None:
        self.reports += 1

    async def log(self, ctx: CallContext, level: str, message: str, data: dict[str, Any]) -> None:
        self.logs += 1


async def main() -> None:
    config = {"command": UPSTREAM[0], "args": [*UPSTREAM[1:], "stdio"], "cwd": str(ROOT)}
    async with Context() as root:
        await root.plugin(ToolsService)
        fiber = await root.plugin(mcp_client, {**config, "timeout": 120}, name="up")
        root.tools.register(
            define_tool(
                name="echo",
                description="Echo the text back.",
                parameters={"text": {"type": "string"}},
                execute=lambda args: args["text"],
            )
        )
        surface = McpSurface(root)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:

            async def echo_ms(count: int) -> list[float]:
                times = []
                for _ in range(count):
                    start = time.perf_counter()
                    await client.call_tool("echo", {"text": "hi"})
                    times.append((time.perf_counter() - start) * 1000)
                return times

            await echo_ms(50)
            idle = await echo_ms(1000)
            caller = Caller()
            call = ToolCall("chatter", "up_chatter", {"count": COUNT})
            CallContext(call, "mcp", caller)
            outcome: list[Any] = []

            async def chatter() -> None:
                outcome.append(await root.tools.execute(call))

            during: list[float] = []
            began = time.perf_counter()
            async with anyio.create_task_group() as group:
                group.start_soon(chatter)
                while not outcome:
                    during.extend(await echo_ms(5))
            lasted = time.perf_counter() - began
            state = mcp_client.supervision(fiber)
            dropped = getattr(state.connection, "dropped", "?") if state else "?"
    idle.sort()
    during.sort()

    def line(label: str, values: list[float]) -> str:
        mean = sum(values) / len(values)
        return (
            f"  local echo over MCP, {label:<12} mean {mean:7.3f} ms, median "
            f"{values[len(values) // 2]:7.3f} ms, p90 {values[int(len(values) * 0.9)]:7.3f} ms "
            f"({len(values)} calls)"
        )

    print(f"flood (stdio upstream: {COUNT} progress and {COUNT} log notifications in one call)")
    print(line("idle", idle))
    print(line("under flood", during))
    ratio = (sum(during) / len(during)) / (sum(idle) / len(idle))
    middle = during[len(during) // 2] / idle[len(idle) // 2]
    print(f"  ratio under flood / idle: mean x{ratio:.2f}, median x{middle:.2f}")
    result = outcome[0]
    print(
        f"  the flood lasted {lasted * 1000:.0f} ms ({result.code or 'ok'}); the caller was "
        f"shown {caller.reports} progress reports and {caller.logs} logs; dropped: {dropped}"
    )
