"""Streamable HTTP upstreams, ``harness mcp`` as an upstream, and MCP clients downstream."""

from __future__ import annotations

import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from harness import Host

from ..helpers import HARNESS
from .conftest import PYTHON, SERVER, Watch, stdio_entry, write_config

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).parents[2]


class Process:
    """A subprocess that prints a line once it serves; the rest of its stderr is drained."""

    def __init__(self, args: list[str], ready: str, cwd: Path, env: dict[str, str] | None = None):
        import os

        self.process = subprocess.Popen(
            args,
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
        )
        assert self.process.stderr is not None
        self.match: re.Match[str] | None = None
        lines = []
        for line in self.process.stderr:
            lines.append(line)
            self.match = re.search(ready, line)
            if self.match:
                break
        assert self.match, "".join(lines)
        self._drain = threading.Thread(target=self.process.stderr.read, daemon=True)
        self._drain.start()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)
        self._drain.join(timeout=20)
        assert self.process.stderr is not None
        self.process.stderr.close()


# The SDK's streamable HTTP client leaves httpx2's response generators to the garbage
# collector on trio (a ResourceWarning, an error here), so HTTP upstreams are tested on
# asyncio; stdio upstreams run on both backends.


@pytest.fixture
def http_upstream(tmp_path: Path) -> Iterator[str]:
    served = Process(
        [PYTHON, str(SERVER), "http", "0"], r"Uvicorn running on (http://\S+)", cwd=tmp_path
    )
    try:
        assert served.match is not None
        yield served.match.group(1) + "/mcp"
    finally:
        served.close()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # see below
async def test_http_upstream_with_headers_from_the_environment(
    tmp_path: Path, http_upstream: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret")
    entry = {
        "id": "web",
        "name": "harness:mcp-client",
        "config": {"url": http_upstream, "headers": {"X-Token": "${UPSTREAM_TOKEN}"}},
    }
    config = write_config(tmp_path, [entry])
    async with Host(config) as host:
        watch = Watch(host)
        tools = host.tools
        token = await tools.execute({"id": "1", "name": "web_header", "args": {"name": "x-token"}})
        assert token.result == {"result": "s3cret"}
        weather = await tools.execute({"id": "2", "name": "web_weather", "args": {"city": "Rome"}})
        assert weather.result == {"city": "Rome", "celsius": 21.5}
        failed = await tools.execute({"id": "3", "name": "web_fail", "args": {}})
        assert failed.code == "tool_error"
        await tools.execute({"id": "4", "name": "web_grow", "args": {}})
        await watch.until(lambda: "web_added" in tools.list())


async def test_harness_mcp_itself_as_an_upstream(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    inner_config = write_config(
        inner,
        [
            {"id": "echo", "name": str(ROOT / "plugins" / "echo.py")},
            {"id": "add", "name": str(ROOT / "plugins" / "add.py")},
        ],
    )
    entry = {
        "id": "inner",
        "name": "harness:mcp-client",
        "config": {"command": HARNESS, "args": ["mcp", "-c", str(inner_config)]},
    }
    config = write_config(tmp_path, [entry])
    async with Host(config) as host:
        assert host.tools.list() == ["inner_echo", "inner_add"]
        mcp = {tool["name"]: tool for tool in host.tools.schemas("mcp")}
        assert mcp["inner_echo"]["inputSchema"]["required"] == ["text"]
        echoed = await host.tools.execute({"id": "1", "name": "inner_echo", "args": {"text": "hi"}})
        assert echoed.result == {"text": "Echo: hi"}
        added = await host.tools.execute({"id": "2", "name": "inner_add", "args": {"a": 2, "b": 3}})
        assert added.result == {"result": 5.0}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK's HTTP client, as above
async def test_mcp_clients_downstream_list_call_cancel_and_hear_list_changes(
    tmp_path: Path, mark: Path
) -> None:
    config = write_config(tmp_path, [stdio_entry("up", mark=mark)])
    served = Process(
        [HARNESS, "run", "-c", str(config), "--port", "0"],
        r"serving MCP at (\S+)",
        cwd=tmp_path,
    )
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    try:
        assert served.match is not None
        url = served.match.group(1)
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "up_echo" in names
            assert "up_added" not in names
            echoed = await client.call_tool("up_echo", {"text": "down"})
            assert echoed.structured_content == {"result": "upstream says down"}
            picture = await client.call_tool("up_picture", {})
            assert [block.type for block in picture.content] == ["text", "image", "resource_link"]
            with pytest.raises(MCPError):
                await client.call_tool("up_sleep", {"seconds": 60}, read_timeout_seconds=1)
            seen = await client.call_tool("up_cancellations", {})
            assert seen.structured_content == {"result": 1}
            await client.call_tool("up_grow", {})
            with anyio.fail_after(30):
                await changed.wait()
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "up_added" in names
            added = await client.call_tool("up_added", {})
            assert added.structured_content is None  # the server sent none (DESIGN §12)
            assert [getattr(b, "text", None) for b in added.content] == ["I was added"]
    finally:
        served.close()
