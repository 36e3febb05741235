"""Per-call cost of running an ``add(a, b)`` tool, side by side with the peers.

- harness: ``ctx.tools.execute`` with an empty pipeline (bound once, and looked up through
  ``ctx.tools`` on every call), and with pass-through listeners on each stage; each call
  builds its ``ToolCall``, except in one case that reuses one (like the Agents SDK's context);
- pydantic-ai: ``ToolManager.handle_call`` over a ``FunctionToolset``;
- OpenAI Agents SDK: ``FunctionTool.on_invoke_tool`` with one reused ``ToolContext``;
- MCP Python SDK: ``MCPServer.call_tool`` in process (no transport).

Each tool is the same async function body. Results are µs per call, interleaved rounds.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel

from harness import Context, ToolCall, ToolsService, define_tool

from .timing import compare, table


async def _add(args: dict[str, Any]) -> float:
    return float(args["a"] + args["b"])


async def _add_later(args: dict[str, Any]) -> float:
    await anyio.lowlevel.checkpoint()  # suspends once: the deadline is armed
    return float(args["a"] + args["b"])


ADD_LATER = define_tool(
    name="add_later",
    description="Add two numbers after one checkpoint",
    parameters={
        "a": {"type": "number", "required": True},
        "b": {"type": "number", "required": True},
    },
    execute=_add_later,
)

ADD = define_tool(
    name="add",
    description="Add two numbers",
    parameters={
        "a": {"type": "number", "required": True},
        "b": {"type": "number", "required": True},
    },
    execute=_add,
)


async def peers() -> dict[str, Any]:
    """Build the peers' calls; a peer that is not installed is left out with a note."""
    calls: dict[str, Any] = {}
    try:
        from pydantic_ai import RunContext
        from pydantic_ai.messages import ToolCallPart
        from pydantic_ai.models.test import TestModel
        from pydantic_ai.tool_manager import ToolManager
        from pydantic_ai.toolsets import FunctionToolset
        from pydantic_ai.usage import RunUsage

        async def add(a: float, b: float) -> float:
            """Add two numbers."""
            return a + b

        toolset = FunctionToolset([add])
        await toolset.__aenter__()
        run = RunContext(deps=None, model=TestModel(), usage=RunUsage())
        manager = await ToolManager(toolset).for_run_step(run)
        calls["pydantic-ai ToolManager.handle_call"] = lambda: manager.handle_call(
            ToolCallPart("add", {"a": 1, "b": 2})
        )
    except ImportError as exc:
        print(f"  (pydantic-ai not installed: {exc})")
    try:
        from agents import function_tool
        from agents.tool_context import ToolContext

        @function_tool
        async def add_agents(a: float, b: float) -> float:
            """Add two numbers."""
            return a + b

        raw = '{"a": 1, "b": 2}'
        reused = ToolContext(None, tool_name="add", tool_call_id="1", tool_arguments=raw)
        calls["openai-agents FunctionTool, reused context"] = lambda: add_agents.on_invoke_tool(
            reused, raw
        )
    except ImportError as exc:
        print(f"  (openai-agents not installed: {exc})")
    try:
        from mcp.server.mcpserver import MCPServer

        server: Any = MCPServer("bench")

        @server.tool()
        async def add_mcp(a: float, b: float) -> float:
            """Add two numbers."""
            return a + b

        calls["MCP SDK MCPServer.call_tool"] = lambda: server.call_tool("add_mcp", {"a": 1, "b": 2})
    except ImportError as exc:
        print(f"  (mcp not installed: {exc})")
    return calls


async def main() -> None:
    async def passthrough(*args: Any) -> Any:
        return await args[-1]()

    async with (
        Context() as timed,
        Context() as untimed,
        Context() as busy,
        Context() as busier,
    ):
        await timed.plugin(ToolsService)
        for root in (untimed, busy, busier):
            await root.plugin(ToolsService, {"timeout": None})
        for root in (timed, untimed, busy, busier):
            root.tools.register(ADD)
        timed.tools.register(ADD_LATER)
        untimed.tools.register(ADD_LATER)
        for stage in ("tools/pre-execute", "tools/execute", "tools/post-execute"):
            busy.on(stage, passthrough)
            for _ in range(3):
                busier.on(stage, passthrough)
        runs = [r.tools.execute for r in (timed, untimed, busy, busier)]
        for run in runs:
            assert (await run(ToolCall("1", "add", {"a": 1, "b": 2}))).result == 3
        run_timed, run_untimed, run_busy, run_busier = runs
        reused = ToolCall("1", "add", {"a": 1, "b": 2})
        cases = {
            EMPTY: lambda: run_untimed(ToolCall("1", "add", {"a": 1, "b": 2})),
            TIMED: lambda: run_timed(ToolCall("1", "add", {"a": 1, "b": 2})),
            REUSED: lambda: run_timed(reused),
            THREE: lambda: run_busy(ToolCall("1", "add", {"a": 1, "b": 2})),
            NINE: lambda: run_busier(ToolCall("1", "add", {"a": 1, "b": 2})),
            LATER: lambda: run_untimed(ToolCall("1", "add_later", {"a": 1, "b": 2})),
            LATER_TIMED: lambda: run_timed(ToolCall("1", "add_later", {"a": 1, "b": 2})),
            VIEW: lambda: timed.tools.execute(ToolCall("1", "add", {"a": 1, "b": 2})),
            **await peers(),
        }
        results = await compare(cases, number=1000, rounds=25)
    table("add(a, b) per call (best of 25 interleaved rounds of 1,000)", results, baseline=EMPTY)
    ours = results[EMPTY]
    timed_ours = results[TIMED]
    peers_seen = {k: v for k, v in results.items() if not k.startswith("harness")}
    for label, value in peers_seen.items():
        print(f"  {label} / harness with the 60 s timeout: x{value / timed_ours:.2f}")
    if peers_seen:
        fastest = min(peers_seen.values())
        print(f"  fastest peer / harness empty pipeline:          x{fastest / ours:.2f}")
        print(f"  fastest peer / harness with a 60 s timeout:     x{fastest / timed_ours:.2f}")
    agents = next((v for k, v in peers_seen.items() if k.startswith("openai-agents")), None)
    if agents is not None:
        print(
            f"  like for like, openai-agents reused context / harness reused ToolCall: "
            f"x{agents / results[REUSED]:.2f}"
        )
    print(
        f"  60 s timeout / none:                            x{timed_ours / ours:.2f} "
        f"(a body that suspends once: x{results[LATER_TIMED] / results[LATER]:.2f})"
    )
    print(f"  looking up ctx.tools.execute per call adds:     {results[VIEW] - timed_ours:.2f} µs")
    first = (results[THREE] - ours) / 3
    extra = (results[NINE] - results[THREE]) / 6
    print(f"  first listener of a stage (turns the stage on): {first:.3f} µs")
    print(f"  each further listener:                          {extra:.3f} µs")


EMPTY = "harness, empty pipeline, no timeout"
TIMED = "harness, empty pipeline, 60 s timeout"
REUSED = "harness, the same, one reused ToolCall"
VIEW = "harness, the same, ctx.tools.execute per call"
THREE = "harness, 1 pass-through listener per stage"
NINE = "harness, 3 pass-through listeners per stage"
LATER = "harness, add after one checkpoint, no timeout"
LATER_TIMED = "harness, add after one checkpoint, 60 s timeout"
