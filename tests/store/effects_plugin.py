"""The test tools of the journal's process tests (copied into each test's project).

``charge``, ``append`` and ``reserve`` (idempotent) append a line to ``effects.txt`` beside
the plugin, then wait while a ``hold`` file (or ``hold-KIND-AMOUNT``, for that one call) is
there: a test cuts a call off inside its body by killing the process once the line is
written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from harness import Context, define_tool

inject = ["tools"]
HERE = Path(__file__).parent
AMOUNT = {"amount": {"type": "integer", "required": True}}


def effect(kind: str) -> Any:
    async def run(args: dict[str, Any]) -> str:
        with (HERE / "effects.txt").open("a") as effects:
            effects.write(f"{kind} {args['amount']}\n")
        held = (HERE / "hold", HERE / f"hold-{kind}-{args['amount']}")
        while True:  # held: the test kills the process meanwhile, or lifts the hold
            if not any(path.exists() for path in held):
                break
            await anyio.sleep(0.02)
        return f"{kind}{'ed' if kind.endswith('d') else 'd'} {args['amount']}"

    return run


def apply(ctx: Context) -> None:
    ctx.tools.register(
        define_tool(
            name="charge", description="Charge", parameters=AMOUNT, execute=effect("charge")
        )
    )
    ctx.tools.register(
        define_tool(
            name="append", description="Append", parameters=AMOUNT, execute=effect("append")
        )
    )
    ctx.tools.register(
        define_tool(
            name="reserve",
            description="Reserve",
            parameters=AMOUNT,
            execute=effect("reserve"),
            annotations={"idempotent": True},
        )
    )
