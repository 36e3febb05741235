"""MCP tasks kept in the store, through real ``harness run`` processes and the official MCP
SDK client (2026-07-28, the ``io.modelcontextprotocol/tasks`` extension): two replicas on
one real PostgreSQL answer each other's tasks (get, update, cancel, the result), and a task
whose process was ``kill -9``-ed is answered ``failed`` (interrupted) by the other replica,
and by the next ``harness run`` on an SQLite store."""

from __future__ import annotations

import json
import secrets
import shutil
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from ..helpers import run_harness, write
from ..processes import start_harness_run, stop
from .postgres import Postgres
from .task_client import TaskClient, over_tasks
from .test_restart import effects, environment, kill_9, written

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent
INTERRUPTED = {
    "code": -32603,
    "message": "interrupted: the host stopped while this task ran; it may or may not have "
    "taken effect",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio


def project(folder: Path, url: str = "sqlite:///.harness/harness.db") -> Path:
    shutil.copyfile(HERE / "tasks_plugin.py", folder / "tasks_plugin.py")
    write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: tools
            name: harness:tools
          - id: store
            name: harness:store
            config: {{ url: "{url}" }}
          - id: tasks
            name: ./tasks_plugin.py
        """,
    )
    return folder


async def until(client: TaskClient, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll ``tasks/get`` (10 s at most) until the task's status is one of ``statuses``."""
    with anyio.fail_after(10):
        while True:
            task = await client.get(task_id)
            if task["status"] in statuses:
                return task
            await anyio.sleep(0.05)


def text_of(task: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in task["result"]["content"])


async def test_two_replicas_answer_each_others_tasks(tmp_path: Path, postgres: Postgres) -> None:
    url = postgres.create_database(f"tasks_{secrets.token_hex(4)}")
    folder = project(tmp_path, url)
    a, port_a = start_harness_run(folder, environment())
    b, port_b = start_harness_run(folder, environment(), web=True)
    try:
        (folder / "hold-job-1").touch()
        (folder / "hold-job-2").touch()
        async with over_tasks(port_a) as on_a, over_tasks(port_b) as on_b:
            # started on a, polled on b: working, with a's progress as its message
            one = (await on_a.start("job", {"amount": 1})).task_id
            await written(folder, "job 1")
            seen = await on_b.get(one)
            assert seen["status"] == "working"
            with anyio.fail_after(10):
                while seen.get("statusMessage") != "1/2: step 1":
                    await anyio.sleep(0.05)
                    seen = await on_b.get(one)
            # b's console lists a's task, and cancels it on a through the store
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port_b}") as console:
                listed = (await console.get("/api/tasks")).json()
                assert [(t["id"], t["tool"], t["status"], t["statusMessage"]) for t in listed] == [
                    (one, "job", "working", "1/2: step 1")
                ]

            # asked on a, answered on b: a's body goes on and finishes; b has the result
            asking = (await on_a.start("confirm", {"amount": 4})).task_id
            waiting = await until(on_b, asking, "input_required")
            [(key, request)] = waiting["inputRequests"].items()
            assert request["method"] == "elicitation/create"
            assert request["params"]["message"] == "Go on with 4?"
            answer = {key: {"action": "accept", "content": {"go": True}}}
            assert await on_b.update(asking, answer) == {"resultType": "complete"}
            done = await until(on_b, asking, "completed")
            assert text_of(done) == "went 4"
            assert "inputRequests" not in done

            # cancelled on b (over MCP, and in b's console): a's bodies are cancelled
            two = (await on_a.start("job", {"amount": 2})).task_id
            await written(folder, "job 2")
            assert await on_b.cancel(two) == {"resultType": "complete"}
            assert (await on_b.get(two))["status"] == "cancelled"
            await written(folder, "job 2 cancelled")
            assert (await on_a.get(two))["status"] == "cancelled"
            (folder / "hold-job-5").touch()
            five = (await on_a.start("job", {"amount": 5})).task_id
            await written(folder, "job 5")
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port_b}") as console:
                cancelled = await console.post(f"/api/tasks/{five}/cancel", json={})
            assert cancelled.json() == {"id": five, "status": "cancelled"}
            await written(folder, "job 5 cancelled")

            # finished on a, its result read on b
            (folder / "hold-job-1").unlink()
            finished = await until(on_b, one, "completed")
            assert text_of(finished) == "did job 1"
            assert (await on_a.get(one))["result"] == finished["result"]

            # a is killed inside a task: b answers it failed (interrupted)
            (folder / "hold-job-3").touch()
            three = (await on_a.start("job", {"amount": 3})).task_id
            await written(folder, "job 3")
            kill_9(a)
            # working until the server has ended a's connection (and dropped its lock)
            failed = await until(on_b, three, "failed")
            assert failed["error"] == INTERRUPTED
            assert (await on_b.get(one))["status"] == "completed"
            with pytest.raises(MCPError) as unknown:
                await on_b.get("no-such-task")
            assert unknown.value.error.code == -32602
    finally:
        kill_9(a)
        stop(b)
    # harness tasks reads the same PostgreSQL store
    listed = run_harness("tasks", "--all", "--json", cwd=folder)
    assert listed.returncode == 0, listed.stderr
    assert [task["status"] for task in json.loads(listed.stdout)] == [
        "completed",
        "completed",
        "cancelled",
        "cancelled",
        "failed",
    ]
    assert effects(folder) == [
        "job 1",
        "confirm 4 went",
        "job 2",
        "job 2 cancelled",
        "job 5",
        "job 5 cancelled",
        "job 3",
    ]


async def test_a_task_cut_off_by_kill_9_is_failed_after_a_restart(tmp_path: Path) -> None:
    folder = project(tmp_path)
    process, port = start_harness_run(folder, environment())
    try:
        async with over_tasks(port) as client:
            done = (await client.start("job", {"amount": 1})).task_id
            await until(client, done, "completed")
            (folder / "hold").touch()
            cut = (await client.start("job", {"amount": 2})).task_id
            await written(folder, "job 2")
            kill_9(process)
    finally:
        kill_9(process)
    (folder / "hold").unlink()
    process, port = start_harness_run(folder, environment())
    try:
        async with over_tasks(port) as client:
            failed = await client.get(cut)
            again = await client.get(cut)
            finished = await client.get(done)
    finally:
        stop(process)
    assert (failed["status"], failed["error"]) == ("failed", INTERRUPTED)
    assert again == failed
    assert text_of(finished) == "did job 1"
    assert effects(folder) == ["job 1", "job 2"]
