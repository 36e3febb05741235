"""A call whose caller cannot ask a person waits only while a console page can see it.

``harness run`` serves the console, but a console served is not a person watching: only a
page with its event stream open (``GET /api/events``) counts. With none open, an MCP client
without elicitation gets a denial at once, saying how to approve; with one open, the call
waits and the page's answer (``POST /api/approvals/{id}``) decides it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

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
  - {{id: greet, name: {PLUGINS / "greet.py"}}}
"""
HOW = (
    "approve it from an MCP client with elicitation, with `harness call echo --yes`, in the "
    "web console (open it first: it asks there), or with a rule `echo: allow` in the policy"
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    config = write(tmp_path_factory.mktemp("waits") / "cordis.yml", CONFIG)
    server = Served(config)
    yield server
    server.close()


def text(result: types.CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_with_no_page_open_the_call_is_denied_at_once_saying_how_to_approve(
    served: Served,
) -> None:
    async with Client(served.base + "mcp") as client:  # no elicitation
        warm = await client.call_tool("greet", {"name": "Ada"})  # the connection is up
        assert warm.is_error is False
        began = time.perf_counter()
        with anyio.fail_after(30):  # before: it waited 300 s for a console nobody watched
            result = await client.call_tool("echo", {"text": "hi"})
        took = time.perf_counter() - began
    assert result.is_error is True
    assert text(result) == (
        "Tool denied: the policy asks before echo runs (rule 'echo') (nobody can answer its "
        "approval: the caller cannot ask a person and no console page is open; " + HOW + ")"
    )
    # at once, not after the 5 s a closing page is given (GRACE): loose, for a loaded machine
    assert took < 4.0, took


async def test_with_a_page_open_the_call_waits_and_the_page_answers(served: Served) -> None:
    results: list[types.CallToolResult] = []
    async with Page(served.base) as page, Client(served.base + "mcp") as client:
        async with anyio.create_task_group() as group:

            async def call() -> None:
                results.append(await client.call_tool("echo", {"text": "watched"}))

            group.start_soon(call)
            asked = await page.next("approval/request", name="echo")
            assert asked["args"] == {"text": "watched"}
            assert results == []  # it waits for the page
            async with httpx2.AsyncClient(base_url=served.base, timeout=30) as http:
                reply = await http.post(
                    f"api/approvals/{asked['id']}", json={"decision": "allow_once"}
                )
                assert reply.status_code == 200, reply.text
        decided = await page.next("approval/decided", id=asked["id"])
    (result,) = results
    assert result.is_error is False, text(result)
    assert result.structured_content == {"text": "Echo: watched"}
    assert decided["decision"] == "allow_once"


async def test_a_waiting_call_is_denied_once_the_last_page_closes(served: Served) -> None:
    """A page reload reconnects within a second and keeps the question; a page that stays
    closed for APPROVAL_GRACE seconds leaves nobody to answer it."""
    results: list[types.CallToolResult] = []
    done = anyio.Event()
    async with Client(served.base + "mcp") as client, anyio.create_task_group() as group:
        async with Page(served.base) as page:

            async def call() -> None:
                results.append(await client.call_tool("echo", {"text": "left"}))
                done.set()

            group.start_soon(call)
            await page.next("approval/request", name="echo")
        closed = time.perf_counter()
        with anyio.fail_after(30):
            await done.wait()
        took = time.perf_counter() - closed
    (result,) = results
    assert result.is_error is True
    assert text(result) == (
        "Tool denied: the policy asks before echo runs (rule 'echo') (nobody can answer its "
        "approval: the last console page that showed it was closed; " + HOW + ")"
    )
    assert took < 20, took
