"""Resources over MCP, through the official SDK client: in memory in both protocol eras, over
stdio (``harness mcp``) and streamable HTTP (``harness run``), with hot reload."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from harness import Host
from harness.mcp import McpSurface

from ..helpers import HARNESS
from ..mcp.test_surface import Served
from .conftest import DOCS, PNG, docs_project

pytestmark = pytest.mark.anyio
MODES = ["legacy", "auto"]
"""The handshake era (2025-11-25), and "auto": the client discovers 2026-07-28."""


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
async def test_list_templates_and_read(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        capabilities = client.server_capabilities
        listed = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        text = (await client.read_resource("docs://readme")).contents
        blob = (await client.read_resource("docs://logo")).contents
        page = (await client.read_resource("docs://pages/install")).contents
    assert capabilities.resources is not None
    assert capabilities.resources.subscribe is True
    assert capabilities.resources.list_changed is True
    assert capabilities.completions is not None
    assert [(r.uri, r.name, r.mime_type, r.description) for r in listed] == [
        ("docs://readme", "readme", "text/markdown", "The project's README."),
        ("docs://logo", "logo", "image/png", "The logo."),
    ]
    assert listed[1].icons == [
        types.Icon(src="https://example.com/logo.png", mime_type="image/png", sizes=["48x48"])
    ]
    assert [(t.uri_template, t.name) for t in templates] == [("docs://pages/{page}", "page")]
    assert text == [
        types.TextResourceContents(uri="docs://readme", mime_type="text/markdown", text="# Readme")
    ]
    assert len(blob) == 1
    assert isinstance(blob[0], types.BlobResourceContents)
    assert base64.b64decode(blob[0].blob) == PNG
    assert page[0].text == "# Install"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_and_refused_uris_are_json_rpc_errors(surface: McpSurface, mode: str) -> None:
    async with Client(surface.server, mode=mode) as client:
        with pytest.raises(MCPError) as unknown:
            await client.read_resource("docs://nothing")
        with pytest.raises(MCPError) as missing:
            await client.read_resource("docs://pages/outro")
        with pytest.raises(MCPError) as climbing:
            await client.read_resource("docs://pages/..%2F..%2Fetc")
    assert (unknown.value.code, unknown.value.data) == (-32602, {"uri": "docs://nothing"})
    assert unknown.value.message == (
        "resource 'docs://nothing' not found: no resource has this URI and no template matches it"
    )
    assert (missing.value.code, missing.value.data) == (-32602, {"uri": "docs://pages/outro"})
    assert climbing.value.code == -32602
    assert "is refused: its '..' climbs out of the folder it names" in climbing.value.message


@pytest.mark.parametrize("mode", MODES)
async def test_a_refused_read_is_an_error_that_begins_denied(tmp_path: Path, mode: str) -> None:
    policy = "{ default: deny, rules: { 'resource:docs://readme': allow } }"
    async with Host(docs_project(tmp_path, policy=policy)) as host:
        surface = McpSurface(host.ctx)
        async with Client(surface.server, mode=mode) as client:
            assert (await client.read_resource("docs://readme")).contents
            with pytest.raises(MCPError) as denied:
                await client.read_resource("docs://logo")
    assert denied.value.code == -32003
    assert denied.value.message == (
        "denied: the policy forbids resource:docs://logo (the default rule)"
    )


@pytest.mark.filterwarnings("ignore:resources/:mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_refused_uri_cannot_be_subscribed_to_in_either_era(tmp_path: Path) -> None:
    """A subscription tells when a resource changes: the policy judges it as a read, so a
    client the policy refuses a URI learns nothing of it."""
    policy = "{ default: deny, rules: { 'resource:docs://readme': allow } }"
    async with Host(docs_project(tmp_path, policy=policy)) as host:
        surface = McpSurface(host.ctx)
        resources = host.ctx.resources
        async with Client(surface.server, mode="legacy") as client:
            await client.session.subscribe_resource("docs://readme")
            with pytest.raises(MCPError) as handshake:
                await client.session.subscribe_resource("docs://logo")
        async with Client(surface.server) as client:
            with pytest.raises(MCPError) as listened:
                async with client.listen(resource_subscriptions=["docs://logo"]):
                    pass
        watched = dict(resources.subscriptions.counts)
    expected = "denied: the policy forbids resource:docs://logo (the default rule)"
    assert (handshake.value.code, handshake.value.message) == (-32003, expected)
    assert (listened.value.code, listened.value.message) == (-32003, expected)
    assert watched == {}  # nothing was counted for it, nor left behind


@pytest.mark.filterwarnings("ignore:resources/:mcp.shared.exceptions.MCPDeprecationWarning")
async def test_subscribe_update_unsubscribe_on_the_handshake_era(surface: McpSurface) -> None:
    updates: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            updates.append(str(message.params.uri))
            arrived.set()

    resources = surface.root.resources
    async with Client(surface.server, mode="legacy", message_handler=on_message) as client:
        await client.session.subscribe_resource("docs://readme")
        await client.session.subscribe_resource("docs://pages/intro")
        resources.notify_updated("docs://readme")
        with anyio.fail_after(10):
            await arrived.wait()
        arrived = anyio.Event()
        await client.session.unsubscribe_resource("docs://readme")
        resources.notify_updated("docs://readme")  # unsubscribed: not sent
        resources.notify_updated("docs://logo")  # never subscribed: not sent
        resources.notify_updated("docs://pages/intro")
        with anyio.fail_after(10):
            await arrived.wait()
    assert updates == ["docs://readme", "docs://pages/intro"]


async def test_updates_on_listen_streams(surface: McpSurface) -> None:
    events: list[Any] = []
    async with (
        Client(surface.server) as client,
        client.listen(resource_subscriptions=["docs://readme"]) as subscription,
    ):
        surface.root.resources.notify_updated("docs://logo")  # not asked for
        surface.root.resources.notify_updated("docs://readme")
        with anyio.fail_after(10):
            async for event in subscription:
                events.append(event)
                break
    assert [(type(e).__name__, e.uri) for e in events] == [("ResourceUpdated", "docs://readme")]


# -- end to end: real processes, hot reload ------------------------------------------------


def _edited() -> str:
    """The docs plugin without its template and its 'look' prompt."""
    edited = DOCS.replace("for item in (readme, page, logo):", "for item in (readme, logo):")
    return edited.replace("    ctx.prompts.register(look)\n", "")


async def test_stdio_lists_reads_and_announces_a_hot_reload(tmp_path: Path) -> None:
    config = docs_project(tmp_path)
    changed = {"resources": anyio.Event(), "prompts": anyio.Event()}

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ResourceListChangedNotification):
            changed["resources"].set()
        if isinstance(message, types.PromptListChangedNotification):
            changed["prompts"].set()

    params = StdioServerParameters(
        command=HARNESS, args=["mcp", "-c", str(config)], cwd=str(tmp_path)
    )
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        assert [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ] == ["docs://pages/{page}"]
        assert (await client.read_resource("docs://pages/intro")).contents[0].text == "# Intro"  # type: ignore[union-attr]
        (tmp_path / "plugins" / "docs.py").write_text(_edited())
        with anyio.fail_after(20):
            await changed["resources"].wait()
            await changed["prompts"].wait()
        templates = (await client.list_resource_templates()).resource_templates
        prompts = [p.name for p in (await client.list_prompts()).prompts]
    assert templates == []
    assert prompts == ["summarize"]


async def test_http_serves_both_eras_and_announces_a_hot_reload(tmp_path: Path) -> None:
    config = docs_project(tmp_path)
    served = Served("run", "-c", str(config), "--port", "0", "--no-web", cwd=tmp_path)
    try:
        async with Client(served.url, mode="legacy") as legacy:
            blob = (await legacy.read_resource("docs://logo")).contents[0]
            assert base64.b64decode(blob.blob) == PNG  # type: ignore[union-attr]
        async with Client(served.url) as client:
            assert client.protocol_version == "2026-07-28"
            assert [r.uri for r in (await client.list_resources()).resources] == [
                "docs://readme",
                "docs://logo",
            ]
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("docs://nothing")
            assert unknown.value.data == {"uri": "docs://nothing"}
            async with client.listen(
                resources_list_changed=True, prompts_list_changed=True
            ) as subscription:
                (tmp_path / "plugins" / "docs.py").write_text(_edited())
                kinds: set[str] = set()
                with anyio.fail_after(20):
                    async for event in subscription:
                        kinds.add(type(event).__name__)
                        if kinds == {"ResourcesListChanged", "PromptsListChanged"}:
                            break
            templates = (
                await client.list_resource_templates(cache_mode="bypass")
            ).resource_templates
            assert templates == []
    finally:
        served.close()
