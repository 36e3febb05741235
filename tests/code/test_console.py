"""Code mode in the web console, in real Chromium: a program's calls as nested cards, and
approvals answered inside them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from harness.testing import Reply, Rule, ScriptedServer

from ..web.conftest import Served, browser, make_project
from ..web.test_browser import WAIT, shot
from .conftest import QUESTION, SEED, answer_from, git_repo

__all__ = ["browser"]  # the fixture, used by the tests below

APPROVAL = """
first = await read_text_file(path="notes.txt")
print("read", first["content"].strip())
try:
    await write_text_file(path="{name}", content="from a program")
    print("written")
except Exception as e:
    print("refused:", str(e))
listing = await list_dir(path=".")
print("listed", len(listing["entries"]))
"""


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ScriptedServer]:
    repo = git_repo(tmp_path_factory.mktemp("repo") / "repo", commits=8)
    rules = [
        Rule(Reply.program(SEED.format(repo=str(repo))), user=QUESTION),
        Rule(Reply.program(APPROVAL.format(name="allowed.txt")), user="save allowed"),
        Rule(Reply.program(APPROVAL.format(name="denied.txt")), user="save denied"),
        Rule(Reply.answer(answer_from), tool="run_code", result="touched more than 3"),
        Rule(Reply.say("The program has run."), tool="run_code"),
    ]
    with ScriptedServer(rules) as server:
        yield server


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, scripted: ScriptedServer) -> Iterator[Served]:
    extra = (
        "  - id: scripted_model\n    name: harness:openai\n    config:\n      model: scripted\n"
        f"      base_url: {scripted.url}\n"
        "  - id: code_agent\n    name: harness:agent\n    config: {code_mode: true}\n"
        "  - id: code\n    name: harness:code\n    config: {timeout: 120}\n"
    )
    running = Served(make_project(tmp_path_factory.mktemp("code"), extra))
    yield running
    running.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(served.base + "#/chat")
    tab.get_by_text("live", exact=True).wait_for()
    tab.get_by_role("button", name="New session").click()
    yield tab
    context.close()
    assert errors == []


def send(page: Any, text: str) -> None:
    page.get_by_role("textbox", name="Message").fill(text)
    page.get_by_role("button", name="Send").click()


def test_the_seed_question_in_code_mode_shows_nested_cards(
    page: Any, scripted: ScriptedServer
) -> None:
    before = len(scripted.requests)
    send(page, QUESTION)
    outer = page.get_by_role("article", name="tool call run_code")
    outer.get_by_text("done", exact=True).first.wait_for()
    conversation = page.get_by_role("log", name="conversation")
    conversation.get_by_text(
        "Commits that touched more than 3 files: change 6 (4 files)"
    ).wait_for()
    assert len(scripted.requests) - before == 2
    assert "git_log_reader(repoPath=" in outer.get_by_label("program").first.inner_text()
    nested = outer.get_by_role("article", name="tool call git_diff")
    assert nested.count() == 8
    assert outer.get_by_role("article", name="tool call git_log_reader").count() == 1
    for index in range(8):
        assert "done" in nested.nth(index).inner_text()
    assert "4 of 8 commits touched more than 3 files" in outer.inner_text()
    shot(page, "code-mode")
    # resumed from its log, the cards nest the same way
    page.reload()
    page.get_by_text("live", exact=True).wait_for()
    page.get_by_role("button", name=re.compile(r"^Resume which of the last 20 commits")).click()
    again = page.get_by_role("article", name="tool call run_code")
    again.get_by_role("article", name="tool call git_diff").nth(7).wait_for()
    assert again.get_by_role("article", name="tool call git_diff").count() == 8


@pytest.mark.parametrize("decision", ["Allow once", "Deny"])
def test_an_approval_inside_a_program_is_answered_in_its_nested_card(
    page: Any, served: Served, decision: str
) -> None:
    name = "allowed.txt" if decision == "Allow once" else "denied.txt"
    send(page, "save allowed" if decision == "Allow once" else "save denied")
    outer = page.get_by_role("article", name="tool call run_code")
    writing = outer.get_by_role("article", name="tool call write_text_file")
    writing.get_by_text("waiting for approval").wait_for()
    # the program waits: the first call is done, the last has not started
    assert "done" in outer.get_by_role("article", name="tool call read_text_file").inner_text()
    assert outer.get_by_role("article", name="tool call list_dir").count() == 0
    assert "from a program" in writing.inner_text()
    writing.get_by_role("button", name=decision).click()
    outer.get_by_role("article", name="tool call list_dir").get_by_text(
        "done", exact=True
    ).wait_for()
    page.get_by_role("log", name="conversation").get_by_text("The program has run.").wait_for()
    text = outer.inner_text()
    assert "read hello from the workspace" in text
    assert "listed" in text
    target = served.config.parent / "workspace" / name
    if decision == "Allow once":
        assert "written" in text
        assert target.read_text() == "from a program"
        assert "done" in writing.inner_text()
    else:
        assert "refused: denied: Tool denied: the policy asks before write_text_file" in text
        assert not target.exists()
        assert "denied" in writing.inner_text()


def test_run_code_on_the_tools_page_asks_inside_the_program_and_nests_its_cards(
    page: Any, served: Served
) -> None:
    page.get_by_role("link", name="Tools").click()
    region = page.get_by_role("region", name="run_code")
    region.get_by_text("The tools, as Python stubs").click()  # folded under the first paragraph
    assert "async def git_diff(repoPath: str, commit: str | None = None)" in region.inner_text()
    program = 'await write_text_file(path="from-tools.txt", content="tools page")'
    region.get_by_label("code", exact=True).fill(program)
    region.get_by_role("button", name="Run").click()
    result = region.get_by_role("region", name="result")
    result.get_by_text("waiting for approval").wait_for()
    result.get_by_role("button", name="Allow once").click()
    card = result.get_by_role("article", name="tool call write_text_file")
    card.get_by_text("done", exact=True).wait_for()
    assert program in result.get_by_label("program").inner_text()
    target = served.config.parent / "workspace" / "from-tools.txt"
    assert target.read_text() == "tools page"


def test_a_failed_program_on_the_tools_page_keeps_its_nested_cards(page: Any) -> None:
    page.get_by_role("link", name="Tools").click()
    region = page.get_by_role("region", name="run_code")
    editor = region.get_by_label("code", exact=True)
    assert editor.evaluate("node => node.tagName") == "TEXTAREA"  # a program has lines
    program = "total = await add(a=2, b=3)\nprint('total', total)\nraise ValueError('no good')"
    editor.fill(program)
    region.get_by_role("button", name="Run").click()
    result = region.get_by_role("region", name="result")
    result.get_by_text("error code: tool_error").wait_for()
    card = result.get_by_role("article", name="tool call add")
    assert "done" in card.inner_text()
    assert result.get_by_label("program").inner_text() == program
    assert "ValueError: no good" in result.inner_text()
