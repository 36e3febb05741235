"""Results arrive once (DESIGN §12): a mounted tool's value is the upstream's structuredContent.

The upstream is the official SDK's ``MCPServer`` (tests/gateway/upstream_server.py): ``photo``
answers a text and an image block and no ``structuredContent``; ``weather`` answers
structured content. A real SDK client calls them through ``harness run``; the image comes
once, in the content, and a result the upstream gave no structured content has none.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import HARNESS
from .conftest import stdio_entry, write_config
from .test_transports import Process

pytestmark = pytest.mark.anyio

PHOTO = "iVBORyBwaG90byBieXRlcw=="  # base64 of the upstream's photo bytes


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's client


async def test_an_image_reaches_an_mcp_client_once(tmp_path: Path) -> None:
    config = write_config(tmp_path, [stdio_entry("up")])
    served = Process(
        [HARNESS, "run", "-c", str(config), "--port", "0", "--no-web"],
        r"serving MCP at (\S+)",
        cwd=tmp_path,
    )
    try:
        assert served.match is not None
        async with Client(served.match.group(1)) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert listed["up_photo"].output_schema is None
            photo = await client.call_tool("up_photo", {})
            weather = await client.call_tool("up_weather", {"city": "Oslo"})
    finally:
        served.close()
    assert not photo.is_error
    assert [block.type for block in photo.content] == ["text", "image"]
    image: Any = photo.content[1]
    assert (image.data, image.mime_type) == (PHOTO, "image/png")
    assert photo.structured_content is None  # the upstream sent none
    assert PHOTO not in json.dumps(photo.model_dump(mode="json", by_alias=True)).replace(
        PHOTO, "", 1
    )
    assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}


async def test_the_value_is_the_structured_content_or_none(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [stdio_entry("up")])) as host:
        photo = await host.tools.execute({"id": "1", "name": "up_photo", "args": {}})
        weather = await host.tools.execute(
            {"id": "2", "name": "up_weather", "args": {"city": "Oslo"}}
        )
    assert photo.ok
    assert photo.result is None
    assert photo.content == [
        {"type": "text", "text": "a photo"},
        {"type": "image", "data": PHOTO, "mime_type": "image/png"},
    ]
    assert json.dumps(photo.to_dict()).count(PHOTO) == 1
    assert weather.result == {"city": "Oslo", "celsius": 21.5}


async def test_the_model_reads_the_text_of_a_result_without_a_value(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.calls(call("up_photo", {})), user="look"),
        Rule(Reply.say("A photo."), tool="up_photo"),
    ]
    with ScriptedServer(rules) as server:
        model = {"model": "scripted", "base_url": server.url, "retry_backoff": 0.01}
        entries: list[dict[str, Any]] = [
            stdio_entry("up"),
            {"id": "model", "name": "harness:openai", "config": model},
            {"id": "agent", "name": "harness:agent", "config": {"sessions": None}},
        ]
        async with Host(write_config(tmp_path, entries)) as host:
            events = [event async for event in host.ctx.agent.session().send("look")]
        assert events[-1]["reason"] == "done"
        [told] = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert told["content"] == "a photo\n[image: image/png]"


async def test_an_answer_harness_cannot_read_fails_the_call_at_once(tmp_path: Path) -> None:
    # pydantic refuses a number of more than 4300 digits; the request used to wait for its
    # timeout (here 20 s) while the unreadable line was logged as a warning
    async with Host(write_config(tmp_path, [stdio_entry("up", timeout=20)])) as host:
        result = await host.tools.execute({"id": "1", "name": "up_long_number", "args": {}})
        echoed = await host.tools.execute({"id": "2", "name": "up_echo", "args": {"text": "a"}})
    assert result.code == "tool_error"
    assert str(result.error).startswith(
        "MCP server 'up': the server's answer to tools/call is not JSON harness can read "
        "(Invalid JSON: number out of range at line 1 column "
    )
    assert echoed.result == {"result": "upstream says a"}  # the connection goes on
