"""Cost of a waterfall dispatch: the price the tool pipeline pays on every call.

Measures a bare ``await inner()``, a waterfall with no listeners and one with three
pass-through listeners (µs per dispatch), and derives the cost of one listener layer.
"""

from __future__ import annotations

from typing import Any

from harness import Context

from .timing import compare, table


async def main() -> None:
    async def inner() -> int:
        return 1

    async def passthrough(value: int, next: Any) -> Any:
        return await next()

    async with Context() as root:
        for _ in range(3):
            root.on("three", passthrough)
        waterfall = root.waterfall
        results = await compare(
            {
                "await inner() alone": inner,
                "waterfall, no listeners": lambda: waterfall("empty", 1, inner),
                "waterfall, 3 pass-through listeners": lambda: waterfall("three", 1, inner),
            }
        )
    table("waterfall dispatch (best of 9 interleaved rounds of 20,000)", results)
    empty = results["waterfall, no listeners"]
    layer = (results["waterfall, 3 pass-through listeners"] - empty) / 3
    print(f"  {'per listener layer':<46} {layer:8.3f} µs")
    overhead = empty - results["await inner() alone"]
    print(f"  {'overhead of an empty waterfall':<46} {overhead:8.3f} µs")
