"""MCP sessions per client, against a real ``harness run``: clients that come and go are not
refused once their sessions are gone (deleted) or idle, the bound and the idle time are
settings, and a session counts exactly as long as the SDK keeps it (an open event stream
keeps it). The official SDK client, and raw requests where a client must misbehave."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from harness.mcp.http.limits import HttpLimits

from ..helpers import HARNESS, ROOT, write
from ..processes import start_harness_run, stop

pytestmark = pytest.mark.anyio
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio here


@contextlib.contextmanager
def harness_run(folder: Path, *options: str) -> Iterator[str]:
    write(
        folder / "cordis.yml", f"insert:\n  - id: echo\n    name: {ROOT / 'plugins' / 'echo.py'}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    process, port = start_harness_run(folder, env, "--no-watch", *options)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


def leaving_without_delete(url: str) -> Client:
    """A client that, like the conformance suite's, never deletes its session."""
    return Client(streamable_http_client(url, terminate_on_close=False), mode="legacy")


async def opens(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    return await http.post(url, json=INITIALIZE, headers=HEADERS)


async def test_more_clients_than_the_old_limit_come_and_go(tmp_path: Path) -> None:
    """The official conformance suite's clients leave without deleting their sessions: 40
    of them (the old limit was 32), one after another, with the default settings."""
    with harness_run(tmp_path) as url:
        async with httpx2.AsyncClient(timeout=30) as http:
            for number in range(40):
                try:
                    async with leaving_without_delete(url) as client:
                        result = await client.call_tool("echo", {"text": str(number)})
                except Exception as exc:  # the SDK's error, in a group: say which client
                    pytest.fail(f"client {number + 1} of 40 failed: {exc!r}")
                assert result.structured_content == {"text": f"Echo: {number}"}
            answer = await opens(http, url)  # and room is left for more
            assert answer.status_code == 200, f"after 40 clients: {answer.text}"


@contextlib.asynccontextmanager
async def event_stream(http: httpx2.AsyncClient, url: str, session: str) -> AsyncIterator[None]:
    """The session's GET stream, open (a request in flight) until the block ends."""
    headers = {"Accept": "text/event-stream", "Mcp-Session-Id": session}
    async with http.stream("GET", url, headers=headers) as stream:
        assert stream.status_code == 200
        yield


async def test_the_bound_is_a_setting_and_sessions_count_while_the_sdk_keeps_them(
    tmp_path: Path,
) -> None:
    with harness_run(tmp_path, "--sessions-per-client", "2", "--session-idle", "3") as url:
        async with (
            Client(url, mode="legacy") as kept,  # holds its event stream open throughout
            httpx2.AsyncClient(timeout=30) as http,
        ):
            idle = await opens(http, url)  # no stream, no further request: idles out
            assert idle.status_code == 200
            refused = await opens(http, url)
            assert refused.status_code == 429, refused.text
            assert refused.text == (
                "this client already holds 2 MCP sessions: close one (DELETE), or let one "
                "idle out (3 s without a request), before opening another; the server's "
                "--sessions-per-client sets the bound"
            )
            with anyio.fail_after(30):  # once the idle one is gone, another fits
                while True:  # asking again and again: no request of the idle session's
                    admitted = await opens(http, url)
                    if admitted.status_code != 429:
                        break
                    await anyio.sleep(0.2)
            assert admitted.status_code == 200, admitted.text
            late = admitted.headers["mcp-session-id"]
            async with event_stream(http, url, late):
                # the kept client made no request for longer than the idle time, but its
                # stream is open: the SDK keeps it, so it counts
                again = await opens(http, url)
                assert again.status_code == 429, again.text
                result = await kept.call_tool("echo", {"text": "still here"})
                assert result.structured_content == {"text": "Echo: still here"}
            gone = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "ping"},
                headers={**HEADERS, "Mcp-Session-Id": idle.headers["mcp-session-id"]},
            )
            assert gone.status_code == 404  # the SDK closed the idle one too
            # a client's DELETE frees its session at once
            deleted = await http.delete(url, headers={"Mcp-Session-Id": late})
            assert deleted.status_code == 200
            assert (await opens(http, url)).status_code == 200


def test_the_help_names_the_defaults() -> None:
    done = subprocess.run([HARNESS, "run", "--help"], capture_output=True, text=True, check=True)
    text = " ".join(done.stdout.split())
    defaults = HttpLimits()
    assert f"(default {defaults.sessions_per_client})" in text
    assert f"(default {defaults.idle_session:g})" in text
