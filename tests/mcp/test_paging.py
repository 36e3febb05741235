"""Cursor paging of every MCP list, through the official SDK client: ``tools/list``,
``resources/list``, ``resources/templates/list`` and ``prompts/list`` come a page of the tools
service's ``page_size`` at a time with opaque cursors, over streamable HTTP in both eras and
over stdio; a cursor harness did not issue is JSON-RPC -32602."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from ..helpers import HARNESS, write
from .test_surface import Served

pytestmark = pytest.mark.anyio
PLUGIN = """
from harness import define_prompt, define_resource, define_tool

inject = ["tools", "resources", "prompts"]


def apply(ctx):
    for n in range(5):
        ctx.tools.register(define_tool(
            name=f"tool{n}", description=f"Tool {n}.", execute=lambda args: None))
        ctx.resources.register(define_resource(
            uri=f"test://r{n}", name=f"r{n}", description=f"R {n}.", read=lambda params: "r"))
        ctx.resources.register(define_resource(
            uri=f"test://t{n}/{{id}}", name=f"t{n}", description=f"T {n}.",
            read=lambda params: "t"))
        ctx.prompts.register(define_prompt(
            name=f"prompt{n}", description=f"Prompt {n}.", render=lambda args: "p"))
"""
CONFIG = """
insert:
  - id: tools
    name: harness:tools
    config:
      page_size: 2
  - id: many
    name: ./many.py
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's stdio client and HTTP server run on asyncio


def project(folder: Path) -> Path:
    write(folder / "many.py", PLUGIN)
    return write(folder / "cordis.yml", CONFIG)


async def pages(lister: Callable[..., Awaitable[Any]], field: str) -> list[list[str]]:
    """Every page of one list, following nextCursor, as the names (or URIs) on each."""
    found: list[list[str]] = []
    cursor = None
    while True:
        result = await lister(cursor=cursor, cache_mode="bypass")
        items = getattr(result, field)
        found.append([getattr(item, "name", None) or "" for item in items])
        cursor = result.next_cursor
        if cursor is None:
            return found


async def check(client: Client) -> None:
    assert await pages(client.list_tools, "tools") == [
        ["tool0", "tool1"],
        ["tool2", "tool3"],
        ["tool4"],
    ]
    for lister, field, prefix in (
        (client.list_resources, "resources", "r"),
        (client.list_resource_templates, "resource_templates", "t"),
        (client.list_prompts, "prompts", "prompt"),
    ):
        assert await pages(lister, field) == [
            [f"{prefix}0", f"{prefix}1"],
            [f"{prefix}2", f"{prefix}3"],
            [f"{prefix}4"],
        ]
    refusing: tuple[Callable[..., Awaitable[Any]], ...] = (
        client.list_tools,
        client.list_resources,
        client.list_prompts,
    )
    for refuser in refusing:
        with pytest.raises(MCPError) as refused:
            await refuser(cursor="not-a-cursor", cache_mode="bypass")
        assert refused.value.code == -32602
        assert str(refused.value).startswith('invalid cursor "not-a-cursor": pass the nextCursor')


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_every_list_pages_over_http(tmp_path: Path, mode: str) -> None:
    served = Served("run", "-c", str(project(tmp_path)), "--port", "0", "--no-web", cwd=tmp_path)
    try:
        async with Client(served.url, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            await check(client)
    finally:
        served.close()


async def test_every_list_pages_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=HARNESS, args=["mcp", "-c", str(project(tmp_path))], cwd=str(tmp_path)
    )
    async with Client(params, mode="legacy") as client:
        await check(client)
