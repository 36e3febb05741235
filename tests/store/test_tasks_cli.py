"""``harness tasks`` through the real CLI, beside a real ``harness run`` (SQLite store): the
running tasks (``--json`` and the table), ``--all`` with the ended ones, a task of a
``kill -9``-ed process listed ``failed``, and the message without a store entry."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..helpers import run_harness, write
from ..processes import start_harness_run
from .task_client import over_tasks
from .test_restart import environment, kill_9, written
from .test_tasks import project, until

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio


def listed(folder: Path, *options: str) -> list[dict[str, Any]]:
    done = run_harness("tasks", "--json", *options, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return list(json.loads(done.stdout))


def shown(tasks: list[dict[str, Any]]) -> list[tuple[str, str, str | None]]:
    return [(task["tool"], task["status"], task["message"]) for task in tasks]


async def test_harness_tasks_lists_the_stores_tasks(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert listed(folder, "--all") == []  # no store file yet: none is made
    assert not (folder / ".harness").exists()
    process, port = start_harness_run(folder, environment())
    try:
        async with over_tasks(port) as client:
            done = (await client.start("job", {"amount": 1})).task_id
            await until(client, done, "completed")
            (folder / "hold").touch()
            held = (await client.start("job", {"amount": 2})).task_id
            await written(folder, "job 2")
            asking = (await client.start("confirm", {"amount": 3})).task_id
            await until(client, asking, "input_required")
            await until(client, held, "working")

            running = listed(folder)
            assert [task["id"] for task in running] == [held, asking]
            assert shown(running) == [
                ("job", "working", "1/2: step 2"),
                ("confirm", "input_required", None),
            ]
            every = listed(folder, "--all")
            assert [task["id"] for task in every] == [done, held, asking]
            assert every[0]["status"] == "completed"
            assert set(every[0]) == {
                "id",
                "tool",
                "status",
                "created",
                "updated",
                "message",
                "client",
                "ttlMs",
            }
            table = run_harness("tasks", cwd=folder, env={"COLUMNS": "200"})
            assert table.returncode == 0, table.stderr
            assert held in table.stdout
            assert "input_required" in table.stdout
            assert done not in table.stdout
            kill_9(process)
    finally:
        kill_9(process)
    assert listed(folder) == []
    failed = listed(folder, "--all")
    assert shown(failed)[1:] == [
        (
            tool,
            "failed",
            "interrupted: the host stopped while this task ran; it may or may not have "
            "taken effect",
        )
        for tool in ("job", "confirm")
    ]


def test_harness_tasks_without_a_store_says_so(tmp_path: Path) -> None:
    write(tmp_path / "cordis.yml", "insert:\n  - id: tools\n    name: harness:tools\n")
    done = run_harness("tasks", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"TasksError: {Path('cordis.yml')} has no enabled entry `name: harness:store`, so MCP "
        "tasks live in the memory of the `harness run` serving them, where no other process "
        "sees them: add the store entry (docs/store.md) to keep them there and list them"
    )
