"""multiply: the product of two numbers."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from harness import Context, tool

name = "multiply"
inject = ["tools"]


@tool(annotations={"read_only": True, "idempotent": True, "open_world": False})
async def multiply(
    a: Annotated[float, Field(description="The first factor")],
    b: Annotated[float, Field(description="The second factor")],
) -> float:
    """Multiply two numbers and return the product. Use for exact arithmetic on two numbers;
    for a sum use add, and for longer expressions call the tools step by step."""
    return a * b


def apply(ctx: Context) -> Any:
    return ctx.tools.register(multiply)
