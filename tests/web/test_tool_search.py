"""Tool search in the console: ``GET /api/tools/search`` behind the console's token, the Tools
page's search box, and the chat card of a ``search_tools`` call listing what it found.

Against ``harness run`` with the scripted OpenAI-compatible model, in headless Chromium. The
policy denies ``delete_everything``: no search shows it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from harness.testing import Reply, Rule, ScriptedServer, call

from ..providers import model_yaml
from ..search.test_tools_search import CATALOGUE, CATALOGUE_PLUGIN
from .conftest import Served, make_project
from .test_browser import WAIT

TOOLS = [tool for tool in CATALOGUE if tool[0] != "read_text_file"]  # the project's own

TOKEN = "search-console-token"
BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    rules = [
        Rule(Reply.calls(call("search_tools", {"query": "weather city"})), user="weather"),
        Rule(Reply.calls(call("get_weather", {"city": "Paris"})), tool="search_tools"),
        Rule(Reply.say("Sunny in Paris."), tool="get_weather"),
    ]
    with ScriptedServer(rules) as model:
        extra = (
            f"  - id: catalogue\n    name: ./plugins/catalogue.py\n"
            f"    config: {{tools: {json.dumps(TOOLS)}}}\n"
            f"  - id: model\n    {model_yaml(model, '    ')}\n"
            "  - id: agent\n    name: harness:agent\n"
        )
        folder = tmp_path_factory.mktemp("search")
        config = make_project(folder, extra, {"catalogue.py": CATALOGUE_PLUGIN})
        text = config.read_text()
        text = text.replace("max_parallel: 10\n", "max_parallel: 10\n      search: {defer: true}\n")
        text = text.replace("rules:\n", "rules:\n        delete_everything: deny\n", 1)
        config.write_text(text)
        running = Served(config, "--token", TOKEN)
        yield running
        running.close()


@pytest.fixture
def page(browser: Any, served: Served) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1100, "height": 900})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(served.base + f"?token={TOKEN}")
    tab.get_by_text("live", exact=True).wait_for()
    yield tab
    context.close()
    assert not errors, errors


def search(served: Served, **params: Any) -> httpx2.Response:
    return httpx2.get(served.base + "api/tools/search", params=params, headers=BEARER)


def test_the_search_endpoint_ranks_hides_denied_tools_and_checks_its_input(
    served: Served,
) -> None:
    found = search(served, q="weather in a city", limit=3)
    assert found.status_code == 200
    body = found.json()
    assert body["query"] == "weather in a city"
    assert body["tools"][0]["name"] == "get_weather"
    assert body["tools"][0]["description"] == "Current conditions for a city."
    assert body["tools"][0]["score"] > 0
    assert len(body["tools"]) <= 3
    scores = [hit["score"] for hit in body["tools"]]
    assert scores == sorted(scores, reverse=True)  # best first

    denied = search(served, q="remove all files on the disk", limit=50).json()["tools"]
    assert "delete_everything" not in [hit["name"] for hit in denied]
    listed = httpx2.get(served.base + "api/tools", headers=BEARER).json()
    assert "delete_everything" in [tool["name"] for tool in listed]  # registered, not found

    for params, message in [
        ({}, "give the words to search for"),
        ({"q": "  "}, "give the words to search for"),
        ({"q": "weather", "limit": "0"}, "limit must be a whole number from 1 to 50"),
        ({"q": "weather", "limit": "many"}, "limit must be a whole number from 1 to 50"),
        ({"q": "x" * 501}, "longer than 500 characters"),
    ]:
        refused = search(served, **params)
        assert refused.status_code == 400, params
        assert message in refused.json()["error"], refused.json()
    unauthorized = httpx2.get(served.base + "api/tools/search", params={"q": "weather"})
    assert unauthorized.status_code == 401


def test_the_tools_page_searches_and_a_hit_leads_to_its_card(page: Any) -> None:
    page.get_by_role("link", name="Tools").click()
    box = page.get_by_role("searchbox", name="Search tools")
    box.fill("weather in a city")
    page.get_by_role("button", name="Search", exact=True).click()
    results = page.get_by_role("region", name="search results")
    results.get_by_text("match “weather in a city”, best first").wait_for()
    hits = results.locator("li")
    assert hits.first.get_attribute("data-found") == "get_weather"
    assert "score" in hits.first.inner_text()
    assert "Current conditions for a city." in hits.first.inner_text()

    box.fill("remove all files on the disk")
    page.get_by_role("button", name="Search", exact=True).click()
    results.get_by_text("“remove all files on the disk”").wait_for()
    assert results.locator('[data-found="delete_everything"]').count() == 0
    assert page.locator('section[data-tool="delete_everything"]').count() == 1  # listed

    box.fill("zebra quantum")
    page.get_by_role("button", name="Search", exact=True).click()
    results.get_by_text("No tool matches “zebra quantum”.").wait_for()

    box.fill("weather")
    page.get_by_role("button", name="Search", exact=True).click()
    results.get_by_role("link", name="get_weather").click()
    heading = page.get_by_role("heading", name="get_weather", level=3)
    page.wait_for_function("() => document.activeElement?.textContent === 'get_weather'")
    assert heading.is_visible()


def test_a_page_opened_at_a_tools_link_shows_that_tools_card(browser: Any, served: Served) -> None:
    context = browser.new_context(viewport={"width": 1100, "height": 500})
    tab = context.new_page()
    tab.set_default_timeout(WAIT)
    try:
        last = max(tool[0] for tool in TOOLS)  # listed by name: the last card
        tab.goto(served.base + f"?token={TOKEN}#/tools?tool={last}")
        heading = tab.get_by_role("heading", name=last, level=3)
        tab.wait_for_function(f"() => document.activeElement?.textContent === {last!r}")
        assert heading.is_visible()
        assert tab.evaluate("() => window.scrollY") > 0  # scrolled down to it
        tab.goto(served.base + f"?token={TOKEN}#/tools?tool=no_such_tool")
        tab.get_by_text("no tool no_such_tool").wait_for()
    finally:
        context.close()


def test_the_chat_card_of_search_tools_lists_the_tools_found(page: Any) -> None:
    page.get_by_role("link", name="Chat").click()
    page.get_by_role("button", name="New session").click()
    page.get_by_role("textbox", name="Message").fill("What is the weather in Paris?")
    page.get_by_role("button", name="Send").click()
    page.get_by_role("log", name="conversation").get_by_text("Sunny in Paris.").wait_for()
    card = page.get_by_role("article", name="tool call search_tools")
    card.get_by_text("done", exact=True).wait_for()
    card.get_by_text("tool(s):").wait_for()
    found = card.locator("li")
    assert found.first.get_attribute("data-found") == "get_weather"
    text = card.inner_text()
    assert "score" in text
    assert '"score"' not in text  # a list, not the raw JSON
    assert '"tools"' not in text
    assert "delete_everything" not in text
    card.get_by_role("link", name="get_weather").click()
    page.get_by_role("heading", name="Tools", level=2).wait_for()
    page.wait_for_function("() => document.activeElement?.textContent === 'get_weather'")
