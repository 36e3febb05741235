"""The agent's calls are journaled under their session, turn, step and call id: a scripted
model whose call ids restart with its process (``call_1`` again) in a resumed session does
not get an earlier turn's result back, and the same id in another session is another call."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

from ..agent.conftest import config_file, turn
from .test_restart import effects

pytestmark = pytest.mark.anyio
HERE = Path(__file__).parent


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the OpenAI SDK the model entry uses runs on asyncio


def rules() -> list[Rule]:
    return [
        Rule(Reply.calls(call("charge", {"amount": 1})), user="pay"),
        Rule(Reply.say("Paid."), tool="charge"),
    ]


async def test_a_model_reusing_call_ids_gets_each_call_run(tmp_path: Path) -> None:
    shutil.copyfile(HERE / "effects_plugin.py", tmp_path / "effects_plugin.py")
    entries = [
        {"id": "store", "name": "harness:store"},
        {"id": "effects", "name": str(tmp_path / "effects_plugin.py")},
    ]
    session_id = ""
    for _ in range(2):  # a new model process each time: its call ids start at call_1 again
        with ScriptedServer(rules()) as server:
            config = config_file(tmp_path, server, entries, agent={"sessions": "./sessions"})
            async with Host(config) as host:
                session = host.ctx.agent.session(session_id or None)
                session_id = session.id
                events = await turn(session, "pay one")
                other = await turn(host.ctx.agent.session(), "pay one")
        for seen in (events, other):
            calls = [event["id"] for event in seen if event["type"] == "tool/call"]
            results = [event for event in seen if event["type"] == "tool/result"]
            assert len(calls) == 1
            assert results[0]["result"]["ok"] is True, results
    assert effects(tmp_path) == ["charge 1"] * 4
