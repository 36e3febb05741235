"""``Allow for this session`` covers the session of the client that asked, and no other.

Real MCP SDK clients over HTTP against ``harness run``; a console page (an open event
stream) answers their approvals. A handshake-era client has a session: its
``allow_session`` covers its own later calls and nobody else's. A stateless (2026-07-28)
client has none: ``allow_session`` counts as ``allow_once`` for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from ..helpers import PLUGINS, write
from .conftest import Served
from .page import Page

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    # the server is its own process; on trio, httpx2's nested stream generators are left to
    # the garbage collector when a page's stream is cancelled (a ResourceWarning)
    return "asyncio"


CONFIG = f"""
insert:
  - id: tools
    name: harness:tools
  - id: policy
    name: {PLUGINS / "policy.py"}
    config: {{rules: {{echo: ask}}}}
  - {{id: echo, name: {PLUGINS / "echo.py"}}}
"""


@pytest.fixture
def served(tmp_path: Any) -> Iterator[Served]:
    server = Served(write(tmp_path / "cordis.yml", CONFIG))
    yield server
    server.close()


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


class Caller:
    """One MCP client's echo calls, each answered (when asked) from the console page."""

    def __init__(self, client: Client, page: Page, http: httpx2.AsyncClient) -> None:
        self.client = client
        self.page = page
        self.http = http

    async def echo(self, words: str, answer: str | None) -> types.CallToolResult:
        """Call echo; with ``answer``, expect the page to be asked and answer so; without,
        expect it to run unasked."""
        results: list[types.CallToolResult] = []
        done = anyio.Event()
        async with anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await self.client.call_tool("echo", {"text": words}))
                done.set()

            group.start_soon(call)
            if answer is None:
                with anyio.fail_after(30):
                    await done.wait()
            else:
                asked = await self.page.next("approval/request", 10, args={"text": words})
                reply = await self.http.post(
                    f"api/approvals/{asked['id']}", json={"decision": answer}
                )
                assert reply.status_code == 200, reply.text
                with anyio.fail_after(30):
                    await done.wait()
        asked_for = [e for e in self.page.events if e.get("type") == "approval/request"]
        if answer is None:
            assert all(e["args"] != {"text": words} for e in asked_for), "asked after all"
        (result,) = results
        assert result.is_error is False, text(result)
        return result


async def test_allow_session_covers_the_answering_clients_session_only(served: Served) -> None:
    async with (
        Page(served.base) as page,
        httpx2.AsyncClient(base_url=served.base, timeout=30) as http,
        Client(served.base + "mcp", mode="legacy") as alice_client,
        Client(served.base + "mcp", mode="legacy") as bob_client,
    ):
        alice, bob = Caller(alice_client, page, http), Caller(bob_client, page, http)
        await alice.echo("alice 1", "allow_session")
        await alice.echo("alice 2", None)  # her session: not asked again
        await bob.echo("bob 1", "allow_once")  # before: ran unasked on Alice's answer
        await bob.echo("bob 2", "allow_once")
        await alice.echo("alice 3", None)
    decided = [e["decision"] for e in page.events if e.get("type") == "approval/decided"]
    assert decided == ["allow_session", "allow_once", "allow_once"]


async def test_a_client_without_a_session_gets_allow_once(served: Served) -> None:
    async with (
        Page(served.base) as page,
        httpx2.AsyncClient(base_url=served.base, timeout=30) as http,
        Client(served.base + "mcp", mode="2026-07-28") as stateless_client,
        Client(served.base + "mcp", mode="legacy") as other_client,
    ):
        stateless, other = Caller(stateless_client, page, http), Caller(other_client, page, http)
        await stateless.echo("one", "allow_session")
        await stateless.echo("two", "allow_once")  # before: remembered for every client
        await other.echo("three", "allow_once")
    decided = [e["decision"] for e in page.events if e.get("type") == "approval/decided"]
    assert decided == ["allow_once", "allow_once", "allow_once"]
