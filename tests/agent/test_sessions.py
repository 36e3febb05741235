"""Sessions: JSONL logs, resume, a log cut by a crash, list, delete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import Host
from harness.agent import SessionNotFound
from harness.testing import Reply, Rule, ScriptedServer, call

from ..providers import sent
from .conftest import RESUMED_ROLES, config_file, entry, turn

pytestmark = pytest.mark.anyio


def rules() -> list[Rule]:
    return [
        Rule(Reply.calls(call("echo", {"text": "one"})), user="echo"),
        Rule(Reply.say("echoed one"), tool="echo"),
        Rule(Reply.say("second answer"), user="again"),
    ]


async def test_the_log_is_one_event_per_line_and_resume_rebuilds_the_history(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = rules()
    config = config_file(tmp_path, server, [entry("echo")])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        events = await turn(session, "echo one")
        logged = [e for e in events if e["type"] != "assistant/delta"]
        path = tmp_path / ".harness" / "sessions" / f"{session.id}.jsonl"
        lines = path.read_text().splitlines()
        assert [json.loads(line) for line in lines] == logged
        assert all(set(json.loads(line)) >= {"seq", "time", "type"} for line in lines)
        history = session.history
    async with Host(config) as host:
        resumed = host.ctx.agent.session(session.id)
        assert resumed.events == logged
        assert resumed.history == history
        more = await turn(resumed, "again")
        assert more[0]["seq"] == len(logged) + 1
        assert more[0]["turn"] == 2
        assert sent(server, -1).roles == RESUMED_ROLES
        listed = host.ctx.agent.sessions()
    assert listed == [
        {
            "id": session.id,
            "title": "echo one",
            "created": logged[0]["time"],
            "updated": more[-1]["time"],
            "turns": 2,
        }
    ]


async def test_a_log_cut_mid_line_loads_everything_before_it(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = rules()
    config = config_file(tmp_path, server, [entry("echo")])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        await turn(session, "echo one")
    path = tmp_path / ".harness" / "sessions" / f"{session.id}.jsonl"
    data = path.read_bytes()
    lines = data.splitlines(keepends=True)
    # a crash while writing the 5th line (tool/result): four whole lines and half a line
    assert json.loads(lines[4])["type"] == "tool/result"
    cut = b"".join(lines[:4]) + lines[4][: len(lines[4]) // 2]
    path.write_bytes(cut)
    async with Host(config) as host:
        resumed = host.ctx.agent.session(session.id)
        kinds = [e["type"] for e in resumed.events]
        assert resumed.events[:4] == [json.loads(line) for line in lines[:4]]
        # the open turn is closed: the unanswered call gets a result, the turn an end
        assert kinds[4:] == ["tool/result", "turn/end"]
        assert resumed.events[4]["result"]["code"] == "cancelled"
        assert resumed.events[4]["seq"] == 5
        assert resumed.events[5]["reason"] == "error"
        assert "interrupted" in resumed.events[5]["error"]
        again = await turn(resumed, "again")
        assert again[-1]["reason"] == "done"
    reread = [json.loads(line) for line in path.read_text().splitlines()]  # every line whole
    assert [e["seq"] for e in reread] == list(range(1, len(reread) + 1))


async def test_list_and_delete(tmp_path: Path, server: ScriptedServer) -> None:
    server.rules = [Rule(Reply.say("ok"))]
    config = config_file(tmp_path, server)
    async with Host(config) as host:
        agent = host.ctx.agent
        first, second = agent.session(), agent.session()
        await turn(first, "first   session\nwith lines")
        await turn(second, "second")
        listed = agent.sessions()
        assert [item["id"] for item in listed] == [second.id, first.id]
        assert listed[1]["title"] == "first session with lines"
        agent.delete(first.id)
        assert [item["id"] for item in agent.sessions()] == [second.id]
        assert not (tmp_path / ".harness" / "sessions" / f"{first.id}.jsonl").exists()
        with pytest.raises(SessionNotFound, match="no session"):
            agent.session(first.id)
        with pytest.raises(SessionNotFound, match="is not a session id"):
            agent.session("../../etc/passwd")
        with pytest.raises(SessionNotFound):
            agent.delete("nope")


async def test_sessions_in_memory(tmp_path: Path, server: ScriptedServer) -> None:
    server.rules = [Rule(Reply.say("ok"))]
    config = config_file(tmp_path, server, agent={"sessions": None})
    async with Host(config) as host:
        session = host.ctx.agent.session()
        await turn(session, "hi")
        assert [s["id"] for s in host.ctx.agent.sessions()] == [session.id]
    assert not (tmp_path / ".harness").exists()
