"""Item: the HTTP server sheds what it cannot serve — half-sent headers and bodies time
out, one client cannot hold more than its share of sessions — while real MCP clients
(the official SDK client) keep being served. Loopback only."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from mcp import Client
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from harness import Host
from harness.mcp import McpSurface
from harness.mcp.http import limits
from harness.mcp.http.limits import HttpLimits

pytestmark = pytest.mark.anyio
LIMITS = HttpLimits(header_timeout=1.0, body_timeout=1.0, idle_session=600, sessions_per_client=3)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn and the SDK's HTTP client run on asyncio


@pytest.fixture(params=["httptools", "h11"])
async def url(
    config: Path,
    workspace: object,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[str]:
    if request.param == "h11":  # the parser harness serves with when httptools is missing
        monkeypatch.setattr(limits, "fastest_protocol", lambda: H11Protocol)
    else:
        assert limits.fastest_protocol() is HttpToolsProtocol
    async with Host(config) as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        ready = anyio.Event()
        found: list[str] = []

        def on_ready(address: str) -> None:
            found.append(address)
            ready.set()

        async with anyio.create_task_group() as group:
            group.start_soon(
                lambda: surface.serve_http("127.0.0.1", 0, None, on_ready, limits=LIMITS)
            )
            with anyio.fail_after(30):
                await ready.wait()
            yield found[0]
            group.cancel_scope.cancel()


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def half_request(port: int, data: bytes) -> bytes:
    """Send ``data`` and read until the server closes; what it answered (bounded wait)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        answer = b""
        while True:
            chunk = sock.recv(65536)  # the 30 s socket timeout bounds the test
            if not chunk:
                return answer
            answer += chunk


async def test_half_sent_headers_are_shed(url: str) -> None:
    port = port_of(url)
    answer = await anyio.to_thread.run_sync(
        half_request, port, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
    )
    assert answer == b""  # closed without a request ever being handled
    silent = await anyio.to_thread.run_sync(half_request, port, b"")
    assert silent == b""


async def test_half_sent_body_is_408(url: str) -> None:
    port = port_of(url)
    head = (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b'Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"jsonrpc"'
    )
    answer = await anyio.to_thread.run_sync(half_request, port, head)
    assert answer.startswith(b"HTTP/1.1 408")
    assert b"did not arrive in time" in answer


def initialize(url: str) -> bytes:
    """A raw MCP initialize request (a new session), as the server answers it."""
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion":'
        b' "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}'
    )
    head = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port_of(url)}\r\n"
        "Content-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nConnection: close\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode()
    return half_request(port_of(url), head + body)


def delete(url: str, session: str) -> bytes:
    head = (
        f"DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port_of(url)}\r\n"
        f"Mcp-Session-Id: {session}\r\nConnection: close\r\n\r\n"
    ).encode()
    return half_request(port_of(url), head)


def session_of(answer: bytes) -> str:
    for line in answer.split(b"\r\n"):
        if line.lower().startswith(b"mcp-session-id:"):
            return line.split(b":", 1)[1].strip().decode()
    raise AssertionError(f"no session id in {answer[:300]!r}")


async def test_one_client_cannot_hold_more_sessions_than_its_share(url: str) -> None:
    sessions = [session_of(await anyio.to_thread.run_sync(initialize, url)) for _ in range(3)]
    assert len(set(sessions)) == 3
    refused = await anyio.to_thread.run_sync(initialize, url)
    assert refused.startswith(b"HTTP/1.1 429"), refused[:300]
    assert b"already holds 3 MCP sessions" in refused
    async with Client(url) as client:  # requests of existing or sessionless clients go on
        result = await client.call_tool("echo", {"text": "still served"})
        assert result.structured_content == {"text": "Echo: still served"}
    await anyio.to_thread.run_sync(delete, url, sessions[0])
    again = await anyio.to_thread.run_sync(initialize, url)
    assert again.startswith(b"HTTP/1.1 200"), again[:300]
