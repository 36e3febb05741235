"""add: the sum of two numbers."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from harness import Context, tool

name = "add"
inject = ["tools"]


@tool(annotations={"read_only": True, "idempotent": True, "open_world": False})
async def add(
    a: Annotated[float, Field(description="The first number")],
    b: Annotated[float, Field(description="The second number")],
) -> float:
    """Add two numbers and return the sum. Use for exact arithmetic on two numbers; for a
    product use multiply, and for longer expressions call the tools step by step."""
    return a + b


def apply(ctx: Context) -> Any:
    return ctx.tools.register(add)
