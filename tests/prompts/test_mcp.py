"""Prompts and completions over MCP, through the official SDK client: in memory in both
protocol eras, over stdio (``harness mcp``) and streamable HTTP (``harness run``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from harness import Host
from harness.mcp import McpSurface

from ..helpers import HARNESS
from ..mcp.test_surface import Served
from ..resources.conftest import docs_project

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
"""The handshake era (2025-11-25), and "auto": the client discovers 2026-07-28."""
PAGE = types.ResourceTemplateReference(type="ref/resource", uri="docs://pages/{page}")
SUMMARIZE = types.PromptReference(type="ref/prompt", name="summarize")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's stdio client and HTTP server run on asyncio


@pytest.fixture
async def surface(tmp_path: Path) -> AsyncIterator[McpSurface]:
    async with Host(docs_project(tmp_path)) as host:
        served = McpSurface(host.ctx)
        served.attach()
        yield served


@pytest.mark.parametrize("mode", MODES)
async def test_list_and_get_prompts(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        capabilities = client.server_capabilities
        prompts = (await client.list_prompts()).prompts
        got = await client.get_prompt("summarize", {"topic": "MCP", "tone": "warm"})
        look = await client.get_prompt("look")
    assert capabilities.prompts is not None
    assert capabilities.prompts.list_changed is True
    assert [(p.name, p.description) for p in prompts] == [
        ("summarize", "Summarize a topic."),
        ("look", "Look at the logo."),
    ]
    assert prompts[1].icons == [
        types.Icon(src="data:image/png;base64,iVBORw==", mime_type="image/png")
    ]
    assert prompts[0].icons is None
    assert prompts[0].arguments == [
        types.PromptArgument(name="topic", description="What to summarize.", required=True),
        types.PromptArgument(name="tone", description="How it should sound.", required=False),
    ]
    assert got.description == "Summarize a topic."
    assert got.messages == [
        types.PromptMessage(
            role="user", content=types.TextContent(type="text", text="Summarize MCP, warm.")
        )
    ]
    assert [message.role for message in look.messages] == ["user", "assistant", "user"]
    image, said, embedded = (message.content for message in look.messages)
    assert image == types.ImageContent(type="image", data="iVBORw==", mime_type="image/png")
    assert said == types.TextContent(type="text", text="I see it.")
    assert embedded == types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(
            uri="docs://readme", mime_type="text/markdown", text="# Readme"
        ),
    )


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_prompts_and_bad_arguments_are_invalid_params(
    surface: McpSurface, mode: str
) -> None:
    async with Client(surface.server, mode=mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.get_prompt("nope")
        with pytest.raises(MCPError) as missing:
            await client.get_prompt("summarize", {"tone": "dry"})
    assert (unknown.value.code, unknown.value.data) == (-32602, {"name": "nope"})
    assert unknown.value.message == "prompt 'nope' not found (prompts: summarize, look)"
    assert missing.value.code == -32602
    assert missing.value.message == (
        "invalid arguments for prompt 'summarize' (it takes tone, topic): topic: required"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_get_is_an_error_that_begins_denied(tmp_path: Path, mode: str) -> None:
    async with Host(docs_project(tmp_path, policy="{ rules: { 'prompt:look': deny } }")) as host:
        surface = McpSurface(host.ctx)
        async with Client(surface.server, mode=mode) as client:
            with pytest.raises(MCPError) as denied:
                await client.get_prompt("look")
    assert denied.value.code == -32003
    assert denied.value.message == "denied: the policy forbids prompt:look (rule 'prompt:look')"


@pytest.mark.parametrize("mode", MODES)
async def test_completions_of_prompt_arguments_and_template_variables(
    surface: McpSurface, mode: str
) -> None:
    async with Client(surface.server, mode=mode) as client:
        tones = await client.complete(SUMMARIZE, {"name": "tone", "value": "w"}, {"topic": "x"})
        pages = await client.complete(PAGE, {"name": "page", "value": "in"})
        nothing = await client.complete(SUMMARIZE, {"name": "topic", "value": "a"})
        with pytest.raises(MCPError) as unknown:
            await client.complete(
                types.PromptReference(type="ref/prompt", name="nope"), {"name": "a", "value": ""}
            )
    assert tones.completion == types.Completion(values=["warm"], total=1, has_more=False)
    assert pages.completion.values == ["intro", "install", "index"]
    assert nothing.completion.values == []
    assert unknown.value.code == -32602


async def test_stdio_gets_a_prompt_and_completes(tmp_path: Path) -> None:
    config = docs_project(tmp_path)
    params = StdioServerParameters(
        command=HARNESS, args=["mcp", "-c", str(config)], cwd=str(tmp_path)
    )
    async with Client(params, mode="legacy") as client:
        assert client.server_capabilities.completions is not None
        got = await client.get_prompt("summarize", {"topic": "stdio"})
        pages = await client.complete(PAGE, {"name": "page", "value": "ind"})
    assert got.messages[0].content == types.TextContent(type="text", text="Summarize stdio, dry.")
    assert pages.completion.values == ["index"]


@pytest.mark.parametrize("mode", MODES)
async def test_http_gets_prompts_and_completes_in_both_eras(tmp_path: Path, mode: str) -> None:
    config = docs_project(tmp_path)
    served = Served("run", "-c", str(config), "--port", "0", "--no-web", "--no-watch", cwd=tmp_path)
    try:
        async with Client(served.url, mode=mode) as client:
            era = client.protocol_version
            capabilities = client.server_capabilities
            names = [p.name for p in (await client.list_prompts()).prompts]
            got = await client.get_prompt("summarize", {"topic": "http"})
            tones = await client.complete(SUMMARIZE, {"name": "tone", "value": "d"})
    finally:
        served.close()
    assert era == ("2025-11-25" if mode == "legacy" else "2026-07-28")
    assert capabilities.completions is not None
    assert capabilities.prompts is not None
    assert names == ["summarize", "look"]
    assert got.messages[0].content == types.TextContent(type="text", text="Summarize http, dry.")
    assert tones.completion.values == ["dry"]
