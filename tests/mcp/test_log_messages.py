"""Problems reach MCP clients as ``notifications/message`` (#11 item 13), through the official
SDK client: over stdio (``harness mcp``) and streamable HTTP (``harness run``), at the
handshake and after a hot reload that introduces new ones; 2026-07-28 clients that opt in to
logging see them beside ``tools/list``."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from ..helpers import HARNESS, ROOT, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's stdio and HTTP clients run on asyncio here


def config(extra: str = "", echo: bool = True) -> str:
    return f"""
        insert:
          - id: echo
            name: {ROOT / "plugins" / "echo.py"}
            enabled: {"true" if echo else "false"}
          - id: ghost
            name: ./plugins/missing.py
        {extra}"""


PHANTOM = """  - id: phantom
            name: ./plugins/phantom.py
"""


class Log:
    """Every ``notifications/message`` a client received; ``wait`` for one about an entry."""

    def __init__(self) -> None:
        self.entries: list[types.LoggingMessageNotificationParams] = []
        self._changed = anyio.Event()

    async def __call__(self, params: types.LoggingMessageNotificationParams) -> None:
        self.entries.append(params)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait(self, entry: str) -> types.LoggingMessageNotificationParams:
        with anyio.fail_after(30):
            while True:
                for params in self.entries:
                    if isinstance(params.data, dict) and params.data.get("entry") == entry:
                        return params
                await self._changed.wait()


def check(params: types.LoggingMessageNotificationParams, folder: Path, level: str) -> None:
    data = params.data
    assert params.level == level
    assert params.logger == "harness"
    assert isinstance(data, dict)
    assert data["file"] == str(folder / "cordis.yml")
    assert isinstance(data["line"], int)
    assert data["text"].startswith(f"{folder / 'cordis.yml'}:{data['line']}: entry ")
    assert "missing.py" in data["message"] or "phantom.py" in data["message"]


def environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}


async def test_problems_reach_a_stdio_client_with_the_first_listing_and_after_a_reload(
    tmp_path: Path,
) -> None:
    write(tmp_path / "cordis.yml", config())
    log = Log()
    params = StdioServerParameters(
        command=HARNESS,
        args=["mcp", "-c", str(tmp_path / "cordis.yml")],
        cwd=str(tmp_path),
        env=environment(),
    )
    async with Client(params, mode="legacy", logging_callback=log) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]
        check(await log.wait("ghost"), tmp_path, "error")
        write(tmp_path / "cordis.yml", config(PHANTOM))
        check(await log.wait("phantom"), tmp_path, "warning")
        assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    write(tmp_path / "cordis.yml", config())
    process, port = start_harness_run(tmp_path, environment())
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


@contextlib.asynccontextmanager
async def http_client(url: str, log: Log, **options: Any) -> AsyncIterator[Client]:
    async with Client(url, logging_callback=log, cache=None, **options) as client:
        yield client


async def test_problems_reach_an_http_client_with_the_first_listing_and_after_a_reload(
    served: str, tmp_path: Path
) -> None:
    log = Log()
    async with http_client(served, log, mode="legacy") as client:
        await client.list_tools()
        check(await log.wait("ghost"), tmp_path, "error")
        write(tmp_path / "cordis.yml", config(PHANTOM))
        check(await log.wait("phantom"), tmp_path, "warning")
        assert [tool.name for tool in (await client.list_tools()).tools] == ["echo"]


async def test_modern_clients_that_opt_in_see_problems_beside_tools_list(
    served: str, tmp_path: Path
) -> None:
    quiet, told = Log(), Log()
    async with http_client(served, quiet, mode="2026-07-28") as client:
        await client.list_tools()
    assert quiet.entries == []  # no log level asked for: no log entries
    async with http_client(served, told, mode="2026-07-28", log_level="warning") as client:
        await client.list_tools()
        check(await told.wait("ghost"), tmp_path, "error")
        assert "phantom" not in str([entry.data for entry in told.entries])
        async with client.listen(tools_list_changed=True) as subscription:
            # the edit breaks an entry and switches echo off: clients hear of the tools
            write(tmp_path / "cordis.yml", config(PHANTOM, echo=False))
            with anyio.fail_after(30):
                await subscription.__anext__()
        assert (await client.list_tools()).tools == []
        check(await told.wait("phantom"), tmp_path, "error")


class Changes:
    """The ``tools/list_changed`` notifications a client received, to wait on."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.count += 1
            self._changed.set()
            self._changed = anyio.Event()

    async def wait(self) -> None:
        with anyio.fail_after(30):
            await self._changed.wait()


async def set_level(client: Client, level: types.LoggingLevel) -> None:
    with warnings.catch_warnings():  # the SDK client marks logging deprecated (2026-07-28)
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)


async def test_logging_is_declared_and_set_level_is_honoured(tmp_path: Path) -> None:
    """The server sends log entries, so it declares ``logging``; a client that asks for a
    level gets only the entries at or above it. And none of it, nor a failed reload, makes
    the server print the SDK's deprecation warning."""
    write(tmp_path / "cordis.yml", config())
    process, port = start_harness_run(tmp_path, environment())
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        everything, errors, nothing, changes = Log(), Log(), Log(), Changes()
        async with (
            http_client(url, everything, mode="legacy") as told,
            http_client(url, errors, mode="legacy", message_handler=changes) as strict,
            http_client(url, nothing, mode="legacy") as silent,
        ):
            for client in (told, strict, silent):
                assert client.server_capabilities.logging is not None
            await set_level(strict, "error")
            await set_level(silent, "critical")
            for client in (told, strict, silent):
                await client.list_tools()  # the host's problems ride its answer, at error
            check(await everything.wait("ghost"), tmp_path, "error")
            check(await errors.wait("ghost"), tmp_path, "error")
            assert nothing.entries == []
            write(tmp_path / "cordis.yml", config(PHANTOM))  # a reload with a new problem
            check(await everything.wait("phantom"), tmp_path, "warning")
            write(tmp_path / "cordis.yml", config(PHANTOM, echo=False))  # and then a change
            await changes.wait()  # sent after the phantom's warning, on the same stream
            assert [entry.level for entry in errors.entries] == ["error"]
            assert nothing.entries == []
        async with http_client(url, Log(), mode="2026-07-28", log_level="warning") as modern:
            await modern.list_tools()
    finally:
        output = stop(process)
    assert "phantom" in output  # the reload was logged...
    assert "MCPDeprecationWarning" not in output  # ...without the SDK's warning
    assert "Warning" not in output
