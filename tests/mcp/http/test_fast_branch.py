"""A tools/call served over MCP HTTP runs on the kernel's fast branch (issue #30): MCP's own
listeners, and the web console's, are not stage listeners. The general branch is the only
caller of ``kernel.current``; a listener on ``tools/pre-execute`` puts calls there."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from harness import Host, ToolCall
from harness.mcp import McpSurface
from harness.tools import kernel

from ...helpers import serving_http

ROOT = Path(__file__).resolve().parents[3]
ADD_CTX = '''
from harness import CallContext, tool

name = "add_ctx"
inject = ["tools"]


@tool
async def add_ctx(a: float, b: float, ctx: CallContext) -> float:
    """Add two numbers."""
    return a + b


def apply(ctx):
    ctx.tools.register(add_ctx)
'''

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


@pytest.fixture
def general(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the calls that took the general branch."""
    seen: list[str] = []
    current = kernel.current

    async def counted(tools: Any, call: ToolCall) -> Any:
        seen.append(call.name)
        return await current(tools, call)

    monkeypatch.setattr(kernel, "current", counted)
    return seen


@asynccontextmanager
async def serve(tmp_path: Path, web: bool) -> AsyncIterator[tuple[Host, str]]:
    (tmp_path / "add_ctx.py").write_text(ADD_CTX)
    config = tmp_path / "cordis.yml"
    config.write_text(
        "insert:\n"
        f"  - {{ id: add, name: {ROOT / 'plugins' / 'add.py'} }}\n"
        "  - { id: add_ctx, name: ./add_ctx.py }\n"
    )
    async with Host(config) as host:
        wrap = None
        if web:
            from harness.web import WebConsole, console_app

            console = WebConsole(host)
            console.attach()

            def wrap(app: Any) -> Any:
                return console_app(console, app, "127.0.0.1", None)

        surface = McpSurface(host.ctx)
        surface.attach()
        async with serving_http(surface, wrap) as url:
            yield host, url


@pytest.mark.parametrize("web", [False, True], ids=["mcp", "mcp-and-console"])
async def test_calls_over_mcp_http_take_the_fast_branch(
    tmp_path: Path, general: list[str], web: bool
) -> None:
    async with serve(tmp_path, web) as (host, url):
        for mode in ("legacy", "auto"):  # 2025-11-25 and 2026-07-28
            async with Client(url, mode=mode) as client:
                for name in ("add", "add_ctx"):
                    result = await client.call_tool(name, {"a": 1, "b": 2})
                    assert not result.is_error, result
                    assert result.structured_content == {"result": 3.0}
        assert general == []

        async def allow(call: ToolCall, next: Any) -> str:
            return "allow"

        host.ctx.on("tools/pre-execute", allow)  # a stage listener: the general branch
        async with Client(url, mode="auto") as client:
            assert not (await client.call_tool("add", {"a": 1, "b": 2})).is_error
        assert general == ["add"]
