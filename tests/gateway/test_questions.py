"""An upstream's question goes to the person on the calling surface; an approval never answers it.

``harness run`` (with the agent, whose ``approval`` service is the one approval object)
mounts a real upstream written with the MCP SDK. Its ``transfer`` tool asks "Transfer ALL
funds?" through elicitation while the call runs. The policy asks before ``up_transfer``. Real
MCP SDK clients call it over HTTP; a console page (an open event stream) answers what
reaches the console.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import yaml
from mcp import Client

from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import HARNESS, PLUGINS, Elicitor
from ..web.conftest import Served
from ..web.page import Page
from .conftest import stdio_entry

pytestmark = pytest.mark.anyio
QUESTION = "Transfer ALL funds?"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the server is its own process (see tests/web/test_console_waits.py)


def project(folder: Path, model_url: str) -> Path:
    entries: list[dict[str, Any]] = [
        {"id": "policy", "name": str(PLUGINS / "policy.py"), "config": {"rules": {"up_*": "ask"}}},
        stdio_entry("up"),
        {"id": "model", "name": "harness:openai", "config": {"model": "x", "base_url": model_url}},
        {"id": "agent", "name": "harness:agent", "config": {"sessions": None}},
    ]
    path = folder / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": entries}, sort_keys=False))
    return path


@pytest.fixture
def config(tmp_path: Path) -> Iterator[Path]:
    with ScriptedServer() as model:  # never asked: the agent only provides the approvals
        yield project(tmp_path, model.url)


@pytest.fixture
def served(config: Path) -> Iterator[Served]:
    server = Served(config, "--no-watch")
    yield server
    server.close()


def said(result: types.CallToolResult) -> Any:
    return (result.structured_content or {}).get("result")


async def test_always_allow_answers_the_policy_and_the_person_answers_the_server(
    served: Served,
) -> None:
    async with (
        Page(served.base) as page,
        httpx2.AsyncClient(base_url=served.base, timeout=30) as http,
        Client(served.base + "mcp", mode="legacy") as client,  # no elicitation: the page
    ):

        async def answer(request: dict[str, Any], decision: str) -> None:
            reply = await http.post(f"api/approvals/{request['id']}", json={"decision": decision})
            assert reply.status_code == 200, reply.text

        results: list[types.CallToolResult] = []
        async with anyio.create_task_group() as group:

            async def transfer() -> None:
                results.append(await client.call_tool("up_transfer", {"to": "mallory"}))

            group.start_soon(transfer)
            policy = await page.next("approval/request", name="up_transfer")
            assert policy["args"] == {"to": "mallory"}
            await answer(policy, "allow_always")
            # before: the remembered allow_always accepted the server's question unasked
            asked = await page.next(
                "approval/request", 10, reason=f"tool up_transfer asks: {QUESTION}"
            )
            assert asked["name"] == "up_transfer"
            assert asked["args"]["message"] == QUESTION
            assert asked["args"]["call"] == {"to": "mallory"}
            await answer(asked, "deny")
        assert said(results[-1]) == "decline:None"

        # the policy asks no more, and the server's question is still the person's: a yes
        # to it (whatever the button) answers that question only
        for decision, outcome in (("allow_always", "accept:True"), ("deny", "decline:None")):
            async with anyio.create_task_group() as group:
                group.start_soon(transfer)
                again = await page.next("approval/request", 10, args=asked["args"])
                await answer(again, decision)
            assert said(results[-1]) == outcome
    asked_about = [e["args"] for e in page.events if e.get("type") == "approval/request"]
    assert asked_about == [{"to": "mallory"}] + [asked["args"]] * 3  # the policy asked once


async def test_the_calling_client_s_user_answers_the_server_s_own_form(served: Served) -> None:
    person = Elicitor(form={"ok": False})  # approves calls, answers the upstream's form
    async with Client(served.base + "mcp", mode="legacy", elicitation_callback=person) as client:
        with anyio.fail_after(30):
            result = await client.call_tool("up_transfer", {"to": "bob"})
    assert said(result) == "accept:False"  # the user's own answer, passed back as given
    approval, question = person.asked
    form = person.schemas[1]
    assert approval.startswith('Allow the tool call up_transfer({"to": "bob"})?')
    assert question == QUESTION  # the server's form, passed on as written
    assert form["properties"]["ok"]["type"] == "boolean"
    assert form["properties"]["ok"]["description"] == "Move every last cent?"


def test_harness_call_yes_approves_the_policy_and_never_the_server_s_form(config: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
    done = subprocess.run(
        [HARNESS, "call", "-c", str(config), "up_transfer", '{"to": "eve"}', "--yes"],
        cwd=config.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "decline:None"


def test_harness_chat_yes_approves_the_policy_and_never_the_server_s_form(tmp_path: Path) -> None:
    with ScriptedServer() as model:
        model.rules = [
            Rule(Reply.calls(call("up_transfer", {"to": "trent"})), user="transfer"),
            Rule(Reply.say("Done."), tool="up_transfer"),
        ]
        config = project(tmp_path, model.url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_")}
        done = subprocess.run(
            [HARNESS, "chat", "-c", str(config), "-m", "transfer it", "--yes"],
            cwd=tmp_path,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    assert "up_transfer · done" in done.stdout
    assert "decline:None" in done.stdout
    assert "deny: no terminal to ask (--yes answers approvals, never a tool's question)" in (
        done.stdout
    )
