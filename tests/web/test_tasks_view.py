"""The console's MCP tasks: ``GET /api/tasks`` and ``POST /api/tasks/{id}/cancel`` behind the
console's token, and the Tasks view listing them with Cancel, against a real ``harness run``
whose tasks a client starts over MCP (2026-07-28, the tasks extension). HTTP and Chromium."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest

from .conftest import Served, make_project
from .test_browser import WAIT, shot

TOKEN = "the-tasks-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
TASKS = "io.modelcontextprotocol/tasks"
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
PLUGIN = '''
import anyio

from harness import CallContext, tool

inject = ["tools"]


@tool(task="optional")
async def crunch(label: str, ctx: CallContext) -> str:
    """Crunch numbers until cancelled."""
    await ctx.progress(1, 2, f"crunching {label}")
    await anyio.sleep_forever()
    return "never"


@tool(task="optional")
def quick(label: str) -> str:
    """Answer at once."""
    return f"quick {label}"


def apply(ctx):
    ctx.tools.register(crunch)
    ctx.tools.register(quick)
'''


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("tasks")
    extra = "  - id: crunch\n    name: ./plugins/crunch.py\n"
    server = Served(make_project(folder, extra, {"crunch.py": PLUGIN}), "--token", TOKEN)
    yield server
    server.close()


def mcp(served: Served, method: str, **params: Any) -> dict[str, Any]:
    """One 2026-07-28 request to the server's ``/mcp``, from a client with the extension."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}},
    }
    headers = {
        **BEARER,
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": method,
        "mcp-name": params.get("name") or params.get("taskId") or "",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": meta}}
    answer = httpx2.post(served.base + "mcp", content=json.dumps(body), headers=headers)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


def start(served: Served, tool: str, label: str) -> str:
    created = mcp(served, "tools/call", name=tool, arguments={"label": label})
    assert created["resultType"] == "task", created
    task_id: str = created["taskId"]
    return task_id


def listed(served: Served) -> list[dict[str, Any]]:
    answer = httpx2.get(served.base + "api/tasks", headers=BEARER)
    assert answer.status_code == 200, answer.text
    tasks: list[dict[str, Any]] = answer.json()
    return tasks


def until(served: Served, task_id: str, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The task's row once ``wanted`` holds for it (the body runs in the background)."""
    deadline = time.monotonic() + WAIT / 1000
    while True:
        row = next((task for task in listed(served) if task["id"] == task_id), None)
        if row is not None and wanted(row):
            return row
        assert time.monotonic() < deadline, f"task {task_id} never got there: {row}"
        time.sleep(0.05)


def test_the_tasks_api_lists_and_cancels_behind_the_token(served: Served) -> None:
    assert httpx2.get(served.base + "api/tasks").status_code == 401
    running = start(served, "crunch", "a")
    row = until(served, running, lambda task: task["statusMessage"] is not None)
    assert set(row) == {"id", "tool", "status", "statusMessage", "createdAt", "lastUpdatedAt"}
    assert (row["tool"], row["status"], row["statusMessage"]) == (
        "crunch",
        "working",
        "1/2: crunching a",
    )
    assert STAMP.match(row["createdAt"])
    assert STAMP.match(row["lastUpdatedAt"])
    done = start(served, "quick", "b")
    until(served, done, lambda task: task["status"] == "completed")
    ids = [task["id"] for task in listed(served)]
    assert ids.index(done) < ids.index(running)  # newest first

    cancel = served.base + f"api/tasks/{running}/cancel"
    assert httpx2.post(cancel, json={}).status_code == 401
    assert httpx2.post(cancel, content="{}", headers=BEARER).status_code == 415
    answer = httpx2.post(cancel, json={}, headers=BEARER)
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"id": running, "status": "cancelled"}
    assert mcp(served, "tasks/get", taskId=running)["status"] == "cancelled"
    assert until(served, running, lambda task: True)["status"] == "cancelled"
    finished = served.base + f"api/tasks/{done}/cancel"
    assert httpx2.post(finished, json={}, headers=BEARER).json() == {
        "id": done,
        "status": "completed",
    }
    unknown = httpx2.post(served.base + "api/tasks/nope/cancel", json={}, headers=BEARER)
    assert unknown.status_code == 404
    assert unknown.json() == {
        "error": "no task has id 'nope': it has expired (a task is kept for its ttlMs), or was "
        "never started here; GET /api/tasks lists them"
    }


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(f"{served.base}?token={TOKEN}")  # the token becomes the console's cookie
    tab.get_by_text("live", exact=True).wait_for()
    yield tab
    context.close()
    assert errors == []


def test_the_tasks_view_shows_a_running_task_and_cancels_it(page: Any, served: Served) -> None:
    task_id = start(served, "crunch", "in the browser")
    until(served, task_id, lambda task: task["statusMessage"] is not None)
    page.get_by_role("link", name="Tasks").click()
    row = page.locator(f'tr[data-task="{task_id}"]')
    cells = row.locator("td")
    cells.nth(3).get_by_text("1/2: crunching in the browser").wait_for()
    assert cells.nth(0).inner_text() == task_id
    assert cells.nth(1).inner_text() == "crunch"
    assert cells.nth(2).inner_text() == "working"
    assert cells.nth(4).locator("time").get_attribute("datetime") is not None
    shot(page, "tasks")
    row.get_by_role("button", name=f"cancel task {task_id}").click()
    cells.nth(2).get_by_text("cancelled", exact=True).wait_for()
    assert row.get_by_role("button").count() == 0
    assert mcp(served, "tasks/get", taskId=task_id)["status"] == "cancelled"
