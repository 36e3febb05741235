"""Deferral with harness:anthropic: the API's own tool search (``search.native: auto``).

Against the scripted Messages-API server with the real SDK over HTTP: every visible tool but
the kept and loaded ones goes with ``defer_loading`` beside the API's tool search tool; the
model searches server-side, then calls a found tool, which runs through the pipeline; the
server tool blocks go back as they came (the server refuses them otherwise), and what the
API loaded is a ``tools/loaded`` event, so a resumed session sends it undeferred.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from harness import Host
from harness.testing import AnthropicServer, Reply, Rule, ScriptedServer, call

from ..helpers import ROOT
from ..providers import model_entry
from .test_tools_search import CATALOGUE, CATALOGUE_PLUGIN

pytestmark = pytest.mark.anyio

SEARCHER = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
FILLERS = [
    (f"filler_tool_{i}", f"Filler number {i}: does nothing useful.", [("value", "Any value")])
    for i in range(60)
]
AGENT = {"tools": ["get_*", "read_*", "search_tools", "delete_*", "filler_*"]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the anthropic SDK's streams run on asyncio


def config(
    tmp_path: Path,
    server: ScriptedServer,
    search: dict[str, Any],
    catalogue: list[Any] = CATALOGUE,
    **model: Any,
) -> Path:
    plugins = tmp_path / "plugins"
    plugins.mkdir(exist_ok=True)
    (plugins / "catalogue.py").write_text(CATALOGUE_PLUGIN)
    shutil.copy(ROOT / "plugins" / "policy.py", plugins / "policy.py")
    items = [
        {
            "id": "catalogue",
            "name": "./plugins/catalogue.py",
            "config": {"tools": catalogue + FILLERS},
        },
        {
            "id": "policy",
            "name": "./plugins/policy.py",
            "config": {"rules": {"delete_everything": "deny"}},
        },
        {"id": "tools", "name": "harness:tools", "config": {"search": search}},
        model_entry(server, **model),
        {"id": "agent", "name": "harness:agent", "config": {"sessions": "sessions", **AGENT}},
    ]
    path = tmp_path / "cordis.yml"
    path.write_text(yaml.safe_dump({"insert": items}, sort_keys=False), encoding="utf-8")
    return path


def names(request: dict[str, Any], deferred: bool) -> list[str]:
    return [t["name"] for t in request.get("tools", []) if bool(t.get("defer_loading")) == deferred]


async def test_the_api_searches_then_the_model_calls_a_found_tool(tmp_path: Path) -> None:
    rules = [
        Rule(
            Reply.calls(call("get_weather", {"city": "Paris"}), search="weather city"),
            user="weather",
        ),
        Rule(Reply.say("Sunny in Paris."), tool="get_weather"),
        Rule(Reply.say("Still sunny."), user="again"),
    ]
    thinking: dict[str, Any] = {"thinking": 2000, "max_tokens": 4096}  # blocks follow it
    with AnthropicServer(rules) as server:
        path = config(tmp_path, server, {"keep": ["read_*"]}, **thinking)
        async with Host(path) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("What is the weather in Paris?")]
        async with Host(path) as host:  # resumed from the log
            resumed = host.ctx.agent.session(session.id)
            with anyio.fail_after(30):
                again = [e async for e in resumed.send("And again?")]
        requests = list(server.requests)

    assert events[-1]["reason"] == "done", events[-1]
    assert again[-1]["reason"] == "done", again[-1]
    first, second, third = requests
    # the first request: the API's search tool and the kept tool, the rest deferred
    assert first["tools"][0] == SEARCHER
    assert names(first, deferred=False) == ["tool_search_tool_bm25", "read_text_file"]
    assert "cache_control" in first["tools"][1]  # the cached prefix ends before the deferred
    deferred = names(first, deferred=True)
    assert "get_weather" in deferred
    assert len(deferred) == 61  # get_weather and the fillers
    for request in requests:  # never sent: denied, outside the globs, or harness's search
        sent = [t["name"] for t in request["tools"]]
        assert not {"delete_everything", "book_flight", "search_tools"} & set(sent)

    loaded = [e for e in events if e["type"] == "tools/loaded"]
    assert [e["names"] for e in loaded] == [["get_weather"]]
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert (result["ok"], result["result"]) == (True, "get_weather")  # it ran

    # the answer's blocks go back as they came, thinking first
    answer = server.requests[1]["messages"][1]["content"]
    assert [b["type"] for b in answer] == [
        "thinking",
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
    ]
    use, found = answer[1], answer[2]
    assert use["name"] == "tool_search_tool_bm25"
    assert use["input"] == {"query": "weather city"}
    assert found["tool_use_id"] == use["id"]
    references = found["content"]["tool_references"]
    assert references == [{"type": "tool_reference", "tool_name": "get_weather"}]
    # loaded: sent undeferred from the next request on, at the end of the sent prefix
    expected = ["tool_search_tool_bm25", "read_text_file", "get_weather"]
    assert names(second, deferred=False) == expected
    assert names(third, deferred=False) == expected  # the resumed session loads it again
    assert third["messages"][1]["content"][1:3] == [use, found]


async def test_a_paused_turn_is_sent_back_and_goes_on(tmp_path: Path) -> None:
    rules = [
        Rule(Reply(search="weather city", pause=True), user="weather", times=1),
        Rule(Reply.say("Sunny in Paris."), tool="get_weather"),
        Rule(Reply.calls(call("get_weather", {"city": "Paris"}))),  # the paused turn, resumed
    ]
    with AnthropicServer(rules) as server:
        async with Host(config(tmp_path, server, {"keep": ["read_*"]})) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("What is the weather in Paris?")]
        requests = list(server.requests)
    assert events[-1]["reason"] == "done", events[-1]
    assert [e["text"] for e in events if e["type"] == "assistant/message"][-1] == "Sunny in Paris."
    paused, resumed, answered = requests
    assert names(paused, deferred=False) == ["tool_search_tool_bm25", "read_text_file"]
    # the paused answer goes back as it came, as the last turn: the model goes on from it
    last = resumed["messages"][-1]
    assert last["role"] == "assistant"
    assert [b["type"] for b in last["content"]] == ["server_tool_use", "tool_search_tool_result"]
    assert "get_weather" in names(resumed, deferred=False)  # loaded by the paused search
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert (result["ok"], result["result"]) == (True, "get_weather")
    assert answered["messages"][-1]["role"] == "user"  # the tool's result


async def test_a_reference_to_a_tool_removed_since_is_dropped(tmp_path: Path) -> None:
    rules = [
        Rule(
            Reply.calls(call("get_weather", {"city": "Paris"}), search="weather city"),
            user="weather",
        ),
        Rule(Reply.say("Sunny in Paris."), tool="get_weather"),
        Rule(Reply.say("Still here."), user="again"),
    ]
    with AnthropicServer(rules) as server:
        async with Host(config(tmp_path, server, {})) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                [e async for e in session.send("What is the weather in Paris?")]
        gone = [tool for tool in CATALOGUE if tool[0] != "get_weather"]
        async with Host(config(tmp_path, server, {}, gone)) as host:
            resumed = host.ctx.agent.session(session.id)
            with anyio.fail_after(30):
                again = [e async for e in resumed.send("And again?")]
        last = server.requests[-1]
    assert again[-1]["reason"] == "done", again[-1]  # the server took the history
    found = last["messages"][1]["content"][1]
    assert found["type"] == "tool_search_tool_result"
    assert found["content"]["tool_references"] == []
    assert "get_weather" not in str(last["tools"])


async def test_a_denied_tool_is_never_sent_and_calling_it_is_refused(tmp_path: Path) -> None:
    rules = [
        Rule(
            Reply.calls(call("delete_everything", {}), search="remove all files disk"),
            user="clean",
        ),
        Rule(Reply.say("I could not."), tool="delete_everything"),
    ]
    with AnthropicServer(rules) as server:
        async with Host(config(tmp_path, server, {"keep": ["read_*"]})) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("clean the disk")]
        requests = list(server.requests)
    assert all("delete_everything" not in str(r["tools"]) for r in requests)
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "unknown_tool"
    assert not [e for e in events if e["type"] == "tools/loaded"]


async def test_native_false_keeps_harness_search(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("Hello."), user="hi")]
    with AnthropicServer(rules) as server:
        path = config(tmp_path, server, {"keep": ["read_*"], "native": False})
        async with Host(path) as host:
            session = host.ctx.agent.session()
            with anyio.fail_after(30):
                events = [e async for e in session.send("hi")]
        (request,) = server.requests
    assert events[-1]["reason"] == "done"
    assert [t["name"] for t in request["tools"]] == ["search_tools", "read_text_file"]
    assert not any("defer_loading" in t for t in request["tools"])
