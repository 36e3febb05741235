"""A ``run_code`` program paused on an approval survives a real ``kill -9`` of ``harness run``
(SQLite beside cordis.yml) and of a replica (a real PostgreSQL): its snapshot is in the
store, its worker was freed while it waited (another program runs on the only worker), the
approval is listed again after the restart, and answering it resumes the program from its
snapshot: its first call's effect happened once, and the repeat of its key reads its
result."""

from __future__ import annotations

import contextlib
import secrets
import subprocess
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from ..helpers import ROOT, write
from ..processes import start_harness_run, stop
from ..web.page import Page
from .postgres import Postgres
from .test_restart import HERE, effects, environment, kill_9, written

pytestmark = pytest.mark.anyio
PROGRAM = """\
first = await append(amount=1)
second = await charge(amount=5)
print(first, second)
"paid"
"""
Run = Callable[[str, str | None], Coroutine[Any, Any, dict[str, Any]]]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the console's HTTP client here runs on asyncio


def project(folder: Path, url: str = "sqlite:///.harness/harness.db") -> Path:
    """The store at ``url``, code mode with one worker, the effect tools; charge asks."""
    (folder / "effects_plugin.py").write_text((HERE / "effects_plugin.py").read_text())
    write(
        folder / "cordis.yml",
        f"""
        insert:
          - id: tools
            name: harness:tools
          - id: store
            name: harness:store
            config: {{ url: "{url}" }}
          - id: effects
            name: ./effects_plugin.py
          - id: policy
            name: {ROOT / "plugins" / "policy.py"}
            config: {{ rules: {{ charge: ask }} }}
          - id: code
            name: harness:code
            config: {{ workers: 1, tools: [append, charge] }}
        """,
    )
    return folder


@contextlib.asynccontextmanager
async def running_code(port: int) -> AsyncIterator[Run]:
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:

        async def run(code: str, key: str | None) -> dict[str, Any]:
            headers = {} if key is None else {"Idempotency-Key": key}
            response = await http.post(
                "/api/tools/run_code/call", json={"args": {"code": code}}, headers=headers
            )
            assert response.status_code == 200, response.text
            body: dict[str, Any] = response.json()
            return body

        yield run


async def pause(process: subprocess.Popen[Any], port: int, folder: Path) -> dict[str, Any]:
    """Run the program (key ``prog-1``) until it waits for charge's approval; meanwhile
    another program runs on the only worker; then ``kill -9``. The approval request."""
    asked: dict[str, Any] = {}
    other: dict[str, Any] = {}
    with contextlib.suppress(Exception):  # its client fails as the process dies
        async with (
            Page(f"http://127.0.0.1:{port}/") as page,
            running_code(port) as run,
            anyio.create_task_group() as group,
        ):
            group.start_soon(run, PROGRAM, "prog-1")
            asked = await page.next("approval/request", name="charge")
            with anyio.fail_after(20):  # the waiting program holds no worker
                other = await run("sum([i * i for i in range(10)])", None)
            kill_9(process)
            group.cancel_scope.cancel()
    assert other["ok"], other
    assert other["result"]["value"] == 285
    assert asked["args"] == {"amount": 5}
    assert effects(folder) == ["append 1"]
    return asked


async def answer_and_read(port: int, asked: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Answer the listed request; the program's result, read by the repeat of its key."""
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        with anyio.fail_after(20):  # listed again (a replica adopts it within its sweep)
            while True:
                listed = (await http.get("/api/approvals")).json()
                if listed:
                    break
                await anyio.sleep(0.1)
        assert [(item["id"], item["name"], item["args"]) for item in listed] == [
            (asked["id"], "charge", {"amount": 5})
        ]
        assert effects(folder) == ["append 1"]
        answered = await http.post(f"/api/approvals/{asked['id']}", json={"decision": "allow_once"})
        assert answered.status_code == 200, answered.text
        await written(folder, "charge 5")
    async with running_code(port) as run:
        return await run(PROGRAM, "prog-1")


async def test_a_program_paused_at_kill_9_resumes_from_its_snapshot_after_the_restart(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        asked = await pause(process, port, folder)
    finally:
        kill_9(process)
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        body = await answer_and_read(port, asked, folder)
    finally:
        stop(process)
    assert body["ok"], body
    assert body["result"]["output"] == "appended 1 charged 5\n"
    assert body["result"]["value"] == "paid"
    assert [call["name"] for call in body["result"]["calls"]] == ["append", "charge"]
    assert effects(folder) == ["append 1", "charge 5"]  # the first call was not run again


async def test_a_program_paused_on_a_dead_replica_resumes_on_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"paused_{secrets.token_hex(4)}")
    folder = project(tmp_path, url)
    a, port_a = start_harness_run(folder, environment(), web=True)
    b, port_b = start_harness_run(folder, environment(), web=True)
    try:
        asked = await pause(a, port_a, folder)
        body = await answer_and_read(port_b, asked, folder)
    finally:
        kill_9(a)
        stop(b)
    assert body["ok"], body
    assert body["result"]["output"] == "appended 1 charged 5\n"
    assert effects(folder) == ["append 1", "charge 5"]
