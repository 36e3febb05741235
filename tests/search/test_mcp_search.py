"""``--mcp-tools search`` and ``search.mcp: true``, through the official MCP client over stdio
and HTTP: ``search_tools``, ``call_tool`` and the kept tools instead of the whole registry,
the policy applied to all three, and the index following a config edit."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ..helpers import HARNESS
from ..mcp.test_surface import Served
from .test_tools_search import CATALOGUE, project

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's stdio client and HTTP server run on asyncio


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def found(client: Client, query: str) -> list[str]:
    result = await client.call_tool("search_tools", {"query": query, "limit": 50})
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


async def check_search_surface(client: Client) -> None:
    listed = [tool.name for tool in (await client.list_tools()).tools]
    assert listed == ["call_tool", "search_tools", "get_weather"]
    assert (await found(client, "reserve a seat on a plane"))[0] == "book_flight"
    assert "delete_everything" not in await found(client, "remove all files on the disk")

    called = await client.call_tool("call_tool", {"name": "book_flight", "args": {}})
    assert not called.is_error, text(called)
    assert called.structured_content == {"result": "book_flight"}
    kept = await client.call_tool("get_weather", {"city": "Paris"})
    assert kept.structured_content == {"result": "get_weather"}

    denied = await client.call_tool("call_tool", {"name": "delete_everything", "args": {}})
    direct = await client.call_tool("delete_everything", {})
    assert denied.is_error
    assert direct.is_error
    assert text(denied) == text(direct)
    assert text(denied).startswith("Tool denied: the policy forbids delete_everything")

    unknown = await client.call_tool("call_tool", {"name": 3})
    assert unknown.is_error
    assert "call_tool: give a tool name and an args object" in text(unknown)


async def test_stdio_serves_search_with_the_flag(tmp_path: Path) -> None:
    config = project(
        tmp_path,
        CATALOGUE,
        "- { id: tools, name: 'harness:tools', config: "
        "{ search: { defer: false, keep: [get_weather] } } }\n",
    )
    params = StdioServerParameters(
        command=HARNESS,
        args=["mcp", "-c", str(config), "--mcp-tools", "search"],
        cwd=str(tmp_path),
    )
    async with Client(params, mode="legacy") as client:
        await check_search_surface(client)


async def test_http_serves_search_by_config_and_follows_an_edit(tmp_path: Path) -> None:
    tools = (
        "- { id: tools, name: 'harness:tools', "
        "config: { search: { mcp: true, keep: [get_weather] } } }\n"
    )
    config = project(tmp_path, CATALOGUE, tools)
    served = Served("run", "-c", str(config), "--port", "0", "--no-web", cwd=tmp_path)
    try:
        async with Client(served.url) as client:
            await check_search_surface(client)
            assert "order_pizza" not in await found(client, "pizza")
            async with client.listen(tools_list_changed=True) as subscription:
                project(tmp_path, [*CATALOGUE, ("order_pizza", "Order a pizza.", [])], tools)
                with anyio.fail_after(15):
                    async for _ in subscription:
                        break
            assert (await found(client, "pizza"))[0] == "order_pizza"
    finally:
        served.close()
