"""Sessions in the store: ``harness sessions import FOLDER`` moves real JSONL logs into it
(twice adds nothing; a broken line is reported ``file:line`` and the rest imported), and
listing, reading, exporting and searching sessions give the same from the store as from
the folder, through the agent's API, ``harness sessions`` and the console's HTTP API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

from ..agent.conftest import config_file, turn
from ..helpers import run_harness
from ..processes import start_harness_run, stop
from .test_restart import environment

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent
STORE = "sqlite:///.harness/harness.db"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the OpenAI SDK the model entry uses runs on asyncio


def rules() -> list[Rule]:
    return [
        Rule(Reply.calls(call("charge", {"amount": 1})), user="pay"),
        Rule(Reply.say("Paid."), tool="charge"),
        Rule(Reply.say("Hello there.")),
    ]


def write_config(folder: Path, server: ScriptedServer, sessions: str) -> Path:
    entries = [
        {"id": "store", "name": "harness:store"},
        {"id": "effects", "name": "./effects_plugin.py"},
    ]
    return config_file(folder, server, entries, agent={"sessions": sessions})


async def listed(folder: Path, server: ScriptedServer, sessions: str) -> dict[str, Any]:
    """What the agent's API gives of every session, with ``sessions`` as its setting."""
    async with Host(write_config(folder, server, sessions)) as host:
        agent = host.ctx.agent
        found = agent.sessions()
        return {
            "list": found,
            "search": [item["id"] for item in agent.sessions("PAY")],
            "events": {item["id"]: agent.session(item["id"]).events for item in found},
            "export": {item["id"]: b"".join(agent.export(item["id"])) for item in found},
            "trajectory": {item["id"]: agent.trajectory(item["id"]) for item in found},
        }


async def test_logs_imported_into_the_store_read_as_they_did_from_the_folder(
    tmp_path: Path,
) -> None:
    shutil.copyfile(HERE / "effects_plugin.py", tmp_path / "effects_plugin.py")
    with ScriptedServer(rules()) as server:
        async with Host(write_config(tmp_path, server, "./sessions")) as host:
            agent = host.ctx.agent
            first = agent.session()
            await turn(first, "pay one")
            agent.rename(first.id, "Payments")
            await turn(agent.session(), "say hello")
        before = await listed(tmp_path, server, "./sessions")
        assert len(before["list"]) == 2
        assert before["search"] == [first.id]

        write_config(tmp_path, server, STORE)
        imports = [run_harness("sessions", "import", "sessions", cwd=tmp_path) for _ in range(2)]
        assert [done.returncode for done in imports] == [0, 0], imports[0].stderr
        events = sum(len(found) for found in before["events"].values())
        assert imports[0].stdout.startswith(f"imported {events} events of 2 sessions into ")
        assert imports[1].stdout.startswith("imported 0 events of 2 sessions into ")
        assert imports[1].stdout.rstrip().endswith(f"({events} were there already)")

        after = await listed(tmp_path, server, STORE)
    assert after == before

    shown = run_harness("sessions", "show", first.id, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == before["events"][first.id]
    listing = run_harness("sessions", "--json", cwd=tmp_path)
    assert json.loads(listing.stdout) == before["list"]


async def test_a_broken_line_is_located_and_the_rest_imported(tmp_path: Path) -> None:
    shutil.copyfile(HERE / "effects_plugin.py", tmp_path / "effects_plugin.py")
    with ScriptedServer(rules()) as server:
        async with Host(write_config(tmp_path, server, "./sessions")) as host:
            session = host.ctx.agent.session()
            await turn(session, "say hello")
        log = tmp_path / "sessions" / f"{session.id}.jsonl"
        lines = log.read_text().splitlines(keepends=True)
        log.write_text("".join([*lines[:2], '{"seq": 3, "type": \n', *lines[2:]]))
        write_config(tmp_path, server, STORE)
        done = run_harness("sessions", "import", "sessions", cwd=tmp_path)
        assert done.returncode == 1
        assert done.stderr.strip() == f"sessions/{session.id}.jsonl:3: not JSON (Expecting value)"
        assert f"imported {len(lines)} events of 1 session into" in done.stdout
        assert "1 lines not imported" in done.stdout

        process, port = start_harness_run(tmp_path, environment(), web=True)
        try:
            async with httpx2.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                read = (await http.get(f"/api/sessions/{session.id}")).json()["events"]
                exported = (await http.get(f"/api/sessions/{session.id}/export")).text
        finally:
            stop(process)
    assert read == [json.loads(line) for line in lines]
    assert exported == "".join(lines)
