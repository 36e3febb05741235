"""A graceful stop (SIGTERM to a real ``harness run``, the commonest restart: a deploy, or to
``harness mcp`` over stdio) loses nothing that waits: a keyed ``run_code`` program paused on
an approval, a keyed call's pending approval and an agent turn running in the store are left
in the store as ``kill -9`` leaves them, and the next start (SQLite beside cordis.yml), or
the other replica on one real PostgreSQL, finishes them without repeating a call or a model
request. A person's Stop (the caller cancelling the call) still forgets the program and its
request."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from harness import Host, ToolCall, ToolResult
from harness.testing import ScriptedServer

from ..helpers import HARNESS
from ..processes import start_harness_run, stop
from ..web.page import Page
from .postgres import Postgres
from .test_paused import PROGRAM, answer_and_read, running_code
from .test_paused import project as code_project
from .test_restart import effects, environment, kill_9, over_http, written
from .test_restart import project as charge_project
from .test_turns import asked, check, finished, rules, start_turn
from .test_turns import project as agent_project

pytestmark = pytest.mark.anyio


def rows(folder: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The store's paused programs, kept approvals and journal entries (SQLite)."""
    with contextlib.closing(sqlite3.connect(folder / ".harness" / "harness.db")) as db:
        return {
            "programs": db.execute("SELECT key, owner FROM programs ORDER BY key").fetchall(),
            "approvals": db.execute("SELECT key, tool, owner FROM approvals").fetchall(),
            "journal": db.execute("SELECT key, state, owner FROM journal ORDER BY key").fetchall(),
        }


class Nobody:
    """The asker of a call nobody answers (its approval waits until the call ends)."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def request(self, call: ToolCall, reason: str) -> bool:
        self.asked.set()
        await anyio.sleep_forever()
        return False


async def parked(host: Host, key: str, results: list[ToolResult]) -> anyio.CancelScope:
    """Start the keyed program in the background until it waits, parked, for charge's
    approval; the scope that cancels its call."""
    asker = Nobody()
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            call = ToolCall(f"call-{key}", "run_code", {"code": PROGRAM}, key=key)
            results.append(await host.ctx.tools.execute(call, approval=asker))

    host.ctx.start_soon(run)
    with anyio.fail_after(20):
        await asker.asked.wait()
        store = host.ctx.get("store")
        while True:  # kept in the store once its worker is free
            if await store.database.run(
                lambda db: db.execute("SELECT 1 FROM programs WHERE key = ?", (key,)).fetchone()
            ):
                return scope
            await anyio.sleep(0.02)


async def test_the_host_s_stop_keeps_a_paused_program_that_its_caller_s_cancel_forgets(
    tmp_path: Path,
) -> None:
    folder = code_project(tmp_path)
    results: list[ToolResult] = []
    async with Host(folder / "cordis.yml") as host:
        scope = await parked(host, "prog-1", results)
        scope.cancel()  # the caller stops it: forgotten
        with anyio.fail_after(20):
            while True:
                if not rows(folder)["approvals"] and not rows(folder)["programs"]:
                    break
                await anyio.sleep(0.02)
        assert ("prog-1", "started", "") in rows(folder)["journal"]  # cut off: interrupted
        await parked(host, "prog-2", results)
        host.ctx.mark_stopping()  # what harness run does on SIGTERM, before it cancels
    assert [result.code for result in results] == ["cancelled", "cancelled"]
    kept = rows(folder)
    owner = kept["programs"][0][1]
    assert kept["programs"] == [("prog-2", owner)]
    assert kept["approvals"] == [("prog-2/1", "charge", owner)]
    assert ("prog-2", "started", owner) in kept["journal"]  # the program's, left as it was
    assert effects(folder) == ["append 1", "append 1"]

    async with Host(folder / "cordis.yml") as host:
        approvals = host.ctx.tools.approvals
        with anyio.fail_after(20):  # adopted at the start
            while True:
                if approvals.pending():
                    break
                await anyio.sleep(0.02)
        [request] = approvals.pending()
        assert (request["name"], request["args"]) == ("charge", {"amount": 5})
        approvals.answer(request["id"], "allow_once")
        repeat = ToolCall("again", "run_code", {"code": PROGRAM}, key="prog-2")
        with anyio.fail_after(30):
            result = await host.ctx.tools.execute(repeat)
        gone = await host.ctx.tools.execute(
            ToolCall("again-1", "run_code", {"code": PROGRAM}, key="prog-1")
        )
    assert result.ok, result.error
    assert result.result["output"] == "appended 1 charged 5\n"
    assert gone.code == "interrupted"  # the one its caller stopped is not resumed
    assert effects(folder) == ["append 1", "append 1", "charge 5"]
    assert rows(folder)["programs"] == rows(folder)["approvals"] == []


async def terminate(process: subprocess.Popen[Any]) -> None:
    """SIGTERM, as a deploy stops ``harness run``; returns once it exited, by itself, with 0."""
    process.send_signal(signal.SIGTERM)
    code = await anyio.to_thread.run_sync(lambda: process.wait(timeout=60))
    printed = stop(process)
    assert code == 0, printed


async def pause(process: subprocess.Popen[Any], port: int, folder: Path) -> dict[str, Any]:
    """Run the program (key ``prog-1``) until it waits for charge's approval, parked (another
    program runs on the only worker), then SIGTERM the process. The approval request."""
    asked: dict[str, Any] = {}
    other: dict[str, Any] = {}
    with contextlib.suppress(Exception):  # its client fails as the process stops
        async with (
            Page(f"http://127.0.0.1:{port}/") as page,
            running_code(port) as run,
            anyio.create_task_group() as group,
        ):
            group.start_soon(run, PROGRAM, "prog-1")
            asked = await page.next("approval/request", name="charge")
            with anyio.fail_after(20):  # the waiting program holds no worker
                other = await run("sum([i * i for i in range(10)])", None)
            await terminate(process)
            group.cancel_scope.cancel()
    assert other["ok"], other
    assert asked["args"] == {"amount": 5}
    assert effects(folder) == ["append 1"]
    return asked


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the console's client runs on asyncio
async def test_a_program_paused_at_sigterm_resumes_from_its_snapshot_at_the_next_start(
    tmp_path: Path,
) -> None:
    folder = code_project(tmp_path)
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        asked = await pause(process, port, folder)
    finally:
        kill_9(process)
    assert [key for key, _ in rows(folder)["programs"]] == ["prog-1"]
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        body = await answer_and_read(port, asked, folder)
    finally:
        stop(process)
    assert body["ok"], body
    assert body["result"]["output"] == "appended 1 charged 5\n"
    assert body["result"]["value"] == "paid"
    assert effects(folder) == ["append 1", "charge 5"]  # the first call was not run again


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_approval_pending_at_sigterm_is_asked_again_and_runs_the_call_once(
    tmp_path: Path,
) -> None:
    folder = charge_project(tmp_path, ask=True)
    process, port = start_harness_run(folder, environment(), web=True)
    asked: dict[str, Any] = {}
    try:
        with contextlib.suppress(Exception):  # its client fails as the process stops
            async with (
                Page(f"http://127.0.0.1:{port}/") as page,
                over_http(port) as call,
                anyio.create_task_group() as group,
            ):
                group.start_soon(call, "charge", 5, "order-5")
                asked = await page.next("approval/request", name="charge")
                await terminate(process)
                group.cancel_scope.cancel()
    finally:
        kill_9(process)
    assert asked["args"] == {"amount": 5}
    assert [tool for _, tool, _ in rows(folder)["approvals"]] == ["charge"]
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            listed = (await http.get("/api/approvals")).json()
            assert [(item["id"], item["name"], item["args"]) for item in listed] == [
                (asked["id"], "charge", {"amount": 5})
            ]
            answered = await http.post(
                f"/api/approvals/{asked['id']}", json={"decision": "allow_once"}
            )
            assert answered.status_code == 200, answered.text
            await written(folder, "charge 5")
        async with over_http(port) as call:  # the client's repeat: from the journal
            assert await call("charge", 5, "order-5") == (False, "charged 5")
    finally:
        stop(process)
    assert effects(folder) == ["charge 5"]


async def cut_off_turn(folder: Path, port: int, process: subprocess.Popen[Any]) -> str:
    """Start a turn whose second step runs charge 3 (it finishes) and charge 2 (held in its
    body), and SIGTERM the process meanwhile."""
    hold = folder / "hold-charge-2"
    hold.touch()
    session = await start_turn(port)
    await written(folder, "charge 2")
    await written(folder, "charge 3")
    await terminate(process)
    hold.unlink()
    return session


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_turn_cut_off_by_sigterm_is_finished_by_the_next_start(tmp_path: Path) -> None:
    with ScriptedServer(rules()) as server:
        folder = agent_project(tmp_path, server, "sqlite:///.harness/harness.db").parent
        process, port = start_harness_run(folder, environment(), web=True)
        try:
            session = await cut_off_turn(folder, port, process)
        finally:
            kill_9(process)
        assert len(server.requests) == 2
        process, port = start_harness_run(folder, environment(), web=True)
        try:
            await asked(server, 3)  # at start-up
            events = await finished(port, session)
        finally:
            stop(process)
        check(events, server)
    assert sorted(effects(folder)) == ["charge 1", "charge 2", "charge 3"]


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_what_waits_on_a_replica_stopped_by_sigterm_is_finished_by_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"graceful_{secrets.token_hex(4)}")
    folder = code_project(tmp_path, url)
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


class Waiting:
    """The person behind a stdio MCP client who is asked and has not answered yet."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def __call__(self, context: Any, params: Any) -> Any:
        self.asked.set()
        await anyio.sleep_forever()


def served_for(config: Path) -> int:
    """The process id of the ``harness mcp`` serving ``config`` (the SDK's client started it)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            words = (entry / "cmdline").read_bytes().split(b"\0")
            if b"mcp" in words and str(config).encode() in words:
                return int(entry.name)
    raise AssertionError(f"no harness mcp process serves {config}")


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the SDK's stdio client
async def test_an_approval_pending_when_harness_mcp_is_stopped_is_asked_again(
    tmp_path: Path,
) -> None:
    # SIGTERM while its client is connected (tests/mcp/test_stdin.py: it ends by itself)
    folder = charge_project(tmp_path, ask=True)
    config = folder / "cordis.yml"
    person = Waiting()
    params = StdioServerParameters(command=HARNESS, args=["mcp", "-c", str(config)], cwd=folder)
    served = 0
    with contextlib.suppress(Exception):  # the client fails as its server stops
        async with (
            Client(params, mode="legacy", elicitation_callback=person) as client,
            anyio.create_task_group() as group,
        ):
            meta: Any = {"harness/idempotency-key": "order-5"}
            group.start_soon(lambda: client.call_tool("charge", {"amount": 5}, meta=meta))
            with anyio.fail_after(30):
                await person.asked.wait()
            served = served_for(config)
            os.kill(served, signal.SIGTERM)
            group.cancel_scope.cancel()
    assert served
    assert _state(served) == "Z"  # it has ended
    assert [tool for _, tool, _ in rows(folder)["approvals"]] == ["charge"]
    process, port = start_harness_run(folder, environment(), web=True)
    try:
        async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            [listed] = (await http.get("/api/approvals")).json()
            assert (listed["name"], listed["args"]) == ("charge", {"amount": 5})
            answered = await http.post(
                f"/api/approvals/{listed['id']}", json={"decision": "allow_once"}
            )
            assert answered.status_code == 200, answered.text
            await written(folder, "charge 5")
        async with over_http(port) as call:  # the key's repeat: from the journal
            assert await call("charge", 5, "order-5") == (False, "charged 5")
    finally:
        stop(process)
    assert effects(folder) == ["charge 5"]


def _state(pid: int) -> str:
    """The process's state letter (``Z``: it exited, its parent has not reaped it)."""
    with contextlib.suppress(OSError):
        return (Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[0]
    return "Z"
