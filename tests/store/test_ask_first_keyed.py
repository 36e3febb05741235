"""A keyed call (``_meta`` harness/idempotency-key) whose body asks for input, over real HTTP
on the 2026-07-28 wire with the store on SQLite and PostgreSQL: the round that asks is no
answer of the key, so the next round runs the body (a plain tool's and an ``ask_first``
task tool's, whose answering round is its task), and the key's answer is then the result."""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness import Host
from harness.mcp import McpSurface

from ..helpers import serving_http, write
from ..mcp.test_ask_first_tasks import PLUGIN as ONBOARD
from ..mcp.test_ask_first_tasks import TASKS, accept, finished
from .postgres import Postgres

PLUGIN = ONBOARD.replace(
    "def apply(ctx):\n    ctx.tools.register(onboard)",
    '''@tool
async def plain(team: str, ctx: CallContext) -> str:
    """Ask a name."""
    RUNS.append(ctx.round)
    form = {"type": "object", "properties": {"name": {"type": "string"}}}
    answers = await ctx.inputs(user_name=ctx.Ask("Who joins?", form))
    return f"{(answers['user_name'].content or {}).get('name')} (runs: {RUNS})"


def apply(ctx):
    ctx.tools.register(onboard)
    ctx.tools.register(plain)''',
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'harness.db'}"
    postgres: Postgres = request.getfixturevalue("postgres")
    return postgres.create_database(f"ask_first_keyed_{secrets.token_hex(4)}")


@pytest.fixture
async def served(tmp_path: Path, url: str) -> AsyncIterator[str]:
    write(tmp_path / "onboard.py", PLUGIN)
    write(
        tmp_path / "cordis.yml",
        f"""
        insert:
          - id: store
            name: harness:store
            config: {{ url: "{url}" }}
          - id: onboard
            name: ./onboard.py
        """,
    )
    async with Host(tmp_path / "cordis.yml") as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        async with serving_http(surface) as mcp_url:
            yield mcp_url


async def keyed_call(
    client: httpx2.AsyncClient, url: str, name: str, **params: Any
) -> dict[str, Any]:
    """``tools/call`` of ``name`` for team ops under the key ``onboard-1``."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "extensions": {TASKS: {}},
        },
        "harness/idempotency-key": "onboard-1",
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    call = {"name": name, "arguments": {"team": "ops"}, **params, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
    response = await client.post(url, content=json.dumps(body), headers=headers)
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["result"]
    return result


async def test_a_keyed_ask_first_call_becomes_its_task(served: str) -> None:
    async with httpx2.AsyncClient() as client:
        first = await keyed_call(client, served, "onboard")
        assert first["resultType"] == "input_required", first
        answers = {"user_name": accept(name="Ada")}
        state = first["requestState"]
        second = await keyed_call(
            client, served, "onboard", inputResponses=answers, requestState=state
        )
        assert second["resultType"] == "task", second
        task = await finished(client, served, second["taskId"])
    assert task["status"] == "completed", task
    assert task["result"]["content"][0]["text"] == "Ada joined ops (runs: [0, 1])", task


async def test_a_keyed_call_with_rounds_runs_each_round_then_answers_from_the_journal(
    served: str,
) -> None:
    async with httpx2.AsyncClient() as client:
        first = await keyed_call(client, served, "plain")
        assert first["resultType"] == "input_required", first
        answers = {"user_name": accept(name="Ada")}
        state = first["requestState"]
        second = await keyed_call(
            client, served, "plain", inputResponses=answers, requestState=state
        )
        assert second["content"][0]["text"] == "Ada (runs: [0, 1])", second
        again = await keyed_call(client, served, "plain")
    assert again["content"][0]["text"] == "Ada (runs: [0, 1])", again  # the key's answer
