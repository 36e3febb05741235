"""The MCP surface, through the official MCP client: in memory, over stdio, over HTTP."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from harness import Host, define_tool
from harness.errors import HarnessError
from harness.mcp import McpSurface, check_bind

from ..helpers import ALL_ON, HARNESS, Elicitor

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the MCP SDK's HTTP server (uvicorn) and stdio client run on asyncio


@pytest.fixture
def workspace(workspace: Path) -> Path:
    """The shared empty workspace, holding one note."""
    (workspace / "notes.txt").write_text("hello from the workspace\n")
    return workspace


@pytest.fixture
async def surface(config: Path, workspace: Path) -> AsyncIterator[McpSurface]:
    async with Host(config, overrides=ALL_ON) as host:
        served = McpSurface(host.ctx)
        served.attach()
        yield served


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


pytestmark = pytest.mark.anyio


async def test_list_tools_in_the_mcp_format(surface: McpSurface) -> None:
    async with Client(surface.server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert list(tools) == surface.tools.list()
    echo = tools["echo"]
    assert echo.description == surface.tools.get("echo").description  # type: ignore[union-attr]
    assert echo.input_schema["required"] == ["text"]
    assert echo.output_schema == {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
    assert tools["add"].output_schema == {
        "type": "object",
        "properties": {"result": {"type": "number"}},
        "required": ["result"],
    }
    assert echo.annotations is not None
    assert echo.annotations.read_only_hint is True
    assert tools["write_text_file"].annotations.destructive_hint is True  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("tool", "args", "structured", "shown"),
    [
        ("echo", {"text": "hi"}, {"text": "Echo: hi"}, "Echo: hi"),
        ("greet", {"name": "Ada"}, {"greeting": "Hello, Ada!"}, "Hello, Ada!"),
        ("add", {"a": 1, "b": 2}, {"result": 3}, "3"),
        ("multiply", {"a": 4, "b": 2.5}, {"result": 10.0}, "10.0"),
        ("read_text_file", {"path": "notes.txt"}, None, "hello from the workspace\n"),
        ("list_dir", {}, None, "notes.txt"),
        ("grep", {"pattern": "workspace"}, None, "notes.txt:1: hello from the workspace"),
        ("git_log_reader", {"repoPath": str(ROOT), "maxCount": 1}, None, "Last 1 commit(s)"),
        ("git_diff", {"repoPath": str(ROOT), "commit": "HEAD"}, None, ""),
    ],
)
async def test_call_each_bundled_tool(
    surface: McpSurface, tool: str, args: dict[str, Any], structured: Any, shown: str
) -> None:
    async with Client(surface.server) as client:
        result = await client.call_tool(tool, args)
    assert result.is_error is False, text(result)
    assert shown in text(result)
    assert result.structured_content is not None
    if structured is not None:
        assert result.structured_content == structured
    else:
        assert result.structured_content["ok"] is True


async def test_failures_are_error_results_without_structured_content(surface: McpSurface) -> None:
    async with Client(surface.server) as client:
        bad = await client.call_tool("echo", {"text": 5})
        unknown = await client.call_tool("nope", {})
    assert bad.is_error is True
    assert text(bad) == "Invalid arguments for tool echo: text: expected string, got integer"
    assert bad.structured_content is None
    assert unknown.is_error is True
    assert text(unknown) == "Tool nope not found"


async def test_denied_call(config: Path, workspace: Path) -> None:
    async with Host(config, overrides=[*ALL_ON, "policy.config.rules={greet: deny}"]) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with Client(surface.server) as client:
            result = await client.call_tool("greet", {"name": "x"})
    assert result.is_error is True
    assert text(result) == "Tool denied: the policy forbids greet (rule 'greet')"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_is_elicited_accept_and_decline(
    surface: McpSurface, workspace: Path, mode: str
) -> None:
    args = {"path": "out.txt", "content": "written"}
    accept = Elicitor("accept")
    async with Client(surface.server, mode=mode, elicitation_callback=accept) as client:
        approved = await client.call_tool("write_text_file", args)
    assert approved.is_error is False, text(approved)
    assert (workspace / "out.txt").read_text() == "written"
    assert len(accept.asked) == 1
    assert accept.asked[0].startswith("Allow the tool call write_text_file(")
    (workspace / "out.txt").unlink()
    decline = Elicitor("decline")
    async with Client(surface.server, mode=mode, elicitation_callback=decline) as client:
        refused = await client.call_tool("write_text_file", args)
    assert refused.is_error is True
    assert text(refused).endswith("(the user declined)")
    assert not (workspace / "out.txt").exists()


async def test_ask_without_elicitation_is_denied_saying_approval_is_needed(
    surface: McpSurface, workspace: Path
) -> None:
    async with Client(surface.server) as client:
        result = await client.call_tool("write_text_file", {"path": "x.txt", "content": "x"})
    assert result.is_error is True
    assert text(result) == (
        "Tool denied: the policy asks before write_text_file runs (rule 'write_text_file') "
        "(nobody can answer its approval: the caller cannot ask a person and no console page "
        "is open; approve it from an MCP client with elicitation, with `harness call "
        "write_text_file --yes`, in the web console (open it first: it asks there), or with a "
        "rule `write_text_file: allow` in the policy)"
    )
    assert not (workspace / "x.txt").exists()


async def test_client_cancellation_cancels_the_running_call(surface: McpSurface) -> None:
    started = anyio.Event()
    stopped = anyio.Event()

    async def slow(args: dict[str, Any]) -> str:
        started.set()
        try:
            await anyio.sleep(30)
        finally:
            stopped.set()
        return "never"

    surface.tools.register(
        define_tool(name="slow", description="Sleep", execute=slow, timeout=None)
    )
    async with Client(surface.server, mode="legacy") as client:
        with anyio.move_on_after(10):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "slow", {})
                await started.wait()
                group.cancel_scope.cancel()
        with anyio.fail_after(10):
            await stopped.wait()


async def test_list_changed_on_handshake_era_connections(
    surface: McpSurface, tmp_path: Path
) -> None:
    seen = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.set()

    async with Client(surface.server, mode="legacy", message_handler=on_message) as client:
        capabilities = client.server_capabilities.tools
        assert capabilities is not None
        assert capabilities.list_changed is True
        before = [tool.name for tool in (await client.list_tools()).tools]
        dispose = surface.tools.register(
            define_tool(name="fresh", description="New", execute=print)
        )
        with anyio.fail_after(10):
            await seen.wait()
        after = [tool.name for tool in (await client.list_tools()).tools]
        dispose()
    assert after == [*before, "fresh"]


async def test_list_changed_on_listen_streams(surface: McpSurface) -> None:
    async with Client(surface.server) as client:
        async with client.listen(tools_list_changed=True) as subscription:
            surface.tools.register(define_tool(name="fresh", description="New", execute=print))
            with anyio.fail_after(10):
                async for event in subscription:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert "fresh" in names


# -- end to end ---------------------------------------------------------------------------


def project(tmp_path: Path) -> Path:
    plugins = ROOT / "plugins"
    config = tmp_path / "cordis.yml"
    config.write_text(
        "insert:\n"
        f"  - {{ id: echo, name: {plugins / 'echo.py'} }}\n"
        f"  - {{ id: add, name: {plugins / 'add.py'} }}\n"
    )
    return config


async def test_stdio_end_to_end_with_hot_disable(tmp_path: Path) -> None:
    config = project(tmp_path)
    seen = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            seen.set()

    params = StdioServerParameters(
        command=HARNESS, args=["mcp", "-c", str(config)], cwd=str(tmp_path)
    )
    async with Client(params, mode="legacy", message_handler=on_message) as client:
        assert [t.name for t in (await client.list_tools()).tools] == ["echo", "add"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured_content == {"result": 5.0}
        disabled = subprocess.run(  # noqa: ASYNC221 (a quick CLI edit, as a user would)
            [HARNESS, "-c", str(config), "disable", "add"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert disabled.returncode == 0, disabled.stderr
        with anyio.fail_after(15):
            await seen.wait()
        assert [t.name for t in (await client.list_tools()).tools] == ["echo"]


class Served:
    """A ``harness run --mcp http`` subprocess and the URL it serves at."""

    def __init__(self, *args: str, cwd: Path) -> None:
        self.process = subprocess.Popen(
            [HARNESS, *args], cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        self.url = ""
        assert self.process.stderr is not None
        for line in self.process.stderr:
            found = re.search(r"serving MCP at (\S+)", line)
            if found:
                self.url = found.group(1)
                break
        assert self.url, "harness run did not start serving"

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=20)
        assert self.process.stderr is not None
        self.process.stderr.close()


async def test_http_end_to_end_with_config_edit(tmp_path: Path) -> None:
    config = project(tmp_path)
    served = Served("run", "-c", str(config), "--port", "0", cwd=tmp_path)
    try:
        async with Client(served.url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo", "add"]
            echoed = await client.call_tool("echo", {"text": "over http"})
            assert echoed.structured_content == {"text": "Echo: over http"}
            async with client.listen(tools_list_changed=True) as subscription:
                config.write_text(
                    config.read_text().replace("add.py }", "add.py, enabled: false }")
                )
                with anyio.fail_after(15):
                    async for _ in subscription:
                        break
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
    finally:
        served.close()


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One ``harness run --token s3cret`` server shared by the HTTP security tests."""
    folder = tmp_path_factory.mktemp("secured")
    served = Served(
        "run",
        "-c",
        str(project(folder)),
        "--port",
        "0",
        "--no-watch",
        "--token",
        "s3cret",
        cwd=folder,
    )
    yield served
    served.close()


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TOKEN = {"Authorization": "Bearer s3cret"}


def test_http_refuses_foreign_origin(secured: Served) -> None:
    foreign = httpx2.post(
        secured.url, json=PING, headers={**ACCEPT, **TOKEN, "Origin": "http://evil.example"}
    )
    assert foreign.status_code == 403
    origin = secured.url.rsplit("/", 1)[0]
    local = httpx2.post(secured.url, json=PING, headers={**ACCEPT, **TOKEN, "Origin": origin})
    assert local.status_code not in (401, 403)  # past both checks, the MCP layer answers


def test_a_public_bind_without_a_token_still_needs_one(tmp_path: Path) -> None:
    # harness run makes one (tests/web/test_token.py); the library itself still refuses
    with pytest.raises(HarnessError, match="without --token"):
        check_bind("0.0.0.0", None)


async def test_token_is_required_when_set(secured: Served) -> None:
    missing = httpx2.post(secured.url, json=PING, headers=ACCEPT)
    assert missing.status_code == 401
    wrong = httpx2.post(secured.url, json=PING, headers={**ACCEPT, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    http = httpx2.AsyncClient(headers=TOKEN)
    async with http, Client(streamable_http_client(secured.url, http_client=http)) as client:
        result = await client.call_tool("add", {"a": 1, "b": 1})
    assert result.structured_content == {"result": 2.0}


def test_client_config_snippets_in_the_guide_are_valid_json() -> None:
    guide = (ROOT / "docs" / "guide.md").read_text()
    section = guide[guide.index("## 9. MCP") :]
    blocks = re.findall(r"```json\n(.*?)```", section, re.S)
    assert len(blocks) >= 2
    for block in blocks:
        assert "mcpServers" in json.loads(block)
