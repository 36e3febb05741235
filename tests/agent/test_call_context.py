"""What a tool the agent calls can do while it runs (DESIGN §16): ask the session's reader,
sample the agent's own model, read roots, report progress and log, as session events."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import pytest

from harness import Host, ToolCall
from harness.testing import Fault, Reply, Rule, ScriptedServer, call
from harness.tools.approval_requests import ApprovalError

from ..providers import sent
from .conftest import config_file, write

pytestmark = pytest.mark.anyio

DEPLOY = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def deploy(service: str, ctx: CallContext) -> dict:
    """Deploy a service, asking for the region."""
    answer = await ctx.ask(
        "Which region?",
        {"region": {"type": "string", "enum": ["eu", "us"], "required": True},
         "canary": {"type": "boolean"}},
    )
    if not answer.accepted:
        return {"deployed": False, "action": answer.action, "reason": answer.reason}
    for step, name in enumerate(["build", "push", "roll out"]):
        await ctx.progress(step + 1, 3, name)
        await ctx.log("info", f"{name} {service}", step=step)
    note = await ctx.sample(
        f"One line for the changelog: deployed {service}", system="Be brief.", max_tokens=60
    )
    roots = await ctx.roots()
    return {
        "deployed": True,
        "answer": answer.content,
        "note": note.text,
        "model": note.model,
        "stop": note.stop_reason,
        "roots": [[root.uri, root.name] for root in roots],
        "surface": ctx.surface,
        "session": ctx.session,
    }


def apply(ctx):
    return ctx.tools.register(deploy)
'''


def project(
    tmp_path: Path, server: ScriptedServer, faults: list[Fault] | None = None, **agent: Any
) -> Path:
    server.rules = [
        Rule(Reply.calls(call("deploy", {"service": "api"})), user="deploy the api"),
        Rule(
            Reply.say("Deployed api to eu."), user="One line for the changelog", faults=faults or []
        ),
        Rule(Reply.say("done"), tool="deploy"),
    ]
    write(tmp_path / "deploy.py", DEPLOY)
    entries = [{"id": "deploy", "name": str(tmp_path / "deploy.py")}]
    return config_file(tmp_path, server, entries, agent=agent, model={"max_retries": 0})


async def answering(host: Host, session: Any, content: dict[str, Any] | None) -> list[Any]:
    """The turn's events; the tool's question answered with ``content`` (None: declined)."""
    events = []
    with anyio.fail_after(30):
        async for event in session.send("deploy the api"):
            events.append(event)
            if event["type"] == "approval/request":
                assert event["question"] is True
                if content is None:
                    host.ctx.approval.answer(event["id"], "deny")
                else:
                    host.ctx.approval.answer(event["id"], "allow_once", content=content)
    return events


def result_of(events: list[dict[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = next(e for e in events if e["type"] == "tool/result")["result"]
    return result


async def test_a_tool_asks_samples_reads_roots_reports_progress_and_logs(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(project(tmp_path, server)) as host:
        session = host.ctx.agent.session()
        events = await answering(host, session, {"region": "eu", "canary": True})
        logged = list(session.events)
    result = result_of(events)
    assert result["ok"] is True, result
    value = result["result"]
    call_id = result["id"]
    assert value["answer"] == {"region": "eu", "canary": True}
    assert value["note"] == "Deployed api to eu."  # the agent's own model answered
    assert value["model"] == "scripted"
    assert value["stop"] == "endTurn"
    assert value["roots"] == [[tmp_path.resolve().as_uri(), tmp_path.name]]
    assert (value["surface"], value["session"]) == ("agent", session.id)
    # the question: a form in the session, recorded like an approval
    question = next(e for e in events if e["type"] == "approval/request")
    assert question["call_id"] == call_id
    assert question["form"]["properties"]["region"] == {"type": "string", "enum": ["eu", "us"]}
    assert question["form"]["required"] == ["region"]
    assert "Which region?" in question["reason"]
    # the sampling request: one completion with the tool's messages, system and max_tokens
    sampling = sent(server, 1)
    assert sampling.system == "Be brief."
    assert sampling.messages == [
        {"role": "user", "content": "One line for the changelog: deployed api"}
    ]
    assert sampling.tools == []
    assert server.requests[1]["max_tokens"] == 60
    # progress streamed, not logged; logs logged
    progress = [e for e in events if e["type"] == "tool/progress"]
    assert [(e["id"], e["done"], e["total"], e["message"]) for e in progress] == [
        (call_id, 1, 3, "build"),
        (call_id, 2, 3, "push"),
        (call_id, 3, 3, "roll out"),
    ]
    assert all(e["session"] == session.id for e in progress)
    logs = [e for e in events if e["type"] == "tool/log"]
    assert [(e["id"], e["level"], e["message"], e["data"]) for e in logs] == [
        (call_id, "info", "build api", {"step": 0}),
        (call_id, "info", "push api", {"step": 1}),
        (call_id, "info", "roll out api", {"step": 2}),
    ]
    kinds = [e["type"] for e in logged]
    assert "tool/progress" not in kinds
    assert kinds.count("tool/log") == 3
    on_disk = (tmp_path / ".harness" / "sessions" / f"{session.id}.jsonl").read_text()
    types = [json.loads(line)["type"] for line in on_disk.splitlines()]
    assert types.count("tool/log") == 3
    assert "tool/progress" not in types


async def test_a_declined_question_reaches_the_tool_as_decline(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(project(tmp_path, server)) as host:
        events = await answering(host, host.ctx.agent.session(), None)
    assert result_of(events)["result"] == {"deployed": False, "action": "decline", "reason": None}


async def test_an_unanswered_question_is_cancelled_with_the_reason(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(project(tmp_path, server, approval_timeout=0.3)) as host:
        with anyio.fail_after(30):
            events = [e async for e in host.ctx.agent.session().send("deploy the api")]
    value = result_of(events)["result"]
    assert value["action"] == "cancel"
    assert value["reason"] == "no answer within 0.3 seconds"


async def test_a_sampling_the_agents_model_fails_ends_the_call_tool_error(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(project(tmp_path, server, faults=[Fault.http(500)])) as host:
        events = await answering(host, host.ctx.agent.session(), {"region": "eu"})
    result = result_of(events)
    assert result["code"] == "tool_error"
    assert result["error"].startswith(
        "tool deploy asked the agent's model for a completion, and it failed: "
    )
    assert "500" in result["error"]


async def test_the_roots_are_the_agents_roots_config(
    tmp_path: Path, server: ScriptedServer
) -> None:
    (tmp_path / "work").mkdir()
    async with Host(project(tmp_path, server, roots=["work", "."])) as host:
        events = await answering(host, host.ctx.agent.session(), {"region": "us"})
    assert result_of(events)["result"]["roots"] == [
        [(tmp_path / "work").resolve().as_uri(), "work"],
        [tmp_path.resolve().as_uri(), tmp_path.name],
    ]


async def test_content_answers_questions_only_and_must_fit_the_form(
    tmp_path: Path, server: ScriptedServer
) -> None:
    async with Host(project(tmp_path, server)) as host:
        approvals = host.ctx.approval
        events = []
        with anyio.fail_after(30):
            async for event in host.ctx.agent.session().send("deploy the api"):
                events.append(event)
                if event["type"] != "approval/request":
                    continue
                with pytest.raises(ApprovalError, match="does not fit the form of deploy: region"):
                    approvals.answer(event["id"], "allow_once", content={"region": "mars"})
                with pytest.raises(ApprovalError, match="canary: expected boolean, got string"):
                    approvals.answer(
                        event["id"], "allow_once", content={"region": "eu", "canary": "yes"}
                    )
                approvals.answer(event["id"], "allow_once", content={"region": "eu"})
        assert result_of(events)["result"]["answer"] == {"region": "eu"}
        # an approval is answered by a decision alone
        call = ToolCall("a1", "deploy", {"service": "x"}, session="s-1")
        asking = anyio.Event()
        approvals_object = host.tools.approvals
        host.ctx.on("approval/request", lambda fields: asking.set())
        async with anyio.create_task_group() as group:
            group.start_soon(approvals_object.decide, call, "policy asks")
            with anyio.fail_after(10):
                await asking.wait()
            [request] = approvals_object.pending()
            with pytest.raises(ApprovalError, match="is an approval, not a tool's question"):
                approvals_object.answer(request["id"], "allow_once", content={"x": 1})
            approvals_object.answer(request["id"], "deny")


COUNT = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def count(rows: int, ctx: CallContext) -> int:
    """Count rows, reporting each."""
    for row in range(1, rows + 1):
        await ctx.progress(row, rows, "rows")
    return rows


def apply(ctx):
    return ctx.tools.register(count)
'''


async def test_a_flood_of_progress_reaches_readers_as_its_news_and_its_end(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [
        Rule(Reply.calls(call("count", {"rows": 5000})), user="count the rows"),
        Rule(Reply.say("counted"), tool="count"),
    ]
    write(tmp_path / "count.py", COUNT)
    entries = [{"id": "count", "name": str(tmp_path / "count.py")}]
    async with Host(config_file(tmp_path, server, entries)) as host:
        with anyio.fail_after(60):
            events = [e async for e in host.ctx.agent.session().send("count the rows")]
    assert result_of(events)["result"] == 5000
    shown = [(e["done"], e["total"]) for e in events if e["type"] == "tool/progress"]
    assert shown[0] == (1, 5000)
    assert shown[-1] == (5000, 5000)  # the end always goes out
    assert len(shown) < 1000  # not one event per report: one a tenth of a second, and news


BURST = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def burst(ctx: CallContext) -> str:
    """Report a burst of progress, then wait for a person."""
    for row in range(1, 51):
        await ctx.progress(row, 100, "rows")
    answer = await ctx.ask("Go on?")
    return answer.action
'''


async def test_the_last_report_of_a_burst_reaches_readers_while_the_call_waits(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [
        Rule(Reply.calls(call("burst")), user="burst"),
        Rule(Reply.say("done"), tool="burst"),
    ]
    write(
        tmp_path / "burst.py", BURST + "\n\ndef apply(ctx):\n    return ctx.tools.register(burst)\n"
    )
    entries = [{"id": "burst", "name": str(tmp_path / "burst.py")}]
    async with Host(config_file(tmp_path, server, entries)) as host:
        question = None
        shown: list[float] = []
        with anyio.fail_after(20):  # the question waits 300 s: only the 50th report ends it
            async for event in host.ctx.agent.session().send("burst"):
                if event["type"] == "approval/request":
                    question = event["id"]
                elif event["type"] == "tool/progress":
                    shown.append(event["done"])
                if question is not None and shown and shown[-1] == 50:
                    host.ctx.approval.answer(question, "allow_once", content={})
                    question = None
                if event["type"] == "tool/result":
                    assert event["result"]["result"] == "accept"
    assert shown[0] == 1
    assert shown[-1] == 50
    assert len(shown) < 50


async def test_roots_naming_no_folder_are_warned_about(
    tmp_path: Path, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="harness.agent"):
        async with Host(project(tmp_path, server, roots=["nowhere"])):
            pass
    assert f"the agent's roots name nowhere, which is not a folder (relative to {tmp_path})" in (
        caplog.text
    )
