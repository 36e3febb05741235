"""The agent with deferral, against the scripted OpenAI-compatible server: a request carries
``search_tools``, the kept tools and the tools found so far; the model searches, then calls a
found tool, and the tool runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from harness import Host
from harness.testing import Reply, Rule, ScriptedServer, call

from ..helpers import ROOT
from ..providers import model_entry
from .test_tools_search import CATALOGUE, CATALOGUE_PLUGIN

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the openai SDK's streams run on asyncio (tests/agent/test_trio.py: trio)


FILLERS = [
    (f"filler_tool_{i}", f"Filler number {i}: does nothing useful.", [("value", "Any value")])
    for i in range(494)
]  # with the catalogue's 6: 500 tools


def config(tmp_path: Path, server: ScriptedServer, agent: dict[str, Any]) -> Path:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "catalogue.py").write_text(CATALOGUE_PLUGIN)
    shutil.copy(ROOT / "plugins" / "policy.py", plugins / "policy.py")
    items = [
        {
            "id": "catalogue",
            "name": "./plugins/catalogue.py",
            "config": {"tools": CATALOGUE + FILLERS},
        },
        {
            "id": "policy",
            "name": "./plugins/policy.py",
            "config": {"rules": {"delete_everything": "deny"}},
        },
        {"id": "tools", "name": "harness:tools", "config": {"search": {"keep": ["read_*"]}}},
        model_entry(server),
        {"id": "agent", "name": "harness:agent", "config": {"sessions": None, **agent}},
    ]
    path = tmp_path / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}, sort_keys=False), encoding="utf-8")
    return path


def tool_names(request: dict[str, Any]) -> list[str]:
    return [tool["function"]["name"] for tool in request.get("tools", [])]


QUERY = "weather city remove all files disk reserve a seat plane"


async def test_the_model_searches_then_calls_a_found_tool(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.calls(call("search_tools", {"query": QUERY})), user="weather"),
        Rule(Reply.calls(call("get_weather", {"city": "Paris"})), tool="search_tools"),
        Rule(Reply.say("Sunny in Paris."), tool="get_weather"),
    ]
    agent = {"tools": ["get_*", "read_*", "search_tools", "delete_*", "filler_*"]}
    with ScriptedServer(rules) as server:
        async with Host(config(tmp_path, server, agent)) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("What is the weather in Paris?")]
            full = list(host.ctx.agent.visible_tools().values())
        requests = list(server.requests)

    kinds = [e["type"] for e in events if e["type"] != "assistant/delta"]
    assert kinds.count("tools/loaded") == 1
    loaded = next(e for e in events if e["type"] == "tools/loaded")
    assert loaded["names"][0] == "get_weather"
    assert "delete_everything" not in loaded["names"]  # denied by the policy
    assert "book_flight" not in loaded["names"]  # outside the agent's tools globs
    shown = next(e for e in events if e["type"] == "tool/result")["result"]["result"]["tools"]
    assert {hit["name"] for hit in shown} == {*loaded["names"], "read_text_file"}  # kept
    ran = [e for e in events if e["type"] == "tool/result"][1]["result"]
    assert (ran["ok"], ran["result"]) == (True, "get_weather")  # the found tool ran

    first, second, third = requests
    assert tool_names(first) == ["search_tools", "read_text_file"]
    assert tool_names(second) == ["search_tools", "read_text_file", *loaded["names"]]
    assert json.dumps(third["tools"]) == json.dumps(second["tools"])  # byte-stable
    smaller = 1 - len(json.dumps(first["tools"])) / len(json.dumps(full))
    assert len(full) == 498  # the 497 tools the agent's globs take in, and search_tools
    assert smaller >= 0.85


async def test_a_tool_not_found_yet_is_not_callable(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.calls(call("get_weather", {"city": "Paris"})), user="weather"),
        Rule(Reply.say("I could not."), tool="get_weather"),
    ]
    with ScriptedServer(rules) as server:
        async with Host(config(tmp_path, server, {})) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("What is the weather in Paris?")]
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "unknown_tool"
    assert result["error"] == (
        "Tool get_weather not found among the loaded tools; find it with search_tools first"
    )


async def test_the_agent_s_search_fills_its_limit_from_the_tools_it_may_call(
    tmp_path: Path,
) -> None:
    rules = [
        Rule(
            Reply.calls(
                call("search_tools", {"query": "reserve a seat on a plane, weather", "limit": 1})
            ),
            user="trip",
        ),
        Rule(Reply.say("Found it."), tool="search_tools"),
    ]
    with ScriptedServer(rules) as server:
        async with Host(config(tmp_path, server, {"tools": ["get_*", "search_tools"]})) as host:
            unscoped = await host.tools.search("reserve a seat on a plane, weather", limit=1)
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("Plan my trip")]
    assert [hit.name for hit in unscoped] == ["book_flight"]  # outside the agent's globs
    result = next(e for e in events if e["type"] == "tool/result")["result"]["result"]
    assert [hit["name"] for hit in result["tools"]] == ["get_weather"]
