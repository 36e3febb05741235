"""What a running tool shows in the console (DESIGN §16): a progress bar and a log in the
call's card, and its question as a form there, on the Chat (surface ``agent``) and on the
Tools page (surface ``console``); the HTTP API answers a question with ``content``. In
Chromium, against ``harness run``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..providers import model_yaml
from .conftest import Served, make_project
from .test_browser import WAIT

DEPLOY = '''
from harness import CallContext, tool

inject = ["tools"]


@tool
async def deploy(service: str, ctx: CallContext) -> dict:
    """Deploy a service, asking where."""
    await ctx.progress(1, 3, "built")
    await ctx.log("info", f"built {service}", step=1)
    answer = await ctx.ask(
        "Where to?",
        {
            "region": {"type": "string", "enum": ["eu", "us"], "required": True},
            "replicas": {"type": "integer", "minimum": 1, "default": 1},
            "canary": {"type": "boolean", "default": True},
            "note": {"type": "string"},
        },
    )
    if not answer.accepted:
        return {"deployed": False, "action": answer.action}
    await ctx.progress(3, 3, "rolled out")
    await ctx.log("warning", "rolled out", region=answer.content["region"])
    roots = await ctx.roots()
    return {
        "deployed": True,
        "answer": answer.content,
        "surface": ctx.surface,
        "roots": [root.uri for root in roots],
    }


def apply(ctx):
    return ctx.tools.register(deploy)
'''


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    rules = [
        Rule(Reply.calls(call("deploy", {"service": "api"})), user="deploy the api"),
        Rule(Reply.say("The api is deployed."), tool="deploy"),
    ]
    with ScriptedServer(rules) as model:
        extra = (
            "  - id: deploy\n    name: ./plugins/deploy.py\n"
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n"
        )
        folder = tmp_path_factory.mktemp("context")
        running = Served(make_project(folder, extra, {"deploy.py": DEPLOY}))
        yield running
        running.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(served.base)
    tab.get_by_text("live", exact=True).wait_for()
    yield tab
    context.close()
    assert errors == []


def bar_value(bar: Any) -> tuple[float, float]:
    value, most = bar.evaluate("node => [node.value, node.max]")
    return value, most


def wait_bar(page: Any, bar: Any, value: float) -> None:
    bar.wait_for()
    page.wait_for_function(
        "([node, value]) => node.value === value", arg=[bar.element_handle(), value]
    )


def fill(form: Any, replicas: str | None = "2") -> None:
    # the form starts at its defaults
    assert form.get_by_label("replicas", exact=True).input_value() == "1"
    assert form.get_by_label("canary", exact=True).is_checked()
    form.get_by_label("region", exact=True).select_option(label="us")
    if replicas is not None:
        form.get_by_label("replicas", exact=True).fill(replicas)
    form.get_by_label("canary", exact=True).uncheck()
    form.get_by_label("note", exact=True).fill("after lunch")


ANSWER = {"region": "us", "replicas": 2, "canary": False, "note": "after lunch"}


def test_the_chat_card_shows_progress_a_log_and_the_question_as_a_form(
    page: Any, served: Served
) -> None:
    page.get_by_role("button", name="New session").click()
    page.get_by_role("textbox", name="Message").fill("deploy the api")
    page.get_by_role("button", name="Send").click()
    card = page.get_by_role("article", name="tool call deploy")
    bar = card.get_by_role("progressbar", name="progress of deploy")
    wait_bar(page, bar, 1)
    assert bar_value(bar) == (1, 3)
    assert "1 of 3 · built" in card.inner_text()
    log = card.get_by_role("list", name="log of deploy")
    log.get_by_text("built api").wait_for()
    form = card.get_by_role("form", name="question from deploy")
    form.get_by_text("Where to?").wait_for()
    assert "waiting for an answer" in card.locator("h3").inner_text()
    fill(form)
    form.get_by_role("button", name="Submit").click()
    page.get_by_role("log", name="conversation").get_by_text("The api is deployed.").wait_for()
    wait_bar(page, bar, 3)
    assert bar_value(bar) == (3, 3)
    log.get_by_text('rolled out {"region":"us"}').wait_for()
    assert card.get_by_role("form", name="question from deploy").count() == 0
    assert "done" in card.locator("h3").inner_text()
    # the tool got the values as typed, on the agent surface
    listed = httpx2.get(served.base + "api/sessions").json()
    events = httpx2.get(served.base + f"api/sessions/{listed[0]['id']}").json()["events"]
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["result"]["answer"] == ANSWER
    assert result["result"]["surface"] == "agent"
    kinds = [e["type"] for e in events]
    assert kinds.count("tool/log") == 2
    assert "tool/progress" not in kinds


def test_the_tools_page_runs_with_the_console_surface_and_answers_in_its_card(
    page: Any, served: Served
) -> None:
    page.get_by_role("link", name="Tools").click()
    region = page.get_by_role("region", name="deploy")
    region.get_by_label("service", exact=True).fill("web")
    region.get_by_role("button", name="Run").click()
    result = region.get_by_role("region", name="result")
    bar = result.get_by_role("progressbar", name="progress of deploy")
    wait_bar(page, bar, 1)
    form = result.get_by_role("form", name="question from deploy")
    form.get_by_text("Where to?").wait_for()
    result.get_by_text("built web").wait_for()
    # the HTTP API: content must be an object that fits the form; the request stays open
    api = served.base + "api/"
    [question] = [r for r in httpx2.get(api + "approvals").json() if r.get("question")]
    assert question["form"]["required"] == ["region"]
    where = api + f"approvals/{question['id']}"
    bad = httpx2.post(where, json={"decision": "allow_once", "content": "us"})
    assert (bad.status_code, bad.json()) == (
        400,
        {"error": "content must be an object: the question's form, filled in"},
    )
    unfit = httpx2.post(where, json={"decision": "allow_once", "content": {"region": "mars"}})
    assert unfit.status_code == 400
    assert unfit.json()["error"].startswith("the answer does not fit the form of deploy: region")
    fill(form, replicas=None)  # the default stays
    form.get_by_role("button", name="Submit").click()
    result.get_by_role("heading", name="Canonical JSON").wait_for()
    shown = result.inner_text()
    assert '"surface": "console"' in shown
    assert '"replicas": 1' in shown
    assert '"canary": false' in shown
    assert '"note": "after lunch"' in shown
    assert served.config.parent.resolve().as_uri() in shown


def test_declining_on_the_tools_page_reaches_the_tool(page: Any) -> None:
    page.get_by_role("link", name="Tools").click()
    region = page.get_by_role("region", name="deploy")
    region.get_by_label("service", exact=True).fill("db")
    region.get_by_role("button", name="Run").click()
    result = region.get_by_role("region", name="result")
    form = result.get_by_role("form", name="question from deploy")
    form.get_by_role("button", name="Decline").click()
    result.get_by_role("heading", name="Canonical JSON").wait_for()
    assert '"action": "decline"' in result.inner_text()


def test_a_question_waits_through_a_reload_and_is_answered_from_the_resumed_session(
    page: Any, served: Served
) -> None:
    page.get_by_role("button", name="New session").click()
    page.get_by_role("textbox", name="Message").fill("deploy the api")
    page.get_by_role("button", name="Send").click()
    page.get_by_role("form", name="question from deploy").get_by_text("Where to?").wait_for()
    page.reload()
    page.get_by_text("live", exact=True).wait_for()
    sessions = page.get_by_role("complementary", name="sessions")
    sessions.get_by_role("button", name="Resume").first.click()
    card = page.get_by_role("article", name="tool call deploy")
    form = card.get_by_role("form", name="question from deploy")
    form.get_by_text("Where to?").wait_for()
    fill(form)
    form.get_by_role("button", name="Submit").click()
    page.get_by_role("log", name="conversation").get_by_text("The api is deployed.").wait_for()
    card.get_by_role("list", name="log of deploy").get_by_text("rolled out").wait_for()
