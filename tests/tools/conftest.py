from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from harness import Context, ToolsService


@pytest.fixture
async def root() -> AsyncIterator[Context]:
    """A running root context with the tools service loaded."""
    async with Context() as ctx:
        await ctx.plugin(ToolsService)
        yield ctx


def tool_plugin(*definitions: Any, name: str = "tool_plugin") -> Any:
    """A plugin that registers ``definitions``."""

    def apply(ctx: Context) -> None:
        for definition in definitions:
            ctx.tools.register(definition)

    apply.inject = ["tools"]  # type: ignore[attr-defined]
    apply.name = name  # type: ignore[attr-defined]
    return apply
