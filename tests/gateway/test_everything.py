"""The MCP reference server ``@modelcontextprotocol/server-everything`` (Node, from npm)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import Host

from .conftest import text_of, write_config
from .system import everything_server

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def everything() -> Path:
    return everything_server()


async def test_the_reference_server_mounts_and_answers(tmp_path: Path, everything: Path) -> None:
    entry = {
        "id": "everything",
        "name": "harness:mcp-client",
        "config": {"command": str(everything), "args": ["stdio"], "exclude": ["toggle-*"]},
    }
    config = write_config(tmp_path, [entry])
    async with Host(config) as host:
        tools = host.tools
        names = tools.list()
        assert "everything_echo" in names
        assert "everything_get-sum" in names
        assert not [name for name in names if name.startswith("everything_toggle-")]
        mcp = {tool["name"]: tool for tool in tools.schemas("mcp")}
        assert mcp["everything_echo"]["annotations"]["readOnlyHint"] is True
        assert "outputSchema" in mcp["everything_get-structured-content"]

        echoed = await tools.execute(
            {"id": "1", "name": "everything_echo", "args": {"message": "hi"}}
        )
        assert text_of(echoed) == "Echo: hi"
        summed = await tools.execute(
            {"id": "2", "name": "everything_get-sum", "args": {"a": 2, "b": 3}}
        )
        assert text_of(summed) == "The sum of 2 and 3 is 5."
        wrong = await tools.execute({"id": "3", "name": "everything_get-sum", "args": {"a": "2"}})
        assert wrong.code == "invalid_args"
        assert wrong.error == (
            "Invalid arguments for tool everything_get-sum: a: expected number, got string; "
            "b: required property is missing"
        )
        weather = await tools.execute(
            {
                "id": "4",
                "name": "everything_get-structured-content",
                "args": {"location": "Chicago"},
            }
        )
        assert isinstance(weather.result, dict)
        assert set(weather.result) == {"temperature", "conditions", "humidity"}
        image = await tools.execute({"id": "5", "name": "everything_get-tiny-image", "args": {}})
        (picture,) = [block for block in image.content if block["type"] == "image"]
        assert picture["mime_type"] == "image/png"
        assert picture["data"].startswith("iVBOR")
        links = await tools.execute(
            {"id": "6", "name": "everything_get-resource-links", "args": {"count": 2}}
        )
        assert [block["type"] for block in links.content].count("resource_link") == 2
        embedded = await tools.execute(
            {"id": "7", "name": "everything_get-resource-reference", "args": {}}
        )
        (resource,) = [block for block in embedded.content if block["type"] == "resource"]
        assert resource["uri"].startswith("demo://resource/")
        assert "text" in resource
