"""A task tool defined ``ask_first``: its first inputs are input rounds of the request (an
``InputRequiredResult``, no task yet), and the round that answers them is answered with the
task (docs/store.md#ask-first-then-a-task), over real HTTP on the 2026-07-28 wire. An
approval asked before it is a round of its own, and the task takes its answer from the
sealed rounds instead of asking again."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from harness import Host
from harness.mcp import APPROVAL_KEY, McpSurface

from ..helpers import ROOT, serving_http, write

pytestmark = pytest.mark.anyio
TASKS = "io.modelcontextprotocol/tasks"
PLUGIN = '''
import anyio

from harness import CallContext, tool

inject = ["tools"]
RUNS = []


@tool(task="required", ask_first=True)
async def onboard(team: str, ctx: CallContext) -> str:
    """Ask for a name, then onboard it (the long part, as a task)."""
    RUNS.append(ctx.round)
    form = {"type": "object", "properties": {"name": {"type": "string"}}}
    answers = await ctx.inputs(user_name=ctx.Ask("Who joins?", form))
    name = (answers["user_name"].content or {}).get("name")
    await ctx.progress(1, 2, "paperwork")
    await anyio.sleep(0.05)
    return f"{name} joined {team} (runs: {RUNS})"


def apply(ctx):
    ctx.tools.register(onboard)
'''


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


async def serve(tmp_path: Path, policy: str) -> AsyncIterator[str]:
    write(tmp_path / "onboard.py", PLUGIN)
    write(
        tmp_path / "cordis.yml",
        f"""
        insert:
          - id: policy
            name: {ROOT / "plugins" / "policy.py"}
            config: {{ default: allow, rules: {{ onboard: {policy} }} }}
          - id: onboard
            name: ./onboard.py
        """,
    )
    async with Host(tmp_path / "cordis.yml") as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with serving_http(surface) as url:
            yield url
            assert host.tools.approvals.pending() == []  # nobody was asked on a console


@pytest.fixture
async def allowed(tmp_path: Path) -> AsyncIterator[str]:
    async for url in serve(tmp_path, "allow"):
        yield url


@pytest.fixture
async def asked(tmp_path: Path) -> AsyncIterator[str]:
    async for url in serve(tmp_path, "ask"):
        yield url


async def post(
    client: httpx2.AsyncClient,
    url: str,
    method: str,
    extensions: bool = True,
    status: int = 200,
    **params: Any,
) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"elicitation": {}}
    if extensions:
        capabilities["extensions"] = {TASKS: {}}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
    }
    if "name" in params or "taskId" in params:
        headers["mcp-name"] = params.get("name") or params["taskId"]
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    response = await client.post(url, content=json.dumps(body), headers=headers)
    assert response.status_code == status, response.text
    answer: dict[str, Any] = response.json()
    return answer


async def call(client: httpx2.AsyncClient, url: str, **params: Any) -> dict[str, Any]:
    answer = await post(
        client, url, "tools/call", name="onboard", arguments={"team": "ops"}, **params
    )
    result: dict[str, Any] = answer["result"]
    return result


async def finished(client: httpx2.AsyncClient, url: str, task_id: str) -> dict[str, Any]:
    with anyio.fail_after(30):
        while True:
            task: dict[str, Any] = (await post(client, url, "tasks/get", taskId=task_id))["result"]
            if task["status"] in ("completed", "failed", "cancelled"):
                return task
            await anyio.sleep(0.02)


def accept(**content: Any) -> dict[str, Any]:
    return {"action": "accept", "content": content}


async def test_the_first_round_asks_and_the_round_that_answers_is_the_task(allowed: str) -> None:
    async with httpx2.AsyncClient() as client:
        first = await call(client, allowed)
        assert first["resultType"] == "input_required"
        assert "taskId" not in first
        assert list(first["inputRequests"]) == ["user_name"]
        assert first["inputRequests"]["user_name"]["params"]["message"] == "Who joins?"
        second = await call(
            client,
            allowed,
            inputResponses={"user_name": accept(name="Ada")},
            requestState=first["requestState"],
        )
        assert second["resultType"] == "task"
        assert second["status"] == "working"
        assert "requestState" not in second
        assert "inputRequests" not in second
        task = await finished(client, allowed, second["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "Ada joined ops (runs: [0, 1])"


async def test_an_approval_is_a_round_of_its_own_and_the_task_takes_its_answer(asked: str) -> None:
    async with httpx2.AsyncClient() as client:
        first = await call(client, asked)
        assert first["resultType"] == "input_required"
        assert list(first["inputRequests"]) == [APPROVAL_KEY]
        second = await call(
            client,
            asked,
            inputResponses={APPROVAL_KEY: accept(approve=True)},
            requestState=first["requestState"],
        )
        assert second["resultType"] == "input_required", second  # still no task
        assert list(second["inputRequests"]) == ["user_name"]
        third = await call(
            client,
            asked,
            inputResponses={"user_name": accept(name="Grace")},
            requestState=second["requestState"],
        )
        assert third["resultType"] == "task", third
        task = await finished(client, asked, third["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "Grace joined ops (runs: [1, 2])"


async def test_without_the_extension_a_required_ask_first_tool_is_refused(allowed: str) -> None:
    async with httpx2.AsyncClient() as client:
        answer = await post(client, allowed, "tools/call", False, 400, name="onboard", arguments={})
    assert answer["error"]["code"] == -32021
    assert answer["error"]["data"] == {"requiredCapabilities": {"extensions": {TASKS: {}}}}
