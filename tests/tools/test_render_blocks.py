"""Render blocks beyond text and images: audio, embedded resources and resource links are
checked when a tool's render returns them (bytes become base64), and a malformed one is the
call's ``invalid_output`` failure saying what the block needs."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from harness import Context, ToolCall, ToolResult, define_tool

from .conftest import tool_plugin

pytestmark = pytest.mark.anyio
WAV = b"RIFF\x00\x00\x00\x00WAVE"


async def rendered(root: Context, blocks: Any) -> ToolResult:
    shown = define_tool(
        name="shown",
        description="Return blocks.",
        execute=lambda args: None,
        output={"render": lambda value: blocks},
    )
    await root.plugin(tool_plugin(shown))
    result: ToolResult = await root.tools.execute(ToolCall("c", "shown", {}))
    return result


async def test_audio_resource_and_link_blocks_are_kept_with_bytes_as_base64(
    root: Context,
) -> None:
    result = await rendered(
        root,
        [
            {"type": "audio", "data": WAV, "mime_type": "audio/wav"},
            {"type": "resource", "uri": "test://a", "mime_type": "text/plain", "text": "A"},
            {"type": "resource", "uri": "test://b", "data": b"\x00\x01"},
            {"type": "resource_link", "uri": "test://c", "name": "c", "title": "C"},
        ],
    )
    assert result.ok, result.error
    assert result.content == [
        {"type": "audio", "data": base64.b64encode(WAV).decode(), "mime_type": "audio/wav"},
        {"type": "resource", "uri": "test://a", "mime_type": "text/plain", "text": "A"},
        {"type": "resource", "uri": "test://b", "data": "AAE="},
        {"type": "resource_link", "uri": "test://c", "name": "c", "title": "C"},
    ]


@pytest.mark.parametrize(
    ("block", "problem"),
    [
        (
            {"type": "audio", "data": WAV},
            "an audio block needs 'data' (base64 or bytes) and 'mime_type' such as 'audio/wav'",
        ),
        ({"type": "resource", "text": "A"}, "a resource block needs a string 'uri'"),
        (
            {"type": "resource", "uri": "test://a"},
            "a resource block needs either 'text' or 'data' (base64 or bytes), not both",
        ),
        (
            {"type": "resource", "uri": "test://a", "text": "A", "data": "QQ=="},
            "a resource block needs either 'text' or 'data' (base64 or bytes), not both",
        ),
        (
            {"type": "resource", "uri": "test://a", "text": "A", "mime_type": 3},
            "a resource block's 'mime_type' must be a string",
        ),
        (
            {"type": "resource_link", "uri": "test://c"},
            "a resource_link block needs a string 'uri' and 'name'",
        ),
    ],
)
async def test_a_malformed_block_is_invalid_output_saying_what_it_needs(
    root: Context, block: dict[str, Any], problem: str
) -> None:
    result = await rendered(root, [{"type": "text", "text": "first"}, block])
    assert (result.code, result.error) == (
        "invalid_output",
        f"Tool shown returned invalid output: render block [1]: {problem}",
    )
