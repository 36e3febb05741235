"""Chat in the browser, against harness.testing's scripted servers (OpenAI and Anthropic)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from harness.testing import Fault, Reply, Rule, ScriptedServer, call

from ..agent.conftest import git_repo
from ..providers import PROVIDERS, model_yaml, provider_of, server_for
from .conftest import Served, make_project
from .test_browser import WAIT, shot

ASK = "帮我看下这个仓库最近的提交"


@pytest.fixture(scope="module", params=PROVIDERS)
def scripted(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[ScriptedServer, Path]]:
    repo = git_repo(
        tmp_path_factory.mktemp("repo") / "repo", ["init", "add the parser", "fix date parsing"]
    )
    rules = [
        Rule(Reply.calls(call("git_log_reader", {"repoPath": str(repo), "maxCount": 5})), user=ASK),
        Rule(Reply.say("最近三个提交:解析日期修复、解析器、初始化。"), tool="git_log_reader"),
        Rule(Reply.say("The capital of France is Paris."), user="capital of France"),
        Rule(
            Reply.calls(call("write_text_file", {"path": "note.txt", "content": "from chat"})),
            user="write a note",
        ),
        Rule(Reply.say("The note is written."), tool="write_text_file"),
        Rule(
            Reply.say("Thinking about it for a long while..."),
            user="wait",
            faults=[Fault.stall(60)],
        ),
    ]
    with server_for(request.param, rules) as server:
        yield server, repo


@pytest.fixture(scope="module")
def chat_served(
    tmp_path_factory: pytest.TempPathFactory, scripted: tuple[ScriptedServer, Path]
) -> Iterator[Served]:
    server, _ = scripted
    extra = (
        f"  - id: model\n    {model_yaml(server, '    ')}\n  - id: agent\n    name: harness:agent\n"
    )
    served = Served(make_project(tmp_path_factory.mktemp("chat"), extra))
    yield served
    served.close()


def test_the_seed_scenario_an_approval_and_stop(
    browser: Any, chat_served: Served, scripted: tuple[ScriptedServer, Path]
) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(chat_served.base + "#/chat")
        page.get_by_text("live", exact=True).wait_for()
        page.get_by_role("button", name="New session").click()
        page.get_by_role("textbox", name="Message").fill(ASK)
        page.get_by_role("button", name="Send").click()
        card = page.get_by_role("article", name="tool call git_log_reader")
        card.get_by_text("done", exact=True).wait_for()
        text = card.inner_text()
        for subject in ("fix date parsing", "add the parser", "init"):
            assert re.search(rf"[0-9a-f]{{7}} \| Ada \| .+ \| {subject}", text), text
        assert '"maxCount": 5' in text  # the arguments are shown
        conversation = page.get_by_role("log", name="conversation")
        conversation.get_by_text("最近三个提交:解析日期修复、解析器、初始化。").wait_for()
        if provider_of(scripted[0]) == "openai":
            shot(page, "chat")

        # an unrelated question: a text answer, no tool card
        cards = page.get_by_role("article").count()
        page.get_by_role("textbox", name="Message").fill("What is the capital of France?")
        page.get_by_role("button", name="Send").click()
        conversation.get_by_text("The capital of France is Paris.").wait_for()
        assert page.get_by_role("article").count() == cards

        page.get_by_role("textbox", name="Message").fill("write a note")
        page.get_by_role("button", name="Send").click()
        writing = page.get_by_role("article", name="tool call write_text_file")
        writing.get_by_text("waiting for approval").wait_for()
        assert '"content": "from chat"' in writing.inner_text()
        writing.get_by_role("button", name="Allow once").click()
        writing.get_by_text("done", exact=True).wait_for()
        conversation.get_by_text("The note is written.").wait_for()
        note = chat_served.config.parent / "workspace" / "note.txt"
        assert note.read_text() == "from chat"

        page.get_by_role("textbox", name="Message").fill("wait")
        page.get_by_role("button", name="Send").click()
        stop = page.get_by_role("button", name="Stop")
        page.wait_for_function(
            "() => !document.querySelector('.composer button[type=button]').disabled"
        )
        stop.click()
        conversation.get_by_text("turn ended: cancelled").wait_for()
        assert stop.is_disabled()

        # the session resumes from its log: the same cards, the same results
        page.reload()
        page.get_by_text("live", exact=True).wait_for()
        page.get_by_role("button", name=f"Resume {ASK}").click()
        page.get_by_role("article", name="tool call git_log_reader").get_by_text(
            "done", exact=True
        ).wait_for()
        page.get_by_role("article", name="tool call write_text_file").get_by_text(
            "done", exact=True
        ).wait_for()
        page.on("dialog", lambda dialog: dialog.accept())
        page.get_by_role("button", name=f"Delete {ASK}").click()
        page.get_by_role("button", name=f"Resume {ASK}").wait_for(state="detached")
    finally:
        context.close()
    assert errors == []


def test_tools_page_approvals_go_through_the_agents_broker(
    browser: Any, chat_served: Served
) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(WAIT)
    try:
        page.goto(chat_served.base + "#/tools")
        page.get_by_text("live", exact=True).wait_for()
        write = page.get_by_role("region", name="write_text_file")
        write.get_by_label("path", exact=True).fill("refused.txt")
        write.get_by_label("content", exact=True).fill("no")
        write.get_by_role("button", name="Run").click()
        result = write.get_by_role("region", name="result")
        result.get_by_label("Reason", exact=True).fill("wrong folder")
        result.get_by_role("button", name="Deny").click()
        result.get_by_text("error code: denied").wait_for()
        assert "wrong folder" in result.inner_text()
        assert not (chat_served.config.parent / "workspace" / "refused.txt").exists()

        # Always allow: the broker writes the rule into the policy entry, comments kept
        before = chat_served.config.read_text()
        write.get_by_role("button", name="Run").click()
        result.get_by_role("button", name="Always allow").click()
        result.get_by_text("done", exact=True).wait_for()
        after = chat_served.config.read_text()
        assert "write_text_file: allow" in after
        assert [line for line in before.splitlines() if "#" in line and "ask" not in line] == [
            line for line in after.splitlines() if "#" in line and "ask" not in line
        ]
        write.get_by_role("button", name="Run").click()  # now it runs without asking
        result.get_by_text("done", exact=True).wait_for()
        assert result.get_by_role("button", name="Deny").count() == 0
    finally:
        context.close()


def test_an_unknown_session_is_a_404_for_messages_and_cancel(chat_served: Served) -> None:
    base = chat_served.base + "api/sessions/"
    for session_id in ("20990101-000000-abcdef", "no..such", "-"):
        for action, body in (("messages", {"text": "hello"}), ("cancel", {})):
            answer = httpx2.post(f"{base}{session_id}/{action}", json=body)
            assert answer.status_code == 404, (action, session_id, answer.text)
            assert answer.headers["content-type"] == "application/json"
            # the id alone: never the sessions folder's host path
            assert answer.json()["error"] == f"no session has id {session_id!r}", (
                action,
                answer.json(),
            )
    assert "Traceback" not in "".join(chat_served.lines)
    # a session that exists but runs no turn: nothing to cancel, and it says so
    created = httpx2.post(chat_served.base + "api/sessions", json={}).json()["id"]
    idle = httpx2.post(f"{base}{created}/cancel", json={})
    assert idle.status_code == 200
    assert idle.json() == {"id": created, "cancelled": False}
    httpx2.request("DELETE", f"{base}{created}", headers={"Content-Type": "application/json"})
