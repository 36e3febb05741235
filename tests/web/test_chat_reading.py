"""Reading and writing in the Chat, in Chromium: Enter sends and Shift+Enter adds a line; the
conversation follows the newest content while the reader is at its end and stays put once
they scroll up; prose in a proportional font with code in monospace; human durations."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from playwright.sync_api import expect

from harness.testing import Reply, Rule, ScriptedServer, call

from ..providers import model_yaml
from .conftest import Served, make_project
from .test_browser import WAIT

LINES = 60
CODE_ANSWER = (
    "Here is the program, and <b>this</b> is not bold:\n"
    "```python\nprint('hi')\n```\n"
    "Then call `echo` with it."
)
HUMAN = re.compile(r"^(<1 ms|[1-9]\d{0,2} ms|\d\.\d s|\d+ s|\d+ min \d+ s)$")


def lines(which: str) -> str:
    """Paragraphs, one per line."""
    return "\n\n".join(f"line {n} of the {which} answer" for n in range(1, LINES + 1))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    rules = [
        Rule(Reply.say(lines("first")), user="long one"),
        Rule(Reply.say(lines("second")), user="long two"),
        Rule(Reply.say(CODE_ANSWER), user="code please"),
        Rule(Reply.calls(call("echo", {"text": "hi"})), user="echo please"),
        Rule(Reply.say("Echoed."), tool="echo"),
        Rule(Reply.say("Noted.")),
    ]
    with ScriptedServer(rules) as model:
        extra = (
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n"
        )
        running = Served(make_project(tmp_path_factory.mktemp("reading"), extra))
        yield running
        running.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 800})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    expect.set_options(timeout=WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(served.base + "#/chat")
    tab.get_by_text("live", exact=True).wait_for()
    tab.get_by_role("button", name="New session").click()
    yield tab
    context.close()
    assert errors == []


def test_enter_sends_and_shift_enter_adds_a_line(page: Any) -> None:
    box = page.get_by_role("textbox", name="Message")
    box.focus()
    page.keyboard.type("first line")
    page.keyboard.press("Shift+Enter")
    page.keyboard.type("second line")
    assert box.input_value() == "first line\nsecond line"
    conversation = page.get_by_role("log", name="conversation")
    assert conversation.get_by_text("first line").count() == 0  # nothing sent yet
    page.keyboard.press("Enter")
    conversation.get_by_text("Noted.").wait_for()
    assert box.input_value() == ""
    mine = conversation.locator(".message.user")
    assert mine.inner_text().endswith("first line\nsecond line")


def test_the_conversation_follows_the_newest_unless_scrolled_up(page: Any, served: Served) -> None:
    conversation = page.get_by_role("log", name="conversation")
    page.get_by_role("textbox", name="Message").fill("long one")
    page.get_by_role("button", name="Send").click()
    last = conversation.get_by_text(f"line {LINES} of the first answer", exact=True)
    last.wait_for(state="attached")
    expect(last).to_be_in_viewport()  # followed while the answer came in

    # the reader scrolls up to the question; then an answer comes in (sent by another client)
    box = last.bounding_box()  # in view: the wheel turns over it
    page.mouse.move(box["x"] + 10, box["y"] + box["height"] / 2)
    question = conversation.get_by_text("long one", exact=True)
    page.mouse.wheel(0, -100_000)
    expect(question).to_be_in_viewport()
    session = httpx2.get(served.base + "api/sessions", params={"q": "long one"}).json()[0]["id"]
    sent = httpx2.post(f"{served.base}api/sessions/{session}/messages", json={"text": "long two"})
    assert sent.status_code == 202
    newest = conversation.get_by_text(f"line {LINES} of the second answer", exact=True)
    newest.wait_for(state="attached")
    page.get_by_role("button", name="Trajectory of turn 2").wait_for(state="attached")
    expect(question).to_be_in_viewport()  # not yanked away
    expect(newest).not_to_be_in_viewport()
    page.get_by_role("button", name="Jump to the newest").click()
    expect(newest).to_be_in_viewport()


def font_of(locator: Any) -> str:
    return str(locator.evaluate("node => getComputedStyle(node).fontFamily"))


def test_prose_reads_in_a_proportional_font_and_code_in_monospace(page: Any) -> None:
    conversation = page.get_by_role("log", name="conversation")
    page.get_by_role("textbox", name="Message").fill("code please")
    page.get_by_role("button", name="Send").click()
    said = conversation.get_by_text("Here is the program, and <b>this</b> is not bold:")
    said.wait_for()
    assert conversation.locator("b").count() == 0  # text, never HTML
    assert "monospace" not in font_of(said)
    block = conversation.get_by_text("print('hi')", exact=True)
    assert "monospace" in font_of(block)
    assert block.evaluate("node => node.closest('pre') !== null")
    assert "monospace" in font_of(conversation.get_by_text("echo", exact=True))
    assert "monospace" not in font_of(conversation.get_by_text("you", exact=True))


def test_durations_read_as_people_say_them(page: Any) -> None:
    page.get_by_role("textbox", name="Message").fill("echo please")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("article", name="tool call echo")
    card.get_by_text("done", exact=True).wait_for()
    shown = card.locator("h3 .muted").inner_text()
    assert HUMAN.match(shown), shown

    page.get_by_role("link", name="Tools").click()
    echo = page.get_by_role("region", name="echo")
    echo.get_by_label("text", exact=True).fill("hi")
    echo.get_by_role("button", name="Run").click()
    result = echo.get_by_role("region", name="result")
    result.get_by_text("done", exact=True).wait_for()
    took = result.locator(".muted").first.inner_text().removeprefix(" · ")
    assert HUMAN.match(took), took
