"""Icons over MCP, through the official SDK client: a tool's (``define_tool(icons=...)`` and
``@tool(icons=...)``) in ``tools/list``, and the server's (the tools service's
``server_icons``) in ``initialize``'s and ``server/discover``'s ``serverInfo``, over streamable
HTTP in both eras and over stdio."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from harness import ToolDefinitionError, define_tool

from ..helpers import HARNESS, write
from .test_surface import Served

pytestmark = pytest.mark.anyio
LOGO = {"src": "https://example.com/harness.png", "mimeType": "image/png", "sizes": ["48x48"]}
PLUGIN = '''
from harness import define_tool, tool

inject = ["tools"]

shout = define_tool(
    name="shout",
    description="Shout the text back.",
    parameters={"text": {"type": "string", "required": True}},
    execute=lambda args: args["text"].upper(),
    icons=[{"src": "data:image/svg+xml;base64,PHN2Zy8+", "mimeType": "image/svg+xml",
            "sizes": ["any"], "theme": "dark"}],
)


@tool(icons=[{"src": "https://example.com/add.png"}])
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def apply(ctx):
    ctx.tools.register(shout)
    ctx.tools.register(add)
'''
CONFIG = """
insert:
  - id: tools
    name: harness:tools
    config:
      server_icons:
        - src: https://example.com/harness.png
          mimeType: image/png
          sizes: ["48x48"]
  - id: icons
    name: ./icons.py
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's stdio client and HTTP server run on asyncio


def project(folder: Path) -> Path:
    write(folder / "icons.py", PLUGIN)
    return write(folder / "cordis.yml", CONFIG)


def check(client: Client, tools: list[types.Tool]) -> None:
    assert client.server_info is not None
    assert client.server_info.icons == [types.Icon.model_validate(LOGO)]
    icons = {tool.name: tool.icons for tool in tools}
    assert icons == {
        "shout": [
            types.Icon(
                src="data:image/svg+xml;base64,PHN2Zy8+",
                mime_type="image/svg+xml",
                sizes=["any"],
                theme="dark",
            )
        ],
        "add": [types.Icon(src="https://example.com/add.png")],
    }


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_tool_and_server_icons_over_http(tmp_path: Path, mode: str) -> None:
    served = Served("run", "-c", str(project(tmp_path)), "--port", "0", "--no-web", cwd=tmp_path)
    try:
        async with Client(served.url, mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            check(client, (await client.list_tools()).tools)
    finally:
        served.close()


async def test_tool_and_server_icons_over_stdio(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=HARNESS, args=["mcp", "-c", str(project(tmp_path))], cwd=str(tmp_path)
    )
    async with Client(params, mode="legacy") as client:
        check(client, (await client.list_tools()).tools)


def test_malformed_tool_icons_are_refused_when_defined() -> None:
    with pytest.raises(ToolDefinitionError) as refused:
        define_tool(
            name="shout",
            description="Shout.",
            execute=lambda args: None,
            icons=[{"src": "https://example.com/a.png", "size": "48x48"}],
        )
    assert str(refused.value) == (
        "tool 'shout': icons[0] has unknown keys ['size']; allowed are src, mimeType, sizes, theme"
    )
