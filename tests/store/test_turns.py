"""An agent turn cut off by a real ``kill -9`` of ``harness run`` is finished by the next
``harness run`` on the same store (SQLite beside cordis.yml), or by a live replica on one
real PostgreSQL: the model's recorded answers are not requested again (counted at the
scripted server), the charge that finished in the step cut off is answered by the journal
without running again, and the charge cut off in its body happened once (its line in
``effects.txt``), answered ``interrupted``."""

from __future__ import annotations

import secrets
import shutil
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..agent.conftest import config_file
from ..processes import start_harness_run, stop
from .postgres import Postgres
from .test_restart import effects, environment, kill_9, written

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the SDK's HTTP client runs on asyncio


def rules() -> list[Rule]:
    return [
        Rule(Reply.calls(call("charge", {"amount": 1})), user="pay"),
        Rule(
            Reply.calls(call("charge", {"amount": 3}), call("charge", {"amount": 2})),
            tool="charge",
            result="charged 1",
        ),
        Rule(Reply.say("The second charge was cut off."), tool="charge", result="interrupted"),
    ]


def project(folder: Path, server: ScriptedServer, url: str) -> Path:
    shutil.copyfile(HERE / "effects_plugin.py", folder / "effects_plugin.py")
    entries: list[dict[str, Any]] = [
        {"id": "store", "name": "harness:store", "config": {"url": url}},
        {"id": "effects", "name": "./effects_plugin.py"},
    ]
    return config_file(folder, server, entries, agent={"sessions": url})


async def start_turn(port: int) -> str:
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        session = (await http.post("/api/sessions", json={})).json()["id"]
        sent = await http.post(f"/api/sessions/{session}/messages", json={"text": "pay"})
        assert sent.status_code == 202, sent.text
    return str(session)


async def finished(port: int, session: str) -> list[dict[str, Any]]:
    """The session's events once its turn has ended (30 s at most)."""
    async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
        with anyio.fail_after(30):
            while True:
                events: list[dict[str, Any]] = (await http.get(f"/api/sessions/{session}")).json()[
                    "events"
                ]
                if any(event["type"] == "turn/end" for event in events):
                    return events
                await anyio.sleep(0.1)


async def asked(server: ScriptedServer, count: int) -> None:
    """Wait (30 s at most) until the model was asked ``count`` times: a turn goes on without
    anyone opening its session."""
    with anyio.fail_after(30):
        while True:
            if len(server.requests) >= count:
                return
            await anyio.sleep(0.05)


async def cut_off(folder: Path, port: int, process: Any) -> str:
    """Start a turn whose second step runs charge 3 (it finishes) and charge 2 (held in its
    body), and ``kill -9`` the process before the step's results are recorded."""
    hold = folder / "hold-charge-2"
    hold.touch()
    session = await start_turn(port)
    await written(folder, "charge 2")
    await written(folder, "charge 3")
    await anyio.sleep(0.5)  # charge 3's result reaches the journal
    kill_9(process)
    hold.unlink()
    return session


def check(events: list[dict[str, Any]], server: ScriptedServer) -> None:
    kinds = [event["type"] for event in events]
    assert kinds.count("turn/start") == 1
    assert kinds.count("turn/resume") == 1
    results = [event["result"] for event in events if event["type"] == "tool/result"]
    assert [(r["ok"], r["code"], r["result"]) for r in results] == [
        (True, None, "charged 1"),
        (True, None, "charged 3"),  # finished before the kill: the journal's answer
        (False, "interrupted", None),
    ]
    end = [event for event in events if event["type"] == "turn/end"]
    assert [(e["reason"], e["error"]) for e in end] == [("done", None)]
    answers = [event["text"] for event in events if event["type"] == "assistant/message"]
    assert answers[-1] == "The second charge was cut off."
    assert len(server.requests) == 3  # pay, charged 1, interrupted: none asked twice


async def test_a_turn_cut_off_by_kill_9_is_finished_by_the_next_run(tmp_path: Path) -> None:
    with ScriptedServer(rules()) as server:
        folder = project(tmp_path, server, "sqlite:///.harness/harness.db").parent
        process, port = start_harness_run(folder, environment(), web=True)
        try:
            session = await cut_off(folder, port, process)
        finally:
            kill_9(process)
        process, port = start_harness_run(folder, environment(), web=True)
        try:
            await asked(server, 3)  # at start-up
            events = await finished(port, session)
        finally:
            stop(process)
        check(events, server)
    assert sorted(effects(folder)) == ["charge 1", "charge 2", "charge 3"]


async def test_a_turn_of_a_killed_replica_is_finished_by_the_other(
    tmp_path: Path, postgres: Postgres
) -> None:
    url = postgres.create_database(f"turns_{secrets.token_hex(4)}")
    with ScriptedServer(rules()) as server:
        folder = project(tmp_path, server, url).parent
        a, port_a = start_harness_run(folder, environment(), web=True)
        b, port_b = start_harness_run(folder, environment(), web=True)
        try:
            session = await cut_off(folder, port_a, a)
            await asked(server, 3)  # by the live replica, within its sweep
            events = await finished(port_b, session)
        finally:
            kill_9(a)
            stop(b)
        check(events, server)
    assert sorted(effects(folder)) == ["charge 1", "charge 2", "charge 3"]
