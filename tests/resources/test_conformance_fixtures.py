"""The conformance fixture project (``examples/conformance``): its resources, prompts,
completions and tools answer as the official suite's scenarios expect, in both eras, and its plugins
use harness's public names only. (``python -m tests.conformance -c
examples/conformance/cordis.yml`` runs the suite itself against it.)"""

from __future__ import annotations

import ast
import base64
import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

import harness
from harness import Host
from harness.mcp import McpSurface

from ..helpers import ROOT

pytestmark = pytest.mark.anyio
PROJECT = ROOT / "examples" / "conformance"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def surface(tmp_path: Path) -> AsyncIterator[McpSurface]:
    shutil.copytree(PROJECT, tmp_path / "project", ignore=shutil.ignore_patterns("__pycache__"))
    async with Host(tmp_path / "project" / "cordis.yml") as host:
        assert host.problems() == []
        yield McpSurface(host.ctx)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_suites_resources(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        listed = {r.uri: r for r in (await client.list_resources()).resources}
        text = (await client.read_resource("test://static-text")).contents[0]
        blob = (await client.read_resource("test://static-binary")).contents[0]
        data = (await client.read_resource("test://template/123/data")).contents[0]
        ids = await client.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="test://template/{id}/data"),
            {"name": "id", "value": "1"},
        )
        with pytest.raises(MCPError) as missing:
            await client.read_resource("test://nonexistent-resource-for-conformance-testing")
    assert set(listed) == {"test://static-text", "test://static-binary", "test://watched-resource"}
    assert all(resource.name and resource.description for resource in listed.values())
    assert text == types.TextResourceContents(
        uri="test://static-text",
        mime_type="text/plain",
        text="This is the content of the static text resource.",
    )
    assert isinstance(blob, types.BlobResourceContents)
    assert blob.mime_type == "image/png"
    assert base64.b64decode(blob.blob).startswith(b"\x89PNG")
    assert json.loads(data.text) == {  # type: ignore[union-attr]
        "id": "123",
        "templateTest": True,
        "data": "Data for ID: 123",
    }
    assert ids.completion.values == ["1", "123"]
    assert (missing.value.code, missing.value.data) == (
        -32602,
        {"uri": "test://nonexistent-resource-for-conformance-testing"},
    )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_suites_prompts(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        listed = {p.name: p for p in (await client.list_prompts()).prompts}
        simple = await client.get_prompt("test_simple_prompt")
        with_args = await client.get_prompt(
            "test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"}
        )
        embedded = await client.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
        )
        image = await client.get_prompt("test_prompt_with_image")
        words = await client.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "par"},
        )
    assert set(listed) == {
        "test_simple_prompt",
        "test_prompt_with_arguments",
        "test_prompt_with_embedded_resource",
        "test_prompt_with_image",
        "test_input_required_result_prompt",
    }
    assert all(prompt.description for prompt in listed.values())
    assert [(a.name, a.required) for a in listed["test_prompt_with_arguments"].arguments or []] == [
        ("arg1", True),
        ("arg2", True),
    ]
    assert simple.messages == [
        types.PromptMessage(
            role="user",
            content=types.TextContent(type="text", text="This is a simple prompt for testing."),
        )
    ]
    assert with_args.messages[0].content == types.TextContent(
        type="text", text="Prompt with arguments: arg1='hello', arg2='world'"
    )
    resource = embedded.messages[0].content
    assert isinstance(resource, types.EmbeddedResource)
    assert resource.resource.uri == "test://example-resource"
    assert embedded.messages[1].content == types.TextContent(
        type="text", text="Please process the embedded resource above."
    )
    picture = image.messages[0].content
    assert isinstance(picture, types.ImageContent)
    assert picture.mime_type == "image/png"
    assert words.completion.values == ["paris", "park", "party"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_suites_tools(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        simple = await client.call_tool("test_simple_text", {})
        image = await client.call_tool("test_image_content", {})
        audio = await client.call_tool("test_audio_content", {})
        embedded = await client.call_tool("test_embedded_resource", {})
        mixed = await client.call_tool("test_multiple_content_types", {})
        failed = await client.call_tool("test_error_handling", {})
    assert {
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_error_handling",
    } <= listed
    assert simple.content == [
        types.TextContent(type="text", text="This is a simple text response for testing.")
    ]
    picture = image.content[0]
    assert isinstance(picture, types.ImageContent)
    assert (picture.mime_type, base64.b64decode(picture.data)[:4]) == ("image/png", b"\x89PNG")
    sound = audio.content[0]
    assert isinstance(sound, types.AudioContent)
    assert (sound.mime_type, base64.b64decode(sound.data)[:4]) == ("audio/wav", b"RIFF")
    assert embedded.content == [
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(
                uri="test://embedded-resource",
                mime_type="text/plain",
                text="This is an embedded resource content.",
            ),
        )
    ]
    assert [block.type for block in mixed.content] == ["text", "image", "resource"]
    resource = mixed.content[2]
    assert isinstance(resource, types.EmbeddedResource)
    assert json.loads(resource.resource.text) == {"test": "data", "value": 123}  # type: ignore[union-attr]
    assert failed.is_error
    assert failed.content == [
        types.TextContent(type="text", text="This tool intentionally returns an error for testing")
    ]


def test_the_plugins_use_the_public_names_only() -> None:
    for path in sorted((PROJECT / "plugins").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harness"):
                assert node.module == "harness", f"{path.name} imports {node.module}"
                assert {alias.name for alias in node.names} <= set(harness.__all__)
            if isinstance(node, ast.Import):
                assert not any(a.name.startswith("harness.") for a in node.names), path.name
