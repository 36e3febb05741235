"""MCP over streamable HTTP, in process: what a tools/call costs the server.

A call is checked against its tool's input schema (the SDK's ``Mcp-Param`` header check)
through ``get_tool_input_schema``, never by listing every tool; ``tools/list`` is built once
per registry change.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness import Host, define_tool
from harness.mcp import Catalog, McpSurface
from harness.tools.definition import ToolDefinition

from ...helpers import serving_http

ROOT = Path(__file__).resolve().parents[3]
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


class Counts:
    def __init__(self) -> None:
        self.lists = 0
        self.builds = 0


@pytest.fixture
async def served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[McpSurface, str, Counts]]:
    counts = Counts()
    listing = McpSurface._list_tools
    building = Catalog.of

    async def counted_list(self: McpSurface, ctx: Any, params: Any) -> Any:
        counts.lists += 1
        return await listing(self, ctx, params)

    def counted_build(service: Any, search: bool = False) -> Catalog:
        counts.builds += 1
        return building(service, search)

    monkeypatch.setattr(McpSurface, "_list_tools", counted_list)
    monkeypatch.setattr(Catalog, "of", staticmethod(counted_build))
    config = tmp_path / "cordis.yml"
    config.write_text(f"insert:\n  - {{ id: add, name: {ROOT / 'plugins' / 'add.py'} }}\n")
    async with Host(config) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with serving_http(surface) as url:
            yield surface, url, counts


async def post(client: httpx2.AsyncClient, url: str, method: str, **params: Any) -> Any:
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if "name" in params:
        headers["mcp-name"] = params["name"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}}
    response = await client.post(url, content=json.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    return response.json()["result"]


async def test_calls_never_list_the_tools_and_the_list_is_built_once_per_change(
    served: tuple[McpSurface, str, Counts],
) -> None:
    surface, url, counts = served
    async with httpx2.AsyncClient() as client:
        for a in range(5):
            result = await post(client, url, "tools/call", name="add", arguments={"a": a, "b": 1})
            assert result["structuredContent"] == {"result": a + 1.0}
        assert counts.lists == 0
        first = [tool["name"] for tool in (await post(client, url, "tools/list"))["tools"]]
        second = [tool["name"] for tool in (await post(client, url, "tools/list"))["tools"]]
        assert first == second == ["add"]
        assert (counts.lists, counts.builds) == (2, 1)
        surface.tools.register(define_tool(name="fresh", description="New", execute=print))
        third = [tool["name"] for tool in (await post(client, url, "tools/list"))["tools"]]
        assert third == ["add", "fresh"]
        assert counts.builds == 2
        missing = await post(client, url, "tools/call", name="nope", arguments={})
        assert missing["isError"] is True
        assert missing["content"][0]["text"] == "Tool nope not found"


async def test_mcp_param_headers_are_checked_only_for_schemas_that_declare_them(
    served: tuple[McpSurface, str, Counts],
) -> None:
    surface, url, _ = served
    routed = ToolDefinition(  # as a mounted upstream tool keeps its schema
        name="routed",
        description="Routed by region",
        parameters={
            "type": "object",
            "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        },
        execute=lambda **args: args,
    )
    surface.tools.register(routed)
    assert set(surface.catalog().inputs) == {"routed"}  # add has nothing to check
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "routed",
        "mcp-param-region": "eu",
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "routed", "arguments": {"region": "us"}, "_meta": META},
    }
    async with httpx2.AsyncClient() as client:
        mismatch = await client.post(url, content=json.dumps(body), headers=headers)
        assert mismatch.status_code == 400, mismatch.text
        assert "Mcp-Param-Region header does not match" in mismatch.text
        headers["mcp-param-region"] = "us"
        matched = await client.post(url, content=json.dumps(body), headers=headers)
        assert matched.status_code == 200, matched.text
        assert matched.json()["result"]["isError"] is False
