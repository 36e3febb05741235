"""The task tools of the store's MCP tasks tests (copied into each test's project).

``job`` (a task for a client that declared the extension) appends ``job N`` to
``effects.txt`` beside the plugin, says ``step N`` as its progress, then waits while a
``hold`` file (or ``hold-job-N``) is there; cancelled, it appends ``job N cancelled``.
``confirm`` asks whether to go on, then appends what it was told.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from harness import CallContext, Context, tool

inject = ["tools"]
HERE = Path(__file__).parent


def effect(line: str) -> None:
    with (HERE / "effects.txt").open("a") as effects:
        effects.write(line + "\n")


@tool(task="optional")
async def job(amount: int, ctx: CallContext) -> str:
    """Do a job that takes a while.

    Args:
        amount: What to do
    """
    effect(f"job {amount}")
    await ctx.progress(1, 2, f"step {amount}")
    try:
        held = (HERE / "hold", HERE / f"hold-job-{amount}")
        while True:  # held: the test kills the process meanwhile, or lifts the hold
            if not any(path.exists() for path in held):
                break
            await anyio.sleep(0.02)
    except anyio.get_cancelled_exc_class():
        effect(f"job {amount} cancelled")
        raise
    return f"did job {amount}"


@tool(task="optional")
async def confirm(amount: int, ctx: CallContext) -> str:
    """Ask, then do a job.

    Args:
        amount: What to do
    """
    form = {"type": "object", "properties": {"go": {"type": "boolean"}}}
    answer = await ctx.ask(f"Go on with {amount}?", form)
    going = answer.action == "accept" and bool((answer.content or {}).get("go"))
    effect(f"confirm {amount} {'went' if going else 'stopped'}")
    return f"{'went' if going else 'stopped'} {amount}"


def apply(ctx: Context) -> None:
    ctx.tools.register(job)
    ctx.tools.register(confirm)
