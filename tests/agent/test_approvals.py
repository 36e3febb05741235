"""Approvals in agent sessions: each decision, timeouts, visible arguments, cordis.yml edits."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call
from harness.tools.approval_requests import ApprovalError

from ..providers import call_id, model_yaml, sent
from .conftest import PLUGINS, turn, write

pytestmark = pytest.mark.anyio

CONFIG = """
# tools the agent may use
insert:
  - id: echo
    name: {plugins}/echo.py
  - id: policy            # asks before echo runs
    name: {plugins}/policy.py
    config:
      default: allow
      rules:
        echo: ask         # keep asking
        "write_*": ask
  - id: model
    {model}
  - id: agent
    name: harness:agent
    config:
      approval_timeout: {timeout}
"""


def setup(tmp_path: Path, server: ScriptedServer, timeout: float = 30) -> Path:
    server.rules = [
        Rule(Reply.calls(call("echo", {"text": "hi\u202eevil\x07"})), user="echo"),
        Rule(Reply.say("finished"), tool="echo"),
    ]
    return write(
        tmp_path / "cordis.yml",
        CONFIG.format(plugins=PLUGINS, model=model_yaml(server, "    "), timeout=timeout),
    )


async def answered(host: Host, session: Any, text: str, decision: str, reason: str | None = None):
    events = []
    with anyio.fail_after(20):
        async for event in session.send(text):
            events.append(event)
            if event["type"] == "approval/request":
                host.ctx.approval.answer(event["id"], decision, reason)
    return events


async def test_allow_once_runs_the_call_and_asks_again_next_time(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(setup(tmp_path, server)) as host:
        session = host.ctx.agent.session()
        events = await answered(host, session, "echo this", "allow_once")
        types = [e["type"] for e in events if e["type"] != "assistant/delta"]
        assert types[3:7] == ["tool/call", "approval/request", "approval/decided", "tool/result"]
        request = next(e for e in events if e["type"] == "approval/request")
        assert request["name"] == "echo"
        assert request["call_id"] == call_id(server, 1)
        assert request["args"] == {"text": "hi\u202eevil\x07"}
        assert "policy asks before echo runs" in request["reason"]
        decided = next(e for e in events if e["type"] == "approval/decided")
        assert decided == {**decided, "id": request["id"], "decision": "allow_once", "reason": None}
        assert next(e for e in events if e["type"] == "tool/result")["result"]["ok"] is True
        again = await answered(host, session, "echo again", "allow_once")
        assert "approval/request" in [e["type"] for e in again]


async def test_allow_session_stops_asking_in_that_session_only(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(setup(tmp_path, server)) as host:
        session = host.ctx.agent.session()
        await answered(host, session, "echo this", "allow_session")
        second = await turn(session, "echo again")
        assert "approval/request" not in [e["type"] for e in second]
        assert next(e for e in second if e["type"] == "tool/result")["result"]["ok"] is True
        other = await answered(host, host.ctx.agent.session(), "echo", "deny")
        assert "approval/request" in [e["type"] for e in other]


async def test_deny_with_a_reason_is_told_to_the_model(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(setup(tmp_path, server)) as host:
        events = await answered(host, host.ctx.agent.session(), "echo", "deny", "not now")
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "denied"
    assert result["error"].endswith("(denied by the user: not now)")
    decided = next(e for e in events if e["type"] == "approval/decided")
    assert (decided["decision"], decided["reason"]) == ("deny", "not now")
    tool_message = sent(server, -1).messages[-1]
    assert '"code":"denied"' in tool_message["content"]


async def test_an_unanswered_request_is_denied_after_the_timeout(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(setup(tmp_path, server, timeout=0.2)) as host:
        events = await turn(host.ctx.agent.session(), "echo")
        assert host.ctx.approval.pending() == []
    decided = next(e for e in events if e["type"] == "approval/decided")
    assert decided["decision"] == "deny"
    assert decided["reason"] == "no answer within 0.2 seconds"
    assert next(e for e in events if e["type"] == "tool/result")["result"]["code"] == "denied"


async def test_allow_always_writes_the_rule_keeping_comments(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = setup(tmp_path, server)
    before = config.read_text()
    async with Host(config) as host:
        events = await answered(host, host.ctx.agent.session(), "echo", "allow_always")
        assert next(e for e in events if e["type"] == "tool/result")["result"]["ok"] is True
        after = config.read_text()
        assert after == before.replace(
            "echo: ask         # keep asking", "echo: allow         # keep asking"
        )
        await host.reload()
        fresh = await turn(host.ctx.agent.session(), "echo")
        assert "approval/request" not in [e["type"] for e in fresh]


async def test_pending_lists_open_requests_with_visible_arguments(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(setup(tmp_path, server)) as host:
        session = host.ctx.agent.session()
        with anyio.fail_after(20):
            async for event in session.send("echo"):
                if event["type"] == "approval/request":
                    [pending] = host.ctx.approval.pending()
                    assert pending["session"] == session.id
                    assert pending["name"] == "echo"
                    assert pending["display"] == '{"text": "hi\\u202eevil\\u0007"}'
                    with pytest.raises(ApprovalError, match="unknown decision 'yes'"):
                        host.ctx.approval.answer(pending["id"], "yes")
                    host.ctx.approval.answer(pending["id"], "deny")
                    with pytest.raises(ApprovalError, match="no open approval request"):
                        host.ctx.approval.answer(pending["id"], "deny")
