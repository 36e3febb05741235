"""An upstream's resources, templates and prompts are mounted like its tools (DESIGN §12).

The upstream is the official SDK's ``MCPServer`` (tests/gateway/forwarding_server.py) over
stdio: a text resource, a binary one, a template and a prompt. They are read and got
through harness's registries and through a real SDK client downstream; a URI two entries
share is the later entry's problem; the server's list change and update reach harness.
"""

from __future__ import annotations

import base64
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client as SdkClient

from harness import Host
from harness.mcp import McpSurface

from .conftest import fiber_of, write_config
from .test_forwarding import entry

pytestmark = pytest.mark.anyio


async def test_resources_templates_and_prompts_are_mounted(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        resources, prompts = host.ctx.resources, host.ctx.prompts
        assert {"notes://readme", "notes://logo"} <= set(resources.list())
        assert resources.templates() == ["notes://people/{name}"]
        assert "up_review" in prompts.list()  # prompt names take the prefix; URIs are kept
        (readme,) = await resources.read("notes://readme")
        (logo,) = await resources.read("notes://logo")
        (ada,) = await resources.read("notes://people/ada")
        messages = await prompts.render("up_review", {"code": "x = 1"})
    assert (readme.text, readme.mime_type) == ("Read me first.", "text/plain")
    assert (logo.blob, logo.mime_type) == (b"\x89PNG logo", "image/png")
    assert ada.text == "A note on ada."
    assert messages == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Review this code for correctness:\n\nx = 1"},
        }
    ]


async def test_an_sdk_client_downstream_reads_and_gets_them(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:
            with anyio.fail_after(30):
                listed = await client.list_resources()
                templates = await client.list_resource_templates()
                logo = await client.read_resource("notes://logo")
                person = await client.read_resource("notes://people/bo")
                prompt = await client.get_prompt("up_review", {"code": "f()", "focus": "speed"})
    uris = {str(resource.uri) for resource in listed.resources}
    assert {"notes://readme", "notes://logo"} <= uris
    assert [t.uri_template for t in templates.resource_templates] == ["notes://people/{name}"]
    (blob,) = logo.contents
    assert isinstance(blob, types.BlobResourceContents)
    assert base64.b64decode(blob.blob) == b"\x89PNG logo"
    (text,) = person.contents
    assert isinstance(text, types.TextResourceContents)
    assert text.text == "A note on bo."
    (message,) = prompt.messages
    assert isinstance(message.content, types.TextContent)
    assert message.content.text == "Review this code for speed:\n\nf()"


async def test_completions_are_the_upstream_s(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with SdkClient(surface.server, mode="legacy") as client:
            with anyio.fail_after(30):
                people = await client.complete(
                    types.ResourceTemplateReference(
                        type="ref/resource", uri="notes://people/{name}"
                    ),
                    {"name": "name", "value": "ad"},
                )
                focus = await client.complete(
                    types.PromptReference(type="ref/prompt", name="up_review"),
                    {"name": "focus", "value": "c"},
                    {"code": "x = 1"},  # the other arguments reach the upstream too
                )
    assert people.completion.values == ["ada", "adele"]
    assert focus.completion.values == ["correctness", "clarity"]


async def test_a_uri_two_entries_share_is_the_later_entry_s_problem(tmp_path: Path) -> None:
    entries = [entry(), {**entry(), "id": "again"}]
    async with Host(write_config(tmp_path, entries)) as host:
        problems = fiber_of(host, "again").problems
        assert fiber_of(host, "up").problems == []
        assert {"up_review", "again_review"} <= set(host.ctx.prompts.list())
        (readme,) = await host.ctx.resources.read("notes://readme")
    assert readme.text == "Read me first."
    assert any(
        problem.startswith("MCP server 'again': resource notes://readme is not mounted")
        for problem in problems
    ), problems


async def test_a_list_change_re_lists_and_an_update_is_passed_on(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry()])) as host:
        added, updated = anyio.Event(), anyio.Event()
        host.ctx.on(
            "resources/change",
            lambda kind, uri: added.set() if uri == "notes://added" else None,
        )
        host.ctx.on(
            "resources/updated",
            lambda uri: updated.set() if uri == "notes://readme" else None,
        )
        with anyio.fail_after(30):
            said = await host.tools.execute({"id": "a", "name": "up_add_note", "args": {}})
            assert said.ok, said.error
            await added.wait()
            (note,) = await host.ctx.resources.read("notes://added")
            touched = await host.tools.execute(
                {"id": "t", "name": "up_touch", "args": {"uri": "notes://readme"}}
            )
            assert touched.ok, touched.error
            await updated.wait()
    assert note.text == "new"


async def test_resources_false_leaves_them_out(tmp_path: Path) -> None:
    async with Host(write_config(tmp_path, [entry(resources=False)])) as host:
        assert "notes://readme" not in host.ctx.resources.list()
        assert "up_review" not in host.ctx.prompts.list()
        assert "up_work" in host.tools.list()
