"""The agent in code mode: the model gets run_code, writes one program, answers from it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness import Host
from harness.agent.service import CODE_RULES
from harness.testing import Reply, Rule, ScriptedServer

from ..helpers import write
from .conftest import QUESTION, SEED, answer_from, git_repo, project

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the official openai SDK leaves async generators unfinished on trio


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return git_repo(tmp_path / "repo", commits=8)


@pytest.fixture
def server(repo: Path) -> Iterator[ScriptedServer]:
    rules = [
        Rule(Reply.program(SEED.format(repo=str(repo))), user=QUESTION),
        Rule(Reply.answer(answer_from), tool="run_code"),
        Rule(Reply.say("Hello."), user="hello"),
    ]
    with ScriptedServer(rules) as running:
        yield running


def agent_entries(server: ScriptedServer, direct: str = "[]") -> str:
    return (
        "  - id: model\n    name: harness:openai\n"
        f"    config: {{model: scripted, base_url: '{server.url}'}}\n"
        "  - id: agent\n    name: harness:agent\n"
        f"    config: {{code_mode: true, direct: {direct}, sessions: ./sessions}}\n"
    )


async def test_the_seed_question_takes_two_model_requests(
    tmp_path: Path, server: ScriptedServer
) -> None:
    config = project(tmp_path, extra=agent_entries(server, "[echo]"))
    async with Host(config) as host:
        session = host.ctx.agent.session()
        events = [event async for event in session.send(QUESTION)]
        session_id = session.id
    assert len(server.requests) == 2
    first = server.requests[0]
    assert [tool["function"]["name"] for tool in first["tools"]] == ["echo", "run_code"]
    assert first["messages"][0]["role"] == "system"
    assert CODE_RULES in first["messages"][0]["content"]
    end = events[-1]
    assert end["type"] == "turn/end"
    assert end["reason"] == "done"
    message = [e for e in events if e["type"] == "assistant/message"][-1]
    assert message["text"] == (
        "Commits that touched more than 3 files: change 6 (4 files); change 4 (4 files); "
        "change 2 (4 files); change 0 (4 files)."
    )
    # the program's calls are in the session, nested under the run_code call
    calls = [e for e in events if e["type"] == "tool/call"]
    outer = calls[0]
    assert outer["name"] == "run_code"
    assert "parent" not in outer
    inner = calls[1:]
    assert [c["name"] for c in inner] == ["git_log_reader"] + ["git_diff"] * 8
    assert {c["parent"] for c in inner} == {outer["id"]}
    results = [e for e in events if e["type"] == "tool/result"]
    assert [r.get("parent") for r in results] == [outer["id"]] * 9 + [None]
    # the model read only the program's value, never the diffs
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1
    assert json.loads(tool_messages[0]["content"])["output"] == (
        "4 of 8 commits touched more than 3 files\n"
    )
    assert "+++ b/f0.txt" not in json.dumps(server.requests[1])  # no diff body
    # a resumed session's history has the run_code result only
    async with Host(config) as host:
        resumed = host.ctx.agent.session(session_id)
        [event async for event in resumed.send("hello")]
    third = server.requests[2]["messages"]
    assert [m["role"] for m in third] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert server.input_tokens[1] < 4 * server.input_tokens[0]


def test_harness_chat_shows_the_programs_calls_as_nested_cards(
    tmp_path: Path, server: ScriptedServer
) -> None:
    from ..helpers import run_harness

    project(tmp_path, extra=agent_entries(server))
    write(tmp_path / ".env", "")
    done = run_harness("chat", "-m", QUESTION, "--yes", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "run_code" in out
    assert "      ▸ git_diff" in out  # the live line of an inner call, indented
    assert out.count("git_diff · done") >= 8
    assert "program" in out
    assert "Commits that touched more than 3 files: change 6 (4 files)" in out


async def test_code_mode_without_run_code_offers_the_direct_tools_and_says_so(
    tmp_path: Path, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    text = project(tmp_path, extra=agent_entries(server, "[echo]")).read_text()
    config = write(
        tmp_path / "cordis.yml",
        text.replace("name: harness:code", "name: harness:code\n    enabled: false"),
    )
    async with Host(config) as host:
        session = host.ctx.agent.session()
        [event async for event in session.send("hello")]
    assert [tool["function"]["name"] for tool in server.requests[0]["tools"]] == ["echo"]
    assert (
        "code_mode is on, but there is no run_code tool (add a harness:code entry); the model "
        "sees only the direct tools" in caplog.text
    )
