"""harness:openai against the scripted server: streaming, retries, faults, entry problems."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from harness import Host
from harness.testing import Fault, Reply, Rule, ScriptedServer, call

from .conftest import config_file, entry, kinds, turn, write

pytestmark = pytest.mark.anyio


async def run_turn(tmp_path: Path, rules: list[Rule], text: str = "hello", **model: object):
    with ScriptedServer(rules) as server:
        config = config_file(tmp_path, server.url, [entry("echo")], model=dict(model))
        async with Host(config) as host:
            events = await turn(host.ctx.agent.session(), text)
        return events, server.requests


async def test_429_is_retried_with_backoff_then_succeeds(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("after the rate limit"), faults=[Fault.http(429, retry_after=0)])]
    events, requests = await run_turn(tmp_path, rules)
    assert events[-1]["reason"] == "done"
    assert len(requests) == 2
    assert "".join(e["text"] for e in events if e["type"] == "assistant/delta") == (
        "after the rate limit"
    )


async def test_500_after_the_last_retry_ends_the_turn_as_error(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("never"), faults=[Fault.http(500)] * 3)]
    events, requests = await run_turn(tmp_path, rules, max_retries=2)
    assert len(requests) == 3
    end = events[-1]
    assert end["reason"] == "error"
    assert "failed (HTTP 500) after 3 attempts: scripted fault: HTTP 500" in end["error"]
    assert kinds(events) == ["turn/start", "step/start", "step/end", "turn/end"]


async def test_a_stream_cut_before_any_text_is_retried(tmp_path: Path) -> None:
    rules = [
        Rule(
            Reply.calls(call("echo", {"text": "x" * 40})),
            user="hello",
            faults=[Fault.cut(after_chunks=4)],
        ),
        Rule(Reply.say("echoed"), tool="echo"),
    ]
    events, requests = await run_turn(tmp_path, rules)
    assert events[-1]["reason"] == "done"
    assert len(requests) == 3
    result = next(e for e in events if e["type"] == "tool/result")["result"]
    assert result["result"] == {"text": "Echo: " + "x" * 40}


async def test_a_stream_cut_after_text_was_shown_is_an_error(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("a sentence that breaks"), faults=[Fault.cut(after_chunks=3)])]
    events, requests = await run_turn(tmp_path, rules)
    assert len(requests) == 1
    assert events[-1]["reason"] == "error"
    assert "broke off mid-stream" in events[-1]["error"]
    assert "not retried: part of the answer was already shown" in events[-1]["error"]


async def test_the_session_stays_usable_after_a_model_error(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("fine now"), faults=[Fault.http(500)])]
    with ScriptedServer(rules) as server:
        config = config_file(tmp_path, server.url, model={"max_retries": 0})
        async with Host(config) as host:
            session = host.ctx.agent.session()
            assert (await turn(session, "one"))[-1]["reason"] == "error"
            assert (await turn(session, "two"))[-1]["reason"] == "done"
        assert [m["role"] for m in server.requests[-1]["messages"]] == ["system", "user", "user"]


async def test_an_idle_server_times_out(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("late"), faults=[Fault.stall(10, after_chunks=0)])]
    events, _ = await run_turn(tmp_path, rules, timeout=0.3, max_retries=0)
    assert events[-1]["reason"] == "error"
    assert "within 0.3 s" in events[-1]["error"]
    assert "raise the entry's timeout" in events[-1]["error"]


async def test_an_unreachable_server_says_what_to_check(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = config_file(tmp_path, f"http://127.0.0.1:{port}/v1", model={"max_retries": 1})
    async with Host(config) as host:
        events = await turn(host.ctx.agent.session(), "hello")
    end = events[-1]
    assert end["reason"] == "error"
    assert end["error"].startswith(f"cannot reach the model server at http://127.0.0.1:{port}/v1")
    assert "check that the server is running and that base_url is right" in end["error"]


async def test_extra_params_are_sent_and_usage_is_reported(tmp_path: Path) -> None:
    rules = [Rule(Reply.say("hi"))]
    events, requests = await run_turn(
        tmp_path, rules, params={"temperature": 0.2, "max_tokens": 64}
    )
    assert requests[0]["temperature"] == 0.2
    assert requests[0]["max_tokens"] == 64
    assert requests[0]["stream"] is True
    usage = next(e for e in events if e["type"] == "step/end")["usage"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0


async def test_config_mistakes_are_entry_problems(tmp_path: Path) -> None:
    config = write(
        tmp_path / "cordis.yml",
        """
        insert:
          - id: echo
            name: harness:tools
          - id: nomodel
            name: harness:openai
            config:
              base_url: http://127.0.0.1:9/v1
          - id: badurl
            name: harness:openai
            config:
              model: m
              base_url: "127.0.0.1:8000/v1"
          - id: nokey
            name: harness:openai
            config:
              model: gpt-4.1-mini
              base_url: https://api.openai.com/v1
          - id: agent
            name: harness:agent
        """,
    )
    async with Host(config) as host:
        problems = {p.entry: p for p in host.problems()}
        states = {s.id: s.state for s in host.status()}
    assert states["agent"] == "pending"
    assert "'llm'" in problems["agent"].message
    assert problems["agent"].line == 19  # its name: line
    assert problems["nomodel"].line == 6  # its config: line
    assert "model" in problems["nomodel"].message
    assert "base_url '127.0.0.1:8000/v1' is not an http(s) URL" in problems["badurl"].message
    assert "api_key is empty" in problems["nokey"].message
    assert all(p.file == str(config) for p in problems.values())
