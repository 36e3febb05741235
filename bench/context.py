"""What taking a ``CallContext`` costs a tool that uses nothing of it (issue #30: ≤0.3 µs).

The same ``add(a, b)`` body, once without a context parameter and once with one it never
touches, both registered on one host and called through the Python surface
(``ctx.tools.execute``), each call making its ``ToolCall`` (no context is made by the caller:
the kernel makes one for the tool that takes it). Pairs:

- ``@tool`` and ``define_tool`` (``execute(args)`` against ``execute(args, ctx)``);
- with the default 60 s timeout (the usual case: the context tool's deadline is a
  :class:`~harness.tools.pace.Pace`) and with none.

Each round times the two tools of a pair back to back; the figure is the median over 41
rounds of that round's difference (thread CPU time, 1,000 calls per timing).
"""

from __future__ import annotations

import os
from typing import Any

from harness import CallContext, Context, ToolCall, ToolsService, define_tool, tool

from .timing import paired

BOUND = 0.3
"""µs: the most a context the body does not use may add to a call (issue #30)."""
SPEC = {"a": {"type": "number", "required": True}, "b": {"type": "number", "required": True}}


@tool
async def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@tool
async def add_ctx(a: float, b: float, ctx: CallContext) -> float:
    """Add two numbers (given the call's context, which it does not use)."""
    return a + b


async def _add(args: dict[str, Any]) -> float:
    return float(args["a"] + args["b"])


async def _add_ctx(args: dict[str, Any], ctx: CallContext) -> float:
    return float(args["a"] + args["b"])


DEFINED = define_tool(name="add_defined", description="Add", parameters=SPEC, execute=_add)
DEFINED_CTX = define_tool(
    name="add_defined_ctx", description="Add (takes ctx)", parameters=SPEC, execute=_add_ctx
)
PAIRS = {"@tool": ("add", "add_ctx"), "define_tool": ("add_defined", "add_defined_ctx")}


def caller(root: Context, name: str) -> Any:
    execute = root.tools.execute
    return lambda: execute(ToolCall("1", name, {"a": 1, "b": 2}))


async def main() -> None:
    load = os.getloadavg()[0]
    async with Context() as timed, Context() as untimed:
        await timed.plugin(ToolsService)  # the default timeout: 60 s
        await untimed.plugin(ToolsService, {"timeout": None})
        pairs = {}
        for root, limit in ((timed, "60 s timeout"), (untimed, "no timeout")):
            for definition in (add, add_ctx, DEFINED, DEFINED_CTX):
                root.tools.register(definition)
            for kind, (plain, with_ctx) in PAIRS.items():
                for name in (plain, with_ctx):
                    done = await root.tools.execute(ToolCall("1", name, {"a": 1, "b": 2}))
                    assert done.result == 3, done
                pairs[f"{kind}, {limit}"] = (caller(root, plain), caller(root, with_ctx))
        results = await paired(pairs, number=1000, rounds=41)
    print(
        "add(a, b) through ctx.tools.execute, without and with an unused ctx parameter "
        f"(median of 41 paired rounds of 1,000; load average {load:.1f})"
    )
    print(f"  {'tool':<28} {'no ctx':>9} {'ctx':>9} {'ctx costs':>10}")
    for label, (plain, with_ctx, more) in results.items():
        verdict = "ok" if more <= BOUND else f"over {BOUND} µs"
        print(f"  {label:<28} {plain:6.3f} µs {with_ctx:6.3f} µs {more:+7.3f} µs  {verdict}")
