"""The Chat with no agent, in Chromium: the notice says what is missing, what to set, and that
``harness run --demo`` chats with no key, for each reason there is no agent; it follows the
config live; and doing what it says (a key in .env, the group's switch) opens the Chat."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from .conftest import Served, make_project
from .test_browser import WAIT

DEMO = (
    "For a chat with no key at all, start `harness run --demo`: a scripted demo model "
    "(not a language model) answers and calls the tools."
)
MODEL = """\
  - id: model
    name: harness:openai
    config:
      model: gpt-4.1-mini
      base_url: https://api.openai.com/v1
      api_key: ${HARNESS_TEST_KEY:-}
"""
AGENT = """\
  - id: agent
    name: harness:agent
"""
GROUP = """\
  - id: assistant
    enabled: false
    insert:
""" + "".join("  " + line + "\n" for line in (MODEL + AGENT).splitlines())
SET_KEY = (
    "Set the API key HARNESS_TEST_KEY: write `HARNESS_TEST_KEY=...` into .env beside the "
    "config (hot reload reads it), or export HARNESS_TEST_KEY and restart `harness run`."
)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    # HARNESS_TEST_KEY is unset: Served drops every HARNESS_ variable
    running = Served(make_project(tmp_path_factory.mktemp("noagent")))
    yield running
    running.close()


def test_the_notice_names_the_cause_the_fix_and_the_demo(browser: Any, served: Served) -> None:
    config = served.config
    base = config.read_text()
    ends = len(base.splitlines())  # the entries of each case start on the next line
    shown = config.name  # error answers name project files relative to the project folder
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    notice = page.get_by_role("note")

    def shows(entries: str, first: str) -> list[str]:
        """Write the entries into the config; once the notice says ``first``, its lines (the
        API's message: the page shows each line as a paragraph, `names` as code)."""
        config.write_text(base + entries)
        notice.get_by_text(first.replace("`", ""), exact=True).wait_for()
        answer = httpx2.get(served.base + "api/sessions")
        assert answer.status_code == 503
        lines: list[str] = answer.json()["error"].split("\n")
        assert [line.replace("`", "") for line in lines] == notice.locator("p").all_inner_texts()
        assert lines[-2:] == [DEMO, "Plugins and Tools work without a model."]
        return lines[:-2]

    try:
        page.goto(served.base + "#/chat")
        page.get_by_text("live", exact=True).wait_for()
        notice.get_by_text("No agent to chat with").wait_for()

        assert shows("", f"Chat needs an agent, and {shown} has no agent entry.") == [
            f"Chat needs an agent, and {shown} has no agent entry.",
            "Add two entries there (docs/agent.md): a model entry, `name: harness:openai` "
            "with `model`, `base_url` and `api_key: ${OPENAI_API_KEY}` (or `name: "
            "harness:anthropic`, which reads ANTHROPIC_API_KEY), with that variable exported; "
            "and the agent, `name: harness:agent`.",
        ]
        # the page shows the backticked names as code, the rest as text
        assert notice.locator("code").first.inner_text() == "name: harness:openai"

        off = AGENT + "    enabled: false\n" + MODEL
        assert shows(off, f"The agent entry 'agent' is switched off in {shown}.")[1:] == [
            "Switch 'agent' on in Plugins (or run `harness enable agent`)."
        ]

        model_off = MODEL + "    enabled: false\n" + AGENT
        first = (
            f"The model entry 'model' is switched off in {shown}, so the agent 'agent' "
            "waits for an `llm` service."
        )
        assert shows(model_off, first)[1:] == [
            SET_KEY[:-1] + ", then switch 'model' on in Plugins (or run `harness enable model`)."
        ]

        lines = shows(
            MODEL + AGENT,
            "The model entry 'model' failed to start, so the agent 'agent' waits for an "
            f"`llm` service: {shown}:{ends + 3}: entry 'model': invalid config for plugin "
            "'model': api_key is empty, and https://api.openai.com/v1 is "
            "not a local server; set api_key (for instance api_key: ${OPENAI_API_KEY}) and "
            "export the key.",
        )
        assert lines[1:] == [SET_KEY]

        no_model = f"The agent entry 'agent' ({shown}:{ends + 2}) waits"
        lines = shows(
            AGENT, no_model + f" for an `llm` service, and no entry in {shown} provides one."
        )
        assert lines[1].startswith("Add a model entry, `name: harness:openai`")

        # the starter config: the group is off and the key unset
        group = (
            f"The agent entry 'agent' is in the group 'assistant', which is switched off in "
            f"{shown}."
        )
        assert shows(GROUP, group)[1:] == [
            SET_KEY[:-1]
            + ", then switch 'assistant' on in Plugins (or run `harness enable assistant`)."
        ]
        # do as it says: the key into .env, and the notice only asks for the switch
        (config.parent / ".env").write_text("HARNESS_TEST_KEY=sk-test\n")
        notice.get_by_text(
            "Switch 'assistant' on in Plugins (or run harness enable assistant).", exact=True
        ).wait_for()
        page.get_by_role("link", name="Plugins").click()
        page.get_by_role("checkbox", name="enabled assistant").check()
        page.get_by_role("link", name="Chat").click()
        page.get_by_role("button", name="New session").wait_for()
        assert notice.is_hidden()
        assert errors == []
    finally:
        context.close()
        (config.parent / ".env").unlink(missing_ok=True)
