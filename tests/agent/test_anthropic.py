"""harness:anthropic against the scripted Messages-API server, with the real SDK over real HTTP.

Thinking blocks round-trip (to the next request, and through the session log), prompt caching
marks and its usage fields, retries (429, 529 overloaded, 500, error events, cut streams),
the idle timeout, and entry problems.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import Host
from harness.testing import AnthropicServer, Fault, Reply, Rule, call
from harness.testing.anthropic_server import signature

from ..providers import after_text
from .conftest import config_file, entry, kinds, turn, write

pytestmark = pytest.mark.anyio

THINKING = {"thinking": 2000, "max_tokens": 4096}


def echo_rules(thought: str = "The user wants an echo; echo is the tool.") -> list[Rule]:
    return [
        Rule(Reply.calls(call("echo", {"text": "hi"}), thinking=thought), user="echo"),
        Rule(Reply.say("Echoed.", thinking="The tool answered."), tool="echo"),
        Rule(Reply.say("Again."), user="again"),
    ]


async def run_turn(tmp_path: Path, rules: list[Rule], text: str = "hello", **model: Any):
    with AnthropicServer(rules) as server:
        config = config_file(tmp_path, server, [entry("echo")], model=dict(model))
        async with Host(config) as host:
            events = await turn(host.ctx.agent.session(), text)
        return events, server


async def test_a_thinking_block_goes_back_signed_in_the_next_request(tmp_path: Path) -> None:
    thought = "The user wants an echo; echo is the tool."
    events, server = await run_turn(tmp_path, echo_rules(thought), "echo hi", **THINKING)
    assert events[-1]["reason"] == "done"
    assert server.requests[0]["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    block = {"type": "thinking", "thinking": thought, "signature": signature(thought)}
    message = next(e for e in events if e["type"] == "assistant/message")
    assert message["thinking"] == [block]
    assistant = server.requests[1]["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == block  # first, unmodified, as the API requires
    assert [b["type"] for b in assistant["content"]] == ["thinking", "tool_use"]
    # the thought is not shown as text
    shown = "".join(e["text"] for e in events if e["type"] == "assistant/delta")
    assert shown == "Echoed."


async def test_thinking_blocks_survive_the_session_log(tmp_path: Path) -> None:
    with AnthropicServer(echo_rules()) as server:
        config = config_file(tmp_path, server, [entry("echo")], model=THINKING)
        async with Host(config) as host:
            session = host.ctx.agent.session()
            await turn(session, "echo hi")
        async with Host(config) as host:
            resumed = host.ctx.agent.session(session.id)
            again = await turn(resumed, "again")
        assert again[-1]["reason"] == "done"
        sent = server.requests[-1]["messages"]
        thoughts = [
            b["thinking"]
            for m in sent
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "thinking"
        ]
        assert thoughts == ["The user wants an echo; echo is the tool.", "The tool answered."]


async def test_a_tampered_thinking_block_is_refused_by_the_server(tmp_path: Path) -> None:
    # the server checks signatures, so the round trip above is a real check
    with AnthropicServer(echo_rules()) as server:
        config = config_file(tmp_path, server, [entry("echo")], model=THINKING)
        async with Host(config) as host:
            session = host.ctx.agent.session()
            await turn(session, "echo hi")
        log = tmp_path / ".harness" / "sessions" / f"{session.id}.jsonl"
        log.write_text(log.read_text().replace("echo is the tool", "echo is a tool"))
        async with Host(config) as host:
            again = await turn(host.ctx.agent.session(session.id), "again")
    assert again[-1]["reason"] == "error"
    assert "rejected the request (HTTP 400)" in again[-1]["error"]
    assert "Invalid `signature` in `thinking` block" in again[-1]["error"]


async def test_prompt_caching_marks_and_usage(tmp_path: Path) -> None:
    events, server = await run_turn(tmp_path, echo_rules(), "echo hi")
    first, second = server.requests[0], server.requests[1]
    assert first["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert first["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # the second step reads the first step's whole prefix from the cache
    assert server.usage[0]["cache_read_input_tokens"] == 0
    assert server.usage[0]["cache_creation_input_tokens"] > 0
    assert server.usage[1]["cache_read_input_tokens"] == (
        server.usage[0]["cache_creation_input_tokens"] + server.usage[0]["input_tokens"]
    )
    # only the newest mark is kept on the history: the older one moved on
    assert "cache_control" not in second["messages"][0]["content"][-1]
    usage = [e["usage"] for e in events if e["type"] == "step/end"]
    assert usage == [{**u} for u in server.usage]
    assert set(usage[0]) == {
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    }


async def test_caching_off_sends_no_marks(tmp_path: Path) -> None:
    events, server = await run_turn(tmp_path, echo_rules(), "echo hi", cache=False)
    assert "cache_control" not in json.dumps(server.requests)
    assert all(u["cache_read_input_tokens"] == 0 for u in server.usage)
    assert events[-1]["reason"] == "done"


async def test_the_wrap_up_step_sends_tool_choice_none(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.say("Stopping here."), user="step budget"),
        Rule(Reply.calls(call("echo", {"text": "again"}))),
    ]
    with AnthropicServer(rules) as server:
        config = config_file(tmp_path, server, [entry("echo")], agent={"max_steps": 1})
        async with Host(config) as host:
            events = await turn(host.ctx.agent.session(), "loop")
    assert events[-1]["reason"] == "max_steps"
    assert "tool_choice" not in server.requests[0]
    assert server.requests[1]["tool_choice"] == {"type": "none"}
    # the tool results and the wrap-up note share one user turn, results first
    last = server.requests[1]["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]


@pytest.mark.parametrize("status", [429, 529, 500])
async def test_429_529_and_500_are_retried(tmp_path: Path, status: int) -> None:
    rules = [Rule(Reply.say("after the fault"), faults=[Fault.http(status, retry_after=0)])]
    events, server = await run_turn(tmp_path, rules)
    assert events[-1]["reason"] == "done"
    assert len(server.requests) == 2
    assert "".join(e["text"] for e in events if e["type"] == "assistant/delta") == (
        "after the fault"
    )


async def test_overloaded_after_the_last_retry_ends_the_turn_as_error(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("never"), faults=[Fault.http(529)] * 3)]
    events, server = await run_turn(tmp_path, rules, max_retries=2)
    assert len(server.requests) == 3
    assert events[-1]["reason"] == "error"
    assert (
        "is overloaded (HTTP 529) after 3 attempts: scripted fault: HTTP 529"
        in (events[-1]["error"])
    )
    assert kinds(events) == ["turn/start", "step/start", "step/end", "turn/end"]


async def test_an_overloaded_error_event_before_any_text_is_retried(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("fine"), faults=[Fault.error("overloaded_error", after_chunks=2)])]
    events, server = await run_turn(tmp_path, rules)
    assert events[-1]["reason"] == "done"
    assert len(server.requests) == 2


async def test_an_error_event_after_text_is_an_error(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        at = after_text(server, 2)
        server.rules = [
            Rule(Reply.say("a sentence that breaks"), faults=[Fault.error(after_chunks=at)])
        ]
        config = config_file(tmp_path, server, [entry("echo")])
        async with Host(config) as host:
            events = await turn(host.ctx.agent.session(), "hello")
    assert len(server.requests) == 1
    assert events[-1]["reason"] == "error"
    assert "sent an error event (overloaded_error)" in events[-1]["error"]
    assert "not retried: part of the answer was already shown" in events[-1]["error"]


async def test_an_invalid_request_error_event_is_not_retried(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("x"), faults=[Fault.error("invalid_request_error", after_chunks=1)])]
    events, server = await run_turn(tmp_path, rules)
    assert len(server.requests) == 1
    assert "stopped the answer with an error event (invalid_request_error)" in events[-1]["error"]


async def test_a_cut_stream_of_tool_json_is_retried(tmp_path: Path) -> None:
    rules = [
        Rule(Reply.calls(call("echo", {"text": "x" * 40})), user="hello", faults=[Fault.cut(6)]),
        Rule(Reply.say("echoed"), tool="echo"),
    ]
    events, server = await run_turn(tmp_path, rules)
    assert events[-1]["reason"] == "done"
    assert len(server.requests) == 3
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["result"] == {"text": "Echo: " + "x" * 40}


async def test_an_idle_server_times_out(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("late"), faults=[Fault.stall(10, after_chunks=0)])]
    events, _ = await run_turn(tmp_path, rules, timeout=0.3, max_retries=0)
    assert events[-1]["reason"] == "error"
    assert "within 0.3 s" in events[-1]["error"]


async def test_params_and_max_tokens_are_sent(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("hi"))]
    _, server = await run_turn(tmp_path, rules, params={"temperature": 0.2}, max_tokens=64)
    body = server.requests[0]
    assert (body["temperature"], body["max_tokens"], body["stream"]) == (0.2, 64, True)
    headers = server.headers[0]
    assert "not-needed" in headers.get("x-api-key", headers.get("authorization", ""))
    assert "anthropic-version" in server.headers[0]


async def test_config_mistakes_are_entry_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = write(
        tmp_path / "cordis.yml",
        """
        insert:
          - id: nomodel
            name: harness:anthropic
            config:
              base_url: http://127.0.0.1:9
          - id: nokey
            name: harness:anthropic
            config:
              model: claude-sonnet-4-5
          - id: v1
            name: harness:anthropic
            config:
              model: m
              base_url: http://127.0.0.1:9/v1
          - id: budget
            name: harness:anthropic
            config:
              model: m
              base_url: http://127.0.0.1:9
              thinking: 100
        """,
    )
    async with Host(config) as host:
        problems = {p.entry: p for p in host.problems()}
    assert set(problems) == {"nomodel", "nokey", "v1", "budget"}
    assert "model" in problems["nomodel"].message
    assert problems["nomodel"].line == 4  # its config: line
    assert "ANTHROPIC_API_KEY is not set; export ANTHROPIC_API_KEY" in problems["nokey"].message
    assert problems["nokey"].line == 8
    assert "ends in /v1, which the SDK adds itself" in problems["v1"].message
    assert "budget_tokens must be a whole number from 1024" in problems["budget"].message
    assert all(p.file == str(config) for p in problems.values())


async def test_the_key_may_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    config = write(
        tmp_path / "cordis.yml",
        """
        insert:
          - id: model
            name: harness:anthropic
            config: {model: claude-sonnet-4-5}
        """,
    )
    async with Host(config) as host:
        assert host.problems() == []
        assert host.ctx.llm.client.api_key == "sk-ant-from-env"
