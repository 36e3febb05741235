"""In Chromium: find yesterday's session by a word, open it, see a turn's trajectory, go on
with the conversation, export it, and read the export back with ``harness sessions show``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.testing import Reply, Rule, ScriptedServer

from ..agent.session_logs import write_log, yesterday_events
from ..helpers import run_harness
from ..providers import model_yaml
from .conftest import Served, make_project
from .test_browser import WAIT, shot

OLD = "20261130-093000-abc123"
TITLE = "Please look at the zebra parser for me"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    with ScriptedServer([Rule(Reply.say("Noted, the zebra is striped."), user="thanks")]) as model:
        extra = (
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n"
        )
        config = make_project(tmp_path_factory.mktemp("browse"), extra)
        folder = config.parent / ".harness" / "sessions"
        write_log(folder, OLD, yesterday_events(OLD))
        write_log(folder, "20261130-100000-def456", yesterday_events("x", "the lion", "Roar."))
        running = Served(config)
        yield running
        running.close()


def test_find_open_inspect_continue_and_export(
    browser: Any, served: Served, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 800}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        page.goto(served.base + "#/chat")
        page.get_by_text("live", exact=True).wait_for()
        lion = page.get_by_role("button", name="Resume Please look at the lion for me")
        lion.wait_for()
        page.get_by_role("searchbox", name="Search sessions").fill("ZEBRA")
        lion.wait_for(state="detached")
        found = page.get_by_role("button", name=f"Resume {TITLE}")
        shot(page, "sessions")
        found.click()
        conversation = page.get_by_role("log", name="conversation")
        conversation.get_by_text("The Zebra parser reads a.txt.").wait_for()
        page.get_by_role("button", name="Trajectory of turn 1").click()
        steps = page.get_by_role("region", name="trajectory of turn 1")
        steps.get_by_text("tool_error").wait_for()
        text = steps.inner_text()
        for words in ("2 steps", "model 1.8 s", "tokens in 230", "out 29", "git_log_reader"):
            assert words in text, text
        page.get_by_role("textbox", name="Message").fill("thanks")
        page.get_by_role("button", name="Send").click()
        conversation.get_by_text("Noted, the zebra is striped.").wait_for()
        page.get_by_role("button", name="Trajectory of turn 2").wait_for()
        page.get_by_role("searchbox", name="Search sessions").fill("striped")
        page.get_by_text("2 turns").wait_for()
        with page.expect_download() as waiting:
            page.get_by_role("link", name=f"Export {TITLE}").click()
        saved = tmp_path / waiting.value.suggested_filename
        waiting.value.save_as(saved)
        assert saved.name == f"session-{OLD}.jsonl"
        shown = run_harness("sessions", "show", str(saved), cwd=tmp_path)
        assert shown.returncode == 0, shown.stderr
        assert "thanks" in shown.stdout
        assert "Noted, the zebra is striped." in shown.stdout
        assert errors == []
    finally:
        context.close()
