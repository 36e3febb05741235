"""The agent loop against the scripted server: turns, steps, events, tools, budgets."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from harness import Host
from harness.testing import Fault, Reply, Rule, ScriptedServer, call

from ..providers import call_id, provider_of, sent
from .conftest import (
    ONE_TOOL_TURN,
    SLOW_PLUGIN,
    config_file,
    entry,
    git_repo,
    kinds,
    send_cancelling,
    turn,
    write,
)

pytestmark = pytest.mark.anyio


async def test_seed_scenario_git_log_then_an_unrelated_question(
    tmp_path: Path, server: ScriptedServer
) -> None:
    repo = git_repo(
        tmp_path / "RootStack", ["init the stack", "add the parser", "fix: parse dates"]
    )
    server.rules = [
        Rule(
            Reply.calls(call("git_log_reader", {"repoPath": str(repo), "maxCount": 5})),
            user="最近的提交",
        ),
        Rule(Reply.say("最近三个提交:解析日期修复、解析器、初始化。"), tool="git_log_reader"),
        Rule(Reply.say("The capital of France is Paris."), user="capital"),
    ]
    config = config_file(tmp_path, server, [entry("git_log_reader"), entry("echo")])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        events = await turn(session, f"帮我看下 {repo} 这个仓库最近的提交")
        assert kinds(events) == ONE_TOOL_TURN
        assert [e["seq"] for e in events if "seq" in e] == list(range(1, 11))
        message = events[2]
        assert message["tool_calls"] == [
            {
                "id": call_id(server, 1),
                "name": "git_log_reader",
                "args": {"repoPath": str(repo), "maxCount": 5},
            }
        ]
        result = next(e for e in events if e["type"] == "tool/result")["result"]
        assert result["ok"] is True
        assert result["result"]["total"] == 3
        lines = result["result"]["formatted"].splitlines()
        assert lines[1].endswith("| Ada | " + lines[1].split(" | ")[2] + " | fix: parse dates")
        # people read the render block
        assert result["content"] == [{"type": "text", "text": result["result"]["formatted"]}]
        # the model read the canonical value as compact JSON, in the tool message
        second = sent(server, 1).messages
        assert second[-1] == {
            "role": "tool",
            "tool_call_id": call_id(server, 1),
            "content": json.dumps(result["result"], ensure_ascii=False, separators=(",", ":")),
        }
        # the schemas went in the request's tools field, not the prompt
        assert sent(server, 0).tools == ["git_log_reader", "echo"]
        assert "git_log_reader" not in sent(server, 0).system
        streamed = "".join(e["text"] for e in events if e["type"] == "assistant/delta")
        assert streamed == "最近三个提交:解析日期修复、解析器、初始化。"
        assert events[-1]["reason"] == "done"

        unrelated = await turn(session, "What is the capital of France?")
        assert "tool/call" not in kinds(unrelated)
        assert unrelated[-1]["reason"] == "done"
        assert len(server.requests) == 3


async def test_parallel_calls_run_and_answer_in_model_order(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [
        Rule(
            Reply.calls(
                call("multiply", {"a": 6, "b": 7}),
                call("add", {"a": 1, "b": 2}),
                call("echo", {"text": "three"}),
            ),
            user="go",
        ),
        Rule(Reply.say("done"), tool="echo"),
    ]
    config = config_file(tmp_path, server, [entry("add"), entry("multiply"), entry("echo")])
    async with Host(config) as host:
        events = await turn(host.ctx.agent.session(), "go")
    calls = [e["name"] for e in events if e["type"] == "tool/call"]
    results = [e["result"] for e in events if e["type"] == "tool/result"]
    assert calls == ["multiply", "add", "echo"]
    assert [r["result"] for r in results] == [42, 3, {"text": "Echo: three"}]
    tool_messages = sent(server, 1).results()
    assert [m["tool_call_id"] for m in tool_messages] == [call_id(server, n) for n in (1, 2, 3)]
    assert [m["content"] for m in tool_messages] == ["42", "3", '{"text":"Echo: three"}']


async def test_max_steps_ends_with_a_wrap_up_request(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [
        Rule(Reply.say("I stopped: the budget is spent."), user="step budget"),
        Rule(Reply.calls(call("echo", {"text": "again"}))),
    ]
    config = config_file(tmp_path, server, [entry("echo")], agent={"max_steps": 2})
    async with Host(config) as host:
        events = await turn(host.ctx.agent.session(), "loop forever")
    assert events[-1]["reason"] == "max_steps"
    assert len(server.requests) == 3
    assert not sent(server, 1).no_tools
    wrap = sent(server, 2)
    assert wrap.no_tools
    assert wrap.tools == ["echo"]  # still listed: the history's calls stay valid
    assert "step budget" in wrap.messages[-1]["content"]
    assert [e["step"] for e in events if e["type"] == "step/start"] == [1, 2, 3]
    assert kinds(events).count("tool/result") == 2
    # the wrap-up note is not kept in the history
    assert all("step budget" not in str(m) for m in host_history(events))


def host_history(events: list[dict[str, object]]) -> list[object]:
    from harness.agent.history import history_of

    return list(history_of(events))


async def test_invalid_and_unknown_calls_are_answered_to_the_model(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [
        Rule(
            Reply.calls(
                call("echo", '{"text": "unterminated'),
                call("delete_everything", {}),
                call("add", {"a": "1", "b": 2}),
            ),
            user="try",
        ),
        Rule(Reply.say("some calls failed")),
    ]
    config = config_file(tmp_path, server, [entry("echo"), entry("add")])
    async with Host(config) as host:
        events = await turn(host.ctx.agent.session(), "try")
    tool_calls = [e for e in events if e["type"] == "tool/call"]
    assert tool_calls[0]["args"] == '{"text": "unterminated'
    results = [e["result"] for e in events if e["type"] == "tool/result"]
    assert [r["code"] for r in results] == ["invalid_args", "unknown_tool", "invalid_args"]
    assert results[1]["error"] == "Tool delete_everything not found"
    answers = [json.loads(m["content"]) for m in sent(server, 1).results()]
    assert answers[1] == {"error": "Tool delete_everything not found", "code": "unknown_tool"}
    assert answers[2]["code"] == "invalid_args"
    assert "a: expected number, got string" in answers[2]["error"]
    assert events[-1]["reason"] == "done"


async def test_tool_globs_hide_tools_and_a_hidden_tool_never_runs(
    tmp_path: Path, server: ScriptedServer
) -> None:
    marker = tmp_path / "workspace" / "written.txt"
    server.rules = [
        Rule(
            Reply.calls(call("write_text_file", {"path": "written.txt", "content": "x"})),
            user="write",
        ),
        Rule(Reply.say("ok")),
    ]
    config = config_file(
        tmp_path,
        server,
        [entry("echo"), entry("add"), entry("write_text_file", root=str(tmp_path / "workspace"))],
        agent={"tools": ["e*", "ad?"]},
    )
    (tmp_path / "workspace").mkdir()
    async with Host(config) as host:
        assert "write_text_file" in host.tools.list()
        events = await turn(host.ctx.agent.session(), "write a file")
    assert sent(server, 0).tools == ["echo", "add"]
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["code"] == "unknown_tool"
    assert not marker.exists()


async def test_hot_reload_between_two_turns(tmp_path: Path, server: ScriptedServer) -> None:
    server.rules = [
        Rule(Reply.calls(call("greet", {"name": "Ada"})), user="greet"),
        Rule(Reply.say("greeted"), tool="greet"),
        Rule(Reply.say("no tool")),
    ]
    config = config_file(tmp_path, server, [entry("echo")])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        first = await turn(session, "greet Ada")
        assert next(e for e in first if e["type"] == "tool/result")["result"]["code"] == (
            "unknown_tool"
        )
        text = config.read_text()
        config.write_text(
            text.replace(
                "insert:\n", f"insert:\n- id: greet\n  name: {entry('greet')['name']}\n", 1
            )
        )
        await host.reload()
        second = await turn(session, "greet Ada")
        result = next(e for e in second if e["type"] == "tool/result")["result"]
        assert result["ok"] is True, result
        assert result["result"] == {"greeting": "Hello, Ada!"}
        assert "greet" in sent(server, -2).tools


async def test_cancel_during_a_running_tool(tmp_path: Path, server: ScriptedServer) -> None:
    slow = write(tmp_path / "slow.py", SLOW_PLUGIN)
    server.rules = [
        Rule(
            Reply.calls(
                call("echo", {"text": "first"}),
                call("slow", {}),
                call("echo", {"text": "x"}),
                text="Working on it.",
            ),
            user="wait",
        ),
        Rule(Reply.say("still here"), user="hello"),
    ]
    config = config_file(tmp_path, server, [entry("echo"), entry("slow", str(slow))])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        started = anyio.Event()
        host.ctx.on("test/started", lambda args: started.set())
        events = await send_cancelling(
            session, "wait for it", "slow", started, lambda _id: session.cancel()
        )
        assert events[-1]["type"] == "turn/end"
        assert events[-1]["reason"] == "cancelled"
        results = {e["id"]: e["result"] for e in events if e["type"] == "tool/result"}
        assert [r["code"] for r in results.values()] == [None, "cancelled", "cancelled"]
        assert results[call_id(server, 3)]["error"] in (
            "Tool echo was not run: the turn was cancelled",
            "Tool echo was cancelled before it started",
        )
        message = next(e for e in events if e["type"] == "assistant/message")
        assert message["text"] == "Working on it."
        # the session is usable afterwards, with a valid history
        again = await turn(session, "hello")
        assert again[-1]["reason"] == "done"
        assert sent(server, -1).roles == [
            "user",
            "assistant",
            "tool",
            "tool",
            "tool",
            "user",
        ]


async def test_cancel_call_stops_one_call_and_the_step_goes_on(
    tmp_path: Path, server: ScriptedServer
) -> None:
    slow = write(tmp_path / "slow.py", SLOW_PLUGIN)
    server.rules = [
        Rule(Reply.calls(call("slow", {}), call("echo", {"text": "after"})), user="wait"),
        Rule(Reply.say("the slow one was cancelled"), tool="echo"),
    ]
    config = config_file(tmp_path, server, [entry("echo"), entry("slow", str(slow))])
    async with Host(config) as host:
        session = host.ctx.agent.session()
        started = anyio.Event()
        host.ctx.on("test/started", lambda args: started.set())
        events = await send_cancelling(session, "wait", "slow", started, session.cancel_call)
    results = [e["result"] for e in events if e["type"] == "tool/result"]
    assert [r["code"] for r in results] == ["cancelled", None]
    assert events[-1]["reason"] == "done"


async def test_cancel_while_the_model_streams_keeps_the_text(
    tmp_path: Path, server: ScriptedServer
) -> None:
    # two text pieces, after the OpenAI role chunk or Anthropic's message and block starts
    before = 3 if provider_of(server) == "openai" else 5
    server.rules = [
        Rule(
            Reply.say("a long answer that stalls"),
            user="talk",
            faults=[Fault.stall(30, after_chunks=before)],
        ),
        Rule(Reply.say("fine"), user="next"),
    ]
    config = config_file(tmp_path, server)
    async with Host(config) as host:
        session = host.ctx.agent.session()
        events = []
        with anyio.fail_after(20):
            async for event in session.send("talk"):
                events.append(event)
                if event["type"] == "assistant/delta" and len(events) > 3:
                    session.cancel()
        assert events[-1]["reason"] == "cancelled"
        message = next(e for e in events if e["type"] == "assistant/message")
        streamed = "".join(e["text"] for e in events if e["type"] == "assistant/delta")
        assert message["text"] == streamed == "a long a"  # the chunks before the stall
        assert (await turn(session, "next"))[-1]["reason"] == "done"


async def test_messages_sent_during_a_turn_wait_their_turn(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [Rule(Reply.say("one"), user="first"), Rule(Reply.say("two"), user="second")]
    config = config_file(tmp_path, server)
    async with Host(config) as host:
        session = host.ctx.agent.session()
        first = session.send("first")
        second = session.send("second")
        assert session.busy
        later = [e async for e in second]
        earlier = [e async for e in first]
    assert earlier[0]["turn"] == 1
    assert later[0]["turn"] == 2
    assert earlier[-1]["seq"] < later[0]["seq"]
    assert [m["content"] for m in sent(server, 1).messages] == ["first", "one", "second"]


async def test_events_are_emitted_on_the_root_context(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [Rule(Reply.say("hi"))]
    config = config_file(tmp_path, server)
    async with Host(config) as host:
        seen: list[dict[str, object]] = []
        host.ctx.on("agent/event", seen.append)
        session = host.ctx.agent.session()
        events = await turn(session, "hello")
    assert seen == events
    assert session.events == [e for e in events if e["type"] != "assistant/delta"]
    assert all(e["session"] == session.id for e in seen)


async def test_system_prompt_is_the_config_text_plus_the_tool_rules(
    tmp_path: Path, server: ScriptedServer
) -> None:
    server.rules = [Rule(Reply.say("hi"))]
    config = config_file(tmp_path, server, agent={"system": "You are Ada's release helper."})
    async with Host(config) as host:
        await turn(host.ctx.agent.session(), "hello")
    assert sent(server, 0).system.startswith("You are Ada's release helper.\n\nHow to use tools:")
