"""A program's inner call asks the person of the client that runs the program, and no one else.

Two MCP SDK clients over real HTTP against ``harness run``. Alice's call is running (held
until released) when Bob's ``run_code`` program, whose JSON-RPC request has the same id as
hers, makes an ask-gated inner call. The question goes to Bob (his elicitation) or, when Bob
cannot ask, to the console page; Alice never sees it and cannot answer it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from ..helpers import PLUGINS, Elicitor, write
from ..web.conftest import Served
from ..web.page import Page

pytestmark = pytest.mark.anyio

BLOCKER = """
import anyio
from harness import define_tool

name = "blocker"
inject = ["tools"]
released = []


async def block(args):
    while not released:
        released.append(anyio.Event())
    await released[0].wait()
    return "released"


async def release(args):
    while not released:
        released.append(anyio.Event())
    released[0].set()
    return "ok"


def apply(ctx):
    for name, body in (("block", block), ("release", release)):
        ctx.tools.register(define_tool(name=name, description=name, execute=body))
"""
CONFIG = f"""
insert:
  - id: tools
    name: harness:tools
  - id: policy
    name: {PLUGINS / "policy.py"}
    config: {{rules: {{echo: ask, block: ask}}}}
  - {{id: echo, name: {PLUGINS / "echo.py"}}}
  - {{id: blocker, name: ./blocker.py}}
  - id: code
    name: harness:code
    config: {{timeout: 60, tools: [echo]}}
"""
PROGRAM = """
try:
    said = await echo(text="from Bob")
    print("ran", said["text"])
except Exception as e:
    print("refused", str(e))
"""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is its own process (see tests/web/test_console_waits.py)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    write(tmp_path / "blocker.py", BLOCKER)
    server = Served(write(tmp_path / "cordis.yml", CONFIG))
    yield server
    server.close()


@pytest.mark.parametrize("bob_asks", [True, False], ids=["bob-elicits", "bob-cannot-ask"])
async def test_only_the_program_s_client_is_asked_about_its_inner_call(
    served: Served, bob_asks: bool
) -> None:
    alice, bob = Elicitor(tool="block"), Elicitor(tool="echo")
    url = served.base + "mcp"
    results: dict[str, types.CallToolResult] = {}
    bob_done = anyio.Event()
    async with (
        Page(served.base) as page,
        httpx2.AsyncClient(base_url=served.base, timeout=30) as http,
        Client(url, mode="legacy", elicitation_callback=alice) as alice_client,
        Client(url, mode="legacy", elicitation_callback=bob if bob_asks else None) as bob_client,
        anyio.create_task_group() as group,
    ):

        async def run(who: str, client: Client, tool: str, args: dict[str, Any]) -> None:
            results[who] = await client.call_tool(tool, args)
            if who == "bob":
                bob_done.set()

        group.start_soon(run, "alice", alice_client, "block", {})
        # approved: from here until released, Alice's call runs (the event is sent after)
        held = await page.next("approval/decided", decision="allow_once")
        group.start_soon(run, "bob", bob_client, "run_code", {"code": PROGRAM})
        asked = await page.next("approval/request", name="echo")
        assert asked["call_id"] == f"{held['call_id']}/1"  # the two requests share an id
        if not bob_asks:  # nobody but the console page can answer Bob's program's call
            reply = await http.post(f"api/approvals/{asked['id']}", json={"decision": "allow_once"})
            assert reply.status_code == 200, reply.text
        with anyio.fail_after(30):
            await bob_done.wait()
        released = await http.post("api/tools/release/call", json={"args": {}})
        assert released.json()["ok"] is True
    assert [message.split("(")[0] for message in alice.asked] == ["Allow the tool call block"]
    output = (results["bob"].structured_content or {}).get("output", "")
    assert output == "ran Echo: from Bob\n", results["bob"]
    assert results["alice"].is_error is False
    if bob_asks:
        assert [message.split("(")[0] for message in bob.asked] == ["Allow the tool call echo"]
        assert bob.asked[0].startswith('Allow the tool call echo({"text": "from Bob"})?')
