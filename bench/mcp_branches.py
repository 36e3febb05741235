"""Which branch of the kernel MCP's calls take (issue #30: the fast one).

The kernel (:mod:`harness.tools.kernel`) runs a call on its fast branch when no stage has
listeners, no gate is closed and no journal keys the call; else on the general branch, the
only caller of ``kernel.current`` and the only place ``kernel.approve`` runs. Here a host is
served over streamable HTTP in this process (``McpSurface.serve_http``, as ``harness run``
does), those two functions and ``kernel.innermost`` (which both branches call to run a body)
are wrapped to count, and N ``tools/call`` requests are made with the MCP SDK's ``Client``
in both eras and with raw 2026-07-28 requests (the HTTP fast path's). Fast = bodies run
minus general-branch calls. Wrapping, not a counter on the hot path: nothing is counted
unless this benchmark runs.

Projects: the bench's tools alone (``add``, and ``add_ctx``, which takes a ``CallContext``),
served with the console off and with it attached and a page's event stream open; then the
bundled ``cordis.yml``, whose policy plugin listens on ``tools/pre-execute``: its calls take
the general branch by design (a policy decides each call).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import yaml

from harness import Host
from harness.tools import kernel

from .mcp_http import read_response, request_bytes
from .project import ROOT, default_project

CALLS = 200
ADD_CTX = '''"""add_ctx: the sum of two numbers, by a tool that takes the call's context."""

from harness import CallContext, Context, tool

name = "add_ctx"
inject = ["tools"]


@tool
async def add_ctx(a: float, b: float, ctx: CallContext) -> float:
    """Add two numbers."""
    return a + b


def apply(ctx: Context) -> None:
    ctx.tools.register(add_ctx)
'''


def bench_project(folder: Path) -> Path:
    """``harness:tools`` with ``add`` and ``add_ctx``, and nothing that listens to a stage."""
    (folder / "add_ctx.py").write_text(ADD_CTX)
    config = folder / "cordis.yml"
    entries = [
        {"id": "tools", "name": "harness:tools"},
        {"id": "add", "name": str(ROOT / "plugins" / "add.py")},
        {"id": "add_ctx", "name": "./add_ctx.py"},
    ]
    config.write_text(yaml.safe_dump({"insert": entries}))
    return config


class Branches:
    """Counts of the kernel's branches while :meth:`counting`."""

    def __init__(self) -> None:
        self.bodies = self.general = self.approvals = 0

    @property
    def fast(self) -> int:
        return self.bodies - self.general

    @contextmanager
    def counting(self) -> Iterator[None]:
        current, approve, innermost = kernel.current, kernel.approve, kernel.innermost

        async def counted_current(*args: Any) -> Any:
            self.general += 1
            return await current(*args)

        async def counted_approve(*args: Any) -> Any:
            self.approvals += 1
            return await approve(*args)

        def counted_innermost(*args: Any) -> Any:
            self.bodies += 1
            return innermost(*args)

        kernel.current, kernel.approve = counted_current, counted_approve  # type: ignore[assignment]
        kernel.innermost = counted_innermost
        try:
            yield
        finally:
            kernel.current, kernel.approve, kernel.innermost = current, approve, innermost


@asynccontextmanager
async def serving(config: Path, web: bool) -> AsyncIterator[str]:
    """The project served over MCP HTTP in this process (with the console, and one page's
    event stream open, when ``web``); yields the ``/mcp`` URL."""
    from harness.mcp import McpSurface
    from harness.web import WebConsole, console_app

    async with Host(config) as host:
        wrap = None
        if web:
            console = WebConsole(host)
            console.attach()

            def wrap(app: Any) -> Any:
                return console_app(console, app, "127.0.0.1", None)

        surface = McpSurface(host.ctx)
        surface.attach()
        urls: list[str] = []
        ready = anyio.Event()

        def on_ready(url: str) -> None:
            urls.append(url)
            ready.set()

        async with anyio.create_task_group() as group:
            group.start_soon(surface.serve_http, "127.0.0.1", 0, None, on_ready, wrap)
            with anyio.fail_after(30):
                await ready.wait()
            page = await open_events(urls[0]) if web else None
            try:
                yield urls[0]
            finally:
                if page is not None:
                    page.close()
                group.cancel_scope.cancel()


async def open_events(url: str) -> asyncio.StreamWriter:
    """A console page's event stream (``GET /api/events``), held open."""
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /api/events HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode())
    head = await reader.readuntil(b"\r\n\r\n")
    if not head.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(f"the console's event stream answered {head[:40]!r}")
    return writer


async def sdk_calls(url: str, mode: str, tool: str, count: int) -> None:
    from mcp import Client

    async with Client(url, mode=mode) as client:
        for _ in range(count):
            result = await client.call_tool(tool, {"a": 1, "b": 2})
            if result.is_error:
                raise RuntimeError(f"{tool} failed over MCP: {result.content}")


async def raw_calls(url: str, tool: str, count: int) -> None:
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    payload = request_bytes(port, "tools/call", {"name": tool, "arguments": {"a": 1, "b": 2}}, tool)
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(count):
            writer.write(payload)
            status, body = await read_response(reader)
            if status != 200 or b'"isError":false' not in body.replace(b" ", b""):
                raise RuntimeError(f"bad answer {status}: {body[:200]!r}")
    finally:
        writer.close()


CLIENTS = {
    "SDK Client, 2025-11-25": lambda url, tool: sdk_calls(url, "legacy", tool, CALLS),
    "SDK Client, 2026-07-28": lambda url, tool: sdk_calls(url, "auto", tool, CALLS),
    "raw 2026-07-28 requests": lambda url, tool: raw_calls(url, tool, CALLS),
}


async def count(config: Path, web: bool, tools: tuple[str, ...]) -> list[tuple[str, Branches]]:
    rows = []
    async with serving(config, web) as url:
        for label, calls in CLIENTS.items():
            for tool in tools:
                branches = Branches()
                with branches.counting():
                    await calls(url, tool)
                rows.append((f"{label}, {tool}", branches))
    return rows


async def main() -> None:
    print(
        f"kernel branches of {CALLS} tools/call requests each, served over MCP HTTP in process "
        f"(load average {os.getloadavg()[0]:.1f})"
    )
    with tempfile.TemporaryDirectory() as folder:
        config = bench_project(Path(folder))
        for web, where in ((False, "console off"), (True, "console attached, a page listening")):
            print(f"  the bench's tools, {where}:")
            for label, branches in await count(config, web, ("add", "add_ctx")):
                print(f"    {label:<34} fast {branches.fast:4d} / general {branches.general}")
    with tempfile.TemporaryDirectory() as folder:
        config = default_project(Path(folder) / "project")
        print("  the bundled cordis.yml (its policy plugin listens on tools/pre-execute):")
        for label, branches in await count(config, False, ("add",)):
            print(
                f"    {label:<34} fast {branches.fast:4d} / general {branches.general} "
                f"(approve ran {branches.approvals})"
            )
