"""How many MCP tasks are kept is bounded (``McpTasks.limit``, ``MAX_TASKS`` by default), in
memory and in the store (SQLite, PostgreSQL), over real HTTP on the 2026-07-28 wire: past it,
a task tool's ``tools/call`` is a JSON-RPC error saying the limit and what to do, its body
does not run, and the tasks kept still answer."""

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
from ..mcp.test_ask_first_tasks import TASKS, finished
from .postgres import Postgres

PLUGIN = '''
from harness import tool

inject = ["tools"]
RUNS = []


@tool(task="optional")
async def note(text: str) -> str:
    """Note a text."""
    RUNS.append(text)
    return f"noted {text} (runs: {RUNS})"


def apply(ctx):
    ctx.tools.register(note)
'''

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # uvicorn runs on asyncio


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The ``harness:store`` entry of cordis.yml (none: tasks in memory)."""
    if request.param == "memory":
        return ""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'harness.db'}"
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        url = postgres.create_database(f"task_limit_{secrets.token_hex(4)}")
    return f'  - {{ id: store, name: "harness:store", config: {{ url: "{url}" }} }}\n'


@pytest.fixture
async def served(tmp_path: Path, store: str) -> AsyncIterator[str]:
    write(tmp_path / "note.py", PLUGIN)
    write(tmp_path / "cordis.yml", "insert:\n" + store + "  - { id: note, name: ./note.py }\n")
    async with Host(tmp_path / "cordis.yml") as host:
        surface = McpSurface(host.ctx)
        surface.attach()
        surface.tasks.limit = 2
        async with serving_http(surface) as url:
            yield url


async def note(
    client: httpx2.AsyncClient, url: str, text: str, tasks: bool = True
) -> dict[str, Any]:
    """``tools/call`` of ``note`` from a client that declared the tasks extension (or not)."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}} if tasks else {},
    }
    headers = {
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "note",
    }
    params = {"name": "note", "arguments": {"text": text}, "_meta": meta}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    response = await client.post(url, content=json.dumps(body), headers=headers)
    answer: dict[str, Any] = response.json()
    return answer


def test_the_default_limit() -> None:
    from harness.mcp.tasks import MAX_TASKS  # docs/store.md#mcp-tasks says so

    assert MAX_TASKS == 1000


async def test_past_the_limit_a_task_call_is_refused_and_says_what_to_do(served: str) -> None:
    async with httpx2.AsyncClient() as client:
        kept = [(await note(client, served, text))["result"] for text in ("a", "b")]
        assert [task["resultType"] for task in kept] == ["task", "task"], kept
        refused = await note(client, served, "c")
        assert "result" not in refused, refused
        error = refused["error"]
        assert error["code"] == -32603, error
        assert "at most 2 tasks" in error["message"], error
        assert "try again" in error["message"], error
        assert error["data"] == {"maxTasks": 2}, error
        done = [await finished(client, served, task["taskId"]) for task in kept]
        assert [task["status"] for task in done] == ["completed", "completed"], done
        plain = await note(client, served, "d", tasks=False)  # not a task: runs in the request
    text = plain["result"]["content"][0]["text"]
    assert text in ("noted d (runs: ['a', 'b', 'd'])", "noted d (runs: ['b', 'a', 'd'])"), text
