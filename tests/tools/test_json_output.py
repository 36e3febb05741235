"""#22.16: a ``{"type": "json"}`` output, and a tool with no output, let only JSON through.

The value must be None, a bool, an int, a finite float, a str, a list or a dict with str
keys (nested); anything else is ``invalid_output``, and ``to_dict()`` always serialises.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness import Context, ToolCall, ToolsService, define_tool

pytestmark = pytest.mark.anyio


def _cycle() -> list[Any]:
    looped: list[Any] = []
    looped.append(looped)
    return looped


NOT_JSON: dict[str, Any] = {
    "a function": lambda: None,
    "a set": {1, 2},
    "object()": object(),
    "an int key": {1: "x"},
    "a nested int key": {"a": [{"b": {2: "y"}}]},
    "a nested set": {"a": [1, {2}]},
    "NaN": math.nan,
    "inf": math.inf,
    "-inf in a list": [1.0, -math.inf],
    "bytes": b"raw",
    "a cycle": _cycle(),
    "a lone surrogate": "\ud800",
}
JSON: dict[str, Any] = {
    "None": None,
    "a bool": True,
    "an int": 3,
    "a float": 2.5,
    "a str": "é",
    "a list": [1, "two", None, [3.0]],
    "a dict": {"a": {"b": [1, {"c": False}]}},
    "a tuple": (1, 2),
}


HOLDER: dict[str, Any] = {}
"""What the tools give back (each test sets it before calling)."""


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        for name, output in (("any_json", {"schema": {"type": "json"}}), ("no_output", None)):
            ctx.tools.register(
                define_tool(
                    name=name,
                    description="give back what the test put in the holder",
                    execute=lambda args: HOLDER["value"],
                    output=output,
                )
            )

            async def give(args: dict[str, Any]) -> Any:
                return HOLDER["value"]

            ctx.tools.register(
                define_tool(
                    name=f"{name}_async",
                    description="the same, async",
                    execute=give,
                    output=output,
                )
            )
        yield ctx


TOOLS = ["any_json", "no_output", "any_json_async", "no_output_async"]


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("label", list(NOT_JSON))
async def test_a_value_that_is_not_json_is_invalid_output(
    root: Context, tool: str, label: str
) -> None:
    HOLDER["value"] = NOT_JSON[label]
    result = await root.tools.execute(ToolCall("c", tool, {}))
    assert result.code == "invalid_output", (label, result)
    assert "is not valid JSON" in (result.error or ""), result.error
    json.dumps(result.to_dict(), allow_nan=False)  # serialisable, strictly


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("label", list(JSON))
async def test_any_json_value_passes(root: Context, tool: str, label: str) -> None:
    HOLDER["value"] = JSON[label]
    result = await root.tools.execute(ToolCall("c", tool, {}))
    assert result.ok, (label, result)
    assert result.result == JSON[label]
    json.dumps(result.to_dict(), allow_nan=False)


async def test_the_message_names_where_and_what(root: Context) -> None:
    HOLDER["value"] = {"rows": [{"id": 1}, {"id": {3, 4}}]}
    result = await root.tools.execute(ToolCall("c", "any_json", {}))
    assert result.error == (
        "Tool any_json returned invalid output: the result is not valid JSON: $.rows[1].id "
        "is a set, which is not JSON (use null, booleans, numbers, strings, lists and objects)"
    )
    HOLDER["value"] = {"ok": True, 7: "seven"}
    result = await root.tools.execute(ToolCall("c", "no_output", {}))
    assert "$ has the key 7, which is not a string" in (result.error or "")


async def test_render_blocks_that_are_not_json_are_invalid_output(root: Context) -> None:
    root.tools.register(
        define_tool(
            name="odd_render",
            description="renders a block holding a set",
            execute=lambda args: "fine",
            output={"render": lambda value: {"type": "text", "text": value, "extra": {1}}},
        )
    )
    result = await root.tools.execute(ToolCall("c", "odd_render", {}))
    assert result.code == "invalid_output", result
    json.dumps(result.to_dict(), allow_nan=False)


async def test_json_arguments_are_judged_the_same_way(root: Context) -> None:
    HOLDER["value"] = None
    root.tools.register(
        define_tool(
            name="takes_json",
            description="takes any JSON",
            parameters={"x": {"type": "json"}},
            execute=lambda args: None,
        )
    )
    for bad in ({1, 2}, object(), {3: "x"}, math.nan):
        result = await root.tools.execute(ToolCall("c", "takes_json", {"x": bad}))
        assert result.code == "invalid_args", (bad, result)
    fine = await root.tools.execute(ToolCall("c", "takes_json", {"x": {"a": [1, None]}}))
    assert fine.ok, fine
