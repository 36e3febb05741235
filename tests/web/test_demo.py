"""``harness run --demo`` in real Chromium, straight after ``harness init`` in a git
repository: the header names the demo model, "recent commits" shows the ``git_log_reader``
card with the commits, and an unrelated question gets text and no card."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from harness.demo.model import DEMO_MODEL

from ..helpers import git, run_harness
from .conftest import Served

WAIT = 30_000
NO_PROVIDER = {"OPENAI_API_KEY": "", "OLLAMA_HOST": "127.0.0.1:9"}


@pytest.fixture(scope="module")
def demo_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("demo")
    git(folder, "init", "-q")
    for subject in ("start the project", "add the parser"):
        (folder / "notes.txt").write_text(subject)
        git(folder, "add", "-A")
        git(folder, "commit", "-q", "-m", subject)
    done = run_harness("init", cwd=folder, env=NO_PROVIDER)
    assert done.returncode == 0, done.stderr
    served = Served(folder / "cordis.yml", "--demo", "--no-watch", env=NO_PROVIDER)
    yield served
    served.close()


def test_the_seed_walkthrough_in_the_console(browser: Any, demo_served: Served) -> None:
    assert any(
        f"model: {DEMO_MODEL} (--demo, at http://127.0.0.1:" in line for line in demo_served.lines
    )
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(demo_served.base + "#/chat")
        page.get_by_text("live", exact=True).wait_for()
        header = page.get_by_label("model", exact=True)
        header.get_by_text(f"model: {DEMO_MODEL}").wait_for()
        page.get_by_role("button", name="New session").click()
        page.get_by_role("textbox", name="Message").fill("show me the recent commits")
        page.get_by_role("button", name="Send").click()
        card = page.get_by_role("article", name="tool call git_log_reader")
        card.get_by_text("done", exact=True).wait_for()
        text = card.inner_text()
        for subject in ("add the parser", "start the project"):
            assert re.search(rf"[0-9a-f]{{7}} \| Test \| .+ \| {subject}", text), text
        conversation = page.get_by_role("log", name="conversation")
        conversation.get_by_text("Those are the last 2 commit(s)").wait_for()

        cards = page.get_by_role("article").count()
        page.get_by_role("textbox", name="Message").fill("What is the capital of France?")
        page.get_by_role("button", name="Send").click()
        conversation.get_by_text(f"I am the {DEMO_MODEL}").wait_for()
        assert page.get_by_role("article").count() == cards
        assert errors == []
    finally:
        context.close()
